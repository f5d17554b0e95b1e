"""The loader program: one valid Python program per mode, telling its exit codes apart."""

from __future__ import annotations

import ast

from clstream.judges.loader import EXIT_EARLY, EXIT_FORBIDDEN, EXIT_MEMORY, MARKER, loader_source

HOOKS = {"_open_channel", "_loaded", "_serve"}


def _top_level(source: str) -> dict[str, ast.stmt]:
    names: dict[str, ast.stmt] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            names.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
    return names


def test_plain_run_defines_the_hooks_and_calls_main_last() -> None:
    source = loader_source()
    names = _top_level(source)
    assert HOOKS | {"_main", "MARKER", "EXIT_FORBIDDEN", "EXIT_MEMORY", "EXIT_EARLY"} <= set(names)
    assert source.rstrip().endswith("_main()")


def test_constants_are_the_ones_the_harness_reads() -> None:
    scope: dict[str, object] = {}
    constants = "".join(line + "\n" for line in loader_source().splitlines()[:4])
    exec(compile(constants, "<loader>", "exec"), scope)
    assert (scope["MARKER"], scope["EXIT_FORBIDDEN"], scope["EXIT_MEMORY"],
            scope["EXIT_EARLY"]) == (MARKER, EXIT_FORBIDDEN, EXIT_MEMORY, EXIT_EARLY)
    assert len({EXIT_FORBIDDEN, EXIT_MEMORY, EXIT_EARLY, 0, 1}) == 5


def test_a_mode_replaces_the_hooks() -> None:
    mode = "def _open_channel(cfg, os, json):\n    return 7\n" \
           "def _loaded(channel, how, text):\n    pass\n" \
           "def _serve(*args):\n    pass\n"
    source = loader_source(mode)
    assert "return 7" in source and "return None" not in source.split("def _main")[0]
    ast.parse(source)
