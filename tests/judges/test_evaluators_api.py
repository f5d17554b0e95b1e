"""APIBench-HF AST matching against an API pool (the Gorilla rule the paper's code keeps)."""

from __future__ import annotations

from clstream.judges.api_eval import build_pool, extract_api_call, match_api_call
from clstream.judges.evaluators import ApiCallEvaluator
from clstream.protocols.seqmem.tasks import SeqTask

SST2 = "distilbert-base-uncased-finetuned-sst-2-english"

POOL = [
    {
        "domain": "Natural Language Processing Text Classification",
        "api_name": "distilbert-sst2",
        "api_call": f"pipeline('sentiment-analysis', model='{SST2}')",
    },
    {
        "domain": "Computer Vision Image Classification",
        "api_name": "vit-base",
        "api_call": "ViTForImageClassification.from_pretrained('google/vit-base-patch16-224')",
    },
    {
        "domain": "Audio Automatic Speech Recognition",
        "api_name": "wav2vec2",
        "api_call": "Wav2Vec2ForCTC.from_pretrained('facebook/wav2vec2-base-960h')",
    },
    {"domain": "Multimodal", "api_name": "no-args", "api_call": "load_everything()"},
]
TASK = SeqTask(
    "api/1",
    "Classify the sentiment of product reviews.",
    f"pipeline('sentiment-analysis', model='{SST2}')",
    "api",
    {"api_data": {"domain": "Natural Language Processing Text Classification"}},
)


def gorilla(call: str) -> str:
    return (
        f"<<<domain>>>: Natural Language Processing, <<<api_call>>>: {call}, "
        "<<<api_provider>>>: Hugging Face Transformers, <<<explanation>>>: 1. Load it."
    )


def test_extract_api_call_formats() -> None:
    assert extract_api_call(gorilla("pipeline('x', model='y')")) == "pipeline('x', model='y')"
    assert extract_api_call('{"api_call": "f(1)", "api_provider": "z"}') == "f(1)"
    assert extract_api_call("Use this:\n```python\nimport a\na.f(2)\n```") == "import a\na.f(2)"
    assert extract_api_call("g(3)") == "g(3)"


def test_pool_skips_entries_without_arguments() -> None:
    assert [e.api_name for e in build_pool(POOL)] == ["distilbert-sst2", "vit-base", "wav2vec2"]


def test_correct_call_with_double_quotes_and_extra_arguments() -> None:
    output = gorilla(f'pipeline("sentiment-analysis", model="{SST2}", device=0)')
    verdict = ApiCallEvaluator(POOL).evaluate(TASK, output)
    assert verdict.score == 1.0 and verdict.detail["matched_api"] == "distilbert-sst2"


def test_module_qualified_name_matches() -> None:
    output = gorilla(f"transformers.pipeline('sentiment-analysis', model='{SST2}')")
    assert ApiCallEvaluator(POOL).evaluate(TASK, output).score == 1.0


def test_real_api_of_another_domain_is_wrong_not_hallucinated() -> None:
    verdict = ApiCallEvaluator(POOL).evaluate(
        TASK, gorilla("ViTForImageClassification.from_pretrained('google/vit-base-patch16-224')")
    )
    assert verdict.score == 0.0
    assert verdict.detail["reason"] == "wrong_domain" and not verdict.detail["hallucinated"]


def test_invented_model_is_hallucinated() -> None:
    verdict = ApiCallEvaluator(POOL).evaluate(
        TASK, gorilla("pipeline('sentiment-analysis', model='my-made-up-model')")
    )
    assert verdict.score == 0.0 and verdict.detail["hallucinated"]
    assert "hallucinated" in verdict.feedback


def test_unparseable_output_has_no_call() -> None:
    verdict = ApiCallEvaluator(POOL).evaluate(TASK, "I would use a sentiment model.")
    assert verdict.detail["reason"] == "no_call" and verdict.score == 0.0


def test_broken_code_is_parsed_line_by_line() -> None:
    call = f"pipeline('sentiment-analysis', model='{SST2}')"
    output = f"```python\nfrom transformers import (\n{call}\n```"
    assert ApiCallEvaluator(POOL).evaluate(TASK, output).score == 1.0


def test_strict_api_mode_needs_the_reference_call() -> None:
    same_domain_pool = POOL + [
        {
            "domain": "Natural Language Processing Text Classification",
            "api_name": "roberta",
            "api_call": "pipeline('text-classification', model='roberta-large-mnli')",
        }
    ]
    other = gorilla("pipeline('text-classification', model='roberta-large-mnli')")
    assert ApiCallEvaluator(same_domain_pool).evaluate(TASK, other).score == 1.0
    strict = ApiCallEvaluator(same_domain_pool, mode="api").evaluate(TASK, other)
    assert strict.score == 0.0 and strict.detail["reason"] == "wrong_api"


def test_match_api_call_first_matching_entry_wins() -> None:
    pool = build_pool(
        [{"api_call": "f('a')", "domain": "one"}, {"api_call": "f('a', 'b')", "domain": "two"}]
    )
    match = match_api_call("f('a', 'b')", pool, {"domain": "two"})
    assert match.matched is not None and match.matched.domain == "one" and not match.correct
