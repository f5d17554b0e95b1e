"""Citations in the package's docstrings and comments point at sections that exist in docs/.

Code cites its definitions as ``docs/<page>.md §N`` or ``§N.M`` (several sections of one page
as ``docs/oaks.md §2, §5.6``). Every cited page must exist under docs/ and every cited number
must be a numbered heading of that page (``## 5. Metrics``, ``### 5.3 Acquisition latency``).
The project's working documents outside the repository (SPECS, DESIGN, briefs) are never cited:
a reader of the code cannot open them.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PACKAGE = ROOT / "src" / "clstream"

# A page followed by one or more section numbers, separated by commas, "and" or spaces.
CITATION = re.compile(
    r"docs/(?P<page>[\w-]+)\.md(?P<sections>(?:(?:,\s*|\s+and\s+|\s+)§\s?\d+(?:\.\d+)*)+)"
)
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", re.MULTILINE)
OUTSIDE = re.compile(r"\bSPECS\b|\bDESIGN\b|\bbriefs?/|\bbrief\s+§")


def numbered_sections(markdown: str) -> set[str]:
    """The section numbers of a page's headings: "## 3. Metrics" -> "3", "### 3.2 X" -> "3.2"."""
    return set(HEADING.findall(markdown))


def citations(text: str) -> list[tuple[str, str]]:
    """(page, section number) for every ``docs/<page>.md §N`` citation in ``text``."""
    return [(m.group("page"), number)
            for m in CITATION.finditer(text)
            for number in SECTION.findall(m.group("sections"))]


def broken_citations(text: str, docs: Path) -> list[str]:
    """Citations of ``text`` whose page or section does not exist under ``docs``."""
    problems = []
    for page, number in citations(text):
        path = docs / f"{page}.md"
        if not path.is_file():
            problems.append(f"docs/{page}.md does not exist")
        elif number not in numbered_sections(path.read_text(encoding="utf-8")):
            problems.append(f"docs/{page}.md has no section {number}")
    return problems


def outside_citations(text: str) -> list[str]:
    """Lines of ``text`` that cite SPECS, DESIGN or a brief."""
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_cited_docs_section_exists() -> None:
    problems = [f"{path.relative_to(ROOT)}: {problem}"
                for path in _sources()
                for problem in broken_citations(path.read_text(encoding="utf-8"), DOCS)]
    assert not problems, "\n".join(problems)


def test_the_package_cites_docs() -> None:
    cited = {page for path in _sources()
             for page, _ in citations(path.read_text(encoding="utf-8"))}
    assert {"oaks", "seqmem", "clbench", "imprint", "design"} <= cited


def test_no_citation_of_documents_outside_the_repository() -> None:
    problems = [f"{path.relative_to(ROOT)}: {line}"
                for path in _sources()
                for line in outside_citations(path.read_text(encoding="utf-8"))]
    assert not problems, "\n".join(problems)


def test_checker_reports_missing_pages_and_sections(tmp_path: Path) -> None:
    (tmp_path / "oaks.md").write_text("# OAKS\n\n## 5. Metrics\n\n### 5.3 Latency\n",
                                      encoding="utf-8")
    text = ('"""AL (docs/oaks.md §5.3, §5.4); see docs/oaks.md §5 and docs/none.md §1."""\n'
            "# SPECS §1.4 and DESIGN.md and brief §6 and briefs/imprint.md\n")
    assert citations(text) == [("oaks", "5.3"), ("oaks", "5.4"), ("oaks", "5"), ("none", "1")]
    assert broken_citations(text, tmp_path) == ["docs/oaks.md has no section 5.4",
                                                "docs/none.md does not exist"]
    assert len(outside_citations(text)) == 1
    assert outside_citations("Reason briefly, then answer.") == []
