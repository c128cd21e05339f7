#!/usr/bin/env python3
"""CTest replay.records: `kopt replay` on the small committed record, as a Kernel Tuner cache and as
T4 results (tests/data/spaces/small.*): both give the same numbers; `exhaustive` reaches the
optimum exactly where the record's order says, in the seconds its costs add up to; the budget
counts evaluations and simulated minutes as a GPU run does; --write-cache, --traces, --json;
a bad record exits 2 naming the file and the JSON path.

    check_replay.py KOPT SOURCE_DIR
"""
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}")


def replay(kopt, *args):
    p = subprocess.run([kopt, "replay", *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def expected_exhaustive(cache):
    """The record in kopt's enumeration order (parameters by name, values as listed): values and costs."""
    keys = sorted(cache["tune_params_keys"])
    by_config = {tuple(e[k] for k in keys): e for e in cache["cache"].values()}
    order = []
    for values in itertools.product(*(cache["tune_params"][k] for k in keys)):
        e = by_config.get(values)
        if e is None:
            continue
        t = e["time"]
        cost = (e.get("compile_time", 0) + e.get("verification_time", 0) + e.get("benchmark_time", 0)) / 1000.0
        order.append((None if isinstance(t, str) else t, cost))
    return order


def main():
    kopt, source = sys.argv[1], Path(sys.argv[2])
    spaces = source / "tests" / "data" / "spaces"
    cache_file, t4_file = spaces / "small.cache.json", spaces / "small.t4.json"
    cache = json.loads(cache_file.read_text())
    order = expected_exhaustive(cache)
    optimum = min(v for v, _ in order if v is not None)
    first = lambda tol: next(i + 1 for i, (v, _) in enumerate(order) if v is not None and v <= optimum * (1 + tol))
    seconds = lambda n: sum(c for _, c in order[:n])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rc, out, err = replay(kopt, cache_file, t4_file, "--strategy", "default,exhaustive,random,genetic",
                              "--seeds", "3", "--json", tmp / "out.json", "--traces", tmp / "traces.json")
        print(out + err)
        check(rc == 0, f"exit {rc}")
        if rc != 0:
            return 1
        check(f"small.cache: 120 configurations, 16 failed; optimum {optimum:.4g}, 2 within 5%, 1 within 1%" in out,
              "the cache's header line")
        cache_rows = [line for line in out.split("small.t4:")[0].splitlines() if line.startswith("| ")]
        t4_rows = [line for line in out.split("small.t4:")[1].splitlines() if line.startswith("| ")]
        check(len(cache_rows) == 6 and cache_rows == t4_rows, "the same table from the cache and from T4")
        check(any(r.startswith("| default (portfolio) |") for r in cache_rows), "the default is portfolio (120 > 64)")
        doc = json.loads((tmp / "out.json").read_text())
        check([d["label"] for d in doc] == ["small.cache", "small.t4"], "two records in --json")
        for d in doc:
            check(d["size"] == 120 and d["failed"] == 16 and d["timed"], f"{d['label']}: size, failed, timed")
            check(d["budget"]["evaluations"] == 120, f"{d['label']}: the default budget is the whole space")
            ex = next(r for r in d["results"] if r["strategy"] == "exhaustive")
            for run in ex["runs"]:
                check(run["to5"] == first(0.05) and run["to1"] == first(0.01),
                      f"{d['label']}: exhaustive to 5%/1% {run['to5']}/{run['to1']}, expected {first(0.05)}/{first(0.01)}")
                check(abs(run["seconds1"] - seconds(first(0.01))) < 1e-6,
                      f"{d['label']}: exhaustive seconds to 1% {run['seconds1']}, expected {seconds(first(0.01))}")
        traces = json.loads((tmp / "traces.json").read_text())
        ex_trace = next(t for t in traces if t["space"] == "small.t4" and t["strategy"] == "exhaustive")
        check([s[0] for s in ex_trace["runs"][0][:20]] == [v for v, _ in order[:20]],
              "exhaustive's trace follows the record's order")

        # The budget: evaluations, and minutes on the simulated clock (a run
        # stops after the evaluation that spends them).
        rc, out, err = replay(kopt, cache_file, "--strategy", "exhaustive,genetic", "--seeds", "2",
                              "--budget", "evals=10", "--json", tmp / "b.json", "-q")
        check(rc == 0, f"--budget evals=10: exit {rc} {err}")
        for r in json.loads((tmp / "b.json").read_text())[0]["results"]:
            check(all(run["evaluations"] == 10 for run in r["runs"]), f"evals=10: {r['strategy']}")
        limit = 30.0  # seconds: 0.5 minutes
        n = next(i + 1 for i in range(len(order)) if seconds(i + 1) >= limit)
        rc, out, err = replay(kopt, t4_file, "--strategy", "exhaustive", "--seeds", "1", "--budget", "minutes=0.5",
                              "--json", tmp / "m.json", "-q")
        check(rc == 0, f"--budget minutes=0.5: exit {rc} {err}")
        got = json.loads((tmp / "m.json").read_text())[0]["results"][0]["runs"][0]["evaluations"]
        check(got == n, f"minutes=0.5: {got} evaluations, expected {n} (the first to reach {limit} s)")

        # --write-cache: the T4 record as a Kernel Tuner cache, which replays alike.
        rc, out, err = replay(kopt, t4_file, "--write-cache", tmp / "caches")
        check(rc == 0 and (tmp / "caches" / "small.t4.json").is_file(), f"--write-cache: exit {rc} {err}")
        written = json.loads((tmp / "caches" / "small.t4.json").read_text())
        check(len(written["cache"]) == 120 and written["tune_params_keys"] == cache["tune_params_keys"],
              "the written cache's entries and parameters")
        rc, out, err = replay(kopt, tmp / "caches" / "small.t4.json", "--strategy", "exhaustive", "--seeds", "1")
        check(rc == 0 and f"120 configurations, 16 failed; optimum {optimum:.4g}" in out, "the written cache replays")

        # Bad records: exit 2, the file and the JSON path named.
        bad = tmp / "bad.t4.json"
        bad.write_text(json.dumps({"schema_version": "1.0.0", "results": [
            {"configuration": {"A": 1}, "invalidity": "correct", "measurements": [{"name": "time", "value": 1}]},
            {"configuration": {"A": 2}, "invalidity": "correct", "measurements": []}]}))
        rc, out, err = replay(kopt, bad)
        check(rc == 2 and "[kopt.replay.103]" in err and "bad.t4.json" in err and "$.results[1]" in err,
              f"a passing result without a time: exit {rc}, {err!r}")
        rc, out, err = replay(kopt, cache_file, "--strategy", "simplex")
        check(rc == 2 and "[kopt.search.801]" in err and "simplex" in err, f"an unknown strategy: exit {rc}, {err!r}")
        rc, out, err = replay(kopt, tmp / "missing.json")
        check(rc == 2, f"a missing record: exit {rc}")
    print("ok" if not FAILURES else f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
