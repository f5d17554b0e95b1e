"""Run untrusted Python (model-written code) in a guarded subprocess (SPECS §2.3, code evaluator).

SeqMem-Eval scores HumanEval-style answers by executing them with the task's tests; the
harness must survive whatever the program does. Each run gets:

- a fresh ``python -I -B`` interpreter (isolated mode: no user site, no PYTHON* variables, no
  bytecode written) in its own process group, with a scratch directory as cwd, HOME and
  TMPDIR, which is removed afterwards;
- resource limits (address space, CPU seconds, file size, no core files, few descriptors, no
  new processes) applied by a loader inside the child before any user code runs. The loader
  sets them instead of a ``preexec_fn``: ``preexec_fn`` is unsafe when the calling process has
  threads (an async harness does), and the child-side loader is equally early for user code;
- an audit hook (``sys.addaudithook``; hooks cannot be removed once added) that ends the
  program on any attempt to open a socket or resolve a name, start a process (``os.system``,
  ``os.fork``, ``os.exec*``, ``os.posix_spawn``, ``subprocess``, ``pty``, multiprocessing), load
  ``ctypes``/cffi or a sub-interpreter, raise its limits, kill another process, or write,
  create, move or delete files outside the scratch directory (paths are resolved through
  symlinks; writes through directory descriptors are refused);
- a wall-clock deadline after which the whole process group is killed.

Exit status is decided by the loader: 0 only when the program ran to its end. ``sys.exit()``
and ``os._exit()`` before the end count as failures, so a program cannot skip its own tests.

Threat model: this stops runaway, sloppy and casually misbehaving generated code. It is not a
boundary against code written to attack this loader (a determined program can still, e.g.,
tamper with the interpreter's memory); run the harness in a container for that.
"""

from __future__ import annotations

import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "fail", "timeout", "memory", "forbidden", "error"]

EXIT_FORBIDDEN = 113
EXIT_MEMORY = 114
EXIT_EARLY = 115
MARKER = "clstream-sandbox:"

_LOADER = r"""
import sys
def _main():
    import builtins, os, posix, resource, stat, traceback
    root, program, as_main = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    mem, cpu, fsize, nofile = (int(v) for v in sys.argv[4:8])
    def limit(which, soft, hard):
        cur_soft, cur_hard = resource.getrlimit(which)
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        resource.setrlimit(which, (soft, hard))
    limit(resource.RLIMIT_AS, mem, mem)
    limit(resource.RLIMIT_CPU, cpu, cpu + 1)
    limit(resource.RLIMIT_FSIZE, fsize, fsize)
    limit(resource.RLIMIT_CORE, 0, 0)
    limit(resource.RLIMIT_NOFILE, nofile, nofile)
    limit(resource.RLIMIT_NPROC, 0, 0)
    with open(program, encoding="utf-8") as fh:
        source = fh.read()
    _exit, _write, _getcwd, _lstat = posix._exit, posix.write, posix.getcwd, posix.lstat
    _readlink, _fspath, _getpid, _islink = posix.readlink, posix.fspath, posix.getpid, stat.S_ISLNK
    write_flags = posix.O_WRONLY | posix.O_RDWR | posix.O_APPEND | posix.O_CREAT | posix.O_TRUNC
    deny_events = frozenset((
        "os.system", "os.fork", "os.forkpty", "os.exec", "os.posix_spawn", "os.spawn",
        "subprocess.Popen", "pty.spawn", "os.startfile", "webbrowser.open", "urllib.Request",
        "http.client.connect", "ftplib.connect", "smtplib.connect", "poplib.connect",
        "imaplib.open", "nntplib.connect", "telnetlib.Telnet.open", "resource.setrlimit",
        "resource.prlimit", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
        "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function", "ctypes.cdata",
        "ctypes.PyObj_FromPtr", "sqlite3.enable_load_extension", "sqlite3.load_extension",
        "sys.remote_exec"))
    deny_imports = frozenset((
        "os", "posix", "_posixsubprocess", "cffi", "_cffi_backend",
        "_xxsubinterpreters", "_xxinterpchannels", "_interpreters", "_interpchannels",
        "_interpqueues", "_testcapi", "_testinternalcapi", "_testmultiphase"))
    # event -> (indices of path arguments, indices of directory-descriptor arguments)
    path_events = {
        "os.remove": ((0,), (1,)), "os.rmdir": ((0,), (1,)), "os.mkdir": ((0,), (2,)),
        "os.rename": ((0, 1), (2, 3)), "os.link": ((0, 1), (2, 3)), "os.symlink": ((1,), (2,)),
        "os.chmod": ((0,), (2,)), "os.chown": ((0,), (3,)), "os.truncate": ((0,), ()),
        "os.utime": ((0,), (3,)), "os.setxattr": ((0,), ()), "os.removexattr": ((0,), ()),
        "os.chflags": ((0,), ()), "os.lchflags": ((0,), ()), "shutil.rmtree": ((0,), (1,)),
        "shutil.copyfile": ((1,), ()), "shutil.copymode": ((1,), ()),
        "shutil.copystat": ((1,), ()), "shutil.copytree": ((1,), ()),
        "shutil.move": ((0, 1), ()), "shutil.chown": ((0,), ()),
        "shutil.make_archive": ((0,), ()), "shutil.unpack_archive": ((1,), ()),
        "tempfile.mkstemp": ((0,), ()), "tempfile.mkdtemp": ((0,), ()),
        "sqlite3.connect": ((0,), ()), "dbm.open": ((0,), ())}

    def stop(code, why):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        try:
            _write(2, ("\n%s %s\n" % (MARKER, why)).encode("utf-8", "replace"))
        except BaseException:
            pass
        _exit(code)

    def resolve(path):
        if not path.startswith("/"):
            path = _getcwd() + "/" + path
        pending = [c for c in reversed(path.split("/")) if c]
        done, hops = [], 0
        while pending:
            part = pending.pop()
            if part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            candidate = "/" + "/".join(done + [part])
            try:
                is_link = _islink(_lstat(candidate).st_mode)
            except OSError:
                is_link = False
            if not is_link:
                done.append(part)
                continue
            hops += 1
            if hops > 40:
                raise OSError("too many symbolic links")
            target = _readlink(candidate)
            if target.startswith("/"):
                done = []
            pending.extend(c for c in reversed(target.split("/")) if c)
        return "/" + "/".join(done)

    def inside(path):
        if isinstance(path, int):
            path = _readlink("/proc/self/fd/%d" % path)
        path = _fspath(path)
        if isinstance(path, bytes):
            path = path.decode("utf-8", "surrogateescape")
        if path in (":memory:", "") or path == "/dev/null":
            return True
        real = resolve(path)
        return real == root or real.startswith(root + "/")

    def check(event, args):
        if event in deny_events or event.startswith("socket."):
            return "%s is not allowed" % event
        if event == "os.kill" or event == "os.killpg":
            return None if args[0] == _getpid() else "%s of another process" % event
        if event == "ctypes.dlopen":
            # importing ctypes (numpy does) opens the main program only; named libraries are
            # refused, and foreign calls and symbol lookups are refused above
            return None if args[0] is None else "loading native library %r" % (args[0],)
        if event == "import":
            return "importing %s is not allowed" % args[0] if args[0] in deny_imports else None
        if event == "open":
            path, mode, flags = args
            writing = (flags & write_flags) if isinstance(flags, int) else (
                mode is not None and any(c in mode for c in "wax+"))
            if not writing or isinstance(path, int):
                return None
            if mode is None:
                raw = _fspath(path)
                if not raw.startswith("/" if isinstance(raw, str) else b"/"):
                    return "os.open for writing needs an absolute path"
            return None if inside(path) else "writing %r outside the sandbox" % (path,)
        spec = path_events.get(event)
        if spec is None:
            return None
        paths, dirfds = spec
        for i in dirfds:
            if i < len(args) and args[i] not in (None, -1):
                return "%s relative to a directory descriptor" % event
        for i in paths:
            if i < len(args) and args[i] is not None and not inside(args[i]):
                return "%s on %r outside the sandbox" % (event, args[i])
        return None

    def hook(event, args):
        try:
            why = check(event, args)
        except BaseException as exc:
            why = "%s could not be checked (%s)" % (event, type(exc).__name__)
        if why is not None:
            stop(EXIT_FORBIDDEN, "forbidden: " + why)

    def early_exit(code=0):
        raise SystemExit(code)

    import _posixsubprocess
    def no_fork_exec(*args, **kwargs):
        stop(EXIT_FORBIDDEN, "forbidden: starting a process is not allowed")
    _posixsubprocess.fork_exec = no_fork_exec
    os._exit = posix._exit = early_exit
    for name in ("mkfifo", "mknod"):
        for module in (os, posix):
            if hasattr(module, name):
                delattr(module, name)
    scope = {"__name__": "__main__" if as_main else "__sandbox__", "__file__": program,
             "__builtins__": builtins}
    sys.argv = [program]
    sys.addaudithook(hook)
    try:
        exec(compile(source, program, "exec"), scope)
    except MemoryError:
        scope.clear()
        stop(EXIT_MEMORY, "memory: MemoryError (limit %d MB)" % (mem >> 20))
    except SystemExit as exc:
        stop(EXIT_EARLY, "exit: the program called exit(%r) before its end" % (exc.code,))
    except BaseException as exc:
        try:
            traceback.print_exception(exc.with_traceback(exc.__traceback__.tb_next))
        except BaseException:
            pass
        stop(1, "fail: uncaught exception")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            stop(1, "fail: output could not be flushed")
    _exit(0)
"""


def _loader_source() -> str:
    constants = (
        f"MARKER = {MARKER!r}\nEXIT_FORBIDDEN = {EXIT_FORBIDDEN}\n"
        f"EXIT_MEMORY = {EXIT_MEMORY}\nEXIT_EARLY = {EXIT_EARLY}\n"
    )
    return constants + _LOADER + "_main()\n"


@dataclass(frozen=True)
class SandboxResult:
    """How a sandboxed program ended. ``passed`` iff ``status == "ok"``."""

    passed: bool
    status: Status
    stdout: str
    stderr: str
    duration: float
    returncode: int | None = None
    reason: str = ""
    cpu_s: float = 0.0
    max_rss_kb: int = 0


def _clip(data: bytes, dropped: int) -> str:
    text = data.decode("utf-8", errors="replace")
    return text + (f"\n[... {dropped} more bytes not kept]" if dropped else "")


def _remove_tree(path: str) -> None:
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            sub = os.path.join(dirpath, name)
            try:
                if not os.path.islink(sub):
                    os.chmod(sub, 0o700)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _reap(pid: int, deadline: float | None) -> tuple[int, float, int] | None:
    """Wait for ``pid`` (until ``deadline`` if given): (wait status, cpu seconds, max rss kB)."""
    while True:
        flags = 0 if deadline is None else os.WNOHANG
        got, status, usage = os.wait4(pid, flags)
        if got == pid:
            return status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def run_python(
    code: str,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    *,
    max_output_bytes: int = 64_000,
    file_size_mb: int = 16,
    max_open_files: int = 64,
    run_as_main: bool = True,
    python: str | None = None,
) -> SandboxResult:
    """Run ``code`` as a Python program under the guards of the module docstring.

    ``timeout_s`` is wall-clock; the CPU limit is the same number of seconds rounded up.
    ``run_as_main=False`` runs the program with ``__name__ != "__main__"`` so that
    ``if __name__ == "__main__":`` demo blocks in model output are skipped.
    Output beyond ``max_output_bytes`` per stream is read and dropped (counted, not kept).
    """
    if timeout_s <= 0 or memory_mb <= 0:
        raise ValueError("timeout_s and memory_mb must be positive")
    start = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="clstream-sandbox-")
    root = os.path.realpath(workdir)
    program = os.path.join(root, "main.py")
    proc: subprocess.Popen[bytes] | None = None
    try:
        with open(program, "w", encoding="utf-8") as fh:
            fh.write(code)
        argv = [
            python or sys.executable,
            "-I",
            "-B",
            "-c",
            _loader_source(),
            root,
            program,
            "1" if run_as_main else "0",
            str(memory_mb << 20),
            str(max(1, math.ceil(timeout_s))),
            str(file_size_mb << 20),
            str(max_open_files),
        ]
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": root,
            "TMPDIR": root,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        try:
            proc = subprocess.Popen(
                argv,
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            return SandboxResult(
                False,
                "error",
                "",
                "",
                time.monotonic() - start,
                reason=f"could not start the interpreter: {exc}",
            )
        return _collect(proc, start, start + timeout_s, max_output_bytes, math.ceil(timeout_s))
    finally:
        if proc is not None and proc.returncode is None:
            _kill_group(proc.pid)
            try:
                _reap(proc.pid, None)
            except ChildProcessError:
                pass
            proc.returncode = -signal.SIGKILL
        _remove_tree(workdir)


def _collect(
    proc: subprocess.Popen[bytes], start: float, deadline: float, cap: int, cpu_limit: int
) -> SandboxResult:
    assert proc.stdout is not None and proc.stderr is not None
    kept = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    dropped = dict.fromkeys(kept, 0)
    timed_out = False
    with selectors.DefaultSelector() as sel:
        for stream in (proc.stdout, proc.stderr):
            sel.register(stream, selectors.EVENT_READ)
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in sel.select(remaining):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                room = cap - len(kept[key.fd])
                kept[key.fd] += chunk[: max(room, 0)]
                dropped[key.fd] += max(len(chunk) - max(room, 0), 0)
    reaped = None if timed_out else _reap(proc.pid, deadline)
    if reaped is None:
        timed_out = True
        _kill_group(proc.pid)
        reaped = _reap(proc.pid, None)
    assert reaped is not None
    status_word, cpu_s, rss = reaped
    returncode = os.waitstatus_to_exitcode(status_word)
    proc.returncode = returncode
    proc.stdout.close()
    proc.stderr.close()
    stdout_b, stderr_b = list(kept.values())
    stdout_d, stderr_d = list(dropped.values())
    stderr = _clip(bytes(stderr_b), stderr_d)
    status, reason = _classify(returncode, timed_out, cpu_s, cpu_limit, stderr)
    return SandboxResult(
        status == "ok",
        status,
        _clip(bytes(stdout_b), stdout_d),
        stderr,
        time.monotonic() - start,
        returncode,
        reason,
        cpu_s,
        rss,
    )


def _classify(
    returncode: int, timed_out: bool, cpu_s: float, cpu_limit: int, stderr: str
) -> tuple[Status, str]:
    marked = [
        line[len(MARKER) :].strip() for line in stderr.splitlines() if line.startswith(MARKER)
    ]
    note = marked[-1] if marked else ""
    if timed_out:
        return "timeout", "wall-clock limit reached; process group killed"
    if returncode == 0:
        return "ok", ""
    if returncode == EXIT_FORBIDDEN:
        return "forbidden", note or "forbidden operation"
    if returncode == EXIT_MEMORY:
        return "memory", note or "memory limit reached"
    if returncode == -signal.SIGXCPU or (
        returncode == -signal.SIGKILL and cpu_s >= cpu_limit - 0.5
    ):
        return "timeout", f"CPU limit of {cpu_limit} s reached"
    if returncode == -signal.SIGKILL:
        return "memory", "killed by SIGKILL (out of memory)"
    if returncode < 0:
        return "error", f"killed by signal {signal.Signals(-returncode).name}"
    return "fail", note or f"exit status {returncode}"
