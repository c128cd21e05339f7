#!/usr/bin/env bash
# The agent loop on a real GPU, against a scripted OpenAI-compatible server:
# the model proposes a vector-add kernel that does not compile, a repaired one,
# then a faster (float4) one, profiles that one with Nsight Compute
# (profile_candidate), and stops. Prints the run's history (verdicts and real
# timings) and what the profile tool answered (counters, or why profiling is
# unavailable). Usage: tests/agent/gpu_agent_demo.sh KOPT RESULTS_DIR
# KOPT_AGENT_EXTRA: more kopt options (e.g. "--arch sm_90" to try it without a GPU).
set -euo pipefail
KOPT="$1"; RESULTS="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
DATA="$HERE/../data/agent"
TMP="$(mktemp -d)"
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$TMP"' EXIT
python3 - "$DATA" "$TMP/script.json" <<'PY'
import json, sys
data, out = sys.argv[1], sys.argv[2]
def tool(n, file, entry, grid="ceil_div(N, 256)", name="evaluate_candidate"):
    args = {"source": open(f"{data}/{file}").read(), "entry": entry,
            "launch": {"grid": [grid, 1, 1], "block": [256, 1, 1], "shared_bytes": 0}}
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                "tool_calls": [{"id": f"call_{n}", "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)}}]}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}}
script = [tool(1, "broken.cu", "vadd_broken"), tool(2, "repaired.cu", "vadd_repaired"),
          tool(3, "faster.cu", "vadd_vec4", "max(1, ceil_div(N / 4, 256))"),
          tool(4, "faster.cu", "vadd_vec4", "max(1, ceil_div(N / 4, 256))", name="profile_candidate")]
json.dump(script, open(out, "w"))
PY
python3 "$HERE/fake_openai_server.py" --script "$TMP/script.json" --port-file "$TMP/port" --log "$TMP/requests.jsonl" &
SERVER=$!
for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
PORT="$(cat "$TMP/port")"
set +e
env -u OPENAI_API_KEY "$KOPT" optimize --strategy agent --spec "$DATA/vadd.json" --results-dir "$RESULTS" \
  --llm-base-url "http://127.0.0.1:$PORT/v1" --llm-model fake-model --llm-api chat --max-iterations 6 ${KOPT_AGENT_EXTRA:-}
CODE=$?
set -e
echo "agent run exit $CODE"
RUN="$(ls -d "$RESULTS"/run-* | tail -1)"
python3 - "$RUN" <<'PY'
import json, sys
run = sys.argv[1]
h = json.load(open(f"{run}/history.json"))
for a in h["attempts"]:
    print(f'{a["index"]:3d} {a["kind"]:10s} {a["label"]:14s} {a["verdict"]:14s} geomean_ms={a.get("geomean_ms")}')
s = json.load(open(f"{run}/summary.json"))
print("agent:", json.dumps(s.get("agent", {}).get("usage")), "stop:", s.get("agent", {}).get("stop_reason"))
PY
# The profile tool's answer, as the model received it (the request after it).
python3 - "$TMP/requests.jsonl" <<'PY'
import json, sys
answer = None
for line in open(sys.argv[1]):
    for m in json.loads(line).get("body", {}).get("messages", []):
        if m.get("role") == "tool" and m.get("tool_call_id") == "call_4": answer = m.get("content")
print("profile_candidate answered:", (answer or "nothing")[:3000])
PY
exit $CODE
