"""The loader: the program every sandboxed interpreter runs before any user code (the second
layer of :mod:`clstream.judges.sandbox`; docs/seqmem.md §4.6, docs/design.md §7).

It sets resource limits (address space, CPU seconds, file size, no core files, few
descriptors; no new processes where no seccomp filter refuses them) and installs an audit hook
that ends the program on sockets, process creation, native libraries, signals to other
processes, or writes outside the working directory. These give precise failure statuses
("forbidden", "memory", through the exit codes and the marker line below); they are not relied
on for safety, since code in the same interpreter can reach and disable them -- the isolation
around the interpreter (:mod:`clstream.judges.isolation`) is the boundary.

The loader reads the program with ``surrogatepass``, as it was encoded. A mode (the hooks
``_open_channel``, ``_loaded`` and ``_serve``) adapts it to its caller: a plain run here,
the call-and-reply channel of :mod:`clstream.judges.codecheck`, the packed working directory
of :mod:`clstream.judges.workspace`.
"""

from __future__ import annotations

__all__ = ["EXIT_EARLY", "EXIT_FORBIDDEN", "EXIT_MEMORY", "MARKER", "loader_source"]

# Exit codes and the stderr line prefix by which the loader says why it ended a program.
EXIT_FORBIDDEN = 113
EXIT_MEMORY = 114
EXIT_EARLY = 115
MARKER = "clstream-sandbox:"

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

