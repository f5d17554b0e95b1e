"""``clstream run NAME`` and ``score NAME`` import only protocol NAME (start-up is most of a
scoring command's cost); other verbs and help still see every protocol."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clstream.cli import build_parser
from clstream.core.registry import names

PROBE = ("import sys; from clstream.cli import build_parser; build_parser({argv!r}); "
         "print(sorted(m.split('.')[2] for m in sys.modules "
         "if m.count('.') == 2 and m.startswith('clstream.protocols.') "
         "and m.split('.')[2] in {known!r}))")


@pytest.mark.parametrize("argv, loaded", [
    (["score", "oaks", "data.json", "pred.jsonl"], ["oaks"]),
    (["run", "imprint", "data/", "--system", "oracle"], ["imprint"]),
    (["summary", "results/"], None),
    (["run", "nosuch"], None),
])
def test_only_the_named_protocol_is_imported(argv: list[str], loaded: list[str] | None) -> None:
    known = names("protocol")
    code = PROBE.format(argv=argv, known=known)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == repr(sorted(known) if loaded is None else loaded)


def test_the_full_parser_still_has_every_verb() -> None:
    parser = build_parser(["--help"])
    text = parser.format_help()
    for verb in ("generate", "run", "score", "summary", "report", "export"):
        assert verb in text
