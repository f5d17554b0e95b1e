"""The codebase task's shell: one allow-listed command per step over a workspace (docs/clbench.md §4.6).

A command is split with :mod:`shlex` and carried out here, never handed to a real shell:
unquoted pipes, redirections, command separators, backquotes and ``$(`` are refused. The
allow-list: ``ls``, ``cat``, ``head``/``tail`` (``-n N``), ``grep`` (``-r -n -i -l -w -F -E``;
GNU basic regular expressions, translated), ``find`` (``-name``, ``-type``), ``wc``
(``-l -w -c``), ``sed -n 'A,Bp' FILE`` to read lines, ``sed -i SCRIPT FILE`` to edit (one
command of ``[A[,B]]s/OLD/NEW/[g]``, ``Nc\\TEXT``, ``Na\\TEXT``, ``Ni\\TEXT``, ``N[,M]d``),
``python -m unittest ...``, ``python FILE ...``, ``python -c CODE`` (run in the sandbox, see
:mod:`.sandbox`) and the submit command. Reads and edits are done here, in Python, on
the workspace; paths must be relative, without ``..``, and may not leave the workspace
through a symbolic link.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable
from pathlib import Path

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
ALLOWED = ("ls", "cat", "head", "tail", "grep", "find", "wc", "sed", "python", "submit")
MAX_OUTPUT_CHARS = 10_000


class ShellError(Exception):
    """A command that is refused or malformed; the message is its output."""


def unquoted_operators(command: str) -> str | None:
    """The first shell operator outside quotes (``|``, ``;``, ``&``, ``<``, ``>``, a
    backquote, ``$(``), or None."""
    quote = ""
    escaped = False
    for n, ch in enumerate(command):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "|;&<>`" or ch == "\n":
            return ch
        elif ch == "$" and command[n + 1:n + 2] == "(":
            return "$("
    return None


def translate_bre(pattern: str, extended: bool = False) -> str:
    """A GNU grep/sed regular expression as a Python one (``\\(`` groups in basic syntax)."""
    out, n = [], 0
    special = "(){}+?|"
    while n < len(pattern):
        ch = pattern[n]
        if ch == "\\" and n + 1 < len(pattern):
            nxt = pattern[n + 1]
            out.append(nxt if (nxt in special and not extended) else "\\" + nxt)
            n += 2
            continue
        out.append(("\\" + ch) if (ch in special and not extended) else ch)
        n += 1
    return "".join(out)


class Workspace:
    """A directory holding one issue's repository, and the commands that act on it."""

    def __init__(self, root: Path, run_python: Callable[[list[str]], str],
                 modules: tuple[str, ...] = ("unittest",)) -> None:
        self.root = root.resolve()
        self._run_python = run_python
        self.modules = modules  # what ``python -m`` may run (pytest too for real repositories)

    # --- paths ---------------------------------------------------------------------------

    def path(self, name: str) -> Path:
        if not name or name.startswith("/") or name.startswith("~"):
            raise ShellError(f"{name!r}: only paths relative to the repository root are allowed")
        if ".." in Path(name).parts:
            raise ShellError(f"{name!r}: '..' is not allowed in paths")
        full = self.root / name
        current = self.root
        for part in Path(name).parts:
            current = current / part
            if current.is_symlink():
                raise ShellError(f"{name!r}: symbolic links are not followed")
        resolved = full.resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise ShellError(f"{name!r} is outside the repository")
        return resolved

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def files(self) -> dict[str, str]:
        """Every text file of the workspace, by relative path."""
        out = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                out[self.rel(path)] = path.read_text(encoding="utf-8", errors="replace")
        return out

    def _read(self, name: str) -> str:
        path = self.path(name)
        if not path.is_file():
            raise ShellError(f"{name}: no such file")
        return path.read_text(encoding="utf-8", errors="replace")

    # --- commands ------------------------------------------------------------------------

    def execute(self, command: str) -> tuple[int, str]:
        """(return code, output) of one command; raises ShellError for a refused one."""
        op = unquoted_operators(command)
        if op is not None:
            raise ShellError(f"one command per step: {op!r} (pipes, redirection, separators, "
                             "substitution) is not supported")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ShellError(f"cannot parse the command: {exc}") from None
        if not argv:
            raise ShellError("empty command")
        name = argv[0]
        if name not in ALLOWED:
            raise ShellError(f"{name}: not an allowed command (allowed: {', '.join(ALLOWED)}, "
                             f"and `{SUBMIT}` to submit)")
        handler = getattr(self, f"_cmd_{name}")
        code, text = handler(argv[1:])
        if len(text) > MAX_OUTPUT_CHARS:
            text = text[:MAX_OUTPUT_CHARS] + "\n(output cut)"
        return code, text

    @staticmethod
    def _flags(args: list[str], allowed: str) -> tuple[set[str], list[str]]:
        flags: set[str] = set()
        rest: list[str] = []
        for arg in args:
            if arg.startswith("-") and len(arg) > 1 and not rest:
                for ch in arg[1:]:
                    if ch not in allowed:
                        raise ShellError(f"option -{ch} is not supported")
                    flags.add(ch)
            else:
                rest.append(arg)
        return flags, rest

    def _cmd_ls(self, args: list[str]) -> tuple[int, str]:
        flags, names = self._flags(args, "laR1")
        lines = []
        for name in names or ["."]:
            path = self.root if name == "." else self.path(name)
            if path.is_file():
                lines.append(self.rel(path))
                continue
            if not path.is_dir():
                raise ShellError(f"ls: {name}: no such file or directory")
            items = sorted(path.rglob("*") if "R" in flags else path.iterdir())
            lines += [self.rel(p) if "R" in flags else p.name + ("/" if p.is_dir() else "")
                      for p in items if "a" in flags or not p.name.startswith(".")]
        return 0, "\n".join(lines)

    def _cmd_cat(self, args: list[str]) -> tuple[int, str]:
        if not args:
            raise ShellError("cat: name a file")
        return 0, "".join(self._read(name) for name in args)

    def _lines_arg(self, args: list[str]) -> tuple[int, list[str]]:
        count = 10
        if args and re.fullmatch(r"-\d+", args[0]):
            count, args = int(args[0][1:]), args[1:]
        elif len(args) >= 2 and args[0] == "-n" and args[1].lstrip("-+").isdigit():
            count, args = int(args[1]), args[2:]
        if len(args) != 1:
            raise ShellError("usage: head|tail [-n N] FILE")
        return count, self._read(args[0]).splitlines()

    def _cmd_head(self, args: list[str]) -> tuple[int, str]:
        count, lines = self._lines_arg(args)
        return 0, "\n".join(lines[:count])

    def _cmd_tail(self, args: list[str]) -> tuple[int, str]:
        count, lines = self._lines_arg(args)
        return 0, "\n".join(lines[-count:] if count else [])

    def _cmd_wc(self, args: list[str]) -> tuple[int, str]:
        flags, names = self._flags(args, "lwc")
        out = []
        for name in names:
            text = self._read(name)
            counts = {"l": text.count("\n"), "w": len(text.split()), "c": len(text.encode())}
            shown = [str(counts[k]) for k in "lwc" if k in flags or not flags]
            out.append(" ".join(shown + [name]))
        return 0, "\n".join(out)

    def _walk(self, names: list[str]) -> list[Path]:
        out = []
        for name in names:
            path = self.root if name == "." else self.path(name)
            if path.is_dir():
                out += sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
            elif path.is_file():
                out.append(path)
            else:
                raise ShellError(f"{name}: no such file or directory")
        return out

    def _cmd_grep(self, args: list[str]) -> tuple[int, str]:
        flags, rest = self._flags(args, "rRnilwFEH")
        if not rest:
            raise ShellError("usage: grep [-rnilwFE] PATTERN [PATH...]")
        pattern, names = rest[0], rest[1:] or ["."]
        text = re.escape(pattern) if "F" in flags else translate_bre(pattern, "E" in flags)
        if "w" in flags:
            text = rf"\b(?:{text})\b"
        try:
            regex = re.compile(text, re.IGNORECASE if "i" in flags else 0)
        except re.error as exc:
            raise ShellError(f"grep: bad pattern: {exc}") from None
        out = []
        for path in self._walk(names):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            hits = [(n, line) for n, line in enumerate(lines, 1) if regex.search(line)]
            if hits and "l" in flags:
                out.append(self.rel(path))
                continue
            for n, line in hits:
                out.append(f"{self.rel(path)}:" + (f"{n}:" if "n" in flags else "") + line)
        return (0 if out else 1), "\n".join(out)

    def _cmd_find(self, args: list[str]) -> tuple[int, str]:
        names, glob, kind = [], None, None
        it = iter(args)
        for arg in it:
            if arg == "-name":
                glob = next(it, None)
            elif arg == "-type":
                kind = next(it, None)
            elif arg.startswith("-"):
                raise ShellError(f"find: {arg} is not supported (use -name, -type)")
            else:
                names.append(arg)
        out = []
        for name in names or ["."]:
            base = self.root if name == "." else self.path(name)
            for path in [base, *sorted(base.rglob("*"))]:
                if kind == "f" and not path.is_file() or kind == "d" and not path.is_dir():
                    continue
                if glob is None or fnmatch.fnmatch(path.name, glob):
                    rel = self.rel(path)
                    out.append(rel if name != "." or rel == "." else "./" + rel)
        return 0, "\n".join(out)

    def _cmd_sed(self, args: list[str]) -> tuple[int, str]:
        if len(args) == 3 and args[0] == "-n":
            m = re.fullmatch(r"(\d+)(?:,(\d+))?p", args[1])
            if not m:
                raise ShellError("sed -n: only 'A,Bp' or 'Ap' is supported")
            first = int(m.group(1))
            last = int(m.group(2) or first)
            lines = self._read(args[2]).splitlines()
            return 0, "\n".join(lines[first - 1:last])
        if len(args) == 3 and args[0] == "-i":
            path = self.path(args[2])
            text = self._read(args[2])
            path.write_text(sed_edit(args[1], text), encoding="utf-8")
            return 0, ""
        raise ShellError("sed: use sed -n 'A,Bp' FILE or sed -i SCRIPT FILE")

    def _cmd_python(self, args: list[str]) -> tuple[int, str]:
        if args[:1] == ["-m"]:
            if args[1:2] not in ([m] for m in self.modules):
                raise ShellError(f"python -m: only {' or '.join(self.modules)} may be run as "
                                 "a module")
        elif args[:1] == ["-c"]:
            if len(args) < 2:
                raise ShellError("python -c needs the code")
        elif not args or args[0].startswith("-"):
            raise ShellError("usage: python -m unittest ... | python FILE ... | python -c CODE")
        else:
            if not self.path(args[0]).is_file():
                raise ShellError(f"python: {args[0]}: no such file")
        text = self._run_python(args)
        code_line, _, output = text.partition("\n")
        return int(code_line), output

    def _cmd_submit(self, args: list[str]) -> tuple[int, str]:
        raise ShellError(f"to submit, run `{SUBMIT}` alone")


_ADDRESS = r"(\d+)(?:,(\d+|\$))?"


def sed_edit(script: str, text: str) -> str:
    """``text`` after one ``sed -i`` command (see the module docstring)."""
    lines = text.split("\n")
    m = re.fullmatch(r"(\d+)([cai])(\\?)(.*)", script, re.DOTALL)
    if m:
        n = int(m.group(1))
        if not 1 <= n <= len(lines):
            raise ShellError(f"sed: line {n} does not exist")
        body = m.group(4) if m.group(3) else m.group(4).lstrip()
        if m.group(2) == "c":
            lines[n - 1] = body
        elif m.group(2) == "a":
            lines.insert(n, body)
        else:
            lines.insert(n - 1, body)
        return "\n".join(lines)
    m = re.fullmatch(_ADDRESS + "d", script)
    if m:
        first = int(m.group(1))
        last = len(lines) if m.group(2) == "$" else int(m.group(2) or first)
        return "\n".join(lines[:first - 1] + lines[last:])
    m = re.fullmatch(r"(?:" + _ADDRESS + r")?s(.)(.*)", script, re.DOTALL)
    if not m:
        raise ShellError("sed -i: supported scripts are [A[,B]]s/OLD/NEW/[g], Nc\\TEXT, "
                         "Na\\TEXT, Ni\\TEXT and A[,B]d")
    delim, rest = m.group(3), m.group(4)
    parts = re.split(r"(?<!\\)" + re.escape(delim), rest)
    if len(parts) != 3 or parts[2] not in ("", "g"):
        raise ShellError("sed -i: malformed s command (flags: g only)")
    old = translate_bre(parts[0].replace("\\" + delim, delim))
    new = re.sub(r"\\(\d)", r"\\g<\1>", parts[1].replace("\\" + delim, delim))
    new = re.sub(r"(?<!\\)&", r"\\g<0>", new).replace("\\&", "&")
    try:
        regex = re.compile(old)
    except re.error as exc:
        raise ShellError(f"sed: bad pattern: {exc}") from None
    first = int(m.group(1)) if m.group(1) else 1
    last = len(lines) if m.group(2) == "$" or not m.group(1) else int(m.group(2) or first)
    for n in range(first - 1, min(last, len(lines))):
        try:
            lines[n] = regex.sub(new, lines[n], count=0 if parts[2] == "g" else 1)
        except (re.error, IndexError) as exc:
            raise ShellError(f"sed: bad replacement: {exc}") from None
    return "\n".join(lines)
