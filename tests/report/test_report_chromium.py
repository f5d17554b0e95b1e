"""The report as a browser shows it: headless Chromium loads the file offline and draws it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib import image as mpimg

from clstream.render.base import Cell, Column, Section, Table
from clstream.report import register_section, render_report
from clstream.report.html import _SECTIONS

OVERFLOW_PROBE = """<script>
window.addEventListener("load", () => {
  document.querySelectorAll("details").forEach(d => { d.open = true; });
  const wide = [];
  document.querySelectorAll("table").forEach(t => {
    const section = t.closest("section, header");
    const style = getComputedStyle(section);
    const inner = section.clientWidth - parseFloat(style.paddingLeft)
      - parseFloat(style.paddingRight);
    if (t.scrollWidth > inner + 1) wide.push(t.querySelector("caption").textContent);
  });
  const out = document.createElement("pre");
  out.id = "overflowing-tables";
  out.textContent = JSON.stringify(wide);
  document.body.appendChild(out);
});
</script>"""


def _wide_section(runs: list[dict[str, Any]], labels: list[str], source: object) -> Section:
    """A per-task table as wide as CL-Bench's: a row per task and system, twelve columns."""
    columns = (Column("Task"), Column("System"),
               *(Column(f"Measure {i}", True) for i in range(10)))
    rows = [(Cell(f"{task}_spectrum_monitoring"), Cell(label),
             *(Cell(f"0.{i}63 \u00b1 0.00{i}", True) for i in range(10)))
            for task in ("blind", "sales") for label in labels]
    return Section(protocol="wide", title="Wide tables",
                   tables=[Table("Per task: stateful against stateless", columns, rows)])


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(
        "Chromium not found: install Debian's 'chromium' package (apt-get install chromium) "
        "to run this test"
    )


def _run_chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={profile}", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_chromium_renders_report(summary: dict[str, Any], tmp_path: Path) -> None:
    binary = _chromium()
    summary["runs"][2]["system"] = "<b>rag</b>:k=8"
    page = render_report(summary, tmp_path / "report.html")
    url = page.resolve().as_uri()

    dom = _run_chromium(binary, tmp_path / "profile-dom", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<table" in dom.stdout and "Scores per system" in dom.stdout
    for label in ["full", "window:w=4", "&lt;b&gt;rag&lt;/b&gt;:k=8", "rag+window:k=8,w=4"]:
        assert f"<td>{label}" in dom.stdout
    assert "<b>rag</b>" not in dom.stdout  # the label stays text, never markup
    assert dom.stdout.count("<svg") == 5
    assert "Transition behaviours" in dom.stdout and "Obstinacy" in dom.stdout

    # No table is wider than its section at a common window width (wide ones wrap to fit).
    register_section("wide", _wide_section)
    try:
        summary["runs"].append({"run_id": "wide0000", "protocol": "wide", "system": "icl"})
        probed = render_report(summary, tmp_path / "probed.html")
    finally:
        _SECTIONS.pop("wide", None)
    probed.write_text(probed.read_text().replace("</body>", OVERFLOW_PROBE + "</body>"))
    widths = _run_chromium(binary, tmp_path / "profile-widths", "--window-size=1280,2000",
                           "--virtual-time-budget=5000", "--dump-dom", probed.resolve().as_uri())
    assert "Per task: stateful against stateless" in widths.stdout
    assert '<pre id="overflowing-tables">[]</pre>' in widths.stdout, widths.stdout[-600:]

    shot = tmp_path / "shot.png"
    result = _run_chromium(
        binary, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2000", url
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.exists() and shot.stat().st_size > 10_000
    pixels = mpimg.imread(shot)
    assert pixels.shape[:2] == (2000, 1280)
    rgb = np.round(pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    colours = np.unique(rgb, axis=0)
    assert len(colours) > 50  # text, table rules and coloured chart marks, not a blank page
    # The charts' first system colour (#0072B2) is drawn somewhere on the first screen.
    assert np.any(np.all(np.abs(rgb.astype(int) - [0, 114, 178]) <= 3, axis=1))
