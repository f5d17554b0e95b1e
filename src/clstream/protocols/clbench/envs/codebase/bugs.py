"""The issues of the codebase task: seeded bugs in the generated repositories (docs/clbench.md §4.6).

A :class:`Repository` is one generated code base (:mod:`.tablib`,
:mod:`.retry`) with the seed's names filled in. An :class:`Issue` applies one
:class:`~.sites.Site` mutation to the clean repository; the clean source is its
reference fix. Its report describes the symptom through the public API with a reproduction
snippet (never the fix); its fail-to-pass checks are the snippet and the site's other
snippets, its pass-to-pass checks the repository's pool snippets that exercise nothing the
bug touches. A check's outcome is what it prints (or the name of the exception it raises),
compared with what the clean repository's code prints for it (:mod:`.sandbox`).

Per repository the seed draws three *hot* operator classes and takes every site of those
(bugs of a kind recur in one code base), then fills up with the other sites, and shuffles.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from types import ModuleType

import clstream.protocols.clbench.envs.codebase.retry as retry_repo
import clstream.protocols.clbench.envs.codebase.tablib as tablib_repo
from clstream.protocols.clbench.envs.codebase.sites import (
    RETRY_POOL,
    RETRY_SITES,
    TABLIB_POOL,
    TABLIB_SITES,
    Site,
)

HOT_CLASSES = 3


@dataclass(frozen=True)
class Repository:
    """A generated repository: ``files`` maps a relative path to its clean text."""

    key: str
    name: str
    files: dict[str, str]
    test_command: str
    prelude: str
    test_dirs: tuple[str, ...]

    def is_test_file(self, path: str) -> bool:
        return path.split("/", 1)[0] in self.test_dirs


@dataclass(frozen=True)
class Issue:
    """One seeded bug: the buggy files, its report and its held-out checks."""

    iid: str
    repo: Repository
    site: Site
    buggy: dict[str, str]
    text: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]

    @property
    def clean(self) -> dict[str, str]:
        return self.repo.files


def _fill(text: str, names: dict[str, str]) -> str:
    for key, value in names.items():
        text = text.replace(f"@{key}@", value)
    return text


def _site(site: Site, names: dict[str, str]) -> Site:
    return Site(site.sid, site.operator, _fill(site.path, names), _fill(site.old, names),
                _fill(site.new, names), _fill(site.symbol, names), site.func,
                _fill(site.behaviour, names), _fill(site.repro, names), site.expected,
                site.actual, tuple(_fill(c, names) for c in site.checks), site.tags)


def make_repository(key: str, seed: int) -> Repository:
    module: ModuleType = tablib_repo if key == "tablib" else retry_repo
    names = module.names(seed)
    files = {_fill(p, names): _fill(t, names) for p, t in module.FILES.items()}
    dirs = ("tests",) if key == "tablib" else ("test", "run_tests.py")
    return Repository(key, names["PKG"], files, module.TEST_COMMAND, module.PRELUDE, dirs)


def issue_text(repo: Repository, site: Site) -> str:
    """The report: the symptom through the public API and a reproduction, not the fix."""
    rng = random.Random(hashlib.sha256(f"{repo.name}:{site.sid}".encode()).hexdigest())
    opening = rng.choice((
        "I ran into this while using `{sym}` in a small script.",
        "While upgrading to the current main branch I noticed a problem with `{sym}`.",
        "Found a behaviour of `{sym}` that does not match the documentation.",
    )).format(sym=site.symbol)
    closing = rng.choice((
        "The existing test suite still passes, so this case does not seem to be covered.",
        "I could not find a test covering this case; the suite is green on my machine.",
    ))
    return (
        f"{opening}\n\n{site.behaviour}. This breaks code that relies on the documented "
        f"behaviour of `{site.symbol}`, and it is easy to miss because nothing fails loudly "
        "in the common case.\n\n"
        f"Reproduction (run from the repository root):\n\n```python\n{site.repro}```\n\n"
        f"Expected output:\n\n```\n{site.expected}\n```\n\n"
        f"Actual output:\n\n```\n{site.actual}\n```\n\n"
        f"{closing} A fix should keep the public API of `{repo.name}` unchanged."
    )


def _draw(sites: tuple[Site, ...], count: int, rng: random.Random) -> list[Site]:
    classes = sorted({s.operator for s in sites})
    hot = set(rng.sample(classes, min(HOT_CLASSES, len(classes))))
    chosen = [s for s in sites if s.operator in hot][:count]
    rest = [s for s in sites if s.operator not in hot]
    rng.shuffle(rest)
    chosen += rest[:count - len(chosen)]
    rng.shuffle(chosen)
    return chosen


def make_issues(seed: int, counts: tuple[int, int]) -> tuple[list[Issue], list[Issue]]:
    """The issues of the two repositories, in canonical order (ids ``tab-01``..., ``ret-01``...)."""
    out: list[list[Issue]] = []
    for key, count, sites, pool, prefix in (
            ("tablib", counts[0], TABLIB_SITES, TABLIB_POOL, "tab"),
            ("retry", counts[1], RETRY_SITES, RETRY_POOL, "ret")):
        repo = make_repository(key, seed)
        names = (tablib_repo if key == "tablib" else retry_repo).names(seed)
        rng = random.Random(hashlib.sha256(f"{seed}:codebase:issues:{key}".encode()).digest())
        issues = []
        for n, raw in enumerate(_draw(sites, count, rng)):
            site = _site(raw, names)
            text = repo.files[site.path]
            if text.count(site.old) != 1:
                raise ValueError(f"site {site.sid}: the mutated text is not unique")
            buggy = {**repo.files, site.path: text.replace(site.old, site.new)}
            p2p = tuple(_fill(code, names) for tags, code in pool if not tags & site.tags)
            issues.append(Issue(f"{prefix}-{n + 1:02d}", repo, site, buggy,
                                issue_text(repo, site), (site.repro, *site.checks), p2p))
        out.append(issues)
    return out[0], out[1]
