"""The results store never writes a secret, and stores any text, lone surrogates included.

Checked on the bytes of every file of the results directory (database, WAL and shared memory),
not only through the read API: a secret must not be anywhere on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clstream.core import secrets as secrets_mod
from clstream.core.secrets import (
    REDACTED,
    Scrubber,
    environment_secrets,
    register_secret,
    scrub,
    storable,
)
from clstream.store.db import Record, ResultsStore

KEY = "sk-live-abcdefghijklmnop0123"


def on_disk(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file())


def write_everything(store: ResultsStore, secret: str) -> None:
    store.ensure_run("r1", "oaks", f"sys {secret}", "builtin", "sha",
                     {"system": {"args": {"key": secret}}}, {"model_info": {"url": secret}})
    store.put_dataset("sha", f"/data/{secret}.json", {"docs": [{"text": f"x {secret} y"}]})
    store.put_records("r1", [
        Record("probe", "q@1", {"output": f"a {secret}", "deep": [{"n": [secret]}],
                                secret: 1}, stream="d", t=1),
        Record("probe", "q@2", {"output": ""}, stream="d", t=2,
               error=f'HTTP 401: {{"headers": {{"Authorization": "Bearer {secret}"}}}}'),
    ])
    store.save_state("r1", "d", 1, {"memory": [f"note {secret}"]},
                     [Record("call", "c#0", {"texts": [secret]}, stream="d", t=1)])
    store.rename_run("r1", "r2", spec={"system": {"args": {"token": secret}}})


def test_given_secrets_are_scrubbed_from_every_table(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True, secrets=[KEY]) as store:
        write_everything(store, KEY)
    assert KEY.encode() not in on_disk(tmp_path / "res")
    with ResultsStore(tmp_path / "res") as store:
        (run,) = store.runs()
        assert run.system == f"sys {REDACTED}" and run.spec["system"]["args"]["token"] == REDACTED
        assert run.info["model_info"]["url"] == REDACTED
        path, view = store.get_dataset("sha")
        assert path == f"/data/{REDACTED}.json" and view["docs"][0]["text"] == f"x {REDACTED} y"
        rows = {r.key: r for r in store.read_records("r2")}
        assert rows["q@1"].payload == {"output": f"a {REDACTED}", "deep": [{"n": [REDACTED]}],
                                       REDACTED: 1}
        assert rows["q@2"].error is not None and f"Bearer {REDACTED}" in rows["q@2"].error
        assert rows["c#0"].payload == {"texts": [REDACTED]}
        assert store.load_state("r2", "d", 1) == (1, {"memory": [f"note {REDACTED}"]})


def test_environment_keys_and_registered_values_are_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secrets_mod, "_registered", set())
    env = {"OPENAI_API_KEY": "sk-openai-0000000000", "HF_TOKEN": "hf_token_1111111111",
           "MY_SERVICE_SECRET": "secret-2222222222", "SHORT_TOKEN": "abc",
           "PATH": "/usr/bin:/bin/long/enough"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    found = environment_secrets()
    assert {env["OPENAI_API_KEY"], env["HF_TOKEN"], env["MY_SERVICE_SECRET"]} <= found
    assert "abc" not in found and env["PATH"] not in found
    late = "registered-after-open-3333"
    with ResultsStore(tmp_path / "res", writer=True) as store:
        register_secret(late)  # e.g. a model built after the store was opened
        register_secret("short")  # under 8 characters: ordinary text, not a secret
        store.ensure_run("r1", "oaks", "full", "builtin", "sha", {}, {})
        text = " ".join([*(env[k] for k in ("OPENAI_API_KEY", "HF_TOKEN", "MY_SERVICE_SECRET")),
                         late, "short abc"])
        store.put_records("r1", [Record("probe", "q@1", {"output": text}, stream="d", t=1)])
        (row,) = store.read_records("r1")
    assert row.payload["output"] == " ".join([REDACTED] * 4 + ["short abc"])
    raw = on_disk(tmp_path / "res")
    for value in (*env.values(), late):
        if len(value) >= 8 and value != env["PATH"]:
            assert value.encode() not in raw


def test_overlapping_secrets_are_redacted_longest_first() -> None:
    scrubber = Scrubber(["abcdefgh", "abcdefgh-longer-one"])
    assert scrubber.text("x abcdefgh-longer-one y abcdefgh") == f"x {REDACTED} y {REDACTED}"
    assert scrub("nothing secret here") == "nothing secret here"


def test_lone_surrogates_are_stored_escaped(tmp_path: Path) -> None:
    text = "answer \ud800 and \udfff end"
    assert storable(text) == "answer \\ud800 and \\udfff end"
    assert storable("plain \u00e9 \U0001f600") == "plain \u00e9 \U0001f600"
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.ensure_run("r1", "oaks", "full", "builtin", "sha", {}, {})
        store.put_records("r1", [
            Record("probe", "q@1", {"output": text, "list": [text]}, stream="d", t=1),
            Record("probe", "q@2", {"output": ""}, stream="d", t=2, error=f"bad {text}"),
        ])
        store.save_state("r1", "d", 1, {"memory": text})
    with ResultsStore(tmp_path / "res") as store:
        rows = {r.key: r for r in store.read_records("r1")}
        out = rows["q@1"].payload["output"]
        assert out == storable(text) and rows["q@2"].error == f"bad {storable(text)}"
        assert store.load_state("r1", "d", 1) == (1, {"memory": storable(text)})
    # what is read back writes to any UTF-8 file, even without ASCII escapes
    dest = tmp_path / "out.jsonl"
    dest.write_text(json.dumps({"output": out}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert json.loads(dest.read_text(encoding="utf-8"))["output"] == out
