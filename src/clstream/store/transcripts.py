"""Transcripts: every model call of a run, stored by content next to the records it served.

Why (docs/design.md §5.1): a score is only explained by what the model was given and what it
said. Each call a run makes (answers, memory updates, extractions, judge and writer calls) is
stored with its messages as sent (roles and content), its sampling parameters (with tools and
adapter), its reply (every sample), token counts, latency, error, and the record it served.

Storage by content. A message's content is split after each blank line (``"\\n\\n"``: passage
blocks, sections and headers end in one), and the pieces form a chain: node i is the hash of
node i-1 and of piece i, so a content is named by its last node, and two contents that begin
alike share the nodes of their common beginning. A method that resends a growing context
(``icl`` resends every passage so far, for every question) therefore stores each passage once,
and each call adds only the nodes of what is new in it (its question). Pieces are stored once
each, zlib-compressed, keyed by a 16-byte BLAKE2b hash (``transcript_parts``); nodes are
``(id, prev, part)`` (``transcript_nodes``); a call row holds ``[[role, last node], ...]``.
Storage then grows linearly in the stream, not in the square of it (``benchmarks/
bench_transcripts.py``). A node's hash is of the text as sent; the stored piece is scrubbed of
secrets like every other stored string.

Linking. A call is written in the transaction that commits a batch of records it served
(:meth:`TranscriptWriter.write`), taken from the running cell's
:class:`~clstream.core.transcripts.CallCapture`. It serves the record of the batch made from
its result (:attr:`~clstream.core.records.Record.calls`, where the protocol says); failing
that, the record whose key is
its request key, or a ``/``-separated beginning of it (``q3@7/search1`` serves ``q3@7``), or
one of its ``/``-separated segments when that record is of the call's stage
(``judge/exact/item9/ab12`` serves the judge record ``item9``); a memory
update call serves the ``call`` record holding its reply texts, and a call of another stage
than ``generate`` serves the batch's only record of that stage. Calls that serve no record of a
batch wait for a later one (a cell's intervals run concurrently); those still waiting when the
cell ends are stored without a record (empty ``record_kind`` and ``record_key``). A call killed
with its records is lost with them, and made again by the resume, so a resume stores each call
once; a call is keyed by its run, record, stage, request key and request hash, so a retried
call replaces the failed one it repeats.

Reading (what a viewer or an export uses): :func:`read_calls` gives each call as a flat dict
with its messages reassembled (``[{"role", "content"}]``) and its samples decoded;
:func:`count_calls` counts them. Databases from before transcripts (schema 3 and older) read as
holding none.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from clstream.core.records import Record
from clstream.core.secrets import Scrubber
from clstream.core.transcripts import CallCapture, NotedCall, current_capture
from clstream.core.types import GenerationRequest

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS transcript_parts (id BLOB PRIMARY KEY, data BLOB NOT NULL)"
    " WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS transcript_nodes (id BLOB PRIMARY KEY, prev BLOB,"
    " part BLOB NOT NULL) WITHOUT ROWID",
    """CREATE TABLE IF NOT EXISTS calls (
    run_id TEXT NOT NULL,
    record_kind TEXT NOT NULL DEFAULT '',
    record_key TEXT NOT NULL DEFAULT '',
    key TEXT NOT NULL,
    stage TEXT NOT NULL,
    request_sha TEXT NOT NULL,
    messages TEXT NOT NULL,
    params TEXT NOT NULL,
    reply BLOB NOT NULL,
    error TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    first_token_s REAL,
    cache_hit INTEGER NOT NULL DEFAULT 0,
    ended_at REAL NOT NULL,
    PRIMARY KEY (run_id, record_kind, record_key, stage, key, request_sha)
)""",
)

CALL_COLUMNS = (
    "run_id", "record_kind", "record_key", "key", "stage", "request_sha", "messages", "params",
    "reply", "error", "prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens",
    "latency_s", "first_token_s", "cache_hit", "ended_at",
)
TABLES = ("calls", "transcript_nodes", "transcript_parts")
TranscriptRows = tuple[Sequence[Sequence[Any]], Sequence[Sequence[Any]], Sequence[Sequence[Any]]]
"""Rows of the three transcript tables: calls (:data:`CALL_COLUMNS`), nodes, pieces."""
_SEPARATOR = "\n\n"
RECENT_CONTENTS = 4  # contents a writer remembers to take up a growing context where it was
KNOWN_NODES = 1 << 20  # node ids a writer remembers as stored (about 100 MiB at most)
_INSERT_CALL = (f"INSERT OR REPLACE INTO calls ({', '.join(CALL_COLUMNS)})"
                f" VALUES ({', '.join('?' * len(CALL_COLUMNS))})")


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def split_content(content: str) -> list[str]:
    """``content`` cut after each blank line; the pieces join back to it exactly."""
    pieces = content.split(_SEPARATOR)
    last = pieces.pop()
    out = [p + _SEPARATOR for p in pieces]
    if last:
        out.append(last)
    return out


def has_transcripts(conn: sqlite3.Connection) -> bool:
    """Whether the database holds the transcript tables (schema 4 and later)."""
    return conn.execute("SELECT 1 FROM main.sqlite_master WHERE type='table' AND name='calls'"
                        ).fetchone() is not None


def _beginnings(key: str) -> Iterable[str]:
    """``key``, then its ``/``-separated beginnings, longest first."""
    yield key
    cut = len(key)
    while (cut := key.rfind("/", 0, cut)) > 0:
        yield key[:cut]


def link_calls(capture: CallCapture, records: Sequence[Record]
               ) -> list[tuple[NotedCall, Record]]:
    """The calls waiting in ``capture`` that served a record of ``records``, each with it
    (module docstring: how a call is matched to its record). Calls are found from the
    results records were made from first; the waiting calls are searched by key only for
    records that do not say (so a batch that does costs nothing per waiting call)."""
    out: list[tuple[NotedCall, Record]] = []
    taken: set[int] = set()
    for r in records:
        for result in r.calls:
            call = capture.made(result)
            if call is not None and id(call) not in taken:
                taken.add(id(call))
                out.append((call, r))
    unsaid = [r for r in records if not r.calls]
    if unsaid:
        out += _link_by_key([c for c in capture.pending if id(c) not in taken], unsaid)
    return out


def _link_by_key(calls: Sequence[NotedCall], records: Sequence[Record]
                 ) -> list[tuple[NotedCall, Record]]:
    by_key: dict[str, list[Record]] = {}
    by_stage: dict[str, list[Record]] = {}
    replies: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        by_key.setdefault(r.key, []).append(r)
        by_stage.setdefault(r.stage, []).append(r)
        texts = r.payload.get("texts") if r.kind == "call" else None
        if isinstance(texts, list):
            replies.setdefault((r.stage, json.dumps(texts)), []).append(r)
    out: list[tuple[NotedCall, Record]] = []
    for call in calls:  # cheap tests first: calls of other batches wait here many times
        key = call.request.key
        exact = by_key.get(key)
        found = (_by_stage(call, exact) if exact
                 else _by_key(call, by_key) if "/" in key else None)
        if found is None and replies:
            texts = json.dumps([s.text for s in call.result.samples])
            same = replies.get((call.result.stage, texts))
            if same:
                found = same.pop(0)
        if found is None and call.request.stage != "generate":
            staged = by_stage.get(call.request.stage, [])
            found = staged[0] if len(staged) == 1 else None
        if found is not None:
            out.append((call, found))
    return out


def _by_stage(call: NotedCall, found: list[Record]) -> Record:
    return next((r for r in found if r.stage == call.request.stage), found[0])


def _by_key(call: NotedCall, by_key: dict[str, list[Record]]) -> Record | None:
    """The record keyed as the call's request (or a beginning of it), else the record of the
    call's own stage keyed by one of its segments (a judge's call names its item)."""
    key, stage = call.request.key, call.request.stage
    for candidate in _beginnings(key):
        found = by_key.get(candidate)
        if found:
            return _by_stage(call, found)
    for segment in key.split("/"):
        for r in by_key.get(segment, ()):
            if r.stage == stage:
                return r
    return None


class TranscriptWriter:
    """Writes calls into an open writer connection, inside the caller's transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._known: set[bytes] = set()  # node ids stored (or written in this transaction)
        self._parts: list[tuple[bytes, bytes]] = []  # rows to insert with the next calls
        self._nodes: list[tuple[bytes, bytes | None, bytes]] = []
        # Contents written last, with the end offset and node of each of their pieces: a new
        # content that begins like one of them takes up its chain where they part.
        self._recent: list[tuple[str, list[int], list[bytes]]] = []

    def forget(self) -> None:
        """After a rollback: what was written in it is not stored."""
        self._known.clear()
        self._parts, self._nodes, self._recent = [], [], []

    def write(self, run_id: str, records: Sequence[Record], scrubber: Scrubber) -> int:
        """Store the running cell's calls that served ``records``; returns how many."""
        capture = current_capture()
        if capture is None or not capture.pending:
            return 0
        linked = link_calls(capture, records)
        if linked:
            self._insert([self._row(run_id, record.kind, record.key, call, scrubber)
                          for call, record in linked])
            capture.take([call for call, _ in linked])
        return len(linked)

    def _insert(self, calls: list[tuple[Any, ...]]) -> None:
        """Call rows, after the pieces and nodes their messages added (one statement each)."""
        if self._parts:
            self.conn.executemany("INSERT OR IGNORE INTO transcript_parts VALUES (?,?)",
                                  self._parts)
            self.conn.executemany("INSERT OR IGNORE INTO transcript_nodes VALUES (?,?,?)",
                                  self._nodes)
            self._parts, self._nodes = [], []
        self.conn.executemany(_INSERT_CALL, calls)

    def write_unlinked(self, run_id: str, calls: Sequence[NotedCall], scrubber: Scrubber
                       ) -> None:
        """Store calls that served no record (those left when a cell ended)."""
        self._insert([self._row(run_id, "", "", c, scrubber) for c in calls])

    def _resume(self, content: str) -> tuple[list[int], list[bytes]]:
        """The offsets and nodes of the longest chain of whole pieces (each ending in a blank
        line) that ``content`` shares with a recently written content: the client's CPU per
        call then grows with what is new in it, not with its length (a growing context)."""
        best: tuple[list[int], list[bytes]] = ([], [])
        for text, offsets, nodes in self._recent:
            lo, hi = 0, len(offsets) - (0 if text.endswith(_SEPARATOR) else 1)
            if hi <= len(best[0]) or text[:64] != content[:64]:
                continue
            if content.startswith(text[:offsets[hi - 1]]):  # the usual case: it grew
                lo = hi
            while lo < hi:  # the most whole pieces of ``text`` that ``content`` begins with
                mid = (lo + hi + 1) // 2
                if content.startswith(text[:offsets[mid - 1]]):
                    lo = mid
                else:
                    hi = mid - 1
            if lo > len(best[0]):
                best = (offsets[:lo], nodes[:lo])
        return best

    def _content(self, content: str, scrubber: Scrubber) -> str | None:
        """The last node of ``content``'s chain, writing the nodes and pieces not stored (a
        node forgotten past :data:`KNOWN_NODES` is written again, and ignored by SQLite)."""
        if len(self._known) > KNOWN_NODES:
            self._known.clear()
        offsets, nodes = self._resume(content)
        pos = offsets[-1] if offsets else 0
        prev: bytes | None = nodes[-1] if nodes else None
        for piece in split_content(content[pos:]):
            part = _digest(piece.encode("utf-8", "surrogatepass"))
            node = _digest((prev or b"") + part)
            if node not in self._known:
                self._parts.append((part, zlib.compress(scrubber.text(piece).encode("utf-8"))))
                self._nodes.append((node, prev, part))
                self._known.add(node)
            pos += len(piece)
            offsets.append(pos)
            nodes.append(node)
            prev = node
        if len(content) > 4 * len(_SEPARATOR):
            self._recent = [(content, offsets, nodes), *self._recent[:RECENT_CONTENTS - 1]]
        return None if prev is None else prev.hex()

    def _row(self, run_id: str, kind: str, key: str, call: NotedCall, sc: Scrubber
             ) -> tuple[Any, ...]:
        request, result = call.request, call.result
        messages = [[m.role, self._content(m.content, sc)] for m in request.messages]
        heads = json.dumps(messages)
        params_json = self._params(request, sc)
        request_sha = hashlib.sha256(f"{heads}\n{params_json}".encode()).hexdigest()[:32]
        reply = zlib.compress(sc.json(
            [s.model_dump(mode="json") for s in result.samples]).encode())
        u = result.usage
        return (run_id, sc.text(kind), sc.text(key), sc.text(request.key), request.stage,
                request_sha, heads, params_json, reply,
                None if result.error is None else sc.text(result.error),
                u.prompt_tokens, u.cached_tokens, u.completion_tokens, u.reasoning_tokens,
                u.latency_s, result.first_token_s, int(result.cache_hit), call.ended_at)

    def _params(self, request: GenerationRequest, sc: Scrubber) -> str:
        """The request's sampling parameters (with tools and adapter) as JSON text, the same
        text for the same parameters: a run sends few distinct ones (seeds aside)."""
        if not request.tools and request.adapter is None:
            try:
                return sc.text(request.params.model_dump_json())
            except ValueError:  # a stop string pydantic cannot encode: the general way
                pass
        params: dict[str, Any] = request.params.model_dump(mode="json")
        if request.tools:
            params["tools"] = list(request.tools)
        if request.adapter is not None:
            params["adapter"] = request.adapter.name
        return sc.json(params)

    def put_rows(self, calls: Iterable[Sequence[Any]], nodes: Iterable[Sequence[Any]],
                 parts: Iterable[Sequence[Any]], *, replace: bool = True) -> None:
        """Rows read from another results database, as stored (:func:`transcript_rows`); a
        call already stored is replaced (a shard's retry of it), or kept with ``replace``
        False (a merge keeps what it took first)."""
        self.conn.executemany("INSERT OR IGNORE INTO transcript_parts VALUES (?,?)",
                              [tuple(p) for p in parts])
        self.conn.executemany("INSERT OR IGNORE INTO transcript_nodes VALUES (?,?,?)",
                              [tuple(n) for n in nodes])
        insert = _INSERT_CALL if replace else _INSERT_CALL.replace("OR REPLACE", "OR IGNORE")
        self.conn.executemany(insert, [tuple(c) for c in calls])


def transcript_rows(conn: sqlite3.Connection, run_id: str) -> TranscriptRows:
    """Every call row of ``run_id`` (:data:`CALL_COLUMNS`, in write order) with the nodes and
    pieces their messages need: how a shard's or another directory's calls travel."""
    if not has_transcripts(conn):
        return [], [], []
    calls = [tuple(r) for r in conn.execute(
        f"SELECT {', '.join(CALL_COLUMNS)} FROM calls WHERE run_id=? ORDER BY rowid",
        (run_id,))]
    heads = {bytes.fromhex(h) for c in calls for _, h in json.loads(c[6]) if h}
    nodes: dict[bytes, tuple[Any, ...]] = {}
    todo = list(heads)
    while todo:
        batch, todo = todo[:500], todo[500:]
        for row in conn.execute(
                "SELECT id, prev, part FROM transcript_nodes WHERE id IN"
                f" ({', '.join('?' * len(batch))})", batch):
            nodes[row[0]] = tuple(row)
            if row[1] is not None and row[1] not in nodes:
                todo.append(row[1])
    wanted = sorted({n[2] for n in nodes.values()})
    parts: list[tuple[Any, ...]] = []
    for start in range(0, len(wanted), 500):
        batch = wanted[start:start + 500]
        parts.extend(tuple(r) for r in conn.execute(
            f"SELECT id, data FROM transcript_parts WHERE id IN ({', '.join('?' * len(batch))})",
            batch))
    return calls, list(nodes.values()), parts


class _Assembler:
    """Contents from their last node, nodes and pieces read once per assembler."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.nodes: dict[bytes, tuple[bytes | None, bytes]] = {}
        self.parts: dict[bytes, str] = {}

    def content(self, head: str | None) -> str:
        pieces: list[str] = []
        node = None if head is None else bytes.fromhex(head)
        while node is not None:
            if node not in self.nodes:
                row = self.conn.execute("SELECT prev, part FROM transcript_nodes WHERE id=?",
                                        (node,)).fetchone()
                if row is None:
                    raise ValueError(f"transcript node {node.hex()} is not stored")
                self.nodes[node] = (row[0], row[1])
            prev, part = self.nodes[node]
            if part not in self.parts:
                (data,) = self.conn.execute("SELECT data FROM transcript_parts WHERE id=?",
                                            (part,)).fetchone()
                self.parts[part] = zlib.decompress(data).decode("utf-8")
            pieces.append(self.parts[part])
            node = prev
        return "".join(reversed(pieces))


def _where(run_id: str, record_kind: str | None, record_key: str | None
           ) -> tuple[str, list[Any]]:
    sql, args = " WHERE run_id=?", [run_id]
    if record_kind is not None:
        sql += " AND record_kind=?"
        args.append(record_kind)
    if record_key is not None:
        sql += " AND record_key=?"
        args.append(record_key)
    return sql, args


def read_calls(conn: sqlite3.Connection, run_id: str, record_kind: str | None = None,
               record_key: str | None = None) -> list[dict[str, Any]]:
    """The stored calls of ``run_id`` (of one record kind, one record), in write order.

    Each is a flat dict: ``run_id``, ``record_kind`` and ``record_key`` (None for a call that
    served no record), ``key`` and ``stage`` of the request, ``messages``
    (``[{"role", "content"}]`` exactly as sent), ``params`` (sampling, tools, adapter),
    ``samples`` (``[{"text", "reasoning", "finish_reason", "tool_calls"}]``), ``error``, the
    token counts, ``latency_s``, ``first_token_s``, ``cache_hit`` and ``ended_at``."""
    if not has_transcripts(conn):
        return []
    where, args = _where(run_id, record_kind, record_key)
    assembler = _Assembler(conn)
    out = []
    for row in conn.execute(f"SELECT {', '.join(CALL_COLUMNS)} FROM calls{where}"
                            " ORDER BY rowid", args):
        call = dict(zip(CALL_COLUMNS, row, strict=True))
        call["record_kind"] = call["record_kind"] or None
        call["record_key"] = call["record_key"] if call["record_kind"] else None
        call["messages"] = [{"role": role, "content": assembler.content(head)}
                            for role, head in json.loads(call["messages"])]
        call["params"] = json.loads(call["params"])
        call["samples"] = json.loads(zlib.decompress(call.pop("reply")))
        call["cache_hit"] = bool(call["cache_hit"])
        del call["request_sha"]
        out.append(call)
    return out


def export_row(call: dict[str, Any]) -> dict[str, Any]:
    """One call of :func:`read_calls` as a line of ``export --transcripts``: flat keys (the
    sampling parameters as ``param_<name>``, the replies as ``reply`` and ``replies``),
    messages a list of ``{"role", "content"}``, so ``pandas.read_json(path, lines=True)``
    gives one row per call."""
    samples = call["samples"]
    row = {k: v for k, v in call.items() if k not in ("params", "samples")}
    row.update({f"param_{k}": v for k, v in call["params"].items()})
    row["reply"] = samples[0]["text"] if samples else None
    row["replies"] = [s["text"] for s in samples]
    row["reasoning"] = [s.get("reasoning", "") for s in samples]
    row["finish_reasons"] = [s.get("finish_reason") for s in samples]
    row["tool_calls"] = [s.get("tool_calls", []) for s in samples]
    return row


def count_calls(conn: sqlite3.Connection, run_id: str) -> int:
    if not has_transcripts(conn):
        return 0
    return int(conn.execute("SELECT COUNT(*) FROM calls WHERE run_id=?",
                            (run_id,)).fetchone()[0])


def stored_bytes(conn: sqlite3.Connection) -> int:
    """Bytes the transcript tables hold (cells as stored, without SQLite's page overhead)."""
    if not has_transcripts(conn):
        return 0
    total = 0
    for sql in ("SELECT SUM(length(data) + length(id)) FROM transcript_parts",
                "SELECT SUM(length(id) + IFNULL(length(prev), 0) + length(part))"
                " FROM transcript_nodes",
                "SELECT SUM(length(run_id) + length(record_kind) + length(record_key)"
                " + length(key) + length(stage) + length(request_sha) + length(messages)"
                " + length(params) + length(reply) + IFNULL(length(error), 0) + 8 * 8)"
                " FROM calls"):
        total += int(conn.execute(sql).fetchone()[0] or 0)
    return total
