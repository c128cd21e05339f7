#!/usr/bin/env python3
"""kopt's search strategies beside Kernel Tuner's on recorded spaces, without a GPU.

For each space (a Kernel Tuner cache file, or a space the replay tool knows:
synthetic:FAMILY-SEED, sgemm-synthetic, a kopt sweep record, "development"),
runs Kernel Tuner 1.5's strategies in simulation mode on it, N seeds each, and
kopt's strategies in the replay tool (build/tests/kopt_search_replay), and
prints one table per space: per strategy the median evaluations to within 5%
and 1% of the space's optimum, the median simulated seconds (when the space
records compile and run times), and the methodology score of Willemsen et al.
(FGCS 2024) over evaluations and over time. Both tools' runs are scored by the
same code (tool/src/search/score.h); docs/search.md explains the measures.

Both tools search the same space: every configuration of the cache, failed
ones included (a failed configuration costs an evaluation, as on a GPU).
Kernel Tuner's own tune_cache() would leave the failed ones out of the space;
here they are kept by a restriction that admits every cached configuration.
An evaluation is a distinct configuration: Kernel Tuner's revisits of a
configuration (served from its cache, free in its budget) are not counted.

Kernel Tuner runs in a virtual environment of its own (never in the source
tree):

    scripts/compare_kernel_tuner.py --setup        # ~/.cache/kopt/kt-venv, kernel_tuner==1.5.0
    scripts/compare_kernel_tuner.py development --seeds 20
    scripts/compare_kernel_tuner.py convolution_MI50.json --kt-strategies pso,genetic_algorithm

Exit codes: 0; 1 a tool failed; 2 bad usage.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VENV = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kopt" / "kt-venv"
KT_VERSION = "1.5.0"
# Kernel Tuner 1.5's single strategies that need no extra package (brute_force
# is the space itself; bayes_opt and skopt need more, ask for them by name).
KT_STRATEGIES = [
    "random_sample", "genetic_algorithm", "pso", "simulated_annealing", "firefly_algorithm", "diff_evo",
    "greedy_ils", "greedy_mls", "ordered_greedy_mls", "mls", "basinhopping", "dual_annealing", "minimize",
]
KOPT_STRATEGIES = "default,random,anneal,genetic,surrogate,portfolio"


def setup_venv(venv: Path) -> None:
    """Creates the virtual environment with Kernel Tuner (PyPI)."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"kernel_tuner=={KT_VERSION}"], check=True)
    print(f"compare_kernel_tuner: Kernel Tuner {KT_VERSION} in {venv}", file=sys.stderr)


def reexec_in_venv(venv: Path) -> None:
    """Runs this script again with the venv's Python when Kernel Tuner is not importable here."""
    try:
        import kernel_tuner  # noqa: F401
        return
    except ImportError:
        pass
    python = venv / "bin" / "python"
    if not python.exists() or os.environ.get("KOPT_KT_REEXEC"):
        sys.exit(f"compare_kernel_tuner: Kernel Tuner is not installed; run {sys.argv[0]} --setup (or --venv DIR)")
    os.environ["KOPT_KT_REEXEC"] = "1"
    os.execv(str(python), [str(python), __file__] + sys.argv[1:])


def replay_tool(build: Path) -> Path:
    tool = build / "tests" / "kopt_search_replay"
    if not tool.exists():
        sys.exit(f"compare_kernel_tuner: {tool} not found: build it (ninja -C {build} kopt_search_replay)")
    return tool


def caches_for(space: str, tool: Path, workdir: Path) -> list:
    """The Kernel Tuner cache files of a SPACE argument (written by the replay tool unless it is one)."""
    path = Path(space)
    if path.is_file():
        with path.open() as f:
            head = f.read(1 << 16)
        if '"cache"' in head:
            return [path]
    out = workdir / "caches"
    out.mkdir(exist_ok=True)
    before = set(out.iterdir())
    subprocess.run([str(tool), "--write-cache", str(out), space], check=True)
    return sorted(set(out.iterdir()) - before)


def read_cache(path: Path) -> dict:
    text = path.read_text().strip()
    if not (text.endswith("}\n}") or text.endswith("}}}")):  # left open by a session that stopped early
        text = text.rstrip(",") + "}\n}"
    return json.loads(text)


def run_kernel_tuner(cache_file: Path, strategy: str, seeds: int, max_fevals: int) -> list:
    """Kernel Tuner's runs of `strategy` on the cache: per seed, [[time or None, seconds], ...]."""
    import numpy as np
    from constraint import FunctionConstraint
    from kernel_tuner import tune_kernel
    from kernel_tuner.util import infer_args_from_cache

    cache = read_cache(cache_file)
    keys = cache["tune_params_keys"]
    entries = cache["cache"]
    configs = {tuple(e[k] for k in keys) for e in entries.values()}

    def recorded(*values):
        return values in configs

    args = infer_args_from_cache(cache)
    runs = []
    for seed in range(1, seeds + 1):
        random.seed(seed)
        np.random.seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results, _ = tune_kernel(**args, restrictions=[FunctionConstraint(recorded)], cache=str(cache_file),
                                     simulation_mode=True, strategy=strategy,
                                     strategy_options={"max_fevals": max_fevals}, quiet=True)
        seen, steps = set(), []
        for r in results:
            key = ",".join(str(r[k]) for k in keys)
            if key in seen or key not in entries:
                continue
            seen.add(key)
            e = entries[key]
            t = e.get("time")
            ok = isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t < 1e20
            ms = sum(e.get(k, 0) or 0 for k in ("compile_time", "verification_time", "benchmark_time"))
            steps.append([t if ok else None, ms / 1000.0])
        runs.append(steps)
    return runs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("spaces", nargs="*", help="Kernel Tuner cache files or replay-tool spaces")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--max-fevals", type=int, default=1000,
                   help="the most evaluations of one run, both tools (default 1000; 0: the whole space)")
    p.add_argument("--kt-strategies", default=",".join(KT_STRATEGIES))
    p.add_argument("--kopt-strategies", default=KOPT_STRATEGIES)
    p.add_argument("--build", type=Path, default=ROOT / "build", help="the kopt build folder")
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="Kernel Tuner's virtual environment")
    p.add_argument("--setup", action="store_true", help="create the virtual environment and exit")
    p.add_argument("--json", type=Path, help="also write the measures as JSON")
    p.add_argument("--save-runs", type=Path, help="write Kernel Tuner's runs to this file (to measure them again)")
    p.add_argument("--load-runs", type=Path, action="append", default=[],
                   help="Kernel Tuner's runs saved by --save-runs, instead of running it (repeatable)")
    a = p.parse_args()
    if a.setup:
        setup_venv(a.venv)
        return 0
    if not a.spaces:
        p.error("no space given")
    if not a.load_runs:
        reexec_in_venv(a.venv)
    tool = replay_tool(a.build)
    kt = [s for s in a.kt_strategies.split(",") if s] if not a.load_runs else []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        caches = [c for s in a.spaces for c in caches_for(s, tool, work)]
        external = [e for f in a.load_runs for e in json.loads(f.read_text())]
        for cache_file in caches:
            cache = read_cache(cache_file)
            size = len(cache["cache"])
            cap = size if a.max_fevals <= 0 else min(size, a.max_fevals)
            label = cache_file.stem
            for strategy in kt:
                try:
                    runs = run_kernel_tuner(cache_file, strategy, a.seeds, cap)
                except Exception as e:  # a strategy that needs a package not installed, or fails
                    print(f"compare_kernel_tuner: {label}: Kernel Tuner {strategy} failed: {e}", file=sys.stderr)
                    continue
                external.append({"space": label, "strategy": f"KT {strategy}", "runs": runs})
                print(f"compare_kernel_tuner: {label}: Kernel Tuner {strategy} done", file=sys.stderr)
        ext = work / "external.json"
        ext.write_text(json.dumps(external))
        if a.save_runs:
            a.save_runs.write_text(json.dumps(external))
        cmd = [str(tool), "--seeds", str(a.seeds), "--max-evaluations", str(max(a.max_fevals, 0)),
               "--strategies", a.kopt_strategies, "--external", str(ext)]
        if a.json:
            cmd += ["--json", str(a.json)]
        return subprocess.run(cmd + [str(c) for c in caches]).returncode and 1


if __name__ == "__main__":
    sys.exit(main())
