"""Run a program over a small file workspace in the OS sandbox and take the files back
(docs/clbench.md §4.3: the sales task's workspace).

A workspace is a mapping of relative paths to bytes that lives in the harness (so snapshots can
carry it). :func:`run_in_workspace` starts one sandboxed interpreter
(:mod:`clstream.judges.sandbox`, every guarantee of :mod:`clstream.judges.isolation`), whose
loader first writes the workspace into the sandbox's private tmpfs (its working directory),
then runs the program there, then sends the working directory's regular files back through a
pipe. The program sees the workspace at relative paths, may read, write and delete files, and
may import the allowed ``packages`` only.

What comes back is the program's word, never trusted: it is read up to a byte cap, parsed as
plain JSON, and every path is checked (relative, no ``..``, no empty part, bounded length and
count). Files come back whether the program ended normally or with an exception or an early
exit; a program stopped at its time limit, killed for memory or whose files exceed the cap
leaves the workspace as it was (:attr:`WorkspaceRun.files` is None and ``note`` says why).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clstream.judges.isolation import Isolation, allowed_packages, resolve
from clstream.judges.loader import loader_source
from clstream.judges.processes import Capture, launch, pump
from clstream.judges.sandbox import SandboxResult, ended

MAX_PATH_CHARS = 120
MAX_FILES = 200
WORKSPACE_FILE = "workspace.json"

# The loader's mode: unpack before the program, pack the working directory after it.
_WORKSPACE_MODE = r'''
def _open_channel(cfg, os, json):
    import base64
    root = cfg["root"]
    with open(cfg["file:workspace.json"], "rb") as fh:
        files = json.loads(fh.read().decode("ascii"))
    for path, data in files.items():
        full = root + "/" + path
        os.makedirs(full.rsplit("/", 1)[0], exist_ok=True)
        with open(full, "wb") as fh:
            fh.write(base64.b64decode(data))
    skip = set(v for k, v in cfg.items() if k.startswith("file:"))
    return {"fd": cfg["fd_out"], "root": root, "cap": cfg["max_bytes"], "limit": cfg["max_files"],
            "skip": skip, "os": os, "json": json, "b64": base64.b64encode, "sent": False}

def _send_back(channel):
    if channel is None or channel["sent"]:
        return
    channel["sent"] = True
    os, root = channel["os"], channel["root"]
    out, total, over = {}, 0, None
    for top, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            full = top + "/" + name
            if full in channel["skip"] or os.path.islink(full) or not os.path.isfile(full):
                continue
            total += os.path.getsize(full)
            if total > channel["cap"]:
                over = "its files hold more than %d bytes" % channel["cap"]
                break
            if len(out) >= channel["limit"]:
                over = "it left more than %d files" % channel["limit"]
                break
            with open(full, "rb") as fh:
                out[full[len(root) + 1:]] = channel["b64"](fh.read()).decode("ascii")
        if over:
            break
    reply = {"over": over} if over else {"files": out}
    data = channel["json"].dumps(reply).encode("ascii")
    view = memoryview(data)
    while view:
        view = view[os.write(channel["fd"], view):]
    os.close(channel["fd"])

def _loaded(channel, how, text):
    try:
        _send_back(channel)
    except BaseException:
        pass

def _serve(channel, scope, cfg, stop, describe, _exit):
    try:
        _send_back(channel)
    except BaseException as exc:
        stop(1, "fail: the workspace could not be sent back (%s)" % describe(exc))
'''


class WorkspaceError(ValueError):
    """A workspace path or size the runner refuses."""


def check_path(path: str) -> str:
    """``path`` if it is a safe relative workspace path, else :class:`WorkspaceError`."""
    parts = path.split("/")
    if (not path or path.startswith("/") or len(path) > MAX_PATH_CHARS
            or any(p in ("", ".", "..") for p in parts) or "\x00" in path):
        raise WorkspaceError(f"bad path {path!r}: use a relative path without '..' "
                             f"(at most {MAX_PATH_CHARS} characters)")
    return path


@dataclass(frozen=True)
class WorkspaceRun:
    """How a workspace program ended and, unless it was stopped, the files it left."""

    result: SandboxResult
    files: dict[str, bytes] | None
    note: str = ""


def _decode_back(raw: bytes, cap: int) -> tuple[dict[str, bytes] | None, str]:
    try:
        reply = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, "the program's files did not come back"
    if not isinstance(reply, dict):
        return None, "the program's files did not come back"
    if isinstance(reply.get("over"), str):
        return None, f"file changes discarded: {reply['over'][:200]}"
    files = reply.get("files")
    if not isinstance(files, dict) or len(files) > MAX_FILES:
        return None, "the program's files did not come back"
    out: dict[str, bytes] = {}
    try:
        for path, data in files.items():
            if not isinstance(path, str) or not isinstance(data, str):
                raise WorkspaceError("not a path and its contents")
            out[check_path(path)] = base64.b64decode(data, validate=True)
    except (WorkspaceError, binascii.Error):
        return None, "the program left a file the workspace cannot hold"
    if sum(map(len, out.values())) > cap:
        return None, f"file changes discarded: its files hold more than {cap} bytes"
    return out, ""


def run_in_workspace(
    code: str,
    files: Mapping[str, bytes],
    *,
    timeout_s: float = 20.0,
    memory_mb: int = 1024,
    max_bytes: int = 2_000_000,
    max_output_bytes: int = 64_000,
    tmpfs_mb: int = 64,
    packages: Sequence[str] = (),
    allow_unisolated: bool = False,
    isolation: Isolation | None = None,
) -> WorkspaceRun:
    """Run ``code`` with ``files`` as its working directory; see the module docstring.

    ``max_bytes`` caps the files taken back (and, with the pack overhead, what is read);
    ``tmpfs_mb`` what the program may write meanwhile. ``packages``: import names allowed
    read-only (:func:`clstream.judges.isolation.allowed_packages`).
    """
    if timeout_s <= 0 or memory_mb <= 0:
        raise ValueError("timeout_s and memory_mb must be positive")
    packed = {check_path(p): base64.b64encode(d).decode("ascii") for p, d in files.items()}
    iso = isolation or resolve(allow_unisolated)
    start = time.monotonic()
    cpu_limit = max(1, math.ceil(timeout_s))
    back_r, back_w = os.pipe()
    config = {"as_main": True, "mem": memory_mb << 20, "cpu": cpu_limit,
              "fsize": max(16 << 20, max_bytes), "nofile": 64, "fd_out": back_w,
              "max_bytes": max_bytes, "max_files": MAX_FILES}
    try:
        try:
            child = launch(iso, loader_source(_WORKSPACE_MODE), config,
                           {"main.py": code.encode("utf-8", "surrogatepass"),
                            WORKSPACE_FILE: json.dumps(packed).encode("ascii")},
                           pass_fds=(back_w,), max_output_bytes=max_output_bytes,
                           tmpfs_bytes=tmpfs_mb << 20,
                           packages=allowed_packages(tuple(packages)) if packages else None)
        finally:
            os.close(back_w)
    except OSError as exc:
        os.close(back_r)
        return WorkspaceRun(SandboxResult(False, "error", "", "", time.monotonic() - start,
                                          reason=f"could not start the interpreter: {exc}",
                                          isolation=iso.label()), None,
                            "the program did not start")
    back = Capture(max_bytes * 4 // 3 + 65_536)
    try:
        timed_out = pump([child], {back_r: back}, start + timeout_s, lambda: False)
        if not timed_out and not child.reap(start + timeout_s):
            timed_out = True
    finally:
        os.close(back_r)
        child.finish()
    result = ended(child, timed_out, cpu_limit, tmpfs_mb, start, iso)
    status, reason = result.status, result.reason
    if status in ("timeout", "memory") or child.disk_exceeded:
        return WorkspaceRun(result, None, f"file changes discarded: {reason}")
    if back.dropped:
        return WorkspaceRun(result, None,
                            f"file changes discarded: its files hold more than {max_bytes} bytes")
    if not back.data:
        return WorkspaceRun(result, None, "the program's files did not come back")
    got, note = _decode_back(bytes(back.data), max_bytes)
    return WorkspaceRun(result, got, note)
