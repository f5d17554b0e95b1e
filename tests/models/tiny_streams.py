"""The smallest streams of three protocols for end-to-end runs of a memory method (CL-Bench
needs no file: its environment comes from the seed): an OAKS-BABI document of 4 chunks, a
SeqMem-Eval synthetic stream of 8 tasks, and ImprintBench news items, one per family, with
the corpus documents they come from."""

from __future__ import annotations

from pathlib import Path

from clstream.cli import main
from clstream.protocols.imprint.schema import Item, load_dataset, write_dataset


def tiny_streams(root: Path, seed: int, chunk_tokens: int = 120, pairs: bool = True
                 ) -> dict[str, Path]:
    """``{"oaks", "seqmem", "imprint"}`` data paths under ``root``; ``pairs=False`` leaves the
    ImprintBench training pairs out."""
    oaks, seqmem = root / "oaks.json", root / "seqmem.json"
    assert main(["generate", "oaks-babi", "--seed", str(seed), "--docs", "1", "--chunks", "4",
                 "--chunk-tokens", str(chunk_tokens), "--max-questions", "4",
                 "--out", str(oaks)]) == 0
    assert main(["generate", "seqmem-synthetic", "--seed", str(seed), "--tasks", "8",
                 "--holdout", "2", "--out", str(seqmem)]) == 0
    news = root / "news"
    assert main(["generate", "imprint", "--setting", "news", "--size", "small", "--seed",
                 str(seed), "--out", str(news)]) == 0
    data = load_dataset(news)
    first: dict[str, list[Item]] = {}
    for item in data.items:
        first.setdefault(item.family, []).append(item)
    data.items = [items[0] for items in first.values()]
    keep = {d for i in data.items for d in i.source_doc_ids} | {d.doc_id for d in data.corpus[:2]}
    data.corpus = [d for d in data.corpus if d.doc_id in keep]
    data.qa = [q for q in data.qa if q.doc_id in keep] if pairs else []
    return {"oaks": oaks, "seqmem": seqmem, "imprint": write_dataset(root / "imprint", data)}
