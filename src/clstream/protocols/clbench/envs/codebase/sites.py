"""Where bugs can be seeded in the two generated repositories (docs/clbench.md §4.6).

A :class:`Site` is one mutation of the clean source (``old`` -> ``new``, ``old`` occurring
exactly once in ``path``) of one operator class of :data:`OPERATORS`, with the public API the
report names (``symbol``), the function holding the bug (``func``, what a debugger looks for),
a reproduction snippet that prints one line, the line the clean code prints (``expected``)
and the buggy code prints (``actual``), and more snippets for the held-out checks. ``tags``
name what the snippet exercises, so that a pass-to-pass check of the repository's pool that
shares a tag with the site is left out of that issue. Text is in the repositories'
placeholders (``@PKG@``...).
"""

from __future__ import annotations

from dataclasses import dataclass

OPERATORS = ("inverted_comparison", "off_by_one", "missing_validation", "wrong_default",
             "swapped_arguments", "wrong_exception", "missing_registry_entry", "min_max_swap")


@dataclass(frozen=True)
class Site:
    sid: str
    operator: str
    path: str
    old: str
    new: str
    symbol: str
    func: str
    behaviour: str
    repro: str
    expected: str
    actual: str
    checks: tuple[str, ...]
    tags: frozenset[str]


def _catch(call: str) -> str:
    return (f"try:\n    result = {call}\nexcept Exception as exc:\n    print(type(exc).__name__)\n"
            f"else:\n    print('returned', result)\n")


T_IMPORT = "from @PKG@ import @DS@, Databook\n"
T_ROWS = "ds = @DS@(('ann', 31), ('bob', 25), ('cy', 40), ('dee', 19))\n"
CORE, FORMATS = "@PKG@/@CORE@.py", "@PKG@/formats/__init__.py"

TABLIB_SITES = (
    Site("headers-width", "missing_validation", CORE,
         "        require_width(values, self.width)\n        self._headers = None if",
         "        self._headers = None if", "@DS@.headers", "headers",
         "Setting `headers` to a list shorter than the rows are wide is accepted silently",
         T_IMPORT + T_ROWS + "try:\n    ds.headers = ['name']\nexcept Exception as exc:\n"
         "    print(type(exc).__name__)\nelse:\n    print('accepted', ds.headers)\n",
         "InvalidDimensions", "accepted ['name']",
         (T_IMPORT + "ds = @DS@((1, 2, 3))\n" + _catch("setattr(ds, 'headers', ['a', 'b'])"),),
         frozenset({"headers"})),
    Site("head-count", "missing_validation", CORE,
         '        require_count("n", n)\n        return list(self._data[:n])',
         "        return list(self._data[:n])", "@DS@.head", "head",
         "`head` with a negative count returns rows instead of refusing the count",
         T_IMPORT + T_ROWS + _catch("ds.head(-1)"), "ValueError",
         "returned [('ann', 31), ('bob', 25), ('cy', 40)]",
         (T_IMPORT + T_ROWS + _catch("ds.head(-3)"),), frozenset({"head"})),
    Site("at-least", "inverted_comparison", CORE, "row[index] >= minimum", "row[index] <= minimum",
         "@DS@.at_least", "at_least", "`at_least` returns the rows below the bound",
         T_IMPORT + T_ROWS + "print(ds.at_least(1, 30))\n", "[('ann', 31), ('cy', 40)]",
         "[('bob', 25), ('dee', 19)]", (T_IMPORT + T_ROWS + "print(ds.at_least(1, 40))\n",),
         frozenset({"at_least"})),
    Site("below", "inverted_comparison", CORE, "row[index] < limit", "row[index] > limit",
         "@DS@.below", "below", "`below` returns the rows above the limit",
         T_IMPORT + T_ROWS + "print(ds.below(1, 26))\n", "[('bob', 25), ('dee', 19)]",
         "[('ann', 31), ('cy', 40)]", (T_IMPORT + T_ROWS + "print(ds.below(1, 20))\n",),
         frozenset({"below"})),
    Site("tail", "off_by_one", CORE, "len(self._data) - n:]", "len(self._data) - n - 1:]",
         "@DS@.tail", "tail", "`tail(n)` returns one row too many",
         T_IMPORT + T_ROWS + "print(ds.tail(2))\n", "[('cy', 40), ('dee', 19)]",
         "[('bob', 25), ('cy', 40), ('dee', 19)]",
         (T_IMPORT + T_ROWS + "print(len(ds.tail(1)))\n",), frozenset({"tail"})),
    Site("pad", "off_by_one", CORE, "missing = self.width - len(row)",
         "missing = self.width - len(row) + 1", "@DS@.pad", "pad",
         "`pad` makes a short row longer than the dataset is wide",
         T_IMPORT + "ds = @DS@((1, 2, 3))\nprint(ds.pad((9,)))\n", "(9, None, None)",
         "(9, None, None, None)", (T_IMPORT + "ds = @DS@((1, 2))\nprint(ds.pad((1, 2), 0))\n",),
         frozenset({"pad"})),
    Site("insert", "swapped_arguments", CORE,
         '"""Add a row before position ``index``."""\n        require_width(row, self.width)',
         '"""Add a row before position ``index``."""\n        require_width(self.width, row)',
         "@DS@.insert", "insert", "`insert` fails with a TypeError on a dataset that has rows",
         T_IMPORT + T_ROWS + _catch("ds.insert(0, ('eve', 50))"),
         "returned None", "TypeError",
         (T_IMPORT + "ds = @DS@((1, 2))\n" + _catch("ds.insert(0, (3,))"),),
         frozenset({"insert"})),
    Site("tsv", "swapped_arguments", "@PKG@/formats/_tsv.py",
         'CSVFormat.export_set(dataset, "\\t", header)',
         'CSVFormat.export_set(dataset, header, "\\t")', "TSVFormat.export_set", "export_set",
         "exporting to TSV fails instead of producing tab separated lines",
         T_IMPORT + "ds = @DS@(('a', 1), headers=['k', 'v'])\n" + _catch("ds.export('tsv')"),
         "returned k\tv\na\t1", "AttributeError",
         (T_IMPORT + "ds = @DS@((1, 2))\nprint(repr(ds.export('tsv', header=False)))\n",),
         frozenset({"tsv"})),
    Site("add-sheet", "wrong_exception", CORE,
         'raise TypeError("a Databook holds', 'raise ValueError("a Databook holds',
         "Databook.add_sheet", "add_sheet",
         "`add_sheet` with something that is not a dataset raises ValueError; the documented "
         "error (and the one callers catch) is TypeError",
         T_IMPORT + _catch("Databook().add_sheet('x')"), "TypeError", "ValueError",
         (T_IMPORT + _catch("Databook([[1, 2]])"),), frozenset({"add_sheet"})),
    Site("get-col", "wrong_exception", CORE,
         "                raise KeyError(key)\n            key = self._headers.index(key)",
         "                raise IndexError(key)\n            key = self._headers.index(key)",
         "@DS@.get_col", "get_col",
         "`get_col` with an unknown header name raises IndexError instead of KeyError",
         T_IMPORT + "ds = @DS@(('a', 1), headers=['k', 'v'])\n" + _catch("ds.get_col('x')"),
         "KeyError", "IndexError",
         (T_IMPORT + "ds = @DS@(('a', 1))\n" + _catch("ds['x']"),), frozenset({"get_col"})),
    Site("head-default", "wrong_default", CORE, "def head(self, n=5):", "def head(self, n=3):",
         "@DS@.head", "head", "`head()` without a count returns three rows, not the documented "
         "five", T_IMPORT + "ds = @DS@(*[(i,) for i in range(8)])\nprint(len(ds.head()))\n",
         "5", "3", (T_IMPORT + "ds = @DS@(*[(i,) for i in range(4)])\nprint(ds.head())\n",),
         frozenset({"head"})),
    Site("csv-header", "wrong_default", "@PKG@/formats/_csv.py",
         'delimiter=",", header=True):', 'delimiter=",", header=False):',
         "CSVFormat.export_set", "export_set",
         "exporting to CSV leaves out the header line unless it is asked for",
         T_IMPORT + "ds = @DS@(('a', 1), headers=['k', 'v'])\nprint(repr(ds.export('csv')))\n",
         "'k,v\\na,1'", "'a,1'",
         (T_IMPORT + "ds = @DS@((1,), headers=['x'])\nprint(repr(ds.export('csv')))\n",),
         frozenset({"csv"})),
    Site("html-registry", "missing_registry_entry", FORMATS, '    "html": HTMLFormat,\n', "",
         "get_format", "get_format",
         "the HTML exporter that ships with the package cannot be used: `export('html')` "
         "raises UnsupportedFormat",
         T_IMPORT + "ds = @DS@(('a', 1))\n" + _catch("ds.export('html').count('<tr>')"),
         "returned 1", "UnsupportedFormat",
         ("from @PKG@.formats import get_format\nprint(get_format('html').title)\n",),
         frozenset({"html"})),
    Site("tsv-registry", "missing_registry_entry", FORMATS, '    "tsv": TSVFormat,\n', "",
         "get_format", "get_format",
         "the TSV exporter that ships with the package cannot be used: `export('tsv')` "
         "raises UnsupportedFormat",
         T_IMPORT + "ds = @DS@(('a', 1))\n" + _catch("ds.export('tsv')"),
         "returned a\t1", "UnsupportedFormat",
         ("from @PKG@.formats import get_format\nprint(get_format('tsv').title)\n",),
         frozenset({"tsv"})),
)

TABLIB_POOL: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"size"}), T_IMPORT + T_ROWS + "print(ds.height, ds.width)\n"),
    (frozenset({"headers", "get_col"}),
     T_IMPORT + "ds = @DS@(('a', 1), ('b', 2), headers=['k', 'v'])\nprint(ds['v'], ds.headers)\n"),
    (frozenset({"sort"}), T_IMPORT + T_ROWS + "print(ds.sort(1)[0], ds.sort(0, True)[0])\n"),
    (frozenset({"transpose"}), T_IMPORT + T_ROWS + "print(ds.transpose()[1])\n"),
    (frozenset({"csv", "headers"}),
     T_IMPORT + "ds = @DS@(('a', 1), headers=['k', 'v'])\nprint(repr(ds.export('csv')))\n"),
    (frozenset({"json", "headers"}),
     T_IMPORT + "ds = @DS@(('a', 1), headers=['k', 'v'])\nprint(ds.export('json'))\n"),
    (frozenset({"add_sheet"}), T_IMPORT + "print(Databook([@DS@((1,))]).size)\n"),
    (frozenset({"head", "tail"}), T_IMPORT + T_ROWS + "print(ds.head(1), ds.tail(1))\n"),
)

R_IMPORT = 'import sys\nsys.path.insert(0, "src")\nfrom @PKG@ import *\n'
R_COUNT = ("calls = []\ndef flaky():\n    calls.append(1)\n    raise OSError('down')\n"
           "try:\n    Retrying({opts}).call(flaky)\nexcept Exception as exc:\n"
           "    print(type(exc).__name__, len(calls))\n")
STOP, WAIT = "src/@PKG@/@STOP@.py", "src/@PKG@/@WAIT@.py"

RETRY_SITES = (
    Site("attempt-bound", "off_by_one", STOP, "return attempt >= max_attempts",
         "return attempt > max_attempts", "stop_after_attempt", "stop_after_attempt",
         "`stop_after_attempt(n)` lets the call run n + 1 times",
         R_IMPORT + R_COUNT.format(opts="stop=stop_after_attempt(3)"), "RetryError 3",
         "RetryError 4", (R_IMPORT + "print(stop_after_attempt(2)(2, 0.0))\n",),
         frozenset({"stop_after_attempt", "call"})),
    Site("attempt-inverted", "inverted_comparison", STOP, "return attempt >= max_attempts",
         "return attempt <= max_attempts", "stop_after_attempt", "stop_after_attempt",
         "`stop_after_attempt(n)` gives up after the first attempt whatever n is",
         R_IMPORT + R_COUNT.format(opts="stop=stop_after_attempt(4)"), "RetryError 4",
         "RetryError 1", (R_IMPORT + "print(stop_after_attempt(5)(1, 0.0))\n",),
         frozenset({"stop_after_attempt", "call"})),
    Site("attempt-check", "missing_validation", STOP,
         '    require_positive("max_attempts", max_attempts)\n', "", "stop_after_attempt",
         "stop_after_attempt", "`stop_after_attempt(0)` is accepted instead of refused",
         R_IMPORT + _catch("stop_after_attempt(0)") .replace("print('returned', result)",
                                                             "print('accepted')"),
         "ValueError", "accepted", (R_IMPORT + _catch("stop_after_attempt(-2)"),),
         frozenset({"stop_after_attempt"})),
    Site("delay-bound", "off_by_one", STOP, "return elapsed >= max_delay",
         "return elapsed > max_delay", "stop_after_delay", "stop_after_delay",
         "`stop_after_delay(d)` keeps retrying once d seconds have passed",
         R_IMPORT + R_COUNT.format(opts="stop=stop_after_delay(2), wait=wait_fixed(1)"),
         "RetryError 3", "RetryError 4", (R_IMPORT + "print(stop_after_delay(5)(1, 5.0))\n",),
         frozenset({"stop_after_delay"})),
    Site("delay-inverted", "inverted_comparison", STOP, "return elapsed >= max_delay",
         "return elapsed <= max_delay", "stop_after_delay", "stop_after_delay",
         "`stop_after_delay(d)` gives up at once instead of after d seconds",
         R_IMPORT + R_COUNT.format(opts="stop=stop_after_delay(3), wait=wait_fixed(1)"),
         "RetryError 4", "RetryError 1", (R_IMPORT + "print(stop_after_delay(5)(1, 0.5))\n",),
         frozenset({"stop_after_delay"})),
    Site("fixed-check", "missing_validation", WAIT,
         '    require_non_negative("seconds", seconds)\n', "", "wait_fixed", "wait_fixed",
         "`wait_fixed` accepts a negative number of seconds",
         R_IMPORT + _catch("wait_fixed(-1)(1)"), "ValueError", "returned -1",
         (R_IMPORT + _catch("wait_fixed(-0.5)"),), frozenset({"wait_fixed"})),
    Site("exp-clamp", "min_max_swap", WAIT, "max(minimum, min(value, maximum))",
         "max(minimum, max(value, maximum))", "wait_exponential", "wait_exponential",
         "`wait_exponential` never waits less than its maximum",
         R_IMPORT + "print([wait_exponential(maximum=5)(a) for a in (1, 2, 3, 4)])\n",
         "[1, 2, 4, 5]", "[5, 5, 5, 8]",
         (R_IMPORT + "print(wait_exponential(maximum=100)(2))\n",),
         frozenset({"wait_exponential"})),
    Site("exp-default", "wrong_default", WAIT, "def wait_exponential(multiplier=1,",
         "def wait_exponential(multiplier=2,", "wait_exponential", "wait_exponential",
         "`wait_exponential()` without a multiplier waits twice as long as documented",
         R_IMPORT + "print([wait_exponential()(a) for a in (1, 2, 3)])\n", "[1, 2, 4]",
         "[2, 4, 8]", (R_IMPORT + "print(wait_exponential(maximum=1000)(6))\n",),
         frozenset({"wait_exponential"})),
    Site("inc-bound", "off_by_one", WAIT, "value = start + increment * (attempt - 1)",
         "value = start + increment * (attempt - 1) + 1", "wait_incrementing",
         "wait_incrementing", "`wait_incrementing` waits one second more than it should",
         R_IMPORT + "print([wait_incrementing(start=0, increment=2)(a) for a in (1, 2, 3)])\n",
         "[0, 2, 4]", "[1, 3, 5]",
         (R_IMPORT + "print(wait_incrementing(start=5, increment=0)(9))\n",),
         frozenset({"wait_incrementing"})),
    Site("inc-default", "wrong_default", WAIT, "def wait_incrementing(start=0, increment=1,",
         "def wait_incrementing(start=0, increment=2,", "wait_incrementing", "wait_incrementing",
         "`wait_incrementing()` without an increment grows by two seconds per attempt",
         R_IMPORT + "print([wait_incrementing()(a) for a in (1, 2, 3)])\n", "[0, 1, 2]",
         "[0, 2, 4]", (R_IMPORT + "print(wait_incrementing(start=1)(4))\n",),
         frozenset({"wait_incrementing"})),
    Site("inc-clamp", "min_max_swap", WAIT, "        return min(value, maximum)",
         "        return max(value, maximum)", "wait_incrementing", "wait_incrementing",
         "`wait_incrementing` always waits at least its maximum",
         R_IMPORT + "print([wait_incrementing(maximum=3)(a) for a in (1, 2, 6)])\n",
         "[0, 1, 3]", "[3, 3, 5]", (R_IMPORT + "print(wait_incrementing(maximum=50)(2))\n",),
         frozenset({"wait_incrementing"})),
    Site("give-up", "swapped_arguments", "src/@PKG@/api.py", "raise RetryError(attempt, error)",
         "raise RetryError(error, attempt)", "Retrying.call", "call",
         "giving up raises a TypeError from inside the library instead of RetryError",
         R_IMPORT + R_COUNT.format(opts="stop=stop_after_attempt(2)"), "RetryError 2",
         "TypeError 2", (R_IMPORT + "try:\n    Retrying(stop=stop_after_attempt(1)).call("
                         "lambda: 1 / 0)\nexcept RetryError as exc:\n    print(exc.attempts, "
                         "type(exc.last_error).__name__)\n",), frozenset({"call"})),
    Site("sleep-check", "wrong_exception", "src/@PKG@/api.py",
         'raise TypeError("sleep must be callable")', 'raise ValueError("sleep must be callable")',
         "Retrying", "__init__",
         "`Retrying(sleep=...)` with something that cannot be called raises ValueError; the "
         "documented error is TypeError",
         R_IMPORT + _catch("Retrying(sleep=3)"), "TypeError", "ValueError",
         (R_IMPORT + _catch("Retrying(sleep='soon')"),), frozenset({"sleep"})),
)

RETRY_POOL: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"wait_fixed", "call"}),
     R_IMPORT + "r = Retrying(wait=wait_fixed(1))\nprint(r.call(lambda: 42), r.slept)\n"),
    (frozenset({"stop_any"}), R_IMPORT + "print(stop_any(lambda a, e: False)(1, 0.0))\n"),
    (frozenset({"retry_if_result", "call", "stop_after_attempt"}),
     R_IMPORT + "r = Retrying(retry=retry_if_result(lambda v: v is None), "
     "stop=stop_after_attempt(9))\nvals = iter([None, None, 7])\n"
     "print(r.call(lambda: next(vals)), len(r.slept))\n"),
    (frozenset({"wait_exponential"}),
     R_IMPORT + "print([wait_exponential(multiplier=1, maximum=10)(a) for a in range(1, 6)])\n"),
    (frozenset({"wait_incrementing"}),
     R_IMPORT + "print([wait_incrementing(1, 2, 100)(a) for a in range(1, 4)])\n"),
    (frozenset({"retry_if_exception_type"}),
     R_IMPORT + "p = retry_if_exception_type(OSError)\n"
     "print(p(None, OSError()), p(None, KeyError()), p(1, None))\n"),
    (frozenset({"stop_after_delay"}), R_IMPORT + "print(stop_after_delay(3)(1, 2.0))\n"),
)
