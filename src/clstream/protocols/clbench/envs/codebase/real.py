"""The paper's repositories for the codebase task: tablib and tenacity (docs/clbench.md §4.6).

With ``repos=real`` the issues are seeded in the real code of tablib 3.5.0 and tenacity 8.2.3,
from their source distributions on the package index, and checked with the repositories' own
test suites (pytest), as the paper's issues are (App. A.2). Nothing is fetched here: ``make
test`` (or ``make clbench-repos``) downloads the sdists and the wheels the suites import into
the cache folder (:func:`cache_dir`) and builds a read-only *testbed* site-packages from
them; without it :func:`make_real_issues` refuses in one line naming the command.

A seeded bug is one single-line edit of the mutation library's operator classes
(:func:`.repair.mutations`: a flipped comparison, a bound's strictness, a dropped
``± 1`` or a small constant one too high, ``min``/``max`` swapped, two positional call
arguments swapped, a negated condition, a wrong arithmetic operator) at a code line (not a
docstring, comment or string) of the repository's library code. Per seed the candidate
edits are ordered (round robin over the classes, shuffled within each) and tried, each by running
the suite in the sandbox over the mutated repository: a candidate is kept when at least one
test that passes on the clean code fails with it (its fail-to-pass tests) and it breaks at
most :data:`MAX_FAIL_TO_PASS` tests (an edit that breaks the import is not an issue), at most
one per function and :data:`MAX_PER_FILE` per file. Its pass-to-pass tests are the other
tests that pass both ways; the clean source is its reference fix, and the agent's copy lacks the fail-to-pass test functions
(:func:`hide_tests`). The search is deterministic (the suite runs with ``random`` seeded per
test) and its result is kept in the cache (``issues/<repo>-seed<N>.json``, keyed by the
candidate list), extended when a longer schedule asks for more issues.

The report names the public API that misbehaves and describes the symptom in prose, from
what the failing tests exercise (their names, read as words); it shows no test code and no
expected or actual output.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import random
import re
import tarfile
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clstream.core.errors import SpecError
from clstream.judges.isolation import PACKAGES_DIR, Isolation, PackageSet
from clstream.protocols.clbench.envs.codebase.repair import mutations
from clstream.protocols.clbench.envs.codebase.sandbox import RealBase, run_tests

CACHE_ENV = "CLSTREAM_CLBENCH_REPOS"
FETCH = "make clbench-repos"
MAX_FAIL_TO_PASS = 12
SUITE_RUN = 2  # how the suite is run (part of the cache key): random seeded per test
MAX_PER_FILE = 4  # issues seeded in one file, so that the issues spread over the code base
REPO_ENTRY = "clbench-repo"
TEXT_SUFFIXES = (".py", ".txt", ".cfg", ".ini", ".toml", ".md", ".rst", ".in", ".yaml")


@dataclass(frozen=True)
class RealRepository:
    """One pinned source distribution and how its suite runs."""

    key: str
    name: str
    sdist: str
    paths: tuple[str, ...]  # sys.path entries, relative to the root
    mutable: tuple[str, ...]  # the library files bugs are seeded in
    tests: tuple[str, ...]  # the test files the checks come from
    test_dirs: tuple[str, ...] = ("tests",)

    def is_test_file(self, path: str) -> bool:
        return path.split("/", 1)[0] in self.test_dirs


REPOSITORIES = {
    "tablib": RealRepository(
        "tablib", "tablib", "tablib-3.5.0", ("src",),
        ("src/tablib/core.py", "src/tablib/formats/_csv.py", "src/tablib/formats/_json.py",
         "src/tablib/formats/_latex.py", "src/tablib/formats/_rst.py",
         "src/tablib/formats/_html.py", "src/tablib/formats/_jira.py"),
        ("tests/test_tablib.py",)),
    "tenacity": RealRepository(
        "tenacity", "tenacity", "tenacity-8.2.3", (".",),
        ("tenacity/wait.py", "tenacity/stop.py", "tenacity/retry.py", "tenacity/__init__.py",
         "tenacity/_utils.py", "tenacity/before.py", "tenacity/after.py",
         "tenacity/before_sleep.py"),
        ("tests/test_tenacity.py", "tests/test_after.py")),
}


@dataclass(frozen=True)
class RealIssue:
    """One seeded bug in a real repository and its held-out tests (pytest node ids)."""

    iid: str
    repo: RealRepository
    path: str
    line: int  # 1-based
    operator: str
    symbol: str
    func: str
    clean: dict[str, str]
    buggy: dict[str, str]
    text: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]


def cache_dir() -> Path:
    """Where ``make clbench-repos`` puts the sdists and the testbed (``$CLSTREAM_CLBENCH_REPOS``,
    else ``.clbench-repos`` in the working directory)."""
    return Path(os.environ.get(CACHE_ENV) or ".clbench-repos").resolve()


def missing() -> str | None:
    """Why the real repositories cannot be used here, or None when the cache is complete."""
    root = cache_dir()
    need = [root / "dist" / f"{r.sdist}.tar.gz" for r in REPOSITORIES.values()]
    need.append(root / "testbed" / "pytest")
    absent = [p.name if p.parent.name == "dist" else "testbed" for p in need if not p.exists()]
    if absent:
        return (f"the real repositories are not fetched ({', '.join(absent)} missing in {root}); "
                f"run `{FETCH}` (`make test` runs it) with a network")
    return None


def source_tree(repo: RealRepository) -> Path:
    """The extracted clean sdist (extracted once, beside the archive)."""
    root = cache_dir()
    tree = root / "src" / repo.sdist
    if not (tree / ".complete").exists():
        (root / "src").mkdir(parents=True, exist_ok=True)
        with tarfile.open(root / "dist" / f"{repo.sdist}.tar.gz") as archive:
            archive.extractall(root / "src", filter="data")
        (tree / ".complete").write_text("", encoding="utf-8")
    return tree


def text_files(repo: RealRepository) -> dict[str, str]:
    """The repository's text files (the agent's workspace); binary fixtures stay in the
    testbed copy the sandbox starts from."""
    tree = source_tree(repo)
    out = {}
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree).as_posix()
        if path.is_file() and path.suffix in TEXT_SUFFIXES and ".egg-info" not in rel:
            try:
                out[rel] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return out


def sandbox_base(repo: RealRepository) -> RealBase:
    """How the sandbox holds ``repo``: the testbed, the clean tree and its import paths."""
    return RealBase(testbed(repo), f"{PACKAGES_DIR}/{REPO_ENTRY}", repo.paths)


def testbed(repo: RealRepository) -> PackageSet:
    """Read-only binds: every package of the testbed, and the clean repository as
    ``{PACKAGES_DIR}/{REPO_ENTRY}`` (what a sandbox copies into its tmpfs first)."""
    bed = cache_dir() / "testbed"
    binds = [(str(bed / e), e) for e in sorted(os.listdir(bed)) if e not in ("bin", "__pycache__")]
    binds.append((str(source_tree(repo)), REPO_ENTRY))
    return PackageSet((), tuple(binds), ())


# --- the search for seeded bugs --------------------------------------------------------------

def _enclosing(lines: list[str], n: int) -> tuple[str, str]:
    """(function, public symbol) of the code at 0-based line ``n``: a method's public name
    is ``Class.method``; a private method or ``__call__`` is reported as its class."""
    func, cls, outer = "", "", ""
    limit = len(lines[n]) - len(lines[n].lstrip())
    for k in range(n - 1, -1, -1):
        m = re.match(r"(\s*)(?:async )?(def|class) (\w+)", lines[k])
        if not m or len(m.group(1)) >= limit:
            continue
        limit = len(m.group(1))
        if m.group(2) == "def" and not func:
            func = m.group(3)
        elif m.group(2) == "def":
            outer = m.group(3)  # a nested function is reached through the one it is in
        elif m.group(2) == "class":
            cls = m.group(3)
            break
    if outer and not cls:
        return func, outer
    if cls and func and not func.startswith("_"):
        return func, f"{cls}.{func}"
    return func, cls or func


def candidates(repo: RealRepository, files: dict[str, str], seed: int
               ) -> list[tuple[str, int, str, str]]:
    """Every candidate edit (path, 1-based line, operator, new line), in the seed's order."""
    by_operator: dict[str, list[tuple[str, int, str, str]]] = {}
    for path in repo.mutable:
        lines = files[path].split("\n")
        text_lines = _string_lines(files[path])
        for n, line in enumerate(lines):
            if n + 1 in text_lines or line.lstrip().startswith(
                    ("#", "raise ", "assert ", "import ", "from ")):
                continue
            for operator, new in mutations(line):
                if operator == "swapped_arguments" and re.search(r"\w=[^=]", new):
                    continue  # a swapped keyword argument is a syntax error, not a bug
                if _in_string(line, new):
                    continue
                by_operator.setdefault(operator, []).append((path, n + 1, operator, new))
    rng = random.Random(hashlib.sha256(f"{seed}:codebase:real".encode()).digest())
    queues = [by_operator[op] for op in sorted(by_operator)]
    for queue in queues:
        rng.shuffle(queue)
    out = []  # round robin over the operator classes, so that no class crowds out the rest
    while any(queues):
        rng.shuffle(queues)
        out += [queue.pop() for queue in queues if queue]
    return out


def public_symbol(repo: RealRepository, path: str, func: str, symbol: str) -> str:
    """What a user calls: tablib's format modules are reached through ``Dataset.export`` and
    ``Dataset.load`` with the format's name, everything else by its qualified name."""
    m = re.fullmatch(r"src/tablib/formats/_(\w+)\.py", path)
    if m:
        if func.startswith("import") or "load" in func:
            return f"tablib.Dataset.load(..., format='{m.group(1)}')"
        return f"tablib.Dataset.export('{m.group(1)}')"
    return f"{repo.name}.{symbol}"


def _string_lines(source: str) -> set[int]:
    """1-based lines that hold part of a multi-line string (docstrings): prose, not code."""
    out: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            out.update(range(token.start[0], token.end[0] + 1))
    return out


def _in_string(line: str, new: str) -> bool:
    """Whether the edit falls inside a string literal (text, not code)."""
    at = next((k for k, (a, b) in enumerate(zip(line, new, strict=False)) if a != b), len(line))
    return (line[:at].count('"') % 2 == 1) or (line[:at].count("'") % 2 == 1)


def _words(test_id: str) -> str:
    name = test_id.rsplit("::", 1)[-1]
    return re.sub(r"^test_?", "", name).replace("_", " ").strip()


SYMPTOMS = {
    "inverted_comparison": "a condition in it seems to be tested the wrong way round",
    "off_by_one": "it looks off by one at a boundary",
    "min_max_swap": "it seems to pick the wrong extreme of a range",
    "swapped_arguments": "two of the values it works with seem to be mixed up",
    "negated_condition": "it seems to take the opposite branch of a decision",
    "wrong_operator": "a computed value comes out wrong",
}


def issue_text(repo: RealRepository, symbol: str, operator: str, failing: tuple[str, ...]) -> str:
    """The user's report: the public API and the behaviours that broke, in prose."""
    rng = random.Random(hashlib.sha256(f"{repo.key}:{symbol}:{failing}".encode()).digest())
    behaviours = sorted({_words(t) for t in failing})[:3]
    listed = "; ".join(f"\"{b}\"" for b in behaviours)
    opening = rng.choice((f"After upgrading {repo.name}, `{symbol}` stopped working for me.",
                          f"`{symbol}` in {repo.name} does not behave as documented any more.",
                          f"I think there is a regression in `{symbol}` ({repo.name})."))
    return (f"{opening}\n\nWhat I see going wrong in code that uses it: {listed}. "
            f"From the outside {SYMPTOMS[operator]}; the results are wrong without any error "
            "in the common case.\n\nPlease fix it without changing the public API; the "
            "project's own tests should keep passing.")


def _state_path(repo: RealRepository, seed: int) -> Path:
    return cache_dir() / "issues" / f"{repo.key}-seed{seed}.json"


def find_issues(repo: RealRepository, seed: int, count: int, iso: Isolation
                ) -> list[dict[str, Any]]:
    """The first ``count`` seeded bugs of ``repo`` for ``seed`` (searched, then cached)."""
    state_path = _state_path(repo, seed)
    files = text_files(repo)
    order = candidates(repo, files, seed)
    version = hashlib.sha256(json.dumps([SUITE_RUN, order]).encode()).hexdigest()
    state: dict[str, Any] = {"tried": 0, "issues": []}
    if state_path.exists():
        state = json.loads(state_path.read_text(encoding="utf-8"))
        if state.get("candidates") != version:  # another library version or mutation table
            state = {"tried": 0, "issues": []}
    found: list[dict[str, Any]] = list(state["issues"])
    if len(found) >= count or int(state["tried"]) >= len(order):
        return found[:count]
    base = sandbox_base(repo)
    baseline = run_tests({}, repo.tests, base, iso)
    if baseline is None:
        raise RuntimeError(f"{repo.name}: the clean test suite gave no results")
    passing = sorted(t for t, ok in baseline.items() if ok)
    tried = int(state["tried"])
    funcs = {(str(i["path"]), str(i["func"])) for i in found}
    while len(found) < count and tried < len(order):
        path, line, operator, new = order[tried]
        tried += 1
        lines = files[path].split("\n")
        func, symbol = _enclosing(lines, line - 1)
        if not func or (path, func) in funcs or sum(p == path for p, _ in funcs) >= MAX_PER_FILE:
            continue
        lines[line - 1] = new
        got = run_tests({path: "\n".join(lines)}, repo.tests, base, iso)
        if got is None:
            continue
        f2p = [t for t in passing if not got.get(t, False)]
        if not 1 <= len(f2p) <= MAX_FAIL_TO_PASS:
            continue
        funcs.add((path, func))
        found.append({"path": path, "line": line, "operator": operator, "new": new,
                      "func": func, "symbol": public_symbol(repo, path, func, symbol),
                      "fail_to_pass": f2p,
                      "pass_to_pass": [t for t in passing if t not in f2p]})
    state_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = state_path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"candidates": version, "tried": tried, "issues": found},
                              indent=1), encoding="utf-8")
    os.replace(tmp, state_path)
    return found[:count]


def hide_tests(files: dict[str, str], test_ids: tuple[str, ...]) -> dict[str, str]:
    """``files`` without the test functions of ``test_ids``: as in the paper's issues, whose
    fail-to-pass tests come with the fix, the agent's copy lacks them (they run only in the
    evaluation, from the clean tree). A class left with no test keeps its last one."""
    out = dict(files)
    by_file: dict[str, set[tuple[str, ...]]] = {}
    for test_id in test_ids:
        path, *names = test_id.split("::")
        by_file.setdefault(path, set()).add(tuple(n.split("[", 1)[0] for n in names))
    for path, wanted in by_file.items():
        lines = out[path].split("\n")
        cut: list[tuple[int, int]] = []
        for node in ast.parse(out[path]).body:
            members: list[tuple[ast.stmt, tuple[str, ...]]] = [(node, (getattr(node, "name", ""),))]
            if isinstance(node, ast.ClassDef):
                tests = [m for m in node.body
                         if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)]
                hidden = [m for m in tests if (node.name, m.name) in wanted]
                members = [(m, (node.name, m.name))
                           for m in hidden[:len(tests) - 1 if len(hidden) == len(tests) else None]]
            for member, key in members:
                if key in wanted and isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    first = min([member.lineno, *(d.lineno for d in member.decorator_list)])
                    cut.append((first - 1, int(member.end_lineno or member.lineno)))
        for first, last in sorted(cut, reverse=True):
            del lines[first:last]
        out[path] = "\n".join(lines)
    return out


def make_real_issues(seed: int, counts: tuple[int, int], iso: Isolation
                     ) -> tuple[list[RealIssue], list[RealIssue]]:
    """The issues of tablib then tenacity (ids ``tab-01``..., ``ten-01``...)."""
    why = missing()
    if why is not None:
        raise SpecError(f"flag --env-option repos=real: {why}")
    out: list[list[RealIssue]] = []
    for key, count, prefix in (("tablib", counts[0], "tab"), ("tenacity", counts[1], "ten")):
        repo = REPOSITORIES[key]
        clean = text_files(repo)
        issues = []
        for n, raw in enumerate(find_issues(repo, seed, count, iso)):
            path, line = str(raw["path"]), int(raw["line"])
            lines = clean[path].split("\n")
            lines[line - 1] = str(raw["new"])
            f2p = tuple(str(t) for t in raw["fail_to_pass"])
            p2p = tuple(str(t) for t in raw["pass_to_pass"])
            func, symbol = _enclosing(clean[path].split("\n"), line - 1)
            symbol, operator = public_symbol(repo, path, func, symbol), str(raw["operator"])
            buggy = hide_tests({**clean, path: "\n".join(lines)}, f2p)
            issues.append(RealIssue(f"{prefix}-{n + 1:02d}", repo, path, line, operator, symbol,
                                    func, clean, buggy,
                                    issue_text(repo, symbol, operator, f2p), f2p, p2p))
        if len(issues) < count:
            raise RuntimeError(f"{repo.name}: only {len(issues)} seeded bugs found for seed "
                               f"{seed}, {count} wanted")
        out.append(issues)
    return out[0], out[1]
