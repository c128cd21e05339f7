#!/usr/bin/env python3
"""Compact tables for scripts/check_tf32.sh (Python 3 standard library only).

    tf32_report.py evaluate EVALUATE_JSON CONFIGS_TXT   kopt evaluate's results: verdict, geomean, the
                                                        median of each timed case, the worst max and
                                                        RMS relative error over the cases
    tf32_report.py accuracy RUN_DIR                     a kopt optimize run folder: per case, the cuBLAS
                                                        FP32 baseline's max and RMS relative error beside
                                                        the worst accepted candidate's, and their ratio
                                                        (the 2x contract of docs/evaluation.md; cases with
                                                        K < 64 shown but not counted)
    tf32_report.py clocks CLOCKS_CSV                    the SM clock samples (nvidia-smi -lms): min,
                                                        median, max, and the throttle reasons seen
    tf32_report.py contract EVALUATE_JSON RUN_DIR CONFIGS_TXT
                                                        per configuration of kopt evaluate, its worst
                                                        max and RMS error ratio to the cuBLAS FP32
                                                        baseline of the run folder, case by case (K >= 64)
    tf32_report.py bench BENCH_JSON                     per shape of sgemm_bench --precision: cuBLAS FP32
                                                        and FAST_TF32, the fastest split-TF32 variant
                                                        (effective TFLOP/s, fraction of the split-TF32
                                                        ceiling, ratio to cuBLAS FP32) and the
                                                        dispatched kernel's error ratios

Exit status 1 when a configuration was not accepted (evaluate) or a candidate broke the 2x
contract (accuracy; contract reports, does not fail).

Ceilings (bench): the dense TF32 tensor rate of the H100 SXM and the H200 is 494.7 TFLOP/s (NVIDIA's
H100 and H200 datasheets: "TF32 Tensor Core 989 TFLOPS", with 2:4 sparsity, dense is half), i.e. 132
SMs x 2048 FLOP/clock x 1830 MHz; a split-TF32 FLOP takes three TF32 products, so its ceiling is
494.7 / 3 = 164.9 TFLOP/s. sgemm_bench's own column uses the card's maximum SM clock instead (1980
MHz: 535.3 and 178.4); both are printed.
"""

import glob
import json
import math
import os
import re
import statistics
import sys

# Cases whose K (the name's last "xNNN") is below this have errors of a few roundings, where the
# split's representation error (up to one unit in the last place per operand) outweighs FP32's and
# cuBLAS's error is often exactly 0 against the float-rounded reference: shown, not counted.
SHALLOW_K = 64


def num(x):
    """A JSON number of a result (non-finite ones are strings there)."""
    if isinstance(x, str):
        return float(x.replace("Infinity", "inf"))
    return x


def read_labels(configs_file):
    """CONFIGS_TXT, a line per configuration ("cfg_N label"): {cfg_N: label}."""
    labels = {}
    for line in open(configs_file):
        parts = line.split(None, 1)
        labels[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return labels


def timed_cases(results):
    """The names of the cases kopt evaluate's results timed, in the order they first appear."""
    perf = []
    for r in results:
        for c in r.get("cases", []):
            if c.get("latency") and c["name"] not in perf:
                perf.append(c["name"])
    return perf


def evaluate(results_file, configs_file):
    res = json.load(open(results_file))
    labels = read_labels(configs_file)
    perf = timed_cases(res)
    print("\nkopt evaluate: verdict, median ms per timed case, worst relative error over all cases"
          " (e = |c - ref| / sqrt(sum_k (a_ik b_kj)^2))")
    print("%-7s %-14s %9s %10s %10s " % ("config", "verdict", "geomean", "max e", "rms e") +
          " ".join("%15s" % p for p in perf))
    bad = 0
    for r in res:
        cfg = os.path.basename(r.get("kernel", "?")).replace(".cu", "")
        cases = r.get("cases", [])
        med = {c["name"]: c["latency"]["median_ms"] for c in cases if c.get("latency")}
        emax = max([num(c["rel_error_max"]) for c in cases if "rel_error_max" in c] or [float("nan")])
        erms = max([num(c["rel_error_rms"]) for c in cases if "rel_error_rms" in c] or [float("nan")])
        v = r.get("verdict")
        bad += v != "ok"
        g = r.get("geomean_ms")
        print("%-7s %-14s %9s %10.3e %10.3e " % (cfg, v, "%.4f" % g if g else "-", emax, erms) +
              " ".join("%15s" % ("%.4f" % med[p] if p in med else "-") for p in perf))
        if v != "ok":
            print("        failed case %s: %s" % (r.get("failed_case") or "-", (r.get("detail") or "")[:300]))
    for k, l in labels.items():
        print("  %s %s" % (k, l))
    print("%d of %d configurations ok" % (len(res) - bad, len(res)))
    return 1 if bad else 0


def accuracy(run_dir):
    attempts = []
    for f in sorted(glob.glob(os.path.join(run_dir, "candidates", "*", "result.json"))):
        attempts.append(json.load(open(f)))
    base = [a for a in attempts if a.get("kind") == "baseline"]
    cands = [a for a in attempts if a.get("kind") == "candidate" and a.get("verdict") == "ok"]
    if not base or base[0].get("verdict") != "ok":
        print("accuracy: no accepted cuBLAS baseline in %s" % run_dir)
        return 1
    b = {c["name"]: c for c in base[0].get("cases", [])}
    print("\naccuracy (the harness, %s): cuBLAS FP32 against the FP64 oracle beside the worst of %d accepted"
          " split-TF32 candidates; ratio = candidate / cuBLAS (contract: <= 2)" % (os.path.basename(run_dir),
                                                                                 len(cands)))
    print("  %-30s %11s %11s %11s %11s %7s %7s" % ("case", "cuBLAS max", "cuBLAS rms", "tf32 max", "tf32 rms",
                                                   "max x", "rms x"))
    worst = (0.0, "", "")
    broke = 0
    for name, bc in b.items():
        m = re.search(r"x(\d+)$", name)
        shallow = m is not None and int(m.group(1)) < SHALLOW_K
        bmax, brms = num(bc.get("rel_error_max", float("nan"))), num(bc.get("rel_error_rms", float("nan")))
        cmax = crms = float("nan")
        who = ""
        for a in cands:
            for c in a.get("cases", []):
                if c["name"] != name or "rel_error_max" not in c:
                    continue
                if not (num(c["rel_error_max"]) <= cmax):
                    cmax, who = num(c["rel_error_max"]), a.get("label", "")
                if not (num(c["rel_error_rms"]) <= crms):
                    crms = num(c["rel_error_rms"])
        rmax = cmax / bmax if bmax > 0 else float("nan")
        rrms = crms / brms if brms > 0 else float("nan")
        if not shallow:
            for r in (rmax, rrms):
                if r > worst[0]:
                    worst = (r, name, who)
            broke += (rmax > 2) + (rrms > 2)
        print("  %-30s %11.3e %11.3e %11.3e %11.3e %7.2f %7.2f%s" % (name, bmax, brms, cmax, crms, rmax, rrms,
                                                                    "  (shallow)" if shallow else ""))
    print("  worst ratio %.2f (%s, %s); %d ratios over 2 (shallow: K < %d, a few roundings, shown but not"
          " counted: docs/evaluation.md)" % (worst[0], worst[1], worst[2], broke, SHALLOW_K))
    return 1 if broke else 0


def clocks(csv_file):
    sm, reasons = [], set()
    for line in open(csv_file):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or not parts[1].split() or not parts[1].split()[0].isdigit():
            continue
        sm.append(int(parts[1].split()[0]))
        if len(parts) >= 6:
            reasons.add(parts[5])
    if not sm:
        print("SM clock: no samples (nvidia-smi)")
        return 0
    print("SM clock during the call (nvidia-smi, %d samples every 500 ms): min %d, median %d, max %d MHz;"
          " throttle reasons seen: %s" % (len(sm), min(sm), statistics.median(sm), max(sm),
                                          ", ".join(sorted(reasons)) or "-"))
    return 0


DATASHEET_TF32 = 494.7  # TFLOP/s, dense, H100 SXM and H200 (see the module doc)
FLAGSHIP = ["4096x2048x1024", "2048x4096x3072", "8192x1024x4096", "1024x8192x512", "3000x1000x2000"]


def contract(results_file, run_dir, configs_file):
    """Per configuration: worst error ratio to cuBLAS FP32 (same cases, same seeded inputs)."""
    res = json.load(open(results_file))
    base = None
    for f in sorted(glob.glob(os.path.join(run_dir, "candidates", "*", "result.json"))):
        a = json.load(open(f))
        if a.get("kind") == "baseline" and a.get("verdict") == "ok":
            base = {c["name"]: c for c in a.get("cases", [])}
    if base is None:
        print("contract: no accepted cuBLAS baseline in %s" % run_dir)
        return 0
    labels = read_labels(configs_file)
    print("\nerror contract per configuration (kopt evaluate vs the cuBLAS FP32 baseline of %s, cases with"
          " K >= %d; <= 2 required):" % (os.path.basename(run_dir), SHALLOW_K))
    print("  %-7s %8s %-28s %8s %-28s  %s" % ("config", "max x", "(case)", "rms x", "(case)", "label"))
    for r in res:
        cfg = os.path.basename(r.get("kernel", "?")).replace(".cu", "")
        wmax, wrms = (0.0, "-"), (0.0, "-")
        for c in r.get("cases", []):
            name = c["name"]
            m = re.search(r"x(\d+)$", name)
            if (m is not None and int(m.group(1)) < SHALLOW_K) or name not in base or "rel_error_max" not in c:
                continue
            bmax, brms = num(base[name].get("rel_error_max", 0)), num(base[name].get("rel_error_rms", 0))
            if bmax > 0 and num(c["rel_error_max"]) / bmax > wmax[0]:
                wmax = (num(c["rel_error_max"]) / bmax, name)
            if brms > 0 and num(c["rel_error_rms"]) / brms > wrms[0]:
                wrms = (num(c["rel_error_rms"]) / brms, name)
        flag = "" if wmax[0] <= 2 and wrms[0] <= 2 else "   BREAKS the 2x contract"
        print("  %-7s %8.2f %-28s %8.2f %-28s  %s%s" % (cfg, wmax[0], wmax[1], wrms[0], wrms[1],
                                                       labels.get(cfg, ""), flag))
    return 0


def bench(bench_file):
    """Per shape: cuBLAS FP32, cuBLAS FAST_TF32 and the fastest split-TF32 variant side by side."""
    j = json.load(open(bench_file))
    dev = j.get("device", {})
    clock_peak = j.get("precision", {}).get("split_tf32_peak_tflops", float("nan"))
    ceil = DATASHEET_TF32 / 3
    print("\nsplit TF32 vs cuBLAS on %s (effective TFLOP/s = 2MNK / time; ceilings: split TF32 %.1f TFLOP/s ="
          " datasheet dense TF32 %.1f / 3, and %.1f at the max SM clock of %.0f MHz)" % (
              dev.get("name", "?"), ceil, DATASHEET_TF32, clock_peak, dev.get("max_clock_khz", 0) / 1e3))
    print("  %-16s %9s %9s  %-4s %9s %7s %7s %7s  %-4s %8s %8s" % (
        "case MxNxK", "cuBLAS", "cB TF32", "best", "TFLOP/s", "%ceil", "%clk", "x cB", "disp", "max/cB", "rms/cB"))
    flag_ratios = []
    for c in j.get("cases", []):
        cb = c.get("cublas", {})
        cb_ms = cb.get("time", {}).get("median_ms")
        best = None
        for v in c.get("variants", []):
            r = v.get("result") or {}
            ms = r.get("time", {}).get("median_ms")
            if ms and v.get("runnable", True) and not v.get("skipped") and (r.get("check", {}).get("ok", True)):
                if best is None or ms < best[1]:
                    best = (r.get("variant"), ms, r.get("tflops", 0))
        prec = {p.get("who"): p for p in c.get("precision", [])}
        tf = prec.get("cuBLAS TF32", {}).get("tflops", float("nan"))
        fp = prec.get("cuBLAS FP32", {})
        disp = prec.get("specialised") or prec.get("single") or {}
        dmax = num(disp.get("rel_error_max", float("nan"))) / num(fp.get("rel_error_max", float("nan")) or float("nan"))
        drms = num(disp.get("rel_error_rms", float("nan"))) / num(fp.get("rel_error_rms", float("nan")) or float("nan"))
        if best is None or not cb_ms:
            print("  %-16s (no timing)" % c.get("case"))
            continue
        ratio = cb_ms / best[1]
        if c.get("case") in FLAGSHIP:
            flag_ratios.append(ratio)
        print("  %-16s %9.2f %9.2f  v%-3s %9.2f %6.1f%% %6.1f%% %7.3f  v%-3s %8.2f %8.2f" % (
            c.get("case"), cb.get("tflops", 0), tf, best[0], best[2], 100 * best[2] / ceil,
            100 * best[2] / clock_peak if clock_peak == clock_peak else float("nan"), ratio,
            (c.get("dispatch") or {}).get("dispatched_variant", "?"),
            dmax, drms))
    if flag_ratios:
        g = math.exp(sum(math.log(r) for r in flag_ratios) / len(flag_ratios))
        print("  flagship shapes: geomean %.3fx cuBLAS FP32 (fastest variant per shape; bar 1.6x), min %.3fx" % (
            g, min(flag_ratios)))
    return 0


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "evaluate":
        return evaluate(sys.argv[2], sys.argv[3])
    if len(sys.argv) >= 3 and sys.argv[1] == "accuracy":
        return accuracy(sys.argv[2])
    if len(sys.argv) >= 3 and sys.argv[1] == "clocks":
        return clocks(sys.argv[2])
    if len(sys.argv) >= 5 and sys.argv[1] == "contract":
        return contract(sys.argv[2], sys.argv[3], sys.argv[4])
    if len(sys.argv) >= 3 and sys.argv[1] == "bench":
        return bench(sys.argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
