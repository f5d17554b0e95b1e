"""Scoring a model-written function against a task's tests so that the verdict cannot be forged.

docs/seqmem.md §4.1 runs the task's tests against the program in a sandbox; docs/design.md §7 asks that
the verdict cannot be forged from inside. Running the tests in the same interpreter as the
candidate cannot give that: whatever the harness leaves in that process (exit codes, globals,
frames, a secret token, an HMAC key) the candidate can read or rebind, down to its own memory
through ``/proc/self/mem``. So the tests never run where the candidate runs:

- the **candidate** sandbox runs the prompt plus the model's completion (no tests, no
  reference solution) and then serves calls of the entry point: it reads a call (arguments as
  plain data) from a pipe and writes back the return value as plain data;
- the **checker** sandbox, a second bubblewrap sandbox with its own namespaces, runs the
  task's prompt (for helpers the tests use, e.g. HumanEval's ``poly``) and tests, with the
  entry point bound to a proxy that sends each call over the pipe and decodes the reply;
- the harness reads the verdict from a third pipe that only the checker holds.

What the candidate controls is the bytes it writes on its reply pipe, nothing else: the two
sandboxes share no process, file system, network or IPC namespace, so the candidate cannot
see, signal, trace or write to the checker or the harness. The checker decodes replies
strictly (JSON of None, bool, int, float, str, list and tagged tuple, dict, set, frozenset,
bytes, bytearray, complex) into fresh builtin objects, so the comparisons in the tests run on
plain values: no ``__eq__``, ``__hash__`` or ``__bool__`` of the candidate's reaches them
(subclasses such as ``Counter`` or ``IntEnum`` are converted to their base type inside the
candidate's sandbox, by code the candidate may rewrite: whatever it sends is just its answer).
A reply that is not well-formed, larger than the limit, or missing because the candidate
ended (``sys.exit``, ``os._exit``, a fresh ``posix._exit``, a signal, ``exec``) marks the
candidate gone, and a gone candidate fails the task even if the test code swallows the
exception. An exception raised by the candidate is re-raised in the checker as the builtin
exception of that name with its arguments (others, and ``StopIteration``, which would end a
``map`` or ``all`` in the tests early, as ``CandidateError``), so tests that expect an
exception work. The verdict is "passed" only when the checker ran every test to its end;
the harness accepts it only from the checker's own pipe, and only if it arrives before the
deadline (else the run is a timeout).

Limits of the design: a test that passes the entry point something that is not plain data
(a function, an object) cannot be run, and one that inspects the function object sees the
proxy; such a task gets status "error" rather than "fail". Mutations of list, dict, set and
bytearray arguments are copied back, as the tests would see them in one process. Both
sandboxes see the standard library only. Run unisolated (explicit opt-in, see
:func:`clstream.judges.isolation.resolve`), the two processes share the host's PID namespace
and the guarantees above do not hold; the verdict records that.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any

from clstream.judges.isolation import Isolation, resolve
from clstream.judges.loader import loader_source
from clstream.judges.processes import Capture, Launched, launch, pump
from clstream.judges.sandbox import Status, classify, clean_text

MAX_MESSAGE = 8 << 20  # bytes of one call or reply
GONE_GRACE_S = 1.0  # how long a candidate that stopped answering may take to exit

# The codec runs in both sandboxes: lenient (subclasses converted) where the candidate is,
# strict where the checker is.
_CODEC = r'''
import json as _json
_INF = float("inf")
_EXACT = (type(None), bool, int, str)
_MUTABLE = (list, dict, set, bytearray)
_SAFE_EXCEPTIONS = (
    "ArithmeticError", "AssertionError", "AttributeError", "BufferError", "EOFError",
    "Exception", "FloatingPointError", "ImportError", "IndexError", "KeyError",
    "LookupError", "MemoryError", "ModuleNotFoundError", "NameError", "NotImplementedError",
    "OSError", "OverflowError", "RecursionError", "RuntimeError", "TypeError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError",
    "ValueError", "ZeroDivisionError")

def _encode(value, lenient, depth=0):
    if depth > 100:
        raise ValueError("nested more than 100 levels")
    t = type(value)
    if t in _EXACT:
        return value
    if t is float:
        return {"f": repr(value)} if value != value or value in (_INF, -_INF) else value
    d = depth + 1
    if t is list:
        return [_encode(x, lenient, d) for x in value]
    if t is tuple:
        return {"t": [_encode(x, lenient, d) for x in value]}
    if t is dict:
        return {"d": [[_encode(k, lenient, d), _encode(x, lenient, d)] for k, x in value.items()]}
    if t is set:
        return {"s": [_encode(x, lenient, d) for x in value]}
    if t is frozenset:
        return {"z": [_encode(x, lenient, d) for x in value]}
    if t is bytes:
        return {"b": value.hex()}
    if t is bytearray:
        return {"y": value.hex()}
    if t is complex:
        return {"c": [_encode(value.real, lenient, d), _encode(value.imag, lenient, d)]}
    if lenient:
        if isinstance(value, int):
            return int.__add__(value, 0)
        if isinstance(value, float):
            return _encode(float.__float__(value), lenient, d)
        if isinstance(value, str):
            return str.__str__(value)
        for base in (list, tuple, dict, set, frozenset, bytes, bytearray):
            if isinstance(value, base):
                if base is dict:
                    return _encode(dict(dict.items(value)), lenient, d)
                return _encode(base(base.__iter__(value)), lenient, d)
    raise TypeError("%s is not plain data" % t.__name__)

def _decode(obj, depth=0):
    if depth > 100:
        raise ValueError("nested more than 100 levels")
    t = type(obj)
    if t in _EXACT or t is float:
        return obj
    d = depth + 1
    if t is list:
        return [_decode(x, d) for x in obj]
    if t is dict and len(obj) == 1:
        (tag, val), = obj.items()
        if tag == "f" and val in ("nan", "inf", "-inf"):
            return float(val)
        if tag == "b" and type(val) is str:
            return bytes.fromhex(val)
        if tag == "y" and type(val) is str:
            return bytearray.fromhex(val)
        if type(val) is list:
            if tag == "t":
                return tuple(_decode(x, d) for x in val)
            if tag == "s":
                return set(_decode(x, d) for x in val)
            if tag == "z":
                return frozenset(_decode(x, d) for x in val)
            if tag == "d":
                out = {}
                for pair in val:
                    if type(pair) is not list or len(pair) != 2:
                        raise ValueError("malformed dict item")
                    out[_decode(pair[0], d)] = _decode(pair[1], d)
                return out
            if tag == "c" and len(val) == 2 and all(type(x) in (int, float) for x in val):
                return complex(val[0], val[1])
    raise ValueError("not plain data")

def _dumps(obj):
    return (_json.dumps(obj, ensure_ascii=True, allow_nan=True) + "\n").encode("ascii")

def _write_all(write, fd, data):
    view = memoryview(data)
    while view:
        view = view[write(fd, view):]
'''

# Candidate side: after the program is loaded, serve calls of the entry point.
_SERVE = _CODEC + r'''
def _open_channel(cfg, os, json):
    return {"rfile": os.fdopen(cfg["fd_in"], "rb"), "fd": cfg["fd_out"], "write": os.write}

def _send(channel, obj):
    for stream in (sys.stdout, sys.stderr):  # the harness kills the sandbox once it is done
        try:
            stream.flush()
        except BaseException:
            pass
    _write_all(channel["write"], channel["fd"], obj if type(obj) is bytes else _dumps(obj))

def _loaded(channel, how, text):
    try:
        _send(channel, {"load": how, "error": text})
    except BaseException:
        pass

def _serve(channel, scope, cfg, stop, describe, _exit):
    entry, limit = cfg["entry"], cfg["max_msg"]
    fn = scope.get(entry)
    if not callable(fn):
        _loaded(channel, "error", "NameError: %s is not defined by the program" % entry)
        stop(1, "fail: the program does not define %s" % entry)
    _send(channel, {"ready": 1})
    rfile = channel["rfile"]
    while True:
        line = rfile.readline(limit + 1)
        if not line:
            stop(0, "done: no more calls")
        request = _json.loads(line)
        args, kwargs = _decode(request["a"]), _decode(request["k"])
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:
            reply = {"e": [type(exc).__name__, describe(exc)]}
            try:
                reply["ea"] = _encode(list(exc.args), True)
                _dumps(reply)
            except BaseException:
                reply.pop("ea", None)
        except BaseException as exc:
            _send(channel, {"x": type(exc).__name__})
            stop(EXIT_EARLY, "exit: %s raised during a test call" % type(exc).__name__)
        else:
            try:
                reply = {"r": _encode(value, True)}
                changed = [[i, _encode(a, True)] for i, a in enumerate(args)
                           if type(a) in _MUTABLE]
                if changed:
                    reply["m"] = changed
                reply = _dumps(reply)
            except BaseException as exc:
                reply = {"bad": "%s (%s)" % (type(value).__name__, describe(exc))}
        _send(channel, reply)
'''

# Checker side: the task's prompt and tests, the entry point bound to the proxy.
_CHECKER = _CODEC + r'''
import sys

def _main():
    import builtins, os, resource
    cfg = _json.loads(sys.argv[1])
    def limit(which, soft, hard):
        cur_soft, cur_hard = resource.getrlimit(which)
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        resource.setrlimit(which, (soft, hard))
    for which, value in ((resource.RLIMIT_AS, cfg["mem"]), (resource.RLIMIT_CORE, 0),
                         (resource.RLIMIT_FSIZE, 1 << 20), (resource.RLIMIT_NOFILE, 64)):
        limit(which, value, value)
    limit(resource.RLIMIT_CPU, cfg["cpu"], cfg["cpu"] + 1)
    with open(cfg["file:job.json"], "rb") as fh:
        job = _json.loads(fh.read())
    write, req_fd, vfd, max_msg = os.write, cfg["fd_req"], cfg["fd_verdict"], cfg["max_msg"]
    resp = os.fdopen(cfg["fd_resp"], "rb")
    state = {"calls": 0, "gone": "", "boundary": "", "raised": ""}
    exceptions = {n: getattr(builtins, n) for n in _SAFE_EXCEPTIONS if hasattr(builtins, n)}

    class CandidateGone(BaseException):
        pass

    class Boundary(BaseException):
        pass

    class CandidateError(Exception):
        pass

    def describe(exc):
        try:
            text = str(exc)
        except BaseException:
            text = ""
        name = type(exc).__name__
        return (name + ": " + text if text else name)[:2000]

    def verdict(passed, stage, error=""):
        if passed and (state["gone"] or state["boundary"]):
            passed, stage = False, "gone" if state["gone"] else "boundary"
            error = state["gone"] or state["boundary"]
        _write_all(write, vfd, _dumps({"passed": passed is True, "stage": stage,
                                       "error": error[:2000], "calls": state["calls"],
                                       "raised": state["raised"]}))
        os._exit(0)

    def gone(why):
        if not state["gone"]:
            state["gone"] = why
        raise CandidateGone

    def receive():
        try:
            line = resp.readline(max_msg + 1)
        except OSError:
            line = b""
        if not line:
            gone("the program ended before its tests finished")
        if not line.endswith(b"\n"):
            gone("the program's reply is larger than %d bytes" % max_msg)
        try:
            msg = _json.loads(line)
        except (ValueError, RecursionError):
            gone("the program's reply is not well-formed")
        if type(msg) is not dict:
            gone("the program's reply is not well-formed")
        return msg

    def candidate(*args, **kwargs):
        if state["gone"] or state["boundary"]:
            raise CandidateGone
        try:
            data = _dumps({"a": _encode(list(args), False), "k": _encode(kwargs, False)})
        except (TypeError, ValueError, RecursionError) as exc:
            state["boundary"] = "a test passes a value that cannot cross the sandbox (%s)" % exc
            raise Boundary
        if len(data) > max_msg:
            state["boundary"] = "a test call is larger than %d bytes" % max_msg
            raise Boundary
        try:
            _write_all(write, req_fd, data)
        except OSError:
            gone("the program ended before its tests finished")
        msg = receive()
        state["calls"] += 1
        if "r" in msg:
            try:
                value = _decode(msg["r"])
                for i, new in msg.get("m", ()):
                    new = _decode(new)
                    old = args[i]
                    if type(old) is type(new) and type(old) in (list, bytearray):
                        old[:] = new
                    elif type(old) is type(new) and type(old) in (dict, set):
                        old.clear()
                        old.update(new)
            except (TypeError, ValueError, RecursionError, IndexError, KeyError):
                gone("the program's reply is not well-formed")
            return value
        if "e" in msg:
            info = msg["e"]
            if type(info) is not list or len(info) != 2 or not all(type(x) is str for x in info):
                gone("the program's reply is not well-formed")
            name, text = info
            state["raised"] = name
            text = text[len(name) + 2:] if text.startswith(name + ": ") else (
                "" if text == name else text)
            cls = exceptions.get(name)
            if cls is None:
                raise CandidateError("%s: %s" % (name, text) if text else name)
            try:
                exc_args = _decode(msg["ea"]) if "ea" in msg else [text] if text else []
            except (TypeError, ValueError, RecursionError):
                exc_args = [text] if text else []
            if type(exc_args) is not list:
                exc_args = [text] if text else []
            try:
                error = cls(*exc_args)
            except BaseException:
                error = cls(text)
            raise error
        if "bad" in msg:
            raise TypeError("the function returned a value that is not plain data: %s"
                            % str(msg["bad"])[:300])
        if "x" in msg:
            gone("the program tried to end the interpreter (%s) during a test"
                 % str(msg["x"])[:100])
        gone("the program's reply is not well-formed")

    entry = job["entry_point"]
    candidate.__name__ = candidate.__qualname__ = entry
    try:
        hello = receive()
    except CandidateGone:
        verdict(False, "gone", state["gone"])
    if hello.get("ready") != 1:
        how, error = hello.get("load"), hello.get("error")
        if type(how) is not str or type(error) is not str:
            state["gone"] = "the program's reply is not well-formed"
            verdict(False, "gone", state["gone"])
        verdict(False, "load-" + how[:20], error)
    ns = {"__name__": "__check__", "__builtins__": builtins}
    try:
        exec(compile(job["prompt"], "<prompt>", "exec"), ns)
    except BaseException:
        pass  # the prompt is only a source of helpers; a stub that does not compile is fine
    ns[entry] = candidate
    try:
        code = compile(job["test"], "<test>", "exec")
    except BaseException as exc:
        verdict(False, "test-error", "the task's tests do not compile: " + describe(exc))
    try:
        exec(code, ns)
        check = ns.get("check")
        if callable(check):
            check(candidate)
    except CandidateGone:
        verdict(False, "gone", state["gone"])
    except Boundary:
        verdict(False, "boundary", state["boundary"])
    except BaseException as exc:
        verdict(False, "fail", describe(exc))
    verdict(True, "pass")

_main()
'''


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one solution. ``passed`` comes from the checker alone."""

    passed: bool
    status: Status
    reason: str
    error: str
    stdout: str
    stderr: str
    duration: float
    calls: int = 0
    isolation: str = ""
    unisolated: bool = False


def check_solution(
    program: str,
    entry_point: str,
    test: str,
    prompt: str = "",
    *,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    max_output_bytes: int = 64_000,
    file_size_mb: int = 16,
    tmpfs_mb: int = 64,
    max_open_files: int = 64,
    allow_unisolated: bool = False,
    isolation: Isolation | None = None,
) -> CheckResult:
    """Run ``program`` (prompt plus completion, without tests) in one sandbox and ``test``
    (HumanEval ``def check(candidate)``, or top-level asserts naming ``entry_point``) in
    another, as the module docstring describes. Without bubblewrap this raises
    :class:`~clstream.judges.isolation.IsolationUnavailable` unless ``allow_unisolated``."""
    if timeout_s <= 0 or memory_mb <= 0:
        raise ValueError("timeout_s and memory_mb must be positive")
    iso = isolation or resolve(allow_unisolated)
    start = time.monotonic()
    deadline = start + timeout_s
    cpu = max(1, math.ceil(timeout_s))
    job = json.dumps({"entry_point": entry_point, "test": test, "prompt": prompt},
                     ensure_ascii=True).encode("ascii")
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    ver_r, ver_w = os.pipe()
    children: list[Launched] = []
    try:
        try:
            children.append(launch(
                iso, loader_source(_SERVE),
                {"as_main": False, "mem": memory_mb << 20, "cpu": cpu,
                 "fsize": file_size_mb << 20, "nofile": max_open_files, "entry": entry_point,
                 "max_msg": MAX_MESSAGE, "fd_in": req_r, "fd_out": resp_w},
                {"main.py": program.encode("utf-8", "surrogatepass")},
                pass_fds=(req_r, resp_w), max_output_bytes=max_output_bytes,
                tmpfs_bytes=tmpfs_mb << 20))
            children.append(launch(
                iso, _CHECKER,
                {"mem": max(memory_mb, 256) << 20, "cpu": cpu + 1, "max_msg": MAX_MESSAGE,
                 "fd_req": req_w, "fd_resp": resp_r, "fd_verdict": ver_w},
                {"job.json": job}, pass_fds=(req_w, resp_r, ver_w),
                max_output_bytes=max_output_bytes, tmpfs_bytes=1 << 20))
        finally:
            for fd in (req_r, req_w, resp_r, resp_w, ver_w):
                os.close(fd)
        verdict = Capture(1 << 16)
        timed_out = pump(children, {ver_r: verdict}, deadline, lambda: verdict.closed)
        return _conclude(children, verdict, timed_out, deadline, cpu, iso, start)
    except OSError as exc:
        return CheckResult(False, "error", f"could not start the sandbox: {exc}", "", "", "",
                           time.monotonic() - start, isolation=iso.label(),
                           unisolated=not iso.isolated)
    finally:
        os.close(ver_r)
        for child in children:
            child.finish()


def _conclude(
    children: list[Launched],
    verdict_capture: Capture,
    timed_out: bool,
    deadline: float,
    cpu: int,
    iso: Isolation,
    start: float,
) -> CheckResult:
    candidate, checker = children
    verdict = _parse_verdict(verdict_capture) if verdict_capture.closed else None
    stage = str(verdict.get("stage", "")) if verdict else ""
    if not timed_out and stage == "gone":
        # let the candidate's own end (limit, forbidden operation, exit) explain the failure
        candidate.reap(min(deadline, time.monotonic() + GONE_GRACE_S))
    for child in children:
        child.finish()
    error = clean_text(str(verdict.get("error", ""))) if verdict else ""
    status: Status
    if timed_out:
        status, reason = "timeout", "wall-clock limit reached; the sandboxes were killed"
    elif candidate.disk_exceeded:
        status, reason = "forbidden", "the program wrote more than its disk allowance"
    elif verdict is None:
        status = "error"
        reason = (f"the test process ended without a verdict (exit status "
                  f"{checker.returncode()}): {_last_line(checker.stderr.text())}")
    elif verdict.get("passed") is True and stage == "pass":
        status, reason = "ok", ""
    elif stage == "gone":
        assert candidate.reaped is not None
        status, reason = classify(candidate.returncode(), False, candidate.reaped[1], cpu,
                                  candidate.stderr.text())
        if status in ("ok", "fail"):
            status, reason = "fail", error
    elif stage.startswith("load-"):
        how = stage.removeprefix("load-")
        status = "memory" if how == "memory" else "fail"
        reason = {"memory": "memory limit reached while loading the program",
                  "exit": "the program called exit before its tests ran"}.get(how, error)
    elif stage in ("boundary", "test-error"):
        status, reason = "error", error
    else:
        raised = str(verdict.get("raised", ""))
        memory = raised == "MemoryError" and error.startswith("MemoryError")
        status, reason = ("memory" if memory else "fail"), error
    calls = verdict.get("calls", 0) if verdict else 0
    return CheckResult(
        status == "ok", status, clean_text(reason), error, candidate.stdout.text(),
        candidate.stderr.text(), time.monotonic() - start,
        calls if isinstance(calls, int) else 0, iso.label(), not iso.isolated)


def _parse_verdict(capture: Capture) -> dict[str, Any] | None:
    try:
        verdict = json.loads(bytes(capture.data).decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None
    return verdict if isinstance(verdict, dict) else None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
