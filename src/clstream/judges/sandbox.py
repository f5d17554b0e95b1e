"""Run untrusted Python (model-written code) in an OS-level sandbox (docs/seqmem.md §4.6; docs/design.md §7).

Two layers, the outer one being the security boundary:

1. **Isolation** (:mod:`clstream.judges.isolation`): each interpreter starts inside bubblewrap
   with new user, PID, network, mount, IPC and UTS namespaces, a read-only system, a private
   size-capped tmpfs as its only writable place (its working directory, HOME and TMPDIR), an
   environment built from nothing, no descriptors but the ones given on purpose, and a seccomp
   filter that refuses new processes. At the deadline the sandbox's process group is killed;
   killing the namespace's PID 1 takes every process in it along. Without bubblewrap, code is
   refused unless the caller opts in to running it unisolated.
2. **Guards inside the interpreter** (the loader, which runs before any user code): resource
   limits (address space, CPU seconds, file size, no core files, few descriptors; no new
   processes where no seccomp filter refuses them), and an audit hook that ends the program on sockets, process creation, native
   libraries, signals to other processes, or writes outside the working directory. These give
   precise failure statuses ("forbidden", "memory"); they are not relied on for safety, since
   code in the same interpreter can reach and disable them.

:func:`run_python` runs a whole program and reports how it ended. Its ``status == "ok"`` means
the loader saw the program run to its end (``sys.exit``/``os._exit`` before the end count as
failures), which a program written against this loader can fake for itself: it is a report,
not a verdict. Scoring model-written code against tests goes through
:func:`clstream.judges.codecheck.check_solution`, whose verdict is decided outside the
candidate's sandbox. The process plumbing here (:func:`launch`, :func:`pump`) serves both.

Text crossing the boundary is never trusted to be valid Unicode: program text is encoded
with ``surrogatepass`` (and decoded the same way by the loader), output is decoded with
``replace``. The sandboxed interpreter sees the standard library only (no site-packages),
unless the caller names ``packages``: an explicit read-only allow-list of installed packages
(:func:`clstream.judges.isolation.allowed_packages`), bound whole and put first on
``sys.path``; the guard still refuses loading native libraries through ``ctypes``, while the
extension modules of an allowed package load as part of its import.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from clstream.judges.isolation import (
    DATA_DIR,
    PACKAGES_DIR,
    PACKAGES_ENV,
    SANDBOX_ENV,
    Isolation,
    PackageSet,
    allowed_packages,
    resolve,
    seccomp_fd,
)

Status = Literal["ok", "fail", "timeout", "memory", "forbidden", "error"]

EXIT_FORBIDDEN = 113
EXIT_MEMORY = 114
EXIT_EARLY = 115
MARKER = "clstream-sandbox:"
POLL_S = 0.05  # how often a tmpfs without a size option is measured

_LOADER = r"""
import sys
def _main():
    import builtins, json, os, posix, resource, stat, traceback
    cfg = json.loads(sys.argv[1])
    root, program, as_main = cfg["root"], cfg["file:main.py"], cfg["as_main"]
    mem, cpu, fsize, nofile = cfg["mem"], cfg["cpu"], cfg["fsize"], cfg["nofile"]
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
    if cfg["nproc"] >= 0:  # with the seccomp filter, processes are refused there instead
        limit(resource.RLIMIT_NPROC, cfg["nproc"], cfg["nproc"])
    with open(program, "rb") as fh:
        source = fh.read().decode("utf-8", "surrogatepass")
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
            # importing ctypes opens the main program only; named libraries are refused, and
            # foreign calls and symbol lookups are refused above
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

    def site_exit(code=None):  # exit() and quit() as the site module defines them
        raise SystemExit(code)

    def describe(exc):
        try:
            text = str(exc)
        except BaseException:
            text = ""
        name = type(exc).__name__
        return (name + ": " + text if text else name)[:1000]

    import _posixsubprocess
    def no_fork_exec(*args, **kwargs):
        stop(EXIT_FORBIDDEN, "forbidden: starting a process is not allowed")
    _posixsubprocess.fork_exec = no_fork_exec
    os._exit = posix._exit = early_exit
    builtins.exit = builtins.quit = site_exit
    for name in ("mkfifo", "mknod"):
        for module in (os, posix):
            if hasattr(module, name):
                delattr(module, name)
    channel = _open_channel(cfg, os, json)
    scope = {"__name__": "__main__" if as_main else "__sandbox__", "__file__": program,
             "__builtins__": builtins}
    sys.argv = [program]
    sys.path[:0] = cfg.get("paths", [])
    sys.addaudithook(hook)
    try:
        exec(compile(source, program, "exec"), scope)
    except MemoryError:
        scope.clear()
        _loaded(channel, "memory", "MemoryError")
        stop(EXIT_MEMORY, "memory: MemoryError (limit %d MB)" % (mem >> 20))
    except SystemExit as exc:
        _loaded(channel, "exit", "SystemExit(%r)" % (exc.code,))
        stop(EXIT_EARLY, "exit: the program called exit(%r) before its end" % (exc.code,))
    except BaseException as exc:
        try:
            traceback.print_exception(exc.with_traceback(exc.__traceback__.tb_next))
        except BaseException:
            pass
        _loaded(channel, "error", describe(exc))
        stop(1, "fail: uncaught exception")
    if channel is not None:
        _serve(channel, scope, cfg, stop, describe, _exit)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            stop(1, "fail: output could not be flushed")
    _exit(0)
"""

_RUN_MODE = r"""
def _open_channel(cfg, os, json):
    return None
def _loaded(channel, how, text):
    pass
def _serve(*args):
    pass
"""


def loader_source(mode: str = _RUN_MODE) -> str:
    """The loader program: constants, the mode's hooks (``_open_channel``, ``_loaded``,
    ``_serve``), the guard and ``_main()``."""
    constants = (
        f"MARKER = {MARKER!r}\nEXIT_FORBIDDEN = {EXIT_FORBIDDEN}\n"
        f"EXIT_MEMORY = {EXIT_MEMORY}\nEXIT_EARLY = {EXIT_EARLY}\n"
    )
    return constants + mode + _LOADER + "_main()\n"


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
    isolation: str = ""


_WORKDIR = re.compile(r"/tmp/clstream-sandbox-[0-9a-f]{12}")


def steady_paths(text: str) -> str:
    """``text`` (a program's output) with the sandbox's working directory, random per run,
    written as ``/sandbox``: what an agent is shown of its program's run -- a traceback's file
    names -- must be the same on every run of the same spec and seed."""
    return _WORKDIR.sub("/sandbox", text)


def clean_text(text: str) -> str:
    """``text`` with anything not encodable as UTF-8 (lone surrogates) replaced."""
    return text.encode("utf-8", "replace").decode("utf-8")


# ------------------------------------------------------------------------------------ plumbing


@dataclass
class Capture:
    """Bytes read from one descriptor: the first ``cap`` kept, the rest counted."""

    cap: int
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0
    closed: bool = False

    def add(self, chunk: bytes) -> None:
        room = max(self.cap - len(self.data), 0)
        self.data += chunk[:room]
        self.dropped += max(len(chunk) - room, 0)

    def text(self) -> str:
        text = bytes(self.data).decode("utf-8", errors="replace")
        return text + (f"\n[... {self.dropped} more bytes not kept]" if self.dropped else "")


@dataclass
class Launched:
    """One sandboxed interpreter: its process, captured output and where it works."""

    proc: subprocess.Popen[bytes]
    iso: Isolation
    workdir: str
    stdout: Capture
    stderr: Capture
    host_dir: str | None = None
    links_dir: str | None = None
    tmpfs_bytes: int = 0
    info: Capture | None = None
    info_fd: int | None = None
    child_pid: int | None = None
    disk_exceeded: bool = False
    reaped: tuple[int, float, int] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def returncode(self) -> int | None:
        """The exit code, a signal as a negative number (bwrap reports 128 + signal)."""
        if self.reaped is None:
            return None
        code = os.waitstatus_to_exitcode(self.reaped[0])
        if self.iso.isolated and 128 < code < 128 + signal.NSIG:
            return -(code - 128)
        return code

    def kill(self) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def reap(self, deadline: float | None) -> bool:
        """Wait for the process (until ``deadline`` if given); True once reaped."""
        if self.reaped is not None:
            return True
        while True:
            try:
                got, status, usage = os.wait4(self.proc.pid, 0 if deadline is None else os.WNOHANG)
            except ChildProcessError:
                self.reaped = (0, 0.0, 0)
                self.proc.returncode = 0
                return True
            if got == self.proc.pid:
                self.reaped = (status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def finish(self) -> None:
        """Kill, reap, close pipes and remove the host directory (idempotent)."""
        if self.reaped is None:
            self.kill()
            self.reap(None)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        if self.info_fd is not None:
            os.close(self.info_fd)
            self.info_fd = None
        for attr in ("host_dir", "links_dir"):
            path = getattr(self, attr)
            if path is not None:
                _remove_tree(path)
                setattr(self, attr, None)

    def poll_disk(self) -> None:
        """With no tmpfs size option: kill the sandbox once its tmpfs holds too much."""
        if self.child_pid is None or self.disk_exceeded or self.reaped is not None:
            return
        try:
            st = os.statvfs(f"/proc/{self.child_pid}/root{self.workdir}")
        except OSError:
            return
        if (st.f_blocks - st.f_bfree) * st.f_frsize > self.tmpfs_bytes:
            self.disk_exceeded = True
            self.kill()


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


def launch(
    iso: Isolation,
    loader: str,
    config: Mapping[str, object],
    files: Mapping[str, bytes],
    *,
    pass_fds: Sequence[int] = (),
    max_output_bytes: int = 64_000,
    tmpfs_bytes: int = 64 << 20,
    packages: PackageSet | None = None,
) -> Launched:
    """Start ``loader`` (run with ``-c``) in a sandbox of ``iso``. ``files`` are placed
    read-only (bwrap) or in the working directory (unisolated); ``config`` is passed as JSON
    in ``argv[1]`` with ``root`` (the working directory), each file's path (key
    ``file:<name>``) and ``paths`` (where ``packages`` are importable) added. Raises OSError
    when the process cannot be started."""
    if iso.isolated:
        return _launch_bwrap(iso, loader, config, files, pass_fds, max_output_bytes,
                             tmpfs_bytes, packages)
    host_dir = os.path.realpath(tempfile.mkdtemp(prefix="clstream-sandbox-"))
    links_dir = None
    try:
        if packages is not None and packages.binds:
            links_dir = os.path.realpath(tempfile.mkdtemp(prefix="clstream-packages-"))
            for host, entry in packages.binds:
                os.symlink(host, os.path.join(links_dir, entry))
            config = {**config, "paths": [links_dir]}
            extra_env: dict[str, str] = dict(PACKAGES_ENV)
        else:
            extra_env = {}
        paths = {}
        for name, data in files.items():
            paths[f"file:{name}"] = os.path.join(host_dir, name)
            with open(paths[f"file:{name}"], "wb") as fh:
                fh.write(data)
        cfg = {**config, **paths, "root": host_dir, "nproc": 0}
        env = {**SANDBOX_ENV, "HOME": host_dir, "TMPDIR": host_dir,
               "PATH": "/usr/bin:/bin", **extra_env}
        proc = subprocess.Popen(
            [*iso.python_argv(), "-c", loader, json.dumps(cfg)], cwd=host_dir, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, close_fds=True, pass_fds=tuple(pass_fds))
    except BaseException:
        _remove_tree(host_dir)
        if links_dir is not None:
            _remove_tree(links_dir)
        raise
    return Launched(proc, iso, host_dir, Capture(max_output_bytes), Capture(max_output_bytes),
                    host_dir=host_dir, links_dir=links_dir, tmpfs_bytes=tmpfs_bytes)


def _launch_bwrap(
    iso: Isolation,
    loader: str,
    config: Mapping[str, object],
    files: Mapping[str, bytes],
    pass_fds: Sequence[int],
    max_output_bytes: int,
    tmpfs_bytes: int,
    packages: PackageSet | None,
) -> Launched:
    workdir = f"/tmp/clstream-sandbox-{secrets.token_hex(6)}"
    owned: list[int] = []
    try:
        data_fds = []
        for name, data in files.items():
            fd = os.memfd_create(f"clstream-{name}")
            owned.append(fd)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.lseek(fd, 0, os.SEEK_SET)
            data_fds.append((fd, name))
        sec = seccomp_fd() if iso.seccomp else None
        if sec is not None:
            owned.append(sec)
        info_r = info_w = None
        if not iso.size_option:
            info_r, info_w = os.pipe()
            owned.append(info_w)
        # RLIMIT_NPROC would also refuse threads to a non-root harness; with the seccomp
        # filter it is not needed
        cfg = {**config, "root": workdir, "nproc": -1 if sec is not None else 0,
               **{f"file:{name}": f"{DATA_DIR}/{name}" for name in files}}
        if packages is not None and packages.binds:
            cfg["paths"] = [PACKAGES_DIR]
        argv = iso.bwrap_argv(workdir, tmpfs_bytes, data_fds, sec, info_w, packages)
        argv += [*iso.python_argv(), "-c", loader, json.dumps(cfg)]
        proc = subprocess.Popen(
            argv, env={}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
            pass_fds=(*pass_fds, *owned))
    except BaseException:
        if info_r is not None:
            os.close(info_r)
        raise
    finally:
        for fd in owned:
            os.close(fd)
    launched = Launched(proc, iso, workdir, Capture(max_output_bytes),
                        Capture(max_output_bytes), tmpfs_bytes=tmpfs_bytes)
    if info_r is not None:
        launched.info, launched.info_fd = Capture(4096), info_r
    return launched


def pump(
    launched: Iterable[Launched],
    extra: Mapping[int, Capture],
    deadline: float,
    done: Callable[[], bool],
) -> bool:
    """Read every output of ``launched`` and the ``extra`` descriptors until ``done()`` or
    all are at end of file; returns True when the deadline came first."""
    children = list(launched)
    with selectors.DefaultSelector() as sel:
        for child in children:
            assert child.proc.stdout is not None and child.proc.stderr is not None
            sel.register(child.proc.stdout.fileno(), selectors.EVENT_READ, child.stdout)
            sel.register(child.proc.stderr.fileno(), selectors.EVENT_READ, child.stderr)
            if child.info_fd is not None and child.info is not None:
                sel.register(child.info_fd, selectors.EVENT_READ, (child, child.info))
        for fd, capture in extra.items():
            sel.register(fd, selectors.EVENT_READ, capture)
        polled = [c for c in children if not c.iso.size_option and c.iso.isolated]
        while sel.get_map() and not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            for key, _ in sel.select(min(remaining, POLL_S) if polled else remaining):
                chunk = os.read(key.fd, 65536)
                target = key.data
                if isinstance(target, tuple):
                    child, capture = target
                    capture.add(chunk)
                    if not chunk:
                        sel.unregister(key.fd)
                        child.child_pid = _child_pid(capture)
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    target.closed = True
                    continue
                target.add(chunk)
            for child in polled:
                child.poll_disk()
    return False


def _child_pid(capture: Capture) -> int | None:
    try:
        info = json.loads(bytes(capture.data).decode("utf-8", "replace"))
        pid = info.get("child-pid") if isinstance(info, dict) else None
    except ValueError:
        return None
    return pid if isinstance(pid, int) else None


# ------------------------------------------------------------------------------------ run_python


def run_python(
    code: str,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    *,
    max_output_bytes: int = 64_000,
    file_size_mb: int = 16,
    max_open_files: int = 64,
    tmpfs_mb: int = 64,
    run_as_main: bool = True,
    python: str | None = None,
    allow_unisolated: bool = False,
    isolation: Isolation | None = None,
    packages: Sequence[str] = (),
    package_set: PackageSet | None = None,
) -> SandboxResult:
    """Run ``code`` as a Python program under the guards of the module docstring.

    ``timeout_s`` is wall-clock; the CPU limit is the same number of seconds rounded up.
    ``run_as_main=False`` runs the program with ``__name__ != "__main__"`` so that
    ``if __name__ == "__main__":`` demo blocks in model output are skipped.
    Output beyond ``max_output_bytes`` per stream is read and dropped (counted, not kept).
    ``tmpfs_mb`` caps everything the program writes. Without bubblewrap this raises
    :class:`~clstream.judges.isolation.IsolationUnavailable` unless ``allow_unisolated``;
    ``isolation`` forces a variant. ``packages`` names installed packages the program may
    import (read-only; none by default: the standard library only); ``package_set`` gives
    the binds directly instead (a prepared tree such as CL-Bench's repository testbed).
    """
    if timeout_s <= 0 or memory_mb <= 0:
        raise ValueError("timeout_s and memory_mb must be positive")
    iso = isolation or resolve(allow_unisolated, python)
    start = time.monotonic()
    cpu_limit = max(1, math.ceil(timeout_s))
    config = {"as_main": run_as_main, "mem": memory_mb << 20, "cpu": cpu_limit,
              "fsize": file_size_mb << 20, "nofile": max_open_files}
    program = code.encode("utf-8", "surrogatepass")
    try:
        child = launch(iso, loader_source(), config, {"main.py": program},
                       max_output_bytes=max_output_bytes, tmpfs_bytes=tmpfs_mb << 20,
                       packages=package_set or (allowed_packages(tuple(packages)) if packages
                                                else None))
    except OSError as exc:
        return SandboxResult(False, "error", "", "", time.monotonic() - start,
                             reason=f"could not start the interpreter: {exc}",
                             isolation=iso.label())
    try:
        deadline = start + timeout_s
        timed_out = pump([child], {}, deadline, lambda: False)
        if not timed_out and not child.reap(deadline):
            timed_out = True
    finally:
        child.finish()
    return ended(child, timed_out, cpu_limit, tmpfs_mb, start, iso)


def ended(child: Launched, timed_out: bool, cpu_limit: int, tmpfs_mb: int, start: float,
          iso: Isolation) -> SandboxResult:
    """How a finished (reaped) sandboxed program ended: its status and reason from the exit,
    the CPU time and the disk cap, and what it printed."""
    assert child.reaped is not None
    _, cpu_s, rss = child.reaped
    returncode = child.returncode()
    stderr = child.stderr.text()
    status, reason = classify(returncode, timed_out, cpu_s, cpu_limit, stderr)
    if child.disk_exceeded:
        status, reason = "forbidden", f"wrote more than {tmpfs_mb} MB"
    return SandboxResult(status == "ok", status, child.stdout.text(), stderr,
                         time.monotonic() - start, returncode, reason, cpu_s, rss, iso.label())


def marker_note(stderr: str) -> str:
    marked = [
        line[len(MARKER) :].strip() for line in stderr.splitlines() if line.startswith(MARKER)
    ]
    return marked[-1] if marked else ""


def classify(
    returncode: int | None, timed_out: bool, cpu_s: float, cpu_limit: int, stderr: str
) -> tuple[Status, str]:
    """Status and reason of a finished run from its exit code and the loader's marker."""
    note = marker_note(stderr)
    if timed_out:
        return "timeout", "wall-clock limit reached; the sandbox was killed"
    if returncode == 0:
        return "ok", ""
    if returncode is None:
        return "error", "the process could not be waited for"
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
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return "error", f"killed by signal {name}"
    return "fail", note or f"exit status {returncode}"
