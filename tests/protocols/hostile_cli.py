"""What the hostile-input suites of the protocols share: the CLI in this process, the digest
of a results directory, the one-line check, and a command on a small tmpfs of its own."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from clstream.cli import main as cli_main


def main(argv: list[str]) -> int:
    """The CLI in this process; argparse's own refusals exit 2 through SystemExit."""
    try:
        return cli_main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def digest(directory: Path) -> dict[str, str]:
    """The results store's files by content: equal digests, nothing stored changed."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.glob("results.sqlite*"))}


def check_one_line(capsys: pytest.CaptureFixture[str], code: int, needle: str) -> None:
    """Exit 2 and one ``clstream: error:`` line holding ``needle``, no traceback."""
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("clstream: error: ") and needle in lines[0], (needle, lines[0])


def on_small_disk(disk: Path, size: str, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` (shell) in a private mount namespace with a ``size`` tmpfs on ``disk``;
    skips when this machine cannot mount one (not root, no mount namespaces). The script
    should print ``rc=`` somewhere, which tells a run from a failed mount."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) to mount a small tmpfs")
    disk.mkdir(exist_ok=True)
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"mount -t tmpfs -o size={size} tmpfs {disk} && {script}"],
                          capture_output=True, text=True, timeout=300)
    if "rc=" not in done.stdout:
        pytest.skip(f"cannot mount a tmpfs here (needs root and mount namespaces): "
                    f"{done.stderr.strip()[:200]}")
    return done
