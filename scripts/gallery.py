#!/usr/bin/env python3
"""The gallery on a GPU: each ported kernel tuned by kopt and by Kernel Tuner, side by side.

    gallery.py compare [--kernels a,b] [--evals N] [--kt-strategy S] [--record DIR] [--out DIR]
    gallery.py record  [--kernels a,b] [--minutes M] [--out DIR] [--tool kopt|kt|both]
    gallery.py kt-space [--kernels a,b]      # no GPU: Kernel Tuner's space sizes against the specs

compare, for each kernel of templates/<name>/ listed in scripts/gallery_kernels.py:
  1. `kopt optimize` on the spec with --budget evals=N,minutes=M (N default 40, M from
     GALLERY_KOPT_MINUTES, default 3; a fresh compile cache);
  2. Kernel Tuner 1.5's tune_kernel on the same kernel file and the same space (the cupy backend),
     with `--kt-strategy` (default: brute_force when the space has at most N configurations,
     else genetic_algorithm, its best single strategy at 1% in the published comparison) and
     max_fevals N, checking every configuration against an answer as kopt does;
  3. both tools' best configurations re-timed in one harness: one `kopt evaluate` over files
     kopt_best.cu, kt_best.cu, kopt_best.cu, ... (ROUNDS rounds, interleaved; checked again);
  4. the library or framework op doing the same work (CuPy), timed with CUDA events and an L2
     flush before each launch, as kopt times;
  5. the fraction of the bound (DRAM bytes over the measured copy bandwidth, or operations over
     the FP32/FP64 peak from the SM count and clock) of the re-timed kopt kernel;
  6. each tool's tuning wall time, and evaluations (and seconds) until it first evaluated a
     configuration within 1% of the best: the best of a recorded space (--record DIR holding
     <name>.t4.json from the record mode; the tools' visited configurations are looked up there),
     else each tool's own best (basis "own").
  Prints one table at the end (stdout); everything else (kopt's run folders, Kernel Tuner's
  results, the re-timing JSON, a gallery.json of all figures) goes under --out.

record: each kernel's whole space, quick timing (warmup 2, 10 launches, one check trial), for the
  search comparisons: `kopt optimize --strategy exhaustive` on a copy of the spec, exported with
  `kopt export --format t4` as <out>/<name>.t4.json, and/or Kernel Tuner's brute force with
  its cache file <out>/<name>.kt_cache.json (--tool). A kopt record is resumed when its run
  folder (under --work) exists already; --minutes bounds each kernel in each call.

Environment: KOPT (default build-gpu/tool/kopt), python3 with numpy and cupy; kernel_tuner 1.5
importable (scripts/gallery.sh installs the carried wheels from .whl/ first).
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from gallery_kernels import DEFAULT, KERNELS  # noqa: E402

ROUNDS = 3  # interleaved re-timing rounds
SEED = 20261215


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- specs and files

def spec_path(name):
    return os.path.join(ROOT, "templates", name, name + ".json")


def load_spec(name):
    with open(spec_path(name)) as f:
        return json.load(f)


def perf_case(spec):
    cases = [c for c in spec["cases"] if c.get("role") == "performance"]
    if len(cases) != 1:
        raise SystemExit("%s: the gallery expects one performance case, found %d" % (spec["name"], len(cases)))
    return cases[0]


def prepare_inputs(name):
    script = os.path.join(ROOT, "templates", name, "make_inputs.py")
    if os.path.isfile(script):
        subprocess.run([sys.executable, script], check=True)


def key(params, names):
    return ",".join(str(params[n]) for n in names)


def candidate_file(spec, params, path):
    """The template at one configuration, as a kernel file kopt evaluate reads: kopt:param lines
    and the template's compile options in front of the template source (its annotations give the
    entry and the launch)."""
    name = spec["name"]
    tmpl = spec["template"]
    with open(os.path.join(ROOT, "templates", name, tmpl["source"])) as f:
        src = f.read()
    head = ["// kopt:param %s=%d" % (k, v) for k, v in sorted(params.items())]
    opts = spec.get("tuning", {}).get("compile_options", []) + tmpl.get("compile_options", [])
    if opts:
        head.append("// kopt:options " + " ".join(opts))
    with open(path, "w") as f:
        f.write("\n".join(head) + "\n" + src)
    return path


# ---------------------------------------------------------------------------- kopt

def kopt_bin():
    return os.environ.get("KOPT", os.path.join(ROOT, "build-gpu", "tool", "kopt"))


# A wall-clock bound on each kopt run (and Kernel Tuner's time_limit), so that one slow kernel (long compiles) cannot use up a
# GPU call that has the other kernels still to do; the run reports "minutes" as its stop reason.
KOPT_MINUTES = float(os.environ.get("GALLERY_KOPT_MINUTES", "3"))


def kopt_optimize(name, evals, out):
    """Runs kopt optimize; returns its run folder, wall seconds and trajectory."""
    results = os.path.join(out, "kopt-runs")
    cache = os.path.join(out, "kopt-cache")  # fresh: tuning time includes every compile
    shutil.rmtree(cache, ignore_errors=True)
    argv = [kopt_bin(), "optimize", "--spec", spec_path(name), "--budget", "evals=%d,minutes=%g" % (evals, KOPT_MINUTES),
            "--results-dir", results, "--cache-dir", cache, "--seed", "1"]
    t0 = time.time()
    with open(os.path.join(out, "kopt-optimize.out"), "w") as o, open(os.path.join(out, "kopt-optimize.err"), "w") as e:
        rc = subprocess.run(argv, stdout=o, stderr=e).returncode
    wall = time.time() - t0
    runs = sorted(d for d in os.listdir(results) if d.startswith("run-")) if os.path.isdir(results) else []
    if rc != 0 or not runs:
        raise RuntimeError("kopt optimize exited %d (see %s/kopt-optimize.err)" % (rc, out))
    run = os.path.join(results, runs[-1])
    hist = json.load(open(os.path.join(run, "history.json")))["attempts"]
    summ = json.load(open(os.path.join(run, "summary.json")))
    traj = [(a["params"], a["geomean_ms"] if a.get("verdict") == "ok" else None, a.get("seconds_since_start"))
            for a in hist if a.get("kind") == "candidate"]
    return dict(run=run, wall_s=wall, trajectory=traj, best=summ["final_best"]["params"],
                best_ms=summ["final_best"].get("geomean_ms"), evaluations=len(traj))


# ---------------------------------------------------------------------------- Kernel Tuner

def kt_tune(name, evals, strategy, out, np, cp, cachefile=None, iterations=7, max_fevals=True):
    import kernel_tuner
    k = KERNELS[name]
    spec = load_spec(name)
    sizes = perf_case(spec)["sizes"]
    tune_params = {p: list(v) for p, v in spec["tuning"]["params"].items()}
    setup = k.kt_setup(np, cp, sizes, SEED)
    opts = dict(setup)
    opts["compiler_options"] = k.kt_compiler_options + setup.get("compiler_options", [])
    space = kt_space_size(name)
    if strategy == "auto":
        strategy = "brute_force" if space <= evals else "genetic_algorithm"
    # The same bounds as kopt's run: evaluations and wall time (brute_force takes neither).
    strategy_options = ({"max_fevals": evals, "time_limit": 60 * KOPT_MINUTES}
                        if max_fevals and strategy != "brute_force" else None)
    source = os.path.join(ROOT, "templates", name, spec["template"]["source"])
    t0 = time.time()
    # A copy of block_size_names: Kernel Tuner appends its defaults to the list it is given.
    results, env = kernel_tuner.tune_kernel(
        k.kt_kernel_name, source, tune_params=tune_params, restrictions=k.kt_restrictions or None,
        block_size_names=list(k.kt_block_size_names or []) or None, lang="cupy", strategy=strategy,
        strategy_options=strategy_options, iterations=iterations, cache=cachefile, quiet=True, seed=SEED, **opts)
    wall = time.time() - t0
    names = list(tune_params)
    traj = []
    for r in results:
        stamp = r.get("timestamp")
        secs = datetime.fromisoformat(stamp).timestamp() - t0 if stamp else None
        ms = r.get("time") if isinstance(r.get("time"), (int, float)) else None
        traj.append(({n: r[n] for n in names}, ms, secs))
    valid = [(p, ms) for p, ms, _ in traj if ms is not None]
    if not valid:
        raise RuntimeError("Kernel Tuner found no valid configuration for " + name)
    best = min(valid, key=lambda x: x[1])
    with open(os.path.join(out, "kt-results.json"), "w") as f:
        json.dump({"strategy": strategy, "wall_s": wall, "results": results}, f, default=str)
    return dict(wall_s=wall, trajectory=traj, best=best[0], best_ms=best[1], evaluations=len(traj),
                strategy=strategy, space=space)


def kt_space_size(name):
    from kernel_tuner.searchspace import Searchspace
    k = KERNELS[name]
    spec = load_spec(name)
    tp = {p: list(v) for p, v in spec["tuning"]["params"].items()}
    kw = {"block_size_names": list(k.kt_block_size_names)} if k.kt_block_size_names else {}
    return Searchspace(tp, k.kt_restrictions or [], 1024, **kw).size


# ---------------------------------------------------------------------------- re-timing

def retime(name, configs, out):
    """configs: label -> params. One kopt evaluate, the files interleaved ROUNDS times; returns
    label -> {"ms": median over rounds of the performance case's median, "verdicts": [...]}."""
    spec = load_spec(name)
    files = {lbl: candidate_file(spec, p, os.path.join(out, "%s_best.cu" % lbl)) for lbl, p in configs.items()}
    order = [lbl for _ in range(ROUNDS) for lbl in configs]
    js = os.path.join(out, "retime.json")
    argv = [kopt_bin(), "evaluate", "--spec", spec_path(name), "--no-reference-timing", "--json", js,
            "--cache-dir", os.path.join(out, "kopt-cache"), "--kernel"] + [files[l] for l in order]
    with open(os.path.join(out, "retime.err"), "w") as e:
        rc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=e).returncode
    if not os.path.isfile(js):
        raise RuntimeError("kopt evaluate (re-timing) exited %d" % rc)
    res = json.load(open(js))
    perf = perf_case(spec)["name"]
    got = {lbl: {"samples": [], "verdicts": []} for lbl in configs}
    for lbl, r in zip(order, res):
        got[lbl]["verdicts"].append(r.get("verdict"))
        for c in r.get("cases", []):
            if c.get("name") == perf and c.get("latency"):
                got[lbl]["samples"].append(c["latency"]["median_ms"])
    for g in got.values():
        g["ms"] = statistics.median(g["samples"]) if g["samples"] else None
    return got


# ---------------------------------------------------------------------------- library op, peaks

def flush_buffer(cp):
    l2 = cp.cuda.Device().attributes.get("L2CacheSize", 64 << 20)
    return cp.empty(2 * l2 // 4 + 1, dtype=cp.float32)


def time_op(cp, fn, iters=50, warmup=5):
    """Median ms of fn() over iters launches, each after an L2 flush, with CUDA events."""
    flush = flush_buffer(cp)
    for _ in range(warmup):
        fn()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    ms = []
    for _ in range(iters):
        flush.fill(0)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ms.append(cp.cuda.get_elapsed_time(s, e))
    return statistics.median(ms)


def peaks(cp):
    """Measured DRAM bandwidth (a 1 GiB device-to-device copy, bytes read plus written) and FP32 /
    FP64 peaks from the SM count and the boost clock (128 FP32 and 64 FP64 lanes per Hopper SM,
    two operations per fused multiply-add)."""
    a = cp.zeros(1 << 28, dtype=cp.float32)
    b = cp.empty_like(a)
    ms = time_op(cp, lambda: cp.copyto(b, a), iters=20)
    attrs = cp.cuda.Device().attributes
    sms, clock_hz = attrs["MultiProcessorCount"], attrs["ClockRate"] * 1e3
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return {"dram_Bps": 2 * (1 << 30) / (ms * 1e-3), "fp32_flops": sms * clock_hz * 128 * 2,
            "fp64_flops": sms * clock_hz * 64 * 2, "sms": sms, "clock_mhz": clock_hz / 1e6}


def fraction_of_bound(name, ms, pk):
    k = KERNELS[name]
    res, amount = k.bound(perf_case(load_spec(name))["sizes"])
    rate = amount / (ms * 1e-3)
    peak = {"dram": pk["dram_Bps"], "fp32": pk["fp32_flops"], "fp64": pk["fp64_flops"]}[res]
    return res, rate / peak


# ---------------------------------------------------------------------------- convergence

def load_record(record_dir, name):
    """config key -> recorded ms, from <record_dir>/<name>.t4.json (kopt export) or None."""
    if not record_dir:
        return None, None
    path = os.path.join(record_dir, name + ".t4.json")
    if not os.path.isfile(path):
        return None, None
    names = list(load_spec(name)["tuning"]["params"])
    rec = {}
    for r in json.load(open(path)).get("results", []):
        t = [m["value"] for m in r.get("measurements", []) if m.get("name") == "time"]
        if t and r.get("invalidity", "correct") == "correct":
            rec[key(r["configuration"], names)] = t[0]
    return rec, names


def to_within(trajectory, tol, record=None, names=None):
    """(evaluations, seconds) until the first evaluated configuration within tol of the best."""
    if record:
        best = min(record.values())
        value = lambda p, ms: record.get(key(p, names))
    else:
        own = [ms for _, ms, _ in trajectory if ms is not None]
        if not own:
            return None, None
        best = min(own)
        value = lambda p, ms: ms
    for i, (p, ms, secs) in enumerate(trajectory):
        v = value(p, ms)
        if v is not None and v <= best * (1 + tol):
            return i + 1, secs
    return None, None


# ---------------------------------------------------------------------------- modes

def compare_one(name, a, np, cp, pk):
    """One kernel's row. A step that fails is recorded in row["errors"]; the others go on."""
    out = os.path.join(a.out, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    prepare_inputs(name)
    row = {"kernel": name, "errors": []}

    def step(label, fn):
        try:
            return fn()
        except Exception as ex:  # a failed step is reported in the table, not fatal
            log("   %s: %s failed: %s" % (name, label, ex))
            row["errors"].append("%s: %s" % (label, ex))
            return None

    log("== %s: kopt optimize (evals=%d)" % (name, a.evals))
    ko = step("kopt", lambda: kopt_optimize(name, a.evals, out))
    if ko:
        log("   kopt: %.1f s, %d evaluations, best %s ms" % (ko["wall_s"], ko["evaluations"], ko["best_ms"]))
    log("== %s: Kernel Tuner (%s, max_fevals=%d)" % (name, a.kt_strategy, a.evals))
    kt = step("Kernel Tuner", lambda: kt_tune(name, a.evals, a.kt_strategy, out, np, cp))
    cp.get_default_memory_pool().free_all_blocks()
    if kt:
        log("   Kernel Tuner: %.1f s, %d evaluations (%s), best %.4f ms by its timing" %
            (kt["wall_s"], kt["evaluations"], kt["strategy"], kt["best_ms"]))
    row.update(kopt=ko, kt=kt)
    configs = {lbl: r["best"] for lbl, r in (("kopt", ko), ("kt", kt)) if r}
    rt = None
    if configs:
        log("== %s: re-timing %s, %d rounds interleaved" % (name, " and ".join(configs), ROUNDS))
        rt = step("re-timing", lambda: retime(name, configs, out))
    row["retime"] = rt or {}
    k_ms = (row["retime"].get("kopt") or {}).get("ms")
    t_ms = (row["retime"].get("kt") or {}).get("ms")
    row["ratio_kt_over_kopt"] = (t_ms / k_ms) if k_ms and t_ms else None
    k = KERNELS[name]
    sizes = perf_case(load_spec(name))["sizes"]
    if k.library_label:
        ms = step("library op", lambda: time_op(cp, k.library(np, cp, sizes, SEED)))
        row["library"] = {"label": k.library_label, "ms": ms}
    cp.get_default_memory_pool().free_all_blocks()
    if k_ms:
        row["bound"] = fraction_of_bound(name, k_ms, pk)
    rec, names = load_record(a.record, name)
    row["basis"] = "record" if rec else "own"
    for tool, r in (("kopt", ko), ("kt", kt)):
        row[tool + "_to_1pct"] = to_within(r["trajectory"], 0.01, rec, names) if r else (None, None)
    return row


def fmt(v, spec="%.4g"):
    return "-" if v is None else spec % v


def table(rows, pk):
    head = ["kernel", "kopt ms", "KT ms", "KT/kopt", "kopt tune s (evals)", "KT tune s (evals)",
            "evals to 1% kopt / KT", "library op ms (lib/kopt)", "bound", "checks"]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    notes = []
    for r in rows:
        ko, kt, rt = r.get("kopt"), r.get("kt"), r.get("retime", {})
        k_ms = (rt.get("kopt") or {}).get("ms")
        t_ms = (rt.get("kt") or {}).get("ms")
        lib = r.get("library") or {}
        lib_ms = lib.get("ms")
        libs = "-" if lib_ms is None else "%s (%s)" % (fmt(lib_ms), fmt(lib_ms / k_ms if k_ms else None, "%.2f"))
        b = r.get("bound")
        bs = "-" if not b else "%.0f%% of %s" % (100 * b[1], b[0].upper())
        tk, tt = r.get("kopt_to_1pct", (None, None)), r.get("kt_to_1pct", (None, None))
        to = "%s / %s (%s)" % (fmt(tk[0], "%d"), fmt(tt[0], "%d"), r.get("basis", "-"))
        checks = ", ".join("%s %s" % (lbl, "/".join(sorted(set(map(str, v["verdicts"]))))) for lbl, v in rt.items())
        tune = lambda x: "-" if not x else "%.0f (%d)" % (x["wall_s"], x["evaluations"])
        lines.append(" | ".join([r["kernel"], fmt(k_ms), fmt(t_ms), fmt(r.get("ratio_kt_over_kopt"), "%.3f"),
                                 tune(ko), tune(kt), to, libs, bs, checks or "-"]))
        notes += ["%s: %s" % (r["kernel"], e) for e in r.get("errors", [])]
    lines.append("")
    lines.append("ms: re-timed medians (kopt evaluate, %d interleaved rounds, L2 flushed); KT/kopt > 1: kopt's is "
                 "faster. Bound: DRAM %.2f TB/s measured (copy), FP32 %.1f / FP64 %.1f TFLOP/s (%d SMs at %.0f MHz)."
                 % (ROUNDS, pk["dram_Bps"] / 1e12, pk["fp32_flops"] / 1e12, pk["fp64_flops"] / 1e12, pk["sms"],
                    pk["clock_mhz"]))
    if notes:
        lines += ["", "Failed steps:"] + ["- " + n[:400] for n in notes]
    return "\n".join(lines)


def cmd_compare(a, names):
    import numpy as np
    import cupy as cp
    os.makedirs(a.out, exist_ok=True)
    pk = peaks(cp)
    rows = []
    for name in names:
        try:
            rows.append(compare_one(name, a, np, cp, pk))
        except Exception as ex:  # one kernel's failure must not lose the others' figures
            log("   %s failed: %s" % (name, ex))
            rows.append({"kernel": name, "errors": [str(ex)]})
        # Written after each kernel, so that a call cut off by its time limit keeps the finished rows.
        with open(os.path.join(a.out, "gallery.json"), "w") as f:
            json.dump({"peaks": pk, "rows": rows, "evals": a.evals}, f, indent=1, default=str)
        text = table(rows, pk)
        with open(os.path.join(a.out, "gallery.md"), "w") as f:
            f.write(text + "\n")
    print(text)
    return 0 if all(not r.get("errors") for r in rows) else 1


def quick_spec(name, path):
    """A copy of the spec for recording: absolute paths, quick timing, one check trial."""
    folder = os.path.join(ROOT, "templates", name)
    s = load_spec(name)

    def absolute(o):
        if isinstance(o, dict):
            return {k: (os.path.join(folder, v) if k in ("source", "path") and isinstance(v, str) else absolute(v))
                    for k, v in o.items()}
        if isinstance(o, list):
            return [absolute(v) for v in o]
        return o
    s = absolute(s)
    s["timing"] = dict(s.get("timing", {}), warmup=2, iterations=10)
    s["checks"] = {"trials": 1, "repeats": 1}
    with open(path, "w") as f:
        json.dump(s, f, indent=1)
    return path


def record_kopt(name, a):
    out = a.out
    results = os.path.join(a.work, "record-" + name)
    runs = sorted(d for d in os.listdir(results) if d.startswith("run-")) if os.path.isdir(results) else []
    budget = "evals=1000000,minutes=%g" % a.minutes
    common = ["--budget", budget, "--cache-dir", os.path.join(a.work, "record-cache"), "-q"]
    if runs:
        argv = [kopt_bin(), "optimize", "--resume", os.path.join(results, runs[-1])] + common
    else:
        spec = quick_spec(name, os.path.join(a.work, "record-%s.json" % name))
        argv = [kopt_bin(), "optimize", "--spec", spec, "--strategy", "exhaustive", "--no-specialize", "--top", "1",
                "--retime-rounds", "0", "--shape-classes", "off", "--results-dir", results] + common
    with open(os.path.join(out, name + ".record.err"), "a") as e:
        rc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=e).returncode
    runs = sorted(d for d in os.listdir(results) if d.startswith("run-")) if os.path.isdir(results) else []
    if not runs:
        raise RuntimeError("kopt optimize (record) exited %d" % rc)
    t4 = os.path.join(out, name + ".t4.json")
    subprocess.run([kopt_bin(), "export", "--format", "t4", os.path.join(results, runs[-1]), "-o", t4], check=True)
    n = len(json.load(open(t4))["results"])
    log("   %s: %d configuration(s) recorded by kopt (of %s valid); kopt optimize exit %d" %
        (name, n, load_record_valid(results, runs[-1]), rc))
    return n


def load_record_valid(results, run):
    try:
        return json.load(open(os.path.join(results, run, "summary.json"))).get("valid_configurations")
    except (OSError, ValueError):
        return "?"


def cmd_record(a, names):
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    status = 0
    for name in names:
        prepare_inputs(name)
        log("== record %s" % name)
        try:
            if a.tool in ("kopt", "both"):
                record_kopt(name, a)
            if a.tool in ("kt", "both"):
                import numpy as np
                import cupy as cp
                out = os.path.join(a.work, "record-kt-" + name)
                os.makedirs(out, exist_ok=True)
                r = kt_tune(name, 10 ** 9, "brute_force", out, np, cp,
                            cachefile=os.path.join(a.out, name + ".kt_cache.json"), iterations=3, max_fevals=False)
                log("   %s: %d configuration(s) recorded by Kernel Tuner in %.0f s"
                    % (name, r["evaluations"], r["wall_s"]))
                cp.get_default_memory_pool().free_all_blocks()
        except Exception as ex:
            log("   %s failed: %s" % (name, ex))
            status = 1
    return status


def cmd_kt_space(names):
    for name in names:
        s = load_spec(name)
        print("%-10s cartesian %7d  Kernel Tuner's space %6d" %
              (name, math.prod(len(v) for v in s["tuning"]["params"].values()), kt_space_size(name)))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["compare", "record", "kt-space"])
    ap.add_argument("--kernels", default=",".join(DEFAULT),
                    help="comma-separated (default: %s; also: %s)" % (",".join(DEFAULT),
                                                                     ",".join(k for k in KERNELS if k not in DEFAULT)))
    ap.add_argument("--evals", type=int, default=40, help="compare: evaluations per tool and kernel")
    ap.add_argument("--kt-strategy", default="auto", help="compare: Kernel Tuner's strategy (default: auto)")
    ap.add_argument("--record", default="", help="compare: folder with <name>.t4.json records")
    ap.add_argument("--minutes", type=float, default=3, help="record: minutes per kernel and call")
    ap.add_argument("--tool", default="kopt", choices=["kopt", "kt", "both"], help="record: which tool records")
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(ROOT, "gallery-out")))
    ap.add_argument("--work", default=os.path.join(ROOT, "build-gpu", "gallery"), help="record: run folders (kept)")
    a = ap.parse_args()
    names = [n for n in a.kernels.split(",") if n]
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        ap.error("unknown kernel(s) %s; known: %s" % (unknown, ", ".join(KERNELS)))
    if a.mode == "compare":
        return cmd_compare(a, names)
    if a.mode == "record":
        return cmd_record(a, names)
    return cmd_kt_space(names)


if __name__ == "__main__":
    sys.exit(main())
