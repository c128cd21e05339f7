#!/usr/bin/env python3
"""kopt's search strategies beside Kernel Tuner's on recorded spaces, without a GPU.

For each recorded space (T4 results, a Kernel Tuner cache file or a kopt run folder; by default
every record of at least --min-size configurations in tests/data/spaces/), runs Kernel Tuner
1.5's strategies in its simulation mode on the space's Kernel Tuner cache (written by
`kopt replay --write-cache` unless it is one), N seeds each, and kopt's strategies with
`kopt replay` (the run driver of `kopt optimize` over the record), and prints per space the
table of `kopt replay` with Kernel Tuner's runs measured beside kopt's, then one table over every
space: the methodology score of kopt's default, of Kernel Tuner's best single strategy there and
of random sampling, and the median evaluations to within 5% and 1% of the optimum; then, over the
hard targets (where random sampling needs 100 evaluations or more), the geometric mean of those
evaluations per strategy. Both tools' runs are scored by the same code (kopt's search/score.h);
docs/search.md ("Beside Kernel Tuner") explains the measures.

Both tools search the same space: every configuration of the record, failed ones included (a
failed configuration costs an evaluation, as on a GPU; Kernel Tuner's own tune_cache() would
leave the failed ones out of its space, so a restriction admits every cached configuration).
An evaluation is a distinct configuration: Kernel Tuner's revisits (served from its cache, free
in its budget) are not counted. Runs of both tools stop at --max-fevals evaluations.

Kernel Tuner runs in a virtual environment of its own (never in the source tree):

    scripts/compare_kernel_tuner.py --setup        # ~/.cache/kopt/kt-venv, kernel_tuner==1.5.0
    scripts/compare_kernel_tuner.py                # every record in tests/data/spaces/
    scripts/compare_kernel_tuner.py convolution_MI50.json --kt-strategies pso,genetic_algorithm

A SPACE may also be synthetic:FAMILY-SEED, development or holdout (the synthetic development
spaces, written by build/tests/kopt_synthetic_spaces), or sparse:FAMILY-SEED, sparse-development
or sparse-holdout (samples of 1200 configurations of them, as a recorded sweep is). Exit codes: 0; 1 a tool failed; 2 bad usage.
"""

import argparse
import json
import math
import os
import random
import statistics
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
KOPT_STRATEGIES = "all"


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


def read_cache(path: Path) -> dict:
    text = path.read_text().strip()
    if not (text.endswith("}\n}") or text.endswith("}}}")):  # left open by a session that stopped early
        text = text.rstrip(",") + "}\n}"
    return json.loads(text)


def is_cache(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open() as f:
        return '"cache"' in f.read(1 << 16)


def records_for(space: str, build: Path, work: Path) -> list:
    """The record files of a SPACE argument (synthetic ones written by kopt_synthetic_spaces)."""
    if space in ("development", "holdout", "sparse-development", "sparse-holdout", "sgemm-synthetic") or \
            space.startswith("synthetic:") or space.startswith("sparse:"):
        tool = build / "tests" / "kopt_synthetic_spaces"
        if not tool.exists():
            sys.exit(f"compare_kernel_tuner: {tool} not found: build it (ninja -C {build} kopt_synthetic_spaces)")
        out = work / "synthetic"
        out.mkdir(exist_ok=True)
        before = set(out.iterdir())
        subprocess.run([str(tool), str(out), space], check=True)
        return sorted(set(out.iterdir()) - before)
    path = Path(space)
    if not path.exists():
        sys.exit(f"compare_kernel_tuner: {space}: no such file or folder")
    return [path]


def committed_records(min_size: int) -> list:
    """Every record in tests/data/spaces/ of at least min_size configurations."""
    out = []
    for f in sorted((ROOT / "tests" / "data" / "spaces").glob("*.json")):
        doc = read_cache(f) if is_cache(f) else json.loads(f.read_text())
        size = len(doc["cache"]) if "cache" in doc else len(doc.get("results", []))
        if size >= min_size:
            out.append(f)
    return out


def cache_of(record: Path, kopt: Path, work: Path) -> Path:
    """The record as a Kernel Tuner cache file named by kopt's label for it."""
    if is_cache(record):
        return record
    out = work / "caches"
    out.mkdir(exist_ok=True)
    before = set(out.iterdir())
    subprocess.run([str(kopt), "replay", "--write-cache", str(out), "-q", str(record)], check=True)
    return sorted(set(out.iterdir()) - before)[0]


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


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def summary(spaces: list) -> str:
    """One table over every space, then the geometric means over the hard targets."""
    lines = ["| space | configurations (failed; within 5%, 1%) | kopt default: to 5% / to 1% / score | "
             "Kernel Tuner's best by score: to 5% / to 1% / score | random: to 5% / to 1% / score | default's score: "
             "over KT's best, over random |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    cell = lambda r: f"{fmt(r['median_to5'])} / {fmt(r['median_to1'])} / {r['score']:.3f}"
    for sp in spaces:
        rs = sp["results"]
        default = next(r for r in rs if r["strategy"].startswith("default"))
        random_ = next((r for r in rs if r["strategy"] == "random"), None)
        kt = [r for r in rs if r["strategy"].startswith("KT ")]
        best = max(kt, key=lambda r: r["score"]) if kt else None
        verdict = ("yes" if best and default["score"] > best["score"] else "no" if best else "-") + ", " + (
            ("yes" if default["score"] >= random_["score"] else "no") if random_ else "-")
        lines.append(f"| {sp['label']} | {sp['size']} ({sp['failed']}; {sp['within_5pct']}, {sp['within_1pct']}) | "
                     f"{default['strategy']}: {cell(default)} | "
                     + (f"{best['strategy'][3:]}: {cell(best)}" if best else "not run") + " | "
                     + (cell(random_) if random_ else "not run") + f" | {verdict} |")
    # Geometric means over the hard targets: where random sampling's median is 100 or more (or never).
    names = []
    for sp in spaces:
        for r in sp["results"]:
            if r["strategy"] not in names:
                names.append(r["strategy"])
    lines += ["", "| strategy | to 5%, geomean over the hard targets | to 1%, geomean over the hard targets | "
              "median score | spaces |", "| --- | ---: | ---: | ---: | ---: |"]
    for name in names:
        l5, l1, scores = [], [], []
        for sp in spaces:
            r = next((x for x in sp["results"] if x["strategy"] == name), None)
            rnd = next((x for x in sp["results"] if x["strategy"] == "random"), None)
            if r is None:
                continue
            scores.append(r["score"])
            cap = sp["budget"].get("evaluations") or sp["size"]
            for key, acc in (("median_to5", l5), ("median_to1", l1)):
                if rnd is None or rnd[key] is None or rnd[key] >= 100:
                    acc.append(math.log(r[key] if r[key] is not None else cap + 1))
        g = lambda acc: f"{math.exp(sum(acc) / len(acc)):.0f} ({len(acc)})" if acc else "-"
        lines.append(f"| {name} | {g(l5)} | {g(l1)} | {statistics.median(scores):.3f} | {len(scores)} |")
    lines.append("")
    lines.append("(A target is hard where random sampling's median is 100 evaluations or more; a median that was "
                 "not reached counts as the budget plus one; the count of such targets in brackets.)")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("spaces", nargs="*", help="recorded spaces (default: every record in tests/data/spaces/)")
    p.add_argument("--min-size", type=int, default=1000,
                   help="without SPACE: the records of at least this many configurations (default 1000)")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--max-fevals", type=int, default=1000,
                   help="the most evaluations of one run, both tools (default 1000)")
    p.add_argument("--kt-strategies", default=",".join(KT_STRATEGIES))
    p.add_argument("--kopt-strategies", default=KOPT_STRATEGIES, help="kopt replay --strategy (default all)")
    p.add_argument("--kopt", type=Path, help="the kopt binary (default BUILD/tool/kopt)")
    p.add_argument("--build", type=Path, default=ROOT / "build", help="the kopt build folder")
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="Kernel Tuner's virtual environment")
    p.add_argument("--setup", action="store_true", help="create the virtual environment and exit")
    p.add_argument("--json", type=Path, help="also write the measures as JSON (kopt replay --json)")
    p.add_argument("--save-runs", type=Path, help="write Kernel Tuner's runs to this file (to measure them again)")
    p.add_argument("--load-runs", type=Path, action="append", default=[],
                   help="Kernel Tuner's runs saved by --save-runs, instead of running it (repeatable)")
    a = p.parse_args()
    if a.setup:
        setup_venv(a.venv)
        return 0
    kt = [s for s in a.kt_strategies.split(",") if s] if not a.load_runs else []
    if kt:
        reexec_in_venv(a.venv)
    kopt = a.kopt or a.build / "tool" / "kopt"
    if not kopt.exists():
        sys.exit(f"compare_kernel_tuner: {kopt} not found: build it (ninja -C {a.build} kopt), or give --kopt")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        records = [r for s in a.spaces for r in records_for(s, a.build, work)] if a.spaces else \
            committed_records(a.min_size)
        if not records:
            p.error("no recorded space")
        external = [e for f in a.load_runs for e in json.loads(f.read_text())]
        for record in records:
            if not kt:
                break
            cache_file = cache_of(record, kopt, work)
            cap = min(len(read_cache(cache_file)["cache"]), a.max_fevals)
            label = cache_file.stem
            for strategy in kt:
                try:
                    runs = run_kernel_tuner(cache_file, strategy, a.seeds, cap)
                except Exception as e:  # a strategy that needs a package not installed, or fails
                    print(f"compare_kernel_tuner: {label}: Kernel Tuner {strategy} failed: {e}", file=sys.stderr)
                    continue
                external.append({"space": label, "strategy": f"KT {strategy}", "runs": runs})
                print(f"compare_kernel_tuner: {label}: Kernel Tuner {strategy} done", file=sys.stderr)
        if a.save_runs:
            a.save_runs.write_text(json.dumps(external))
        ext = work / "external.json"
        ext.write_text(json.dumps(external))
        out = a.json or work / "measures.json"
        cmd = [str(kopt), "replay", "--seeds", str(a.seeds), "--budget", f"evals={a.max_fevals}",
               "--strategy", a.kopt_strategies, "--external", str(ext), "--json", str(out), "-q"]
        if subprocess.run(cmd + [str(r) for r in records]).returncode != 0:
            return 1
        print(summary(json.loads(out.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
