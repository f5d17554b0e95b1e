"""``clstream check --base-url URL --model NAME [--json]``: is this endpoint ready for a long run?

A long run finds out late what a minute of checks finds out early: a wrong model name, a server
that applies no chat template (the model continues the prompt instead of answering it), usage
that never comes back (token counts become estimates), a seed that does not make temperature 0
repeatable. This command asks the server what it reports (:mod:`clstream.models.endpoint`:
served models, context length, sequence slots), then sends a few tiny requests and prints one
line per finding, and the concurrency a run would start with
(:mod:`clstream.models.concurrency`). A dead port or an unknown model is one line and exit 2,
as ``run`` would fail. With ``--base-url`` given several times (replicas of one model, as a run
takes them), each is checked in turn, one report after another (``--json``: a list of them),
and the first that fails ends the check. The HTTP client is imported when the command runs, not when the
command line is built, and so are asyncio and the sampling model (pydantic).
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from clstream.arguments.groups import BaseUrlFlag
from clstream.core.outputs import add_force_flag, claim_file
from clstream.driver.flags import OPENAI_DEFAULT_BASE_URL

if TYPE_CHECKING:
    import httpx

    from clstream.models.openai_compat import OpenAICompatModel

# What the tiny requests ask: a question whose answer is not in it (an echo is visible), and a
# longer repeated prompt, so a server with a prefix cache reports cached tokens the second time.
QUESTION = "Name one colour of the sky on a clear day, in a single word."
REPEATED = ("Here is a short note to read twice. " * 24).strip() + " Reply with one word."
ANSWER_TOKENS = 16
TIMEOUT_S = 60.0


def add_parser(subparsers: Any) -> None:
    """Add ``check`` to the top-level sub-commands."""
    p = subparsers.add_parser("check", help="check that an OpenAI-compatible endpoint is ready "
                                            "for a long run")
    p.add_argument("--base-url", default=None, action=BaseUrlFlag,
                   help=f"the server's /v1 URL (default: {OPENAI_DEFAULT_BASE_URL}); give it "
                        "several times to check each replica of one model")
    p.add_argument("--model", required=True, help="the served model name (as in openai:NAME)")
    p.add_argument("--api-key-env", default=None,
                   help="name of the environment variable holding the API key")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--save", default=None, metavar="FILE",
                   help="also measure prefill speed, and write the prefill and decode tokens/s "
                        "as JSON for `clstream plan --throughput FILE`")
    add_force_flag(p)
    p.set_defaults(handler=handler)


def _body(model: str, prompt: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}],
                            "max_tokens": ANSWER_TOKENS, "temperature": 0.0, "seed": 1234}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    return body


async def _ask(client: httpx.AsyncClient, model: OpenAICompatModel, prompt: str,
               stream: bool) -> dict[str, Any]:
    """One tiny request: text, usage as reported (or None), latency, time to first token."""
    from clstream.models.openai_compat import EndpointError, _server_reason
    from clstream.models.wire import StreamAssembler, dumps_body, loads_reply

    headers = model._headers()
    headers["Content-Type"] = "application/json"
    start = time.perf_counter()
    first: float | None = None
    async with client.stream("POST", f"{model.base_url}/chat/completions",
                             content=dumps_body(_body(model.target, prompt, stream)),
                             headers=headers) as response:
        if not response.is_success:
            await response.aread()
            raise EndpointError(f"model {model.name}: a tiny request got "
                                f"{_server_reason(response, model._secrets())}")
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            assembler = StreamAssembler()
            async for line in response.aiter_lines():
                if assembler.feed(line) and first is None:
                    first = time.perf_counter() - start
            payload = assembler.payload()
            streamed = True
        else:
            payload = loads_reply(await response.aread())
            streamed = False
    latency = time.perf_counter() - start
    choice = (payload.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    return {"text": message.get("content") or "", "usage": payload.get("usage"),
            "latency_s": latency, "first_token_s": first if first is not None else latency,
            "streamed": streamed, "finish_reason": choice.get("finish_reason")}


def _completion_tokens(answer: dict[str, Any]) -> int | None:
    usage = answer["usage"]
    value = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return value if isinstance(value, int) else None


def _cached(answer: dict[str, Any]) -> int | None:
    usage = answer["usage"]
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) else None


def _echoes(prompt: str, text: str) -> bool:
    """The answer repeats the prompt's opening instead of answering (no chat template)."""
    head = " ".join(prompt.split()[:6]).lower()
    return bool(text.strip()) and head in " ".join(text.split()).lower()


async def check(model: OpenAICompatModel) -> dict[str, Any]:
    """Every finding of the check, as the ``--json`` output prints it."""
    from clstream.core.secrets import redacted_url
    from clstream.core.types import SamplingParams
    from clstream.models.openai_compat import EndpointError

    notes = await model.preflight(SamplingParams(temperature=0.0, max_tokens=1))
    server = model.server
    if server is not None and server.models and model.target not in server.models:
        # Some servers answer any name with their one model; a run would record the wrong name.
        listed = ", ".join(repr(m) for m in server.models[:8])
        raise EndpointError(f"model {model.name} at {redacted_url(model.base_url)}: the server "
                            f"does not list {model.target!r} (it serves {listed})")
    async with model._new_client(TIMEOUT_S) as client:
        first = await _ask(client, model, QUESTION, stream=True)
        again = await _ask(client, model, QUESTION, stream=True)
        plain = await _ask(client, model, QUESTION, stream=False)
        await _ask(client, model, REPEATED, stream=False)
        cached = await _ask(client, model, REPEATED, stream=False)
    # The first answer warms the server up (model load, caches): figures come from the second.
    tokens = _completion_tokens(again) or _completion_tokens(plain)
    generating = max(again["latency_s"] - again["first_token_s"], 1e-9)
    start = model.start_concurrency()
    return {
        "endpoint": redacted_url(model.base_url),
        "model": model.target,
        "models": list(server.models) if server and server.models else None,
        "context_length": server.context_length if server else None,
        "context_source": server.context_source if server else None,
        "slots": server.slots if server else None,
        "slots_source": server.slots_source if server else None,
        "latency_s": round(again["latency_s"], 3),
        "first_token_s": round(again["first_token_s"], 3) if again["streamed"] else None,
        "output_tokens": tokens,
        "output_tokens_per_s": (round(tokens / generating, 1)
                                if tokens and first["streamed"] else None),
        "streams": first["streamed"],
        "usage_reported": plain["usage"] is not None,
        "usage_in_stream": first["usage"] is not None if first["streamed"] else None,
        "cached_tokens_reported": _cached(cached) is not None,
        "cached_tokens_on_repeat": _cached(cached),
        "chat_template_applied": not _echoes(QUESTION, first["text"]),
        "seeded_temperature_0_repeats": first["text"] == again["text"],
        "answer": first["text"][:200],
        "start_concurrency": start,
        "start_concurrency_source": ("the server's slots" if server and server.slots
                                     else "the adaptive default"),
        "notes": notes,
    }


def prefill_prompt() -> str:
    """A long prompt no server has cached yet (it opens with the time in nanoseconds), to time
    its prefill: the seconds to its first token."""
    words = " ".join(f"item{i} holds {i * 7 % 97} units" for i in range(240))
    return f"Inventory {time.time_ns()}: {words}. Reply with one word."


async def measure_prefill(model: OpenAICompatModel) -> float | None:
    """Prompt tokens per second of one streamed long prompt (usage as reported, else the
    approximate count), from the seconds to its first token; None without a stream."""
    from clstream.models.tokenizers import approx_tokenizer

    prompt = prefill_prompt()
    async with model._new_client(TIMEOUT_S) as client:
        answer = await _ask(client, model, prompt, stream=True)
    if not answer["streamed"]:
        return None
    usage = answer["usage"]
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if not isinstance(tokens, int) or tokens <= 0:
        tokens = approx_tokenizer().count(prompt)
    return round(tokens / max(float(answer["first_token_s"]), 1e-9), 1)


def throughput_file(found: dict[str, Any], prefill_tps: float | None) -> dict[str, Any]:
    """What ``--save`` writes (``clstream plan --throughput`` reads it, docs/plan.md §3)."""
    return {"endpoint": found["endpoint"], "model": found["model"],
            "prefill_tokens_per_s": prefill_tps,
            "decode_tokens_per_s": found["output_tokens_per_s"],
            "measured_by": "clstream check: one request at a time"}


def _yes(value: bool | None, yes: str, no: str, unknown: str = "not reported") -> str:
    return unknown if value is None else yes if value else no


def lines(found: dict[str, Any]) -> list[str]:
    """The human-readable report of :func:`check`."""
    context = (f"{found['context_length']} tokens ({found['context_source']})"
               if found["context_length"] else "not reported")
    slots = f"{found['slots']} ({found['slots_source']})" if found["slots"] else "not reported"
    rate = (f"{found['output_tokens_per_s']} output tokens/s"
            if found["output_tokens_per_s"] is not None else "not measured (no stream)")
    first = (f", first token after {found['first_token_s']} s"
             if found["first_token_s"] is not None else "")
    cached = (f"reported ({found['cached_tokens_on_repeat']} on a repeated prompt)"
              if found["cached_tokens_reported"] else "not reported (prefix-cache figures "
              "will be estimates)")
    usage = _yes(found["usage_reported"], "reported", "not reported (token counts will be "
                 "estimated with the approximate tokenizer)")
    if found["streams"]:
        usage += "; " + _yes(found["usage_in_stream"], "also in streams",
                             "not in streams (stream token counts are chunk counts)")
    out = [
        f"endpoint       {found['endpoint']}",
        f"models         {', '.join(found['models']) if found['models'] else 'no listing'}",
        f"context        {context}",
        f"slots          {slots}",
        f"latency        {found['latency_s']} s for a {ANSWER_TOKENS}-token answer{first}",
        f"throughput     {rate}",
        "streaming      " + _yes(found["streams"], "yes (timeouts count silence only)",
                                 "no (each request times out as a whole)"),
        f"usage          {usage}",
        f"cached tokens  {cached}",
        "chat template  " + _yes(found["chat_template_applied"], "applied",
                                 "NOT applied: the answer echoes the prompt"),
        "determinism    " + _yes(found["seeded_temperature_0_repeats"],
                                 "temperature 0 with a seed repeats itself",
                                 "temperature 0 with a seed gave two answers"),
        f"concurrency    a run starts at {found['start_concurrency']} "
        f"({found['start_concurrency_source']}) and adapts; --max-concurrency N fixes it",
    ]
    out += [f"note           {n}" for n in found["notes"]]
    return out


def handler(args: argparse.Namespace) -> int:
    import asyncio

    import httpx

    from clstream.core.errors import ClstreamError
    from clstream.core.jsonio import dumps_finite
    from clstream.core.secrets import redacted_url
    from clstream.models.openai_compat import EndpointError, OpenAICompatModel
    from clstream.models.wire import MalformedResponse

    if args.save is not None:  # refused before any request when it cannot be written
        claim_file(args.save)
    given = args.base_url if args.base_url is not None else OPENAI_DEFAULT_BASE_URL
    urls = given if isinstance(given, list) else [given]
    reports: list[dict[str, Any]] = []
    speeds: list[float | None] = []
    for url in urls:
        model = OpenAICompatModel(args.model, base_url=url, api_key_env=args.api_key_env,
                                  request_timeout=TIMEOUT_S)

        async def measure(model: OpenAICompatModel = model
                          ) -> tuple[dict[str, Any], float | None]:
            found = await check(model)
            return found, (await measure_prefill(model) if args.save is not None else None)

        try:
            found, prefill_tps = asyncio.run(measure())
        except (httpx.HTTPError, MalformedResponse) as exc:
            raise EndpointError(f"flag --base-url: model {model.name} at "
                                f"{redacted_url(model.base_url)}: a tiny request failed "
                                f"({type(exc).__name__}: {exc})") from None
        except ClstreamError as exc:
            exc.args = (f"flag --base-url: {exc}",)  # one line naming the flag to change
            raise
        reports.append(found)
        speeds.append(prefill_tps)
    if args.save is not None:
        from clstream.core.outputs import write_output

        # The throughput of one replica: a plan divides the work by the server's own speed.
        write_output(args.save, dumps_finite(throughput_file(reports[0], speeds[0]), indent=2)
                     + "\n")
    if args.json:
        print(dumps_finite(reports[0] if len(reports) == 1 else reports, indent=2))
    else:
        print("\n\n".join("\n".join(lines(found)) for found in reports))
    return 0
