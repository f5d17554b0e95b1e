"""The wheel reader and diff (brief §3.2(b)): exact changelog on the fictional library, the
module shapes it must understand, and the rule that nothing in a wheel is executed."""

from __future__ import annotations

import json
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


def _doc(text: str) -> str:
    return f'    """{text}"""\n'


def test_rules_against_false_features(tmp_path: Path) -> None:
    impl_old = ("from dataclasses import dataclass\n__all__ = ['Config', 'stat', 'Sparse']\n"
                "def _axis_factory(f):\n    return lambda *a, **kw: f(*a, axis=kw.pop('axis', 0))\n"
                "@dataclass\nclass Base:\n    n: int = 1\n"
                "@dataclass\nclass Config(Base):\n" + _doc("C.") + "    seed: int = 0\n"
                "@_axis_factory\ndef stat(x):\n" + _doc("S.") + "class Sparse:\n" + _doc("M."))
    old = _wheel(tmp_path, {
        "pkg/__init__.py": "from ._impl import *\nfrom ._fast import spline\n"
                           "from ._dist import *\nfrom . import _api\n__all__ = _api.__all__\n",
        "pkg/_api.py": "__all__ = ['Config', 'stat', 'spline', 'trapz', 'add', 'Sparse']\n",
        "pkg/_impl.py": impl_old,
        "pkg/_dist.py": "class trapz_gen:\n" + _doc("T.") + "trapz = trapz_gen()\n",
        "pkg/__init__.pyi": "add: ufunc\n",
    }, "1.0")
    impl_new = ("from dataclasses import dataclass\n"
                "__all__ = ['Config', 'stat', 'Sparse', 'fresh']\n"
                "def _axis_factory(f):\n    return lambda *a, **kw: f(*a, axis=kw.pop('axis', 0))\n"
                "@dataclass\nclass Base:\n    n: int = 1\n"
                "@dataclass\nclass Config(Base):\n" + _doc("C.") + "    seed: int = 0\n"
                "    def __init__(self, n=1, seed=0, *, rng=None):\n        pass\n"
                "@_axis_factory\ndef stat(x, *, axis=0, _cache=None):\n" + _doc("S.")
                + "class Sparse:\n" + _doc("M.") + "def fresh():\n" + _doc("F."))
    new = _wheel(tmp_path, {
        "pkg/__init__.py": "from ._impl import *\nfrom ._spl import spline\nfrom ._dist import *\n"
                           "from . import _api\n__all__ = _api.__all__\n",
        "pkg/_api.py": "from ._helpers import *\n__all__ = ['Config', 'stat', 'spline', 'trapz', "
                       "'add', 'matvec', 'irwinhall', 'irwinhall_gen', 'Sparse', 'fresh']\n",
        "pkg/_helpers.py": "def leaked():\n" + _doc("L."),
        "pkg/_impl.py": impl_new,
        "pkg/_spl.py": "def spline(x):\n" + _doc("Now in Python."),
        "pkg/_dist.py": "class trapz_gen:\n" + _doc("T.")
                        + "trapz = trapz_gen()\nclass irwinhall_gen:\n" + _doc("Sum of uniforms.")
                        + "irwinhall = irwinhall_gen(name='irwinhall')\n",
        "pkg/__init__.pyi": "add: ufunc\nmatvec: _GUFunc_Nin2_Nout1[int]\n",
    }, "2.0")
    diff = diff_surfaces(read_wheel(old, "pkg"), read_wheel(new, "pkg"))
    found = {f.path: f for f in diff.features}
    assert set(found) == {"pkg.Config.rng", "pkg.matvec", "pkg.irwinhall", "pkg.fresh"}
    assert found["pkg.irwinhall"].kind == "class" and found["pkg.irwinhall"].doc == "Sum of uniforms."
    assert found["pkg.matvec"].kind == "function" and found["pkg.matvec"].signature.startswith("x1, x2")
    reasons = {r.path: r.reason for r in diff.rejected}
    assert "decorator" in reasons["pkg.stat.axis"] and "private" in reasons["pkg.stat._cache"]
    assert "public in the old wheel" in reasons["pkg.spline"]
    assert "instance irwinhall" in reasons["pkg.irwinhall_gen"]
    assert "pkg.leaked" not in reasons  # not in _api.__all__, so never exported


def test_override_of_an_existing_method_is_not_new(tmp_path: Path) -> None:
    base = {"pkg/__init__.py": "from ._m import *\n",
            "pkg/_m.py": "__all__ = ['Sparse']\nclass Base:\n    def todense(self):\n"
                         + "    " + _doc("D.") + "class Sparse(Base):\n" + _doc("M.")}
    old = _wheel(tmp_path, base, "1.0")
    new = _wheel(tmp_path, {**base, "pkg/_m.py": base["pkg/_m.py"] + "    def todense(self):\n"
                            + "    " + _doc("D.") + "        return super().todense()\n"}, "2.0")
    diff = diff_surfaces(read_wheel(old, "pkg"), read_wheel(new, "pkg"))
    assert not diff.features
    assert "override" in {r.path: r.reason for r in diff.rejected}["pkg.Sparse.todense"]


def test_add_newdoc_documents_compiled_objects(tmp_path: Path) -> None:
    stub = "def asarr(a, *, device=None):\n    ...\n"
    docs = ("from .lib import add_newdoc\nadd_newdoc('pkg._m', 'asarr', '''\n    Make one.\n\n"
            "    Parameters\n    ----------\n    device : str\n        Where.\n\n"
            "        .. versionadded:: 2.1\n    ''')\n")
    files = {"pkg/__init__.py": "from ._m import asarr\n", "pkg/_m.pyi": "def asarr(a):\n    ...\n",
             "pkg/_docs.py": "from .lib import add_newdoc\nadd_newdoc('pkg._m', 'asarr', 'Make one.')\n"}
    old = _wheel(tmp_path, files, "2.0")
    middle = _wheel(tmp_path, {**files, "pkg/_m.pyi": stub, "pkg/_docs.py": docs}, "2.1")
    new = _wheel(tmp_path, {**files, "pkg/_m.pyi": stub, "pkg/_docs.py": docs}, "2.2")
    features = {f.path: f for f in diff_wheels(old, new, "pkg", between=[middle])}
    assert set(features) == {"pkg.asarr.device"}
    assert features["pkg.asarr.device"].version == "2.1"
    assert "Where." in features["pkg.asarr.device"].doc


def test_features_are_dated_by_the_first_wheel_that_has_them(tmp_path: Path) -> None:
    base = {"pkg/__init__.py": "from ._a import *\n", "pkg/_a.py": "def f(x):\n" + _doc("F.")}
    g = "def g():\n" + _doc("G.")
    old = _wheel(tmp_path, base, "1.0")
    middle = _wheel(tmp_path, {**base, "pkg/_a.py": base["pkg/_a.py"] + g}, "1.1.2")
    new = _wheel(tmp_path, {**base, "pkg/_a.py": "def f(x, y=0):\n" + _doc("F.") + g}, "1.2.1")
    dated = {f.path: f.version for f in diff_wheels(old, new, "pkg", between=[middle])}
    assert dated == {"pkg.g": "1.1.2", "pkg.f.y": "1.2.1"}
    assert {f.path: f.version for f in diff_wheels(old, new, "pkg")} == {
        "pkg.g": "1.2.1", "pkg.f.y": "1.2.1"}


# The real wheels: `make test` fetches them into .wheels/ (not committed); CLSTREAM_REAL_WHEELS
# names another directory. The hand-checked features live next to this file.
WHEEL_DIR = Path(os.environ.get("CLSTREAM_REAL_WHEELS")
                 or Path(__file__).resolve().parents[5] / ".wheels")
CHECKED = json.loads((Path(__file__).with_name("real_wheel_features.json")).read_text())["pairs"]
MIN_PRECISION = 0.95
MIN_RECALL = {"numpy": 1.0, "scipy": 0.89}


@pytest.fixture(scope="module", params=CHECKED, ids=lambda pair: pair["package"])
def real_pair(request: pytest.FixtureRequest) -> tuple[dict[str, object], WheelDiff]:
    pair = request.param
    package = pair["package"]
    versions = [pair["old"], *pair["between"], pair["new"]]
    wheels = [sorted(WHEEL_DIR.glob(f"{package}-{v}-*.whl")) for v in versions]
    missing = [f"{package}=={v}" for v, found in zip(versions, wheels, strict=True) if not found]
    if missing:
        pytest.skip(f"real wheels missing from {WHEEL_DIR}: {', '.join(missing)} (`make test` "
                    "fetches them; or pip download --no-deps --only-binary=:all: "
                    "--python-version 3.11 --platform manylinux2014_x86_64 -d .wheels "
                    + " ".join(missing) + ")")
    surfaces = [read_wheel(found[0], package) for found in wheels]
    return pair, diff_surfaces(surfaces[0], surfaces[-1], between=surfaces[1:-1])


def test_real_pair_precision_and_recall(real_pair: tuple[dict[str, object], WheelDiff]) -> None:
    pair, diff = real_pair
    found = {f.path for f in diff.features}
    true = set(pair["true"])  # type: ignore[call-overload]
    precision = len(found & true) / len(found)
    recall = len(found & true) / len(true)
    assert precision >= MIN_PRECISION, sorted(found - true)
    assert recall >= MIN_RECALL[str(pair["package"])], sorted(true - found)
    assert not found & set(pair["rejected"])  # type: ignore[call-overload]


def test_real_pair_dates_and_distribution_golds(
        real_pair: tuple[dict[str, object], WheelDiff]) -> None:
    pair, diff = real_pair
    by_path = {f.path: f for f in diff.features}
    first = pair["first_release"]
    assert isinstance(first, dict)
    assert {path: by_path[path].version for path in first} == first
    if pair["package"] == "scipy":
        assert by_path["scipy.stats.irwinhall"].kind == "class"
        assert not any(path.endswith("_gen") for path in by_path)
    else:
        assert {"numpy.matvec", "numpy.vecmat"} <= set(by_path)  # ufuncs only a stub declares
