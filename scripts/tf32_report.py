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

Exit status 1 when a configuration was not accepted (evaluate) or a candidate broke the 2x
contract (accuracy).
"""

import glob
import json
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


def evaluate(results_file, configs_file):
    res = json.load(open(results_file))
    labels = {}
    for line in open(configs_file):
        parts = line.split(None, 1)
        labels[parts[0]] = parts[1].strip()
    perf = []
    for r in res:
        for c in r.get("cases", []):
            if c.get("latency") and c["name"] not in perf:
                perf.append(c["name"])
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


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "evaluate":
        return evaluate(sys.argv[2], sys.argv[3])
    if len(sys.argv) >= 3 and sys.argv[1] == "accuracy":
        return accuracy(sys.argv[2])
    if len(sys.argv) >= 3 and sys.argv[1] == "clocks":
        return clocks(sys.argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
