"""Codebase adaptation: seeded issues, the confined shell, the sandbox, builtin gain."""

from __future__ import annotations

from pathlib import Path

import pytest

from clstream.judges.isolation import detect
from clstream.protocols.clbench.envs.codebase.bugs import Issue, make_issues
from clstream.protocols.clbench.envs.codebase.environment import CodebaseEnv
from clstream.protocols.clbench.envs.codebase.sandbox import run_checks, run_program
from clstream.protocols.clbench.envs.codebase.shell import ShellError, Workspace, sed_edit
from clstream.protocols.clbench.policies import (
    ScriptedDebugger,
    play_stateful,
    play_stateless,
    play_with_notes,
)

needs_bwrap = pytest.mark.skipif(not hasattr(detect(), "isolated"),
                                 reason="needs bubblewrap: bash scripts/system-packages.sh")


@needs_bwrap
def test_every_default_issue_fails_before_and_passes_after_the_reference_fix() -> None:
    env = CodebaseEnv(3)
    for issue in env.issues.values():
        assert isinstance(issue, Issue)  # the generated repositories are the default
        checks = env.hidden_checks(issue)
        clean = env.expected(issue)
        buggy = run_checks(issue.buggy, checks, env.iso)
        assert buggy is not None, issue.iid
        n = len(issue.fail_to_pass)
        assert all(buggy[i] != clean[i] for i in range(n)), issue.iid
        assert buggy[n:] == clean[n:], issue.iid  # pass-to-pass hold on the buggy code
        assert clean[0] == issue.site.expected and buggy[0] == issue.site.actual, issue.iid
        assert env.evaluate(issue, issue.clean) == (True, "completed")
        assert env.evaluate(issue, issue.buggy) == (False, "empty_patch")
        assert issue.site.old.strip() not in issue.text and len(issue.text) >= 600


def test_issues_follow_the_seed_and_the_schedule() -> None:
    a, b = make_issues(1, (9, 10))
    assert len(a) == 9 and len(b) == 10 and a[0].repo.name != b[0].repo.name
    again, _ = make_issues(1, (9, 10))
    assert [i.site.sid for i in a] == [i.site.sid for i in again]
    assert any(x.repo.name != y.repo.name or [i.site.sid for i in a] != [i.site.sid for i in y_]
               for x, y, y_ in [(a[0], make_issues(s, (9, 10))[0][0], make_issues(s, (9, 10))[0])
                                for s in range(2, 6)])


def test_the_shell_stays_in_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "out").symlink_to("/etc")
    shell = Workspace(tmp_path, lambda argv: "0\n")
    assert shell.execute("grep -rn 'y =' .") == (0, "pkg/a.py:2:y = 2")
    assert shell.execute("sed -n '2,2p' pkg/a.py") == (0, "y = 2")
    for bad in ("cat /etc/passwd", "cat ../secret", "cat out/passwd", "rm -rf pkg",
                "cat pkg/a.py | head", "ls; ls", "cat $(ls)", "bash -c ls",
                "python -m http.server", "sed -i 's/x/y/' /etc/hosts"):
        with pytest.raises(ShellError):
            shell.execute(bad)
    shell.execute("sed -i 's/x = \\(1\\)/x = \\1 + 1/' pkg/a.py")
    assert (tmp_path / "pkg" / "a.py").read_text() == "x = 1 + 1\ny = 2\n"
    assert sed_edit("1a\\    z", "a\nb") == "a\n    z\nb" and sed_edit("2d", "a\nb\nc") == "a\nc"


@needs_bwrap
def test_sandboxed_programs_reach_neither_network_nor_host(tmp_path: Path) -> None:
    env = CodebaseEnv(0, "short")
    code = ("import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), 2)\n"
            "    print('connected')\nexcept BaseException as e:\n    print('blocked')\n")
    run = run_program({"a.py": "print(1)"}, ["-c", code], env.iso)
    assert "connected" not in run.output
    secret = tmp_path / "secret.txt"
    secret.write_text("host data")
    run = run_program({}, ["-c", f"print(open({str(secret)!r}).read())"], env.iso)
    assert "host data" not in run.output and run.returncode != 0
    run = run_program({"t.py": "open('new.txt', 'w').write('x')\nprint('ok')"}, ["t.py"],
                      env.iso)
    assert run.returncode == 0 and "ok" in run.output


@needs_bwrap
def test_a_step_budget_and_the_submit_reward() -> None:
    env = CodebaseEnv(0, "short")
    env.reset()
    first = env.schedule.instance_ids[0]
    env.begin(first)
    res = env.step({"command": "ls"})
    assert res.valid and "README.md" in res.feedback and not res.instance_complete
    res = env.step({"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})
    assert res.instance_complete and res.reward == 0.0 and "empty_patch" in res.feedback
    env.begin(env.schedule.instance_ids[1])
    for _ in range(40):
        res = env.step({"command": "ls"})
    assert res.instance_complete and res.reward == 0.0 and res.info["ended"] == "step_limit"


@needs_bwrap
@pytest.mark.parametrize("rollout", [0, 1])
def test_memory_gives_positive_gain_on_the_short_schedule(rollout: int) -> None:
    env = CodebaseEnv(0, "short")
    policy = ScriptedDebugger()
    s_sl = sum(r.reward for r in play_stateless(env, policy))
    for arm in (play_stateful, play_with_notes):
        s_sf = sum(r.reward for r in arm(env, policy, rollout))
        assert (s_sf - s_sl) / (len(env.schedule) - s_sl) > 0, arm.__name__


def test_program_output_holds_no_wall_time() -> None:
    from clstream.protocols.clbench.envs.codebase.sandbox import _steady

    text = ("....\n----\nRan 8 tests in 0.013s\n\nOK\nRan 1 test in 2s\n"
            '  File "/tmp/clstream-sandbox-0bdc377896e5/src/waiting.py", line 18')
    assert _steady(text) == ("....\n----\nRan 8 tests\n\nOK\nRan 1 test\n"
                             '  File "/sandbox/src/waiting.py", line 18')
