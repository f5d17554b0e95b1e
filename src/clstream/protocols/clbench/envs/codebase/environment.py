"""Codebase adaptation (software engineering; docs/clbench.md §4.6; paper App. A.2).

Issues arrive one after another in a generated repository (9 in a table library), then the
work moves to a second one (10 in a retry library) with a notice. Per issue the agent gets a
fresh workspace (a temporary copy of the buggy repository) and up to 40 shell commands
(:mod:`.shell`), one per step, as ``{"command": "..."}`` (a ``"thought"`` may come
along). ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` submits: the workspace's changes to
non-test files are applied to a fresh copy of the buggy repository and the held-out checks run
in the sandbox (:mod:`.sandbox`); the issue is solved iff every fail-to-pass and
pass-to-pass check has the clean repository's outcome. Reward ``1 - (s - 1)/40`` for a
solution submitted at command s, else 0; as in the authors' code the 40th command ends the
issue unexecuted. r_max 1.

``repos`` names the repositories: ``generated`` (the default; stdlib-only stand-ins, offline)
or ``real``, the paper's tablib and tenacity from their pinned sdists with seeded bugs checked
by their own test suites (:mod:`.real`); recorded in the task's parameters.

Every Python run happens inside bubblewrap; without it the environment refuses to start
(:func:`.sandbox.isolation`) unless ``allow_unisolated`` is passed.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from clstream.core.environment import ActionError, OrderPolicy
from clstream.protocols.clbench.envs.base import EnvironmentBase, Outcome, build_schedule
from clstream.protocols.clbench.envs.codebase.bugs import Issue, make_issues
from clstream.protocols.clbench.envs.codebase.real import RealIssue, make_real_issues, sandbox_base
from clstream.protocols.clbench.envs.codebase.sandbox import (
    isolation,
    run_checks,
    run_program,
    run_tests,
)
from clstream.protocols.clbench.envs.codebase.shell import SUBMIT, ShellError, Workspace

BUDGET = 40
VARIANTS = ("first_repository", "second_repository")
SCHEDULES: dict[str, tuple[int, int]] = {"default": (9, 10), "short": (3, 3)}
REPOS = ("generated", "real")
MAX_COMMAND_CHARS = 20_000
NOTICE = ("NOTICE: the work moves to another repository. Its layout, conventions and test "
          "runner differ from the previous one.")
INSTRUCTIONS = (
    "You fix reported bugs in a Python repository, one issue at a time, in a fresh copy of the "
    "repository each time. Each step runs one shell command in the repository root: ls, cat, "
    "head, tail, grep, find, wc, sed -n 'A,Bp' FILE (read lines), sed -i SCRIPT FILE (edit; "
    "scripts [A[,B]]s/OLD/NEW/[g], Nc\\TEXT, Na\\TEXT, Ni\\TEXT, A[,B]d), python -m unittest "
    "..., python FILE ..., python -c CODE. No pipes, redirection or command chains; paths are "
    f"relative to the root. When the fix is in place, submit with `{SUBMIT}` alone. The fix is "
    "checked with held-out tests; changes to test files are ignored. Up to 40 commands per "
    "issue; a fix submitted at command s earns 1 - (s - 1)/40, and the 40th command ends the "
    "issue without credit."
)
ACTION_FORMAT = ('Reply with one JSON object: {"thought": "<optional reasoning>", "command": '
                 '"<one shell command>"}.')
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["command"],
    "properties": {"command": {"type": "string", "minLength": 1},
                   "thought": {"type": "string"}},
}


class CodebaseEnv(EnvironmentBase):
    """Codebase adaptation: 9 issues in one generated repository, then 10 in another."""

    name: ClassVar[str] = "codebase_adaptation"
    order_policy: ClassVar[OrderPolicy] = OrderPolicy.STAGE_PERMUTE
    best_reward: ClassVar[float] = 1.0
    min_reward: ClassVar[float] = 0.0
    max_steps: ClassVar[int] = BUDGET
    instructions: ClassVar[str] = INSTRUCTIONS
    action_format: ClassVar[str] = ACTION_FORMAT
    action_schema: ClassVar[Mapping[str, Any]] = ACTION_SCHEMA
    # generated first: the offline default (the paper's repositories need `make clbench-repos`)
    OPTIONS: ClassVar[Mapping[str, tuple[str, ...]]] = {"repos": REPOS}

    def __init__(self, seed: int = 0, schedule: str = "default", max_invalid: int = 3,
                 allow_unisolated: bool = False, tests_visible: bool = False,
                 options: Mapping[str, str] | None = None) -> None:
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; known: {sorted(SCHEDULES)}")
        repos = self.choose_options(options)["repos"]
        counts = SCHEDULES[schedule]
        self.repos = repos
        self.iso = isolation(allow_unisolated)
        first: list[Issue] | list[RealIssue]
        second: list[Issue] | list[RealIssue]
        if repos == "real":
            first, second = make_real_issues(seed, counts, self.iso)
        else:
            first, second = make_issues(seed, counts)
        self.issues: dict[str, Issue | RealIssue] = {i.iid: i for i in [*first, *second]}
        super().__init__(seed, build_schedule(schedule, counts, VARIANTS, list(self.issues)),
                         max_invalid, options)
        self.tests_visible = bool(tests_visible)
        self._expected: dict[str, list[str]] = {}
        self._dir: Path | None = None
        self._shell: Workspace | None = None
        self._commands = 0

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir, self._shell = None, None

    # --- evaluation ------------------------------------------------------------------------

    def hidden_checks(self, issue: Issue | RealIssue) -> list[str]:
        return [*issue.fail_to_pass, *issue.pass_to_pass]

    def expected(self, issue: Issue) -> list[str]:
        """The clean repository's outcome of every held-out check (run once, then kept)."""
        if issue.iid not in self._expected:
            outcomes = run_checks(issue.clean, self.hidden_checks(issue), self.iso)
            if outcomes is None:
                raise RuntimeError(f"{issue.iid}: the clean repository gave no check outcomes")
            self._expected[issue.iid] = outcomes
        return self._expected[issue.iid]

    def candidate(self, issue: Issue | RealIssue, workspace: Mapping[str, str]
                  ) -> dict[str, str]:
        """A fresh copy of the buggy repository with the workspace's non-test files."""
        files = dict(issue.buggy)
        for path in issue.buggy:
            if not issue.repo.is_test_file(path):
                if path in workspace:
                    files[path] = workspace[path]
                else:
                    del files[path]
        return files

    def evaluate(self, issue: Issue | RealIssue, workspace: Mapping[str, str]
                 ) -> tuple[bool, str]:
        """(solved, status) of a submission; decided here, outside every sandbox."""
        files = self.candidate(issue, workspace)
        if all(files.get(p) == issue.buggy[p] for p in issue.buggy
               if not issue.repo.is_test_file(p)):
            return False, "empty_patch"
        if isinstance(issue, RealIssue):
            return self.evaluate_real(issue, files)
        got = run_checks(files, self.hidden_checks(issue), self.iso)
        if got is None:
            return False, "error"
        return got == self.expected(issue), ("completed" if got == self.expected(issue)
                                             else "tests_failed")

    def evaluate_real(self, issue: RealIssue, files: Mapping[str, str]) -> tuple[bool, str]:
        """The repository's own suite over the candidate (the files that differ from the clean
        tree, and the clean files the candidate deleted, emptied): solved iff every
        fail-to-pass and pass-to-pass test passes."""
        changed = {p: files.get(p, "") for p in issue.clean
                   if not issue.repo.is_test_file(p) and files.get(p) != issue.clean[p]}
        got = run_tests(changed, issue.repo.tests, sandbox_base(issue.repo), self.iso)
        if got is None:
            return False, "error"
        solved = all(got.get(t, False) for t in self.hidden_checks(issue))
        return solved, "completed" if solved else "tests_failed"

    # --- hooks -----------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        params = {"budget": BUDGET, "tests_visible": self.tests_visible,
                  "repositories": sorted({i.repo.name for i in self.issues.values()})}
        return params

    def _enter(self, instance_id: str) -> None:
        self.close()
        issue = self.issues[instance_id]
        self._dir = Path(tempfile.mkdtemp(prefix="clstream-codebase-"))
        files = dict(issue.buggy)
        if self.tests_visible and isinstance(issue, Issue):
            test_dir = "tests" if issue.repo.key == "tablib" else "test"
            body = "".join(f"    def test_issue_{n}(self):\n        exec({code!r}, {{}})\n"
                           for n, code in enumerate(issue.fail_to_pass))
            files[f"{test_dir}/test_issue.py"] = (
                "import unittest\n\n\nclass IssueTests(unittest.TestCase):\n" + body)
        for rel, text in files.items():
            path = self._dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        modules = ("unittest", "pytest") if isinstance(issue, RealIssue) else ("unittest",)
        self._shell = Workspace(self._dir, self._python, modules)
        self._commands = 0

    def _python(self, argv: list[str]) -> str:
        assert self._shell is not None
        issue = self.issues[self.current] if self.current else None
        if isinstance(issue, RealIssue):
            changed = {p: t for p, t in self._shell.files().items() if issue.clean.get(p) != t}
            run = run_program(changed, argv, self.iso, timeout_s=60.0,
                              real=sandbox_base(issue.repo))
        else:
            run = run_program(self._shell.files(), argv, self.iso)
        return f"{run.returncode}\n{run.output}"

    def _notice(self, old_variant: str, new_variant: str) -> str:
        return NOTICE if new_variant == "second_repository" else ""

    def _observation(self, first: bool) -> str:
        assert self.current is not None
        issue = self.issues[self.current]
        head = f"Repository: {issue.repo.name}"
        if isinstance(issue, RealIssue):
            head += (f" {issue.repo.sdist.rsplit('-', 1)[1]} (its own tests run with "
                     f"`python -m pytest {' '.join(issue.repo.tests)}`)")
        used = f"Commands used: {self._commands}/{BUDGET}."
        if first:
            return f"{head}\nIssue {issue.iid}:\n\n{issue.text}\n\n{used}"
        return f"{head}\nIssue {issue.iid} (continued). {used} What is your next command?"

    def _check(self, action: dict[str, Any]) -> None:
        command = action.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ActionError('expected {"command": "<one shell command>"} with a non-empty '
                              "command")
        if len(command) > MAX_COMMAND_CHARS:
            raise ActionError(f"a command is at most {MAX_COMMAND_CHARS} characters")
        thought = action.get("thought")
        if thought is not None and not isinstance(thought, str):
            raise ActionError('"thought" must be a string')

    def _apply(self, action: dict[str, Any]) -> Outcome:
        assert self.current is not None and self._shell is not None
        issue = self.issues[self.current]
        self._commands += 1
        s = self._commands
        if s >= BUDGET:
            self.close()
            return Outcome(f"Command limit reached ({BUDGET}): the issue ends unsolved.", True,
                           0.0, False, {"commands": s, "ended": "step_limit"})
        command = str(action["command"]).strip()
        if command == SUBMIT:
            solved, status = self.evaluate(issue, self._shell.files())
            self.close()
            reward = 1.0 - (s - 1) / BUDGET if solved else 0.0
            verdict = "PASSED" if solved else "FAILED"
            return Outcome(f"Submission {verdict} (eval status: {status}) at command {s}; "
                           f"reward {reward:.3f}.", True, reward, solved,
                           {"commands": s, "ended": "submitted", "eval_status": status})
        try:
            code, output = self._shell.execute(command)
        except ShellError as exc:
            code, output = 2, f"refused: {exc}"
        return Outcome(f"returncode: {code}\noutput:\n{output}", info={"commands": s})
