"""The wheel reader and diff (brief §3.2(b)): exact changelog on the fictional library, the
module shapes it must understand, and the rule that nothing in a wheel is executed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from clstream.core.errors import DataError
from clstream.protocols.imprint.settings.code.synthetic import (
    CodeWorldConfig,
    SyntheticChangelog,
    build_wheel,
    write_library_wheels,
)
from clstream.protocols.imprint.settings.code.wheels import (
    WheelDiff,
    diff_surfaces,
    diff_wheels,
    parameter_description,
    read_wheel,
    version_key,
)

# the two releases' wheels, the changelog written with them and the diff read back
Library = tuple[Path, Path, SyntheticChangelog, WheelDiff]


@pytest.fixture(scope="module", params=[0, 7])
def library(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Library:
    root = tmp_path_factory.mktemp(f"lib{request.param}")
    old, new, changelog = write_library_wheels(CodeWorldConfig(seed=request.param), root)
    diff = diff_surfaces(read_wheel(old, changelog.package), read_wheel(new, changelog.package))
    return old, new, changelog, diff


def test_diff_finds_exactly_the_changelog(library: Library) -> None:
    _, _, changelog, diff = library
    found = {f.path for f in diff.features}
    assert found == changelog.added_paths  # precision = recall = 1
    kinds = {f.kind for f in diff.features}
    assert kinds == {"function", "class", "method", "parameter"}
    by_path = {f.path: f for f in diff.features}
    for entry in changelog.added:
        assert by_path[entry.path].leaf == entry.leaf
        assert by_path[entry.path].parent == entry.parent
        assert by_path[entry.path].evidence == "diff+versionadded"
        assert by_path[entry.path].version == changelog.new_version


def test_moved_reexported_and_aliased_names_are_rejected(library: Library) -> None:
    _, _, changelog, diff = library
    rejected = {r.path: r.reason for r in diff.rejected}
    for path in (*changelog.moved, *changelog.aliased):
        assert path in rejected and rejected[path].startswith("not novel"), path
    assert changelog.moved and changelog.aliased


def test_removals_and_renames_are_deprecations(library: Library) -> None:
    _, _, changelog, diff = library
    removed = {d.path: d.new for d in diff.deprecations if d.kind == "removed"}
    assert set(changelog.removed) <= set(removed)
    # anything else that left its path moved, and the report names where to
    moved = {path: new for path, new in removed.items() if path not in changelog.removed}
    assert set(moved.values()) == {p for p in changelog.moved if p in moved.values()}
    assert all(moved.values()) and len(moved) == (len(changelog.moved) + 1) // 2
    renamed = {(d.path, d.old, d.new) for d in diff.deprecations if d.kind == "renamed_parameter"}
    assert set(changelog.renamed) == renamed


def test_stub_star_and_all_extension_cases_are_covered(library: Library) -> None:
    _, _, changelog, diff = library
    found = {f.path for f in diff.features}
    assert changelog.through_stub and set(changelog.through_stub) <= found
    assert changelog.through_star and set(changelog.through_star) <= found
    assert changelog.through_all_extension and set(changelog.through_all_extension) <= found


def test_same_seed_gives_identical_wheels(tmp_path: Path) -> None:
    a = write_library_wheels(CodeWorldConfig(seed=3), tmp_path / "a")
    b = write_library_wheels(CodeWorldConfig(seed=3), tmp_path / "b")
    assert a[0].read_bytes() == b[0].read_bytes() and a[1].read_bytes() == b[1].read_bytes()


def _wheel(tmp_path: Path, files: dict[str, str], version: str = "1.0") -> Path:
    directory = tmp_path / version
    directory.mkdir(exist_ok=True)
    return build_wheel(directory, "pkg", version, files)


def test_module_that_would_raise_or_write_is_read_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    evil = (f'open({str(marker)!r}, "w").write("ran")\nraise SystemExit("imported")\n\n'
            'def tool(x):\n    """Does a thing."""\n    return x\n')
    whl = _wheel(tmp_path, {"pkg/__init__.py": "from .evil import tool\n", "pkg/evil.py": evil})
    surface = read_wheel(whl, "pkg")
    assert "pkg.tool" in surface.records
    assert not marker.exists()
    assert "pkg" not in sys.modules


def test_all_forms_star_cycles_stubs_and_aliases(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "from ._a import *\nfrom ._impl import helper as nice\n"
                           "from .sub import deep\nshort = deep\n",
        "pkg/_a.py": '__all__ = ["one"]\n__all__ += ["two"]\n__all__.extend(["three"])\n'
                     "from ._b import *\n"
                     'def one():\n    """1."""\ndef two():\n    """2."""\n'
                     'def three():\n    """3."""\ndef hidden():\n    """not exported."""\n',
        "pkg/_b.py": "from ._a import *\n",  # a star-import cycle
        "pkg/_impl.py": 'def helper():\n    """Helps."""\n',
        "pkg/sub/__init__.py": "from ._x import deep, fast\n__all__ = ('deep', 'fast')\n",
        "pkg/sub/_x.py": 'def deep():\n    """Deep."""\nfast = _compiled("fast")\n',
        "pkg/sub/_x.pyi": 'def fast(n: int, *, scale: float = 1.0) -> int:\n    """Fast."""\n'
                          '    ...\ndef deep():\n    ...\n',
        "pkg/_lit.py": "__all__ = sorted(['z'])\ndef z():\n    '''z'''\n",
    }
    surface = read_wheel(_wheel(tmp_path, files), "pkg")
    records = surface.records
    assert {"pkg.one", "pkg.two", "pkg.three"} <= set(records)
    assert "pkg.hidden" not in records
    assert "pkg.nice" in records and records["pkg.nice"].name == "helper"
    assert records["pkg.nice"].module == "pkg._impl"
    # the shortest public path wins; the stub fills a name the .py binds at run time
    assert "pkg.deep" in records and "pkg.sub.deep" in records["pkg.deep"].aliases
    assert records["pkg.sub.fast"].params == ("n", "scale")
    assert records["pkg.sub.fast"].doc == "Fast."
    assert records["pkg.deep"].doc == "Deep."
    assert surface.modules["pkg._lit"].all_names is None  # non-literal -> fall back
    assert "helper" in surface.defined_names and "hidden" in surface.defined_names


def test_parameters_renames_and_novelty(tmp_path: Path) -> None:
    old = _wheel(tmp_path, {
        "pkg/__init__.py": "from ._core import *\n",
        "pkg/_core.py": "__all__ = ['f', 'g']\n"
                        'def f(a, b=1):\n    """F."""\ndef g(a, width=2):\n    """G."""\n'
                        'def _secret():\n    """S."""\n'
                        'def TOOLS():\n    """not a callable name."""\n',
    }, "1.0")
    new = _wheel(tmp_path, {
        "pkg/__init__.py": "from ._core import *\nfrom ._core import _secret as secret\n",
        "pkg/_core.py": "__all__ = ['f', 'g', 'h', 'NEW_FLAG', 'nodoc']\n"
                        'def f(a, b=1, *, c=None):\n    """F.\n\n    Parameters\n    ----------\n'
                        '    c : int\n        See.\n\n        .. versionadded:: 1.5\n    """\n'
                        'def g(a, span=2):\n    """G."""\n'
                        'def h():\n    """H.\n\n    .. versionadded:: 2.0\n    """\n'
                        'def NEW_FLAG():\n    """x"""\ndef nodoc():\n    pass\n'
                        'def _secret():\n    """S."""\n',
        "pkg/tests/test_core.py": "def h():\n    pass\n",
    }, "2.0")
    features = {f.path: f for f in diff_wheels(old, new, "pkg")}
    assert set(features) == {"pkg.f.c", "pkg.h"}
    assert features["pkg.f.c"].evidence == "diff+versionadded" and features["pkg.f.c"].version == "1.5"
    assert features["pkg.h"].version == "2.0"
    full = diff_surfaces(read_wheel(old, "pkg"), read_wheel(new, "pkg"))
    reasons = {r.path: r.reason for r in full.rejected}
    assert reasons["pkg.secret"].startswith("not novel")
    assert "SCREAMING" in reasons["pkg.NEW_FLAG"] and reasons["pkg.nodoc"] == "no docstring"
    assert [(d.old, d.new) for d in full.deprecations if d.kind == "renamed_parameter"] == [
        ("width", "span")]


def test_bad_wheels_name_the_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.whl"
    junk.write_text("not a zip")
    with pytest.raises(DataError, match="junk.whl.*not a zip"):
        read_wheel(junk, "pkg")
    whl = _wheel(tmp_path, {"other/__init__.py": ""})
    with pytest.raises(DataError, match=r"pkg-1\.0-py3-none-any\.whl.*no package 'pkg'"):
        read_wheel(whl, "pkg")
    with pytest.raises(DataError, match="missing.whl"):
        read_wheel(tmp_path / "missing.whl", "pkg")


def test_helpers() -> None:
    assert version_key("2.2.6") > version_key("2.2") == version_key("2.2.0")
    assert version_key("2.1.0rc1") == (2, 1)
    doc = "Do.\n\nParameters\n----------\nx : int\n    The x.\n\n    .. versionadded:: 3.1\ny : int\n    Y.\n"
    assert "versionadded:: 3.1" in parameter_description(doc, "x")
    assert "versionadded" not in parameter_description(doc, "y")
    assert parameter_description(doc, "z") == ""


REAL = os.environ.get("CLSTREAM_REAL_WHEELS", "")


@pytest.mark.skipif(not REAL, reason="set CLSTREAM_REAL_WHEELS=/dir with downloaded wheels")
def test_real_numpy_pair() -> None:
    root = Path(REAL)
    old = sorted(root.glob("numpy-2.0.2-*.whl"))
    new = sorted(root.glob("numpy-2.2.6-*.whl"))
    if not old or not new:
        pytest.skip("numpy 2.0.2 and 2.2.6 wheels not in CLSTREAM_REAL_WHEELS")
    found = {f.path for f in diff_wheels(old[0], new[0], "numpy")}
    assert {"numpy.cumulative_sum", "numpy.cumulative_prod", "numpy.unstack",
            "numpy.astype.device", "numpy.trim_zeros.axis"} <= found
    assert not {"numpy.trapezoid", "numpy.in1d", "numpy.linalg.linalg.vecdot"} & found
