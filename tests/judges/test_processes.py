"""The process plumbing: output kept up to a cap, pipes read until their end or the deadline."""

from __future__ import annotations

import os
import time

from clstream.judges.processes import Capture, pump


def test_capture_keeps_the_cap_and_counts_the_rest() -> None:
    capture = Capture(cap=5)
    capture.add(b"abc")
    capture.add(b"defgh")
    assert bytes(capture.data) == b"abcde" and capture.dropped == 3
    assert capture.text() == "abcde\n[... 3 more bytes not kept]"


def test_capture_decodes_with_replacement() -> None:
    capture = Capture(cap=10)
    capture.add(b"ok \xff")
    assert capture.text() == "ok \ufffd"


def test_pump_reads_an_extra_descriptor_to_its_end() -> None:
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, b"hello")
        os.close(write_fd)
        capture = Capture(cap=100)
        timed_out = pump([], {read_fd: capture}, time.monotonic() + 30, lambda: False)
        assert not timed_out and capture.closed and capture.text() == "hello"
    finally:
        os.close(read_fd)


def test_pump_stops_at_the_deadline_of_an_open_pipe() -> None:
    read_fd, write_fd = os.pipe()
    try:
        capture = Capture(cap=100)
        assert pump([], {read_fd: capture}, time.monotonic() + 0.05, lambda: False)
        assert not capture.closed
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_pump_stops_when_the_caller_is_done() -> None:
    read_fd, write_fd = os.pipe()
    try:
        capture = Capture(cap=100)
        assert not pump([], {read_fd: capture}, time.monotonic() + 30, lambda: True)
    finally:
        os.close(read_fd)
        os.close(write_fd)
