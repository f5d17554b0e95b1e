"""The first generated repository of the codebase task: a small table library (docs/clbench.md §4.6).

It mirrors the layout of tablib: a package with a core module (a dataset of rows under
headers, and a book of datasets), an exceptions module, a validation module every check goes
through (the repository's convention), and a ``formats`` package whose exporters are listed
in one registry dict. Tests are ``unittest`` modules under ``tests/``, run with
``python -m unittest discover -s tests -t .`` from the root (the README says so).

The seed picks the package name, the core module's name, the dataset class's name and the
validation module's name (:func:`names`); :data:`FILES` holds the sources with ``@KEY@``
placeholders. Bug sites live in :mod:`.bugs`.
"""

from __future__ import annotations

import random

PACKAGES = ("tabletop", "rowset", "gridkit", "tabula", "sheetly")
CORE_MODULES = ("core", "dataset", "base")
CLASSES = ("Dataset", "Table", "Sheet")
VALIDATORS = ("_validate", "_checks", "guards")


def names(seed: int) -> dict[str, str]:
    """The seed's names for the placeholders of :data:`FILES`."""
    rng = random.Random(f"{seed}:codebase:tablib")
    return {"PKG": rng.choice(PACKAGES), "CORE": rng.choice(CORE_MODULES),
            "DS": rng.choice(CLASSES), "VAL": rng.choice(VALIDATORS)}


README = '''# @PKG@

Tabular data in plain Python: a `@DS@` holds rows under optional headers and exports them
to CSV, TSV, JSON or HTML through the format registry in `@PKG@/formats/__init__.py`.

Conventions: argument checks go through the helpers in `@PKG@/@VAL@.py` (`require_*`);
every exporter class must be added to `REGISTRY`.

Run the tests from the repository root with:

    python -m unittest discover -s tests -t .
'''

INIT = '''"""@PKG@: tabular data."""

from .@CORE@ import @DS@, Databook
from .exceptions import InvalidDimensions, UnsupportedFormat

__all__ = ["@DS@", "Databook", "InvalidDimensions", "UnsupportedFormat"]
'''

EXCEPTIONS = '''"""Errors raised by @PKG@."""


class InvalidDimensions(ValueError):
    """A row or header list does not match the width of the data."""


class UnsupportedFormat(KeyError):
    """No exporter is registered under that name."""
'''

VALIDATE = '''"""Argument checks shared by the library (every check goes through here)."""

from .exceptions import InvalidDimensions


def require_width(values, width):
    """Raise InvalidDimensions unless ``values`` (None: no check) has ``width`` items."""
    if values is not None and width and len(values) != width:
        raise InvalidDimensions("expected %d values, got %d" % (width, len(values)))


def require_count(name, value):
    """Raise ValueError unless ``value`` is a non-negative integer."""
    if not isinstance(value, int) or value < 0:
        raise ValueError("%s must be a non-negative integer, got %r" % (name, value))
'''

CORE = '''"""The @DS@ (rows under headers) and the Databook (named datasets)."""

from .@VAL@ import require_count, require_width
from .formats import get_format


class @DS@:
    """Rows of equal width, optionally under headers and a title."""

    def __init__(self, *rows, headers=None, title=None):
        self._data = []
        self._headers = None
        self.title = title
        for row in rows:
            self.append(row)
        if headers is not None:
            self.headers = headers

    @property
    def headers(self):
        """The header list, or None."""
        return None if self._headers is None else list(self._headers)

    @headers.setter
    def headers(self, values):
        require_width(values, self.width)
        self._headers = None if values is None else list(values)

    @property
    def height(self):
        """The number of rows."""
        return len(self._data)

    @property
    def width(self):
        """The number of columns (0 when empty)."""
        if self._data:
            return len(self._data[0])
        return len(self._headers) if self._headers else 0

    def append(self, row):
        """Add a row at the end."""
        require_width(row, self.width)
        self._data.append(tuple(row))

    def insert(self, index, row):
        """Add a row before position ``index``."""
        require_width(row, self.width)
        self._data.insert(index, tuple(row))

    def __getitem__(self, key):
        if isinstance(key, str):
            return self.get_col(key)
        rows = self._data[key]
        return list(rows) if isinstance(key, slice) else rows

    def get_col(self, key):
        """The values of one column, by header name or position."""
        if isinstance(key, str):
            if self._headers is None or key not in self._headers:
                raise KeyError(key)
            key = self._headers.index(key)
        return [row[key] for row in self._data]

    def head(self, n=5):
        """The first rows: ``n`` (default 5) of them."""
        require_count("n", n)
        return list(self._data[:n])

    def tail(self, n=5):
        """The last rows: ``n`` (default 5) of them."""
        require_count("n", n)
        return list(self._data[len(self._data) - n:])

    def at_least(self, key, minimum):
        """The rows whose value in column ``key`` is at least ``minimum``."""
        index = self._index(key)
        return [row for row in self._data if row[index] >= minimum]

    def below(self, key, limit):
        """The rows whose value in column ``key`` is below ``limit``."""
        index = self._index(key)
        return [row for row in self._data if row[index] < limit]

    def sort(self, key, reverse=False):
        """A new @DS@ sorted by column ``key`` (ascending unless ``reverse``)."""
        index = self._index(key)
        rows = sorted(self._data, key=lambda row: row[index], reverse=reverse)
        return @DS@(*rows, headers=self.headers, title=self.title)

    def transpose(self):
        """A new @DS@ whose rows are this one's columns."""
        columns = [list(col) for col in zip(*self._data)]
        return @DS@(*columns)

    def pad(self, row, fill=None):
        """``row`` extended with ``fill`` up to the width."""
        missing = self.width - len(row)
        return tuple(row) + (fill,) * missing

    def _index(self, key):
        if isinstance(key, int):
            return key
        if self._headers is None or key not in self._headers:
            raise KeyError(key)
        return self._headers.index(key)

    def export(self, name, **options):
        """The data as text in format ``name`` (see the formats registry)."""
        return get_format(name).export_set(self, **options)

    def dict(self):
        """The rows as dicts keyed by header."""
        if self._headers is None:
            raise ValueError("dict() needs headers")
        return [dict(zip(self._headers, row)) for row in self._data]


class Databook:
    """Named datasets, in the order they were added."""

    def __init__(self, sheets=()):
        self._sheets = []
        for sheet in sheets:
            self.add_sheet(sheet)

    def add_sheet(self, sheet):
        """Add a @DS@; raise TypeError for anything else."""
        if not isinstance(sheet, @DS@):
            raise TypeError("a Databook holds @DS@ objects")
        self._sheets.append(sheet)

    def sheet(self, position):
        """The sheet at ``position`` (0-based)."""
        return self._sheets[position]

    @property
    def size(self):
        """The number of sheets."""
        return len(self._sheets)
'''

FORMATS_INIT = '''"""The exporters, by name. Every exporter class must be listed in REGISTRY."""

from ..exceptions import UnsupportedFormat
from ._csv import CSVFormat
from ._html import HTMLFormat
from ._json import JSONFormat
from ._tsv import TSVFormat

REGISTRY = {
    "csv": CSVFormat,
    "tsv": TSVFormat,
    "json": JSONFormat,
    "html": HTMLFormat,
}


def get_format(name):
    """The exporter registered as ``name``."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnsupportedFormat(name) from None
'''

FORMAT_CSV = '''"""Comma separated values."""


def _cell(value, delimiter):
    text = "" if value is None else str(value)
    if delimiter in text or '"' in text:
        text = '"' + text.replace('"', '""') + '"'
    return text


def join_row(values, delimiter):
    """One line of delimited text."""
    return delimiter.join(_cell(value, delimiter) for value in values)


class CSVFormat:
    title = "csv"

    @staticmethod
    def export_set(dataset, delimiter=",", header=True):
        """Delimited lines; the headers first when ``header`` (default True)."""
        lines = []
        if header and dataset.headers:
            lines.append(join_row(dataset.headers, delimiter))
        for row in dataset[:]:
            lines.append(join_row(row, delimiter))
        return "\\n".join(lines)
'''

FORMAT_TSV = '''"""Tab separated values (CSV with a tab)."""

from ._csv import CSVFormat


class TSVFormat:
    title = "tsv"

    @staticmethod
    def export_set(dataset, header=True):
        return CSVFormat.export_set(dataset, "\\t", header)
'''

FORMAT_JSON = '''"""JSON: a list of objects under headers, else a list of lists."""

import json


class JSONFormat:
    title = "json"

    @staticmethod
    def export_set(dataset, indent=None):
        """JSON text (compact unless ``indent``)."""
        if dataset.headers:
            return json.dumps(dataset.dict(), indent=indent)
        return json.dumps([list(row) for row in dataset[:]], indent=indent)
'''

FORMAT_HTML = '''"""An HTML table."""

from html import escape


class HTMLFormat:
    title = "html"

    @staticmethod
    def export_set(dataset):
        parts = ["<table>"]
        if dataset.headers:
            cells = "".join("<th>%s</th>" % escape(str(h)) for h in dataset.headers)
            parts.append("<tr>%s</tr>" % cells)
        for row in dataset[:]:
            parts.append("<tr>%s</tr>" % "".join("<td>%s</td>" % escape(str(v)) for v in row))
        parts.append("</table>")
        return "\\n".join(parts)
'''

TEST_CORE = '''import unittest

from @PKG@ import @DS@, Databook, InvalidDimensions


class @DS@Tests(unittest.TestCase):
    def setUp(self):
        self.data = @DS@(("ann", 31), ("bob", 25), ("cy", 40), headers=["name", "age"])

    def test_size(self):
        self.assertEqual((self.data.height, self.data.width), (3, 2))

    def test_append_checks_width(self):
        with self.assertRaises(InvalidDimensions):
            self.data.append(("dee",))

    def test_column_by_name(self):
        self.assertEqual(self.data["age"], [31, 25, 40])

    def test_sort(self):
        self.assertEqual(self.data.sort("age").get_col(0), ["bob", "ann", "cy"])

    def test_transpose(self):
        self.assertEqual(self.data.transpose()[0], ("ann", "bob", "cy"))


class DatabookTests(unittest.TestCase):
    def test_sheets(self):
        book = Databook([@DS@(("a",))])
        self.assertEqual(book.size, 1)


if __name__ == "__main__":
    unittest.main()
'''

TEST_FORMATS = '''import json
import unittest

from @PKG@ import @DS@


class FormatTests(unittest.TestCase):
    def setUp(self):
        self.data = @DS@(("ann", 31), ("bob", 25), headers=["name", "age"])

    def test_csv(self):
        self.assertEqual(self.data.export("csv", header=True), "name,age\\nann,31\\nbob,25")

    def test_json(self):
        self.assertEqual(json.loads(self.data.export("json"))[1], {"name": "bob", "age": 25})


if __name__ == "__main__":
    unittest.main()
'''

FILES = {
    "README.md": README,
    "@PKG@/__init__.py": INIT,
    "@PKG@/exceptions.py": EXCEPTIONS,
    "@PKG@/@VAL@.py": VALIDATE,
    "@PKG@/@CORE@.py": CORE,
    "@PKG@/formats/__init__.py": FORMATS_INIT,
    "@PKG@/formats/_csv.py": FORMAT_CSV,
    "@PKG@/formats/_tsv.py": FORMAT_TSV,
    "@PKG@/formats/_json.py": FORMAT_JSON,
    "@PKG@/formats/_html.py": FORMAT_HTML,
    "tests/__init__.py": "",
    "tests/test_core.py": TEST_CORE,
    "tests/test_formats.py": TEST_FORMATS,
}
TEST_COMMAND = "python -m unittest discover -s tests -t ."
PRELUDE = ""
"""What a snippet needs before it can import the package (nothing: the root is on the path)."""
