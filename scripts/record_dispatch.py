#!/usr/bin/env python3
"""Turns a shape-class run and benchmarks of its kernel into a dispatch record.

    scripts/record_dispatch.py SUMMARY_JSON BENCH_JSON [BENCH_JSON ...] --out FILE [--source TEXT]

SUMMARY_JSON is a `kopt optimize` run's summary.json (a run with shape
specialisation: its "specialization" block). BENCH_JSON are bench/sgemm_bench
outputs (`bench/run.sh ... --shapes-file F`, sgemm_bench_run1.json, ...) of the
kernel generated from that run, with every variant timed on every shape. The
record, read by tests/unit/test_dispatch.cpp, is

    {"source": TEXT, "sm_count": N,
     "variants": [{"label", "blocks_per_sm"}, ...],
     "tuned":    [{"case", "M", "N", "K", "variant_ms": [...]}, ...],
     "held_out": [{"case", "M", "N", "K", "class", "cublas_ms", "dispatched_ms", "variant_ms": [...]}, ...]}

tuned: the run's re-timed medians (specialization.latency_ms, ms) of every
variant on each tuned shape. held_out: per benchmarked shape that is not a
tuned one, the mean over the BENCH_JSON files of each variant's median (ms);
null where a variant was not timed there (the benchmark's --skip-slower).
blocks_per_sm: the run's dispatch model (specialization.dispatch.model).

Python 3 standard library only. Exit status: 0 written, 2 bad input.
"""
import argparse
import json
import sys


def fail(msg):
    print(f"record_dispatch.py: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("summary")
    ap.add_argument("bench", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--source", default="")
    a = ap.parse_args()
    try:
        sp = json.load(open(a.summary))["specialization"]
        model = sp["dispatch"]["model"]
        labels = [v["label"] for v in sp["variants"]]
        tuned = []
        for name, c in sp["cases"].items():
            s = c["sizes"]
            tuned.append({"case": name, "M": s["M"], "N": s["N"], "K": s["K"], "variant_ms": sp["latency_ms"][name]})
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{a.summary}: not a summary.json with a specialization and its dispatch model ({e!r})")
    if len(model["blocks_per_sm"]) != len(labels):
        fail(f"{a.summary}: {len(labels)} variants but {len(model['blocks_per_sm'])} blocks_per_sm")
    tuned_sizes = {(t["M"], t["N"], t["K"]) for t in tuned}
    rows = {}
    for path in a.bench:
        try:
            b = json.load(open(path))
            bench_labels = [v["label"] for v in b["variants"]]
            cases = b["cases"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"{path}: not a bench/sgemm_bench JSON output ({e!r})")
        if bench_labels != labels:
            fail(f"{path}: its variants are not the run's")
        for c in cases:
            key = (c["M"], c["N"], c["K"])
            if key in tuned_sizes:
                continue
            r = rows.setdefault(c["case"], {"case": c["case"], "M": c["M"], "N": c["N"], "K": c["K"],
                                            "class": c.get("class", ""), "n": 0, "cublas": 0.0, "disp": 0.0,
                                            "ms": [[] for _ in labels]})
            r["n"] += 1
            r["cublas"] += c["cublas"]["time"]["median_ms"]
            r["disp"] += c["specialised"]["time"]["median_ms"]
            for i, v in enumerate(c["variants"]):
                if v.get("runnable") and not v.get("skipped"):
                    r["ms"][i].append(v["result"]["time"]["median_ms"])
    held = []
    for r in rows.values():
        held.append({"case": r["case"], "M": r["M"], "N": r["N"], "K": r["K"], "class": r["class"],
                     "cublas_ms": round(r["cublas"] / r["n"], 6), "dispatched_ms": round(r["disp"] / r["n"], 6),
                     "variant_ms": [round(sum(x) / len(x), 6) if len(x) == r["n"] else None for x in r["ms"]]})
    out = {"source": a.source, "sm_count": model["sm_count"],
           "variants": [{"label": l, "blocks_per_sm": b} for l, b in zip(labels, model["blocks_per_sm"])],
           "tuned": tuned, "held_out": held}
    with open(a.out, "w") as f:
        f.write("{" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, separators=(', ', ': '))}"
                                   for k, v in out.items() if k not in ("tuned", "held_out")))
        for k in ("tuned", "held_out"):
            f.write(f",\n{json.dumps(k)}: [\n" + ",\n".join(json.dumps(x) for x in out[k]) + "\n]")
        f.write("}\n")
    print(f"{a.out}: {len(labels)} variants, {len(tuned)} tuned shapes, {len(held)} held-out shapes")


if __name__ == "__main__":
    main()
