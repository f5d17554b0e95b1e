"""Starting sandboxed interpreters and reading what they print (the process plumbing of
:mod:`clstream.judges.sandbox`; docs/design.md §7).

:func:`launch` starts the loader (:mod:`clstream.judges.loader`) inside the isolation of
:mod:`clstream.judges.isolation`: under bubblewrap the program's files arrive read-only through
memory files and the working directory is a private size-capped tmpfs; unisolated (only when a
caller opted in) they are written to a temporary host directory. :func:`pump` reads every
output of one or more running interpreters without blocking on any, until the caller is done
or the deadline passes; :class:`Launched` kills, reaps and cleans up after one. A single run
(:func:`clstream.judges.sandbox.run_python`) and the two-sandbox checks of
:mod:`clstream.judges.codecheck` both go through here.

Output is kept up to a cap per stream and decoded with ``replace``: text crossing the boundary
is never trusted to be valid Unicode.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from clstream.judges.isolation import (
    DATA_DIR,
    PACKAGES_DIR,
    PACKAGES_ENV,
    SANDBOX_ENV,
    Isolation,
    PackageSet,
    seccomp_fd,
)

__all__ = ["Capture", "Launched", "launch", "pump"]

POLL_S = 0.05  # how often a tmpfs without a size option is measured


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
