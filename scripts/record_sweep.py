#!/usr/bin/env python3
"""Turns kopt optimize run folder(s) into a sweep record for the search replay.

    scripts/record_sweep.py RUN_DIR [RUN_DIR ...] [--out FILE] [--spec SPEC]

Reads run.json, device.json, spec.json and history.json of each run folder
(results/run-NNN/ written by `kopt optimize`) and writes a compact JSON record
(default: tests/data/search/sgemm_h200_sweep.json) that
tests/unit/test_search_replay.cpp replays the search strategies against:

    {"format_version": 1, "source": "...", "device": {"name", "cc"},
     "constants": {MAX_SHARED_PER_BLOCK, ...}, "spec": "templates/sgemm/sgemm.json",
     "params": [...], "entries": [{"params", "verdict", "geomean_ms", "cases_ms"}, ...]}

Only "candidate" attempts are kept (not the reference, initial kernel or
baseline); geomean_ms and cases_ms (per performance case, the median) only for
verdict "ok". Several run folders (a sweep split over sessions) are merged:
a configuration measured twice keeps an ok result over a failure, and the
geometric mean of its ok measurements. The run's tuning block must equal the
one of SPEC (default templates/sgemm/sgemm.json), else the record would
describe another space (--allow-spec-mismatch overrides).

Python 3 standard library only. Exit status: 0 written, 2 bad input.
"""
import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join("tests", "data", "search", "sgemm_h200_sweep.json")
DEFAULT_SPEC = "templates/sgemm/sgemm.json"


class InputError(Exception):
    pass


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot be read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON: {e}")


def sig(x, digits=5):
    """x rounded to `digits` significant digits (measurement noise is ~1%)."""
    return float(f"{x:.{digits}g}")


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def device_constants(dev):
    """What `kopt optimize` binds for the constraints (search/device_constants.cpp)."""
    return {
        "MAX_SHARED_PER_BLOCK": dev["shared_per_block_optin_bytes"],
        "MAX_THREADS_PER_BLOCK": dev["max_threads_per_block"],
        "REGS_PER_SM": dev["regs_per_sm"],
        "SM_COUNT": dev["sm_count"],
        "WARP_SIZE": dev["warp_size"],
    }


def case_medians(attempt):
    """Performance case name -> median ms (history.json's "median_ms" at a glance,
    else the cases' latency statistics)."""
    med = attempt.get("median_ms")
    if isinstance(med, dict) and med:
        return {k: float(v) for k, v in med.items() if isinstance(v, (int, float))}
    out = {}
    for c in attempt.get("cases") or []:
        lat = c.get("latency")
        if isinstance(lat, dict) and isinstance(lat.get("median_ms"), (int, float)):
            out[c["name"]] = float(lat["median_ms"])
    return out


def load_run(run_dir):
    for name in ("run.json", "device.json", "spec.json", "history.json"):
        if not os.path.isfile(os.path.join(run_dir, name)):
            raise InputError(f"{run_dir}: not a run folder ({name} is missing)")
    run = read_json(os.path.join(run_dir, "run.json"))
    device = read_json(os.path.join(run_dir, "device.json"))
    spec = read_json(os.path.join(run_dir, "spec.json"))
    history = read_json(os.path.join(run_dir, "history.json"))
    if "name" not in device or "shared_per_block_optin_bytes" not in device:
        raise InputError(f"{run_dir}/device.json: no GPU was used in this run (compile-only)")
    attempts = history.get("attempts") if isinstance(history, dict) else None
    if not isinstance(attempts, list):
        raise InputError(f"{run_dir}/history.json: no \"attempts\" array")
    return run, device, spec, attempts


def tuning_of(spec, where):
    t = spec.get("tuning") if isinstance(spec, dict) else None
    if not isinstance(t, dict) or not isinstance(t.get("params"), dict):
        raise InputError(f"{where}: no tuning.params")
    return t


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    ap.add_argument("--out", default=None, help=f"record file (default {DEFAULT_OUT} in the source tree)")
    ap.add_argument("--spec", default=DEFAULT_SPEC, help="the spec, relative to the source tree, that the record names")
    ap.add_argument("--allow-spec-mismatch", action="store_true",
                    help="write the record although the run's tuning block differs from SPEC's")
    args = ap.parse_args(argv)
    out = args.out or os.path.join(ROOT, DEFAULT_OUT)

    try:
        spec_tuning = tuning_of(read_json(os.path.join(ROOT, args.spec)), args.spec)
        device0 = None
        sources = []
        merged = {}  # key -> {"params", "verdicts": [], "ok": [(geomean, cases)]}
        order = []
        for run_dir in args.run_dirs:
            run, device, spec, attempts = load_run(run_dir)
            tuning = tuning_of(spec, f"{run_dir}/spec.json")
            if (tuning.get("params") != spec_tuning.get("params")
                    or tuning.get("constraints", []) != spec_tuning.get("constraints", [])):
                msg = f"{run_dir}/spec.json: the tuning block differs from {args.spec}'s"
                if not args.allow_spec_mismatch:
                    raise InputError(msg + " (--allow-spec-mismatch to record it anyway)")
                print("record_sweep: warning: " + msg, file=sys.stderr)
            if device0 is None:
                device0 = device
            elif (device.get("name"), device.get("compute_capability")) != (
                    device0.get("name"), device0.get("compute_capability")):
                raise InputError(f"{run_dir}: another GPU ({device.get('name')}) than the first run folder's "
                                 f"({device0.get('name')})")
            names = sorted(tuning["params"].keys())
            n = 0
            for a in attempts:
                if a.get("kind") != "candidate":
                    continue
                params = a.get("params") or {}
                if sorted(params) != sorted(names):
                    raise InputError(f"{run_dir}/history.json: attempt {a.get('index')} has parameters "
                                     f"{sorted(params)}, expected {sorted(names)}")
                key = tuple(sorted(params.items()))
                if key not in merged:
                    merged[key] = {"params": params, "verdicts": [], "ok": []}
                    order.append(key)
                m = merged[key]
                verdict = a.get("verdict", "unknown")
                g = a.get("geomean_ms")
                if verdict == "ok" and isinstance(g, (int, float)) and g > 0 and math.isfinite(g):
                    m["ok"].append((float(g), case_medians(a)))
                elif verdict == "ok":
                    verdict = "ok_untimed"  # ok but no usable geomean: recorded as a failure
                m["verdicts"].append(verdict)
                n += 1
            budget = run.get("budget")
            sources.append(f"{os.path.basename(os.path.normpath(run_dir))} (strategy {run.get('strategy')}, "
                           f"seed {run.get('seed')}, budget {json.dumps(budget, sort_keys=True)}, "
                           f"kopt {run.get('tool_version')}, created {run.get('created')}): {n} candidate attempts")
    except InputError as e:
        print(f"record_sweep: {e}", file=sys.stderr)
        return 2

    # The parameters in the order `kopt optimize` has them (the spec parser's
    # JSON objects sort their keys), so that the entries come in the order of
    # Space::enumerate_valid().
    names = sorted(spec_tuning["params"].keys())
    values = spec_tuning["params"]

    def sort_key(key):
        p = merged[key]["params"]
        return [values[n].index(p[n]) if p[n] in values[n] else len(values[n]) for n in names]

    entries = []
    counts = {}
    for key in sorted(order, key=sort_key):
        m = merged[key]
        e = {"params": {n: m["params"][n] for n in sorted(m["params"])}}
        if m["ok"]:
            e["verdict"] = "ok"
            e["geomean_ms"] = sig(geometric_mean([g for g, _ in m["ok"]]))
            cases = {}
            for name in sorted({c for _, cs in m["ok"] for c in cs}):
                vals = [cs[name] for _, cs in m["ok"] if name in cs and cs[name] > 0]
                if vals:
                    cases[name] = sig(geometric_mean(vals))
            e["cases_ms"] = cases
        else:
            e["verdict"] = m["verdicts"][-1]
        counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
        entries.append(e)

    doc_head = {
        "format_version": 1,
        "source": "kopt optimize on the GPU, recorded by scripts/record_sweep.py from " + "; ".join(sources),
        "device": {"name": device0.get("name"), "cc": device0.get("compute_capability")},
        "constants": device_constants(device0),
        "spec": args.spec,
        "params": names,
    }
    lines = ["{"]
    head_items = list(doc_head.items())
    for k, v in head_items:
        lines.append(f" {json.dumps(k)}: {json.dumps(v, sort_keys=True, separators=(',', ':'))},")
    lines.append(' "entries": [')
    for i, e in enumerate(entries):
        # Keys in reading order (params, verdict, geomean_ms, cases_ms), as the C++ writer has them.
        line = json.dumps({k: e[k] for k in ("params", "verdict", "geomean_ms", "cases_ms") if k in e},
                          separators=(",", ":"))
        lines.append("  " + line + ("," if i + 1 < len(entries) else ""))
    lines.append(" ]")
    lines.append("}")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    print(f"record_sweep: wrote {out}: {len(entries)} configurations ({summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
