"""HFModel over a tiny random-weight Llama built in a temporary directory (no download)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tiny_llama import build_tiny_model

from clstream.core.errors import SpecError
from clstream.core.types import GenerationRequest, GenerationResult, Message, SamplingParams
from clstream.models.hf import (
    HFModel,
    cut_at_stop,
    import_optional,
    render_plain,
    split_reasoning,
)


@pytest.fixture(scope="module", autouse=True)
def offline_hub() -> object:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def model(tiny_dir: Path) -> HFModel:
    return HFModel(str(tiny_dir), device="cpu")


def req(key: str, text: str, **params: Any) -> GenerationRequest:
    return GenerationRequest(
        key=key,
        messages=(Message(role="system", content="Answer briefly ."),
                  Message(role="user", content=text)),
        params=SamplingParams(**params),
    )


def run(model: HFModel, requests: list[GenerationRequest]) -> list[GenerationResult]:
    return asyncio.run(model.generate(requests))


# -- errors and pure helpers -------------------------------------------------------------------


def test_missing_directory_is_spec_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(SpecError, match="no-such-model.*not a local directory"):
        HFModel(str(missing))
    with pytest.raises(SpecError, match="no config.json"):
        HFModel(str(tmp_path))
    with pytest.raises(SpecError, match="local model directory"):
        HFModel("")


def test_unknown_and_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="unknown argument.*base_url"):
        HFModel(str(tmp_path), base_url="http://x")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SpecError, match="dtype"):
        HFModel(str(tmp_path), dtype="float8")
    with pytest.raises(SpecError, match="batch_size"):
        HFModel(str(tmp_path), batch_size=0)


def test_missing_optional_dependency_names_the_extra() -> None:
    with pytest.raises(SpecError, match=r"pip install 'clstream\[hf\]'"):
        import_optional("clstream_module_that_does_not_exist", "hf")


def test_pure_helpers() -> None:
    assert split_reasoning("<think> a b </think>\n\nfinal") == ("final", "a b")
    assert split_reasoning("no think here") == ("no think here", "")
    assert cut_at_stop("abc STOP def END", ["END", "STOP", ""]) == ("abc ", True)
    assert cut_at_stop("abc", ["x"]) == ("abc", False)
    msgs = (Message(role="system", content="S"), Message(role="user", content="Q"))
    assert render_plain(msgs) == "system: S\n\nuser: Q\n\nassistant:"


def test_choose_token_filters() -> None:
    torch = pytest.importorskip("torch", reason="needs the hf extra: pip install 'clstream[hf]'")
    from clstream.models.hf import choose_token

    gen = torch.Generator().manual_seed(0)
    tied = torch.tensor([1.0, 3.0, 3.0, 2.0, -1.0])
    assert choose_token(torch, tied, SamplingParams(temperature=0.0), gen) == 1  # lowest id
    min_p = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.99)
    assert {choose_token(torch, tied, min_p, gen) for _ in range(50)} == {1, 2}
    logits = torch.tensor([1.0, 3.0, 2.5, 2.0, -1.0])
    for params in (
        SamplingParams(temperature=1.0, top_k=1, top_p=1.0),
        SamplingParams(temperature=1.0, top_k=0, top_p=0.01),
    ):
        assert {choose_token(torch, logits, params, gen) for _ in range(30)} == {1}
    top3 = SamplingParams(temperature=5.0, top_k=3, top_p=1.0)
    assert {choose_token(torch, logits, top3, gen) for _ in range(200)} == {1, 2, 3}
    # top-p keeps the smallest prefix whose mass reaches p: here the best two tokens.
    probs = torch.softmax(logits, dim=-1)
    nucleus = SamplingParams(temperature=1.0, top_k=0, top_p=float(probs[1] + probs[2]) - 1e-3)
    assert {choose_token(torch, logits, nucleus, gen) for _ in range(200)} == {1, 2}


# -- generation --------------------------------------------------------------------------------


def test_greedy_matches_transformers_generate_and_counts_tokens(
    model: HFModel, tiny_dir: Path
) -> None:
    transformers = pytest.importorskip("transformers", reason="needs the hf extra: pip install 'clstream[hf]'")
    torch = pytest.importorskip("torch", reason="needs the hf extra: pip install 'clstream[hf]'")
    reference = transformers.AutoModelForCausalLM.from_pretrained(
        str(tiny_dir), local_files_only=True
    ).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(tiny_dir), local_files_only=True)
    requests = [req(f"g{i}", f"Where is Mary ? {'apple ' * i}", temperature=0.0, max_tokens=10)
                for i in range(4)]
    results = run(model, requests)
    for request, result in zip(requests, results, strict=True):
        assert result.ok and len(result.samples) == 1
        ids = tok.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in request.messages],
            tokenize=False, add_generation_prompt=True,
        )
        prompt = tok.encode(ids, add_special_tokens=False)
        with torch.no_grad():
            out = reference.generate(
                torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                do_sample=False, max_new_tokens=10, pad_token_id=0,
            )
        new = out[0, len(prompt):].tolist()
        assert result.usage.prompt_tokens == len(prompt)
        assert result.usage.completion_tokens == len(new)
        assert result.samples[0].text == tok.decode(new, skip_special_tokens=True)
        expected = "stop" if new[-1] == 2 else "length"
        assert result.samples[0].finish_reason == expected


def test_same_request_alone_or_in_a_batch_gives_identical_text(model: HFModel) -> None:
    sampled = {"temperature": 1.0, "top_p": 0.95, "top_k": 0, "max_tokens": 16, "n": 2}
    target = req("target", "Who holds the apple ?", seed=7, **sampled)
    others = [req(f"o{i}", f"Where is Sandra ? {'garden ' * i}", seed=i, **sampled)
              for i in range(4)]
    alone = run(model, [target])[0]
    first = run(model, [target, *others])[0]
    middle = run(model, [*others[:2], target, *others[2:]])[2]
    texts = [s.text for s in alone.samples]
    assert texts == [s.text for s in first.samples] == [s.text for s in middle.samples]
    assert alone.usage.completion_tokens == middle.usage.completion_tokens
    assert len(set(texts)) == 2  # the two samples draw from different generators
    reseeded = run(model, [req("target", "Who holds the apple ?", seed=8, **sampled)])[0]
    assert [s.text for s in reseeded.samples] != texts


def test_n_samples_and_batch_size_slices(tiny_dir: Path) -> None:
    small = HFModel(str(tiny_dir), device="cpu", batch_size=2)
    request = req("many", "Where is Mary ?", temperature=1.0, top_k=0, top_p=1.0,
                  max_tokens=6, n=5, seed=3)
    result = run(small, [request])[0]
    assert result.ok and len(result.samples) == 5
    assert all(s.finish_reason in {"stop", "length"} for s in result.samples)
    assert 5 <= result.usage.completion_tokens <= 30


def test_mixed_padded_batches_decode_like_single_requests(
    model: HFModel, tiny_dir: Path
) -> None:
    mixed = HFModel(str(tiny_dir), device="cpu", mix_requests=True, batch_size=4)
    requests = [req(f"m{i}", "Where is Mary ?" + " apple" * (3 * i), temperature=0.0,
                    max_tokens=12) for i in range(5)]
    single = [run(model, [r])[0] for r in requests]
    together = run(mixed, requests)
    for a, b in zip(single, together, strict=True):
        assert [s.text for s in a.samples] == [s.text for s in b.samples]
        assert a.usage.prompt_tokens == b.usage.prompt_tokens
        assert a.usage.completion_tokens == b.usage.completion_tokens


def test_stop_strings_cut_the_text(model: HFModel) -> None:
    for i in range(8):
        base = req(f"s{i}", "Who holds the apple ?" + " milk" * i, temperature=0.0,
                   max_tokens=12)
        full = run(model, [base])[0]
        words = full.samples[0].text.split()
        if len(words) >= 4:
            break
    else:
        pytest.fail("no prompt gave a greedy reply of 4 words or more")
    stop = words[2]
    cut_at = full.samples[0].text.find(stop)
    stopped = run(model, [base.model_copy(update={
        "params": base.params.model_copy(update={"stop": (stop,)})
    })])[0]
    assert stopped.samples[0].text == full.samples[0].text[:cut_at]
    assert stopped.samples[0].finish_reason == "stop"
    assert stopped.usage.completion_tokens < full.usage.completion_tokens


def test_max_model_len_caps_and_rejects(tiny_dir: Path, model: HFModel) -> None:
    request = req("cap", "Where is Mary ?", temperature=0.0, max_tokens=50)
    prompt_len = len(model.prompt_ids(request))
    capped = HFModel(str(tiny_dir), device="cpu", max_model_len=prompt_len + 2)
    long = req("long", "Where is Mary ?" * 5, temperature=0.0, max_tokens=5)
    ok, bad = run(capped, [request, long])
    assert ok.ok and ok.usage.completion_tokens <= 2
    assert bad.samples == [] and "max_model_len" in (bad.error or "")
    assert (bad.error or "").startswith(f"hf:{tiny_dir}")


def test_thinking_flag_reaches_the_template(model: HFModel) -> None:
    plain = req("t", "Where is Mary ?")
    quiet = plain.model_copy(update={"params": SamplingParams(thinking=False)})
    assert len(model.prompt_ids(quiet)) == len(model.prompt_ids(plain)) + 3


def test_plain_rendering_without_chat_template(tiny_dir: Path, tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers", reason="needs the hf extra: pip install 'clstream[hf]'")
    folder = tmp_path / "plain"
    shutil.copytree(tiny_dir, folder)
    for name in ("chat_template.jinja", "chat_template.json"):
        (folder / name).unlink(missing_ok=True)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    plain = HFModel(str(folder), device="cpu")
    assert plain.describe()["chat_template"] is False
    request = req("p", "Where is Mary ?", temperature=0.0, max_tokens=4)
    tok = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    expected = tok.encode(render_plain(request.messages), add_special_tokens=True)
    result = run(plain, [request])[0]
    assert result.ok and result.usage.prompt_tokens == len(expected)


def test_tokenizer_is_exact_and_truncates_to_a_suffix(model: HFModel, tiny_dir: Path) -> None:
    transformers = pytest.importorskip("transformers", reason="needs the hf extra: pip install 'clstream[hf]'")
    tok = transformers.AutoTokenizer.from_pretrained(str(tiny_dir), local_files_only=True)
    wrapper = model.tokenizer
    assert wrapper.exact and wrapper.name == f"hf:{tiny_dir}"
    text = "Mary went to the kitchen . Then Sandra journeyed to the garden , holding milk ."
    assert wrapper.count(text) == len(tok.encode(text, add_special_tokens=False))
    for budget in range(0, wrapper.count(text) + 2):
        cut = wrapper.truncate_left(text, budget)
        assert text.endswith(cut) and wrapper.count(cut) <= budget
        if budget >= wrapper.count(text):
            assert cut == text
        elif budget > 0:
            assert wrapper.count(cut) == budget  # word-level tokens: the cut is exact


def test_describe_records_the_setup(model: HFModel, tiny_dir: Path) -> None:
    info = model.describe()
    assert info["backend"] == "hf" and info["path"] == str(tiny_dir.resolve())
    assert info["device"] == "cpu" and info["dtype"] == "float32"
    assert info["max_model_len"] == 4096 and info["chat_template"] is True
    assert len(info["config_sha256"]) == 16 and info["transformers"]


# -- a whole OAKS stream through the CLI -------------------------------------------------------


def test_whole_oaks_stream_runs_through_the_cli(tiny_dir: Path, tmp_path: Path) -> None:
    from clstream.cli import main
    from clstream.core import registry

    registry.register("model", "hf", "clstream.models.hf:HFModel")
    data = tmp_path / "oaks.json"
    out = tmp_path / "runs"
    preds = tmp_path / "preds.jsonl"
    assert main(["generate", "oaks-babi", "--seed", "2", "--docs", "1", "--chunks", "4",
                 "--chunk-tokens", "120", "--max-questions", "3", "--out", str(data)]) == 0
    assert main(["run", "oaks", str(data), "--system", "window:w=2", "--model", f"hf:{tiny_dir}",
                 "--max-tokens", "8", "--out", str(out), "--no-progress"]) == 0
    assert main(["export", str(out), "--system", "window:w=2", "--out", str(preds)]) == 0
    docs = json.loads(data.read_text())
    expected = {
        (qa["question_id"], t)
        for doc in docs
        for qa in doc["data"]["qas"].values()
        for t in range(1, doc["meta"]["num_chunks"] + 1)
    }
    assert len(expected) == 12  # 3 questions x 4 intervals
    rows = [json.loads(line) for line in preds.read_text().splitlines()]
    assert {(r["question_id"], r["t"]) for r in rows} == expected
    assert len(rows) == len(expected) and all(isinstance(r["output"], str) for r in rows)


def test_a_cli_run_with_a_cache_replays_without_decoding(tiny_dir: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``--cache`` is the same for a local backend as for a server: a rerun into a new results
    directory answers every probe from the cache and decodes nothing."""
    from clstream.cli import main

    data = tmp_path / "oaks.json"
    cache = tmp_path / "responses.sqlite"
    assert main(["generate", "oaks-babi", "--seed", "2", "--docs", "1", "--chunks", "2",
                 "--chunk-tokens", "120", "--max-questions", "2", "--out", str(data)]) == 0

    def run_into(out: Path) -> list[dict[str, Any]]:
        assert main(["run", "oaks", str(data), "--system", "window:w=2", "--model",
                     f"hf:{tiny_dir}", "--max-tokens", "8", "--cache", str(cache),
                     "--out", str(out), "--no-progress"]) == 0
        preds = out / "preds.jsonl"
        assert main(["export", str(out), "--system", "window:w=2", "--out", str(preds)]) == 0
        return [json.loads(line) for line in preds.read_text().splitlines()]

    first = run_into(tmp_path / "first")
    monkeypatch.setattr(HFModel, "generate_sync", lambda self, requests: pytest.fail("decoded"))
    assert run_into(tmp_path / "again") == first and len(first) == 4
