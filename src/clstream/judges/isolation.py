"""OS-level isolation for model-written code: bubblewrap namespaces plus a seccomp filter.

Every sandboxed interpreter (:mod:`clstream.judges.sandbox`, :mod:`clstream.judges.codecheck`)
is started by ``bwrap`` (Debian package ``bubblewrap``) with:

- new user, PID, network, mount, IPC, UTS and cgroup namespaces (``--unshare-all``; the
  sandbox user is uid/gid 65534 inside its own user namespace, and further user namespaces
  are refused with ``--disable-userns`` where bwrap and the kernel support it, and by the
  seccomp filter in any case). Where user namespaces cannot be created and the harness runs
  as root, the sandbox runs as uid 0 with every capability dropped instead;
- a file system made of read-only binds of the system directories an interpreter needs
  (``/usr`` and the ``/bin``, ``/lib*``, ``/sbin`` links or directories) and of the Python
  installation itself (``sys.base_prefix``; never the project, the virtual environment or
  ``/etc``), a fresh ``/proc`` of the new PID namespace (the harness's processes and their
  environments are invisible), a minimal read-only ``/dev``, and one private tmpfs, capped
  in size (``--size``), as the only writable place; the root is remounted read-only;
- an environment built from nothing (``--clearenv`` plus a few fixed variables), no
  descriptors but the ones passed on purpose, a new session (``--new-session``), death with
  the harness (``--die-with-parent``);
- a seccomp filter (classic BPF, built here, loaded by bwrap) that refuses new processes
  (``fork``, ``vfork``, ``clone`` without ``CLONE_THREAD``; ``clone3`` answers ENOSYS so
  threads fall back to ``clone``), ``ptrace``, reading other processes' memory, mounts,
  namespaces, keyrings, BPF, io_uring, perf, pidfd signals and module or kexec loading;
  a foreign system-call ABI kills the process. Creating processes is refused here because
  ``RLIMIT_NPROC`` does not bind processes whose host uid is 0, which they are when the
  harness runs as root.

Which variant works is probed once per process by starting a sandbox that checks its own
confinement (no capabilities, read-only root, writable tmpfs, no foreign environment, no
fork). If none works, :func:`resolve` refuses with :class:`IsolationUnavailable` (one line)
unless the caller opts in to running code unisolated (``allow_unisolated=True``), and
:func:`Isolation.label` says which one ran, for the run record.

**Allowed packages** (an explicit option, off by default): :func:`allowed_packages` turns a
list of top-level import names into read-only binds of exactly those installed packages
(their directory or module file, plus the ``<distribution>.libs`` directories of vendored
native libraries their wheels ship) under :data:`PACKAGES_DIR`, which the loader puts first
on ``sys.path``. Nothing else of site-packages, the virtual environment or the project is
visible; every other guarantee above stays (no network, read-only system, capped tmpfs,
empty environment, seccomp). Names that are not installed are left out, so a caller can say
what is available. Used by the sales workspace (docs/clbench.md §4.3) for numpy, scipy and
scikit-learn.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from clstream.core.errors import ClstreamError

SANDBOX_UID = 65534
DATA_DIR = "/run/clstream"  # read-only files given to a sandbox (program, job)
PACKAGES_DIR = "/run/clstream-packages"  # read-only allowed packages, first on sys.path
SANDBOX_ENV = {
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONIOENCODING": "utf-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
PACKAGES_ENV = {"JOBLIB_MULTIPROCESSING": "0"}  # joblib: serial, without probing /dev/shm
UNSAFE_FLAG = "--unsafe-unisolated-code"


class IsolationUnavailable(ClstreamError):
    """No OS-level sandbox can be started and running code unisolated was not allowed."""


@dataclass(frozen=True)
class Isolation:
    """How sandboxed interpreters are started: ``kind`` is ``"bwrap"`` or ``"none"``."""

    kind: Literal["bwrap", "none"]
    python: str
    bwrap: str = ""
    version: str = ""
    userns: bool = False
    disable_userns: bool = False
    size_option: bool = False
    seccomp: bool = False
    binds: tuple[tuple[str, str, str], ...] = field(default=(), repr=False)
    note: str = ""

    @property
    def isolated(self) -> bool:
        return self.kind == "bwrap"

    def label(self) -> str:
        """One line for run records: what confined the code."""
        if not self.isolated:
            note = f"; {self.note}" if self.note else ""
            return "none: ran unisolated (explicit opt-in)" + note
        parts = ["user" if self.userns else "root-without-capabilities",
                 "pid, net, mount, ipc, uts namespaces",
                 "seccomp" if self.seccomp else "no seccomp on this architecture",
                 "size-capped tmpfs" if self.size_option else "polled tmpfs cap"]
        return f"bubblewrap {self.version}: " + ", ".join(parts)

    def python_argv(self) -> list[str]:
        """The interpreter and its flags (``-I`` is not used: it implies ``-E``, which would
        drop PYTHONHASHSEED; the environment is built from nothing instead)."""
        return [self.python, "-s", "-S", "-B", "-P"]

    def bwrap_argv(
        self,
        workdir: str,
        tmpfs_bytes: int,
        data_fds: Sequence[tuple[int, str]] = (),
        seccomp_fd: int | None = None,
        info_fd: int | None = None,
        packages: PackageSet | None = None,
    ) -> list[str]:
        """bwrap and its options up to ``--``; ``data_fds`` are (fd, name) files placed
        read-only under :data:`DATA_DIR`; ``packages`` are bound read-only under
        :data:`PACKAGES_DIR`."""
        argv = [self.bwrap, "--unshare-all"]
        if self.userns:
            argv += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
            if self.disable_userns:
                argv += ["--disable-userns"]
        if os.geteuid() == 0:
            argv += ["--cap-drop", "ALL"]
        argv += ["--hostname", "sandbox", "--die-with-parent", "--new-session", "--clearenv"]
        env = {**SANDBOX_ENV, "HOME": workdir, "TMPDIR": workdir,
               **(PACKAGES_ENV if packages is not None and packages.binds else {})}
        for key, value in env.items():
            argv += ["--setenv", key, value]
        for kind, src, dest in self.binds:
            argv += [kind, src, dest]
        argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
        if self.userns:
            argv += ["--perms", "1777"]
        if self.size_option:
            argv += ["--size", str(tmpfs_bytes)]
        argv += ["--tmpfs", workdir]
        for fd, name in data_fds:
            argv += ["--ro-bind-data", str(fd), f"{DATA_DIR}/{name}"]
        for host, entry in (packages.binds if packages is not None else ()):
            argv += ["--ro-bind", host, f"{PACKAGES_DIR}/{entry}"]
        if seccomp_fd is not None:
            argv += ["--seccomp", str(seccomp_fd)]
        if info_fd is not None:
            argv += ["--info-fd", str(info_fd)]
        argv += ["--chdir", workdir, "--remount-ro", "/", "--"]
        return argv


# ---------------------------------------------------------------------------- allowed packages


@dataclass(frozen=True)
class PackageSet:
    """Installed packages a sandbox may import: ``names`` (the import names found, the
    required dependencies after those named), ``binds``, (host path, entry name under
    :data:`PACKAGES_DIR`) pairs, and the named packages ``missing`` here."""

    names: tuple[str, ...] = ()
    binds: tuple[tuple[str, str], ...] = ()
    missing: tuple[str, ...] = ()


@functools.lru_cache(maxsize=1)
def _distributions_of() -> dict[str, list[str]]:
    """Import name -> the distributions that provide it."""
    try:
        return {k: list(v) for k, v in importlib.metadata.packages_distributions().items()}
    except Exception:  # a broken metadata entry must not break the sandbox
        return {}


def _required_imports(dist: str) -> list[str]:
    """The import names of the distributions ``dist`` requires unconditionally (no extra)."""
    try:
        requires = importlib.metadata.requires(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    wanted = set()
    for line in requires:
        requirement, _, marker = line.partition(";")
        if "extra" in marker:
            continue
        name = re.split(r"[\s\[<>=!~(]", requirement.strip(), maxsplit=1)[0]
        wanted.add(re.sub(r"[-_.]+", "-", name).lower())
    return sorted(imp for imp, dists in _distributions_of().items()
                  if any(re.sub(r"[-_.]+", "-", d).lower() in wanted for d in dists)
                  and imp.isidentifier())


def _distribution_libs(name: str, home: str) -> list[str]:
    """The ``<distribution>.libs`` directories next to package ``name`` (vendored shared
    libraries that its extension modules load through ``$ORIGIN`` run paths)."""
    out = []
    for dist in {name, *_distributions_of().get(name, [])}:
        entry = f"{dist.replace('-', '_')}.libs"
        if os.path.isdir(os.path.join(home, entry)) and entry not in out:
            out.append(entry)
    return sorted(out)


@functools.lru_cache(maxsize=16)
def allowed_packages(names: tuple[str, ...]) -> PackageSet:
    """Read-only binds of the installed top-level packages ``names`` (import names such as
    ``"numpy"``, ``"sklearn"``) and of what their distributions require unconditionally
    (scikit-learn brings scipy, joblib, threadpoolctl, narwhals; extras are never followed).
    A package is bound whole: its directory (or module file) and its wheel's ``.libs``
    directory. Named packages that are not installed are listed in ``missing``."""
    found: list[str] = []
    missing: list[str] = []
    binds: dict[str, str] = {}
    queue = [(name, True) for name in names]
    seen: set[str] = set()
    while queue:
        name, named = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if not name.isidentifier():
            raise ValueError(f"not a top-level import name: {name!r}")
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or spec.origin in (None, "built-in", "frozen"):
            if named:
                missing.append(name)
            continue
        locations = list(spec.submodule_search_locations or [])
        path = os.path.realpath(locations[0] if locations else str(spec.origin))
        home = os.path.dirname(path)
        binds[path] = os.path.basename(path)
        for entry in _distribution_libs(name, home):
            binds[os.path.join(home, entry)] = entry
        found.append(name)
        for dist in _distributions_of().get(name, []):
            queue += [(dep, False) for dep in _required_imports(dist)]
    return PackageSet(tuple(found), tuple(sorted(binds.items(), key=lambda b: b[1])),
                      tuple(missing))


# ------------------------------------------------------------------------------------ seccomp

_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL_PROCESS = 0x7FFF0000, 0x80000000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
_ARCHES: dict[str, tuple[int, bool, dict[str, int]]] = {
    # machine -> (AUDIT_ARCH_*, has the x32 ABI to refuse, system call numbers)
    "x86_64": (0xC000003E, True, {
        "fork": 57, "vfork": 58, "clone": 56, "clone3": 435, "ptrace": 101,
        "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "mount": 165,
        "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
        "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "reboot": 169,
        "swapon": 167, "swapoff": 168, "acct": 163, "syslog": 103, "quotactl": 179,
        "vhangup": 153, "iopl": 172, "ioperm": 173, "open_by_handle_at": 304,
        "name_to_handle_at": 303, "pidfd_open": 434, "pidfd_send_signal": 424,
        "pidfd_getfd": 438, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442}),
    "aarch64": (0xC00000B7, False, {
        "clone": 220, "clone3": 435, "ptrace": 117, "process_vm_readv": 270,
        "process_vm_writev": 271, "kcmp": 272, "mount": 40, "umount2": 39, "pivot_root": 41,
        "chroot": 51, "unshare": 97, "setns": 268, "keyctl": 219, "add_key": 217,
        "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "kexec_load": 104,
        "kexec_file_load": 294, "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89,
        "syslog": 116, "quotactl": 60, "vhangup": 58, "open_by_handle_at": 265,
        "name_to_handle_at": 264, "pidfd_open": 434, "pidfd_send_signal": 424,
        "pidfd_getfd": 438, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442}),
}
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@functools.lru_cache(maxsize=1)
def seccomp_program() -> bytes | None:
    """The filter as struct sock_filter records, or None on an architecture without a table."""
    machine = _MACHINES.get(platform.machine().lower())
    if machine is None:
        return None
    audit_arch, x32, numbers = _ARCHES[machine]
    prog = [_insn(_BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
            _insn(_BPF_JEQ, 1, 0, audit_arch),
            _insn(_BPF_RET, 0, 0, _RET_KILL_PROCESS),
            _insn(_BPF_LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
    if x32:
        prog += [_insn(_BPF_JGE, 0, 1, 0x40000000), _insn(_BPF_RET, 0, 0, 0x50000 | _EPERM)]
    for name, nr in numbers.items():
        if name in ("clone", "clone3"):
            continue
        prog += [_insn(_BPF_JEQ, 0, 1, nr), _insn(_BPF_RET, 0, 0, 0x50000 | _EPERM)]
    prog += [_insn(_BPF_JEQ, 0, 1, numbers["clone3"]), _insn(_BPF_RET, 0, 0, 0x50000 | _ENOSYS)]
    # clone: a thread (CLONE_THREAD in the low word of the first argument) is allowed
    prog += [_insn(_BPF_JEQ, 0, 3, numbers["clone"]),
             _insn(_BPF_LD_W_ABS, 0, 0, 16 if sys.byteorder == "little" else 20),
             _insn(_BPF_JSET, 1, 0, _CLONE_THREAD),
             _insn(_BPF_RET, 0, 0, 0x50000 | _EPERM),
             _insn(_BPF_RET, 0, 0, _RET_ALLOW)]
    return b"".join(prog)


def seccomp_fd() -> int | None:
    """A pipe read end holding the filter (bwrap reads it to EOF), or None."""
    program = seccomp_program()
    if program is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: fits the pipe buffer
    finally:
        os.close(write)
    return read


# ------------------------------------------------------------------------------------ probing

_PROBE = r"""
import os, sys
status = open('/proc/self/status').read()
assert '\nCapEff:\t0000000000000000\n' in status, 'capabilities left'
for path in ('/probe', '/usr/probe', '/dev/probe'):
    try:
        open(path, 'w').close()
    except OSError:
        pass
    else:
        raise AssertionError(path + ' is writable')
with open(os.path.join(os.getcwd(), 'probe'), 'w') as fh:
    fh.write('x')
assert set(os.environ) <= set(sys.argv[1].split(',')), sorted(os.environ)
assert open('/proc/1/environ', 'rb').read() == b'', 'environment of PID 1 visible'
if sys.argv[2] == '1':
    try:
        pid = os.fork()
    except OSError:
        pass
    else:
        if pid == 0:
            os._exit(0)
        raise AssertionError('fork was allowed')
print('clstream-probe-ok')
"""


def _system_binds(python: str) -> tuple[tuple[str, str, str], ...]:
    binds: list[tuple[str, str, str]] = []
    if os.path.isdir("/usr"):
        binds.append(("--ro-bind", "/usr", "/usr"))
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            binds.append(("--symlink", os.readlink(top), top))
        elif os.path.isdir(top):
            binds.append(("--ro-bind", top, top))
    covered = ["/usr"] + [dest for _, _, dest in binds]
    wanted = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix),
              os.path.dirname(os.path.dirname(python))}
    for path in sorted(wanted):
        if path == "/" or any(path == c or path.startswith(c + "/") for c in covered):
            continue
        binds.append(("--ro-bind", path, path))
        covered.append(path)
    return tuple(binds)


def _bwrap_features(bwrap: str) -> tuple[str, str]:
    try:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True,
                                 timeout=10, env={}).stdout.strip()
        helptext = subprocess.run([bwrap, "--help"], capture_output=True, text=True,
                                  timeout=10, env={}).stdout
    except (OSError, subprocess.SubprocessError):
        return "", ""
    return version.removeprefix("bubblewrap").strip(), helptext


def _probe(iso: Isolation) -> str:
    """'' when a sandbox of this variant starts and is confined, else why not."""
    workdir = "/tmp/clstream-probe"
    sec = seccomp_fd() if iso.seccomp else None
    allowed = ",".join([*SANDBOX_ENV, "HOME", "TMPDIR", "PWD"])
    argv = iso.bwrap_argv(workdir, 1 << 20, seccomp_fd=sec) + iso.python_argv() + [
        "-c", _PROBE, allowed, "1" if iso.seccomp else "0"]
    try:
        done = subprocess.run(argv, capture_output=True, env={}, timeout=30,
                              pass_fds=() if sec is None else (sec,))
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    finally:
        if sec is not None:
            os.close(sec)
    if done.returncode == 0 and b"clstream-probe-ok" in done.stdout:
        return ""
    lines = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def find_bwrap() -> str | None:
    """bwrap on PATH, else in the usual places."""
    usual = ("/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap")
    return shutil.which("bwrap") or next((p for p in usual if os.access(p, os.X_OK)), None)


_DETECTED: dict[str, Isolation | str] = {}
_DETECT_LOCK = threading.Lock()


def detect(python: str | None = None) -> Isolation | str:
    """The working bubblewrap variant for ``python`` (default: this interpreter), or the reason
    there is none. Probed once per process and interpreter."""
    interpreter = os.path.realpath(python or sys.executable)
    with _DETECT_LOCK:
        if interpreter not in _DETECTED:
            _DETECTED[interpreter] = _detect(interpreter)
        return _DETECTED[interpreter]


def _detect(interpreter: str) -> Isolation | str:
    bwrap = find_bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    version, helptext = _bwrap_features(bwrap)
    if not helptext:
        return f"{bwrap} does not run"
    base = Isolation(
        "bwrap", interpreter, bwrap=bwrap, version=version or "?",
        size_option="--size" in helptext, seccomp=seccomp_program() is not None,
        binds=_system_binds(interpreter))
    variants = []
    if "--perms" in helptext:  # to make the tmpfs writable by the sandbox user
        if "--disable-userns" in helptext:
            variants.append(dataclasses.replace(base, userns=True, disable_userns=True))
        if base.seccomp:  # the filter refuses new user namespaces by itself
            variants.append(dataclasses.replace(base, userns=True))
    if os.geteuid() == 0:
        variants.append(base)
    reasons = []
    for iso in variants:
        why = _probe(iso)
        if not why:
            return iso
        reasons.append(why)
    if not variants:
        return (f"bubblewrap {version} lacks --perms (needs 0.5 or later) and the harness is "
                "not root")
    return f"bubblewrap {version} could not start a confined sandbox ({reasons[-1]})"


def resolve(allow_unisolated: bool = False, python: str | None = None) -> Isolation:
    """The isolation to run code under; without bubblewrap, refuse (one line) unless
    ``allow_unisolated``."""
    found = detect(python)
    if isinstance(found, Isolation):
        return found
    if allow_unisolated:
        return unisolated(python, note=found)
    raise IsolationUnavailable(
        f"refusing to run model-written code: {found}; install bubblewrap (Debian/Ubuntu: "
        f"apt-get install bubblewrap) or pass {UNSAFE_FLAG} to run it unisolated")


def unisolated(python: str | None = None, note: str = "") -> Isolation:
    """Plain subprocesses with resource limits and audit hooks only (explicit opt-in)."""
    return Isolation("none", os.path.realpath(python or sys.executable), note=note)
