#!/usr/bin/env python3
"""Writes small.cache.json and small.t4.json: one small recorded space in Kernel Tuner's cache
format and in T4, with the same configurations, times and costs (the replay tests compare them).

120 configurations of a made-up kernel: block_size_x 16..256, tile 1-4, unroll 0/1, vec 1/2/4;
tile 3 with vec 4 fails to compile, block_size_x 256 with tile 4 fails to launch. The time is
smooth in block_size_x and tile with a jagged tile 3, unroll helps large tiles; the cost of an
evaluation is a compile time plus 32 timed runs, as Kernel Tuner records them.

    python3 tests/data/spaces/make_small.py      (writes next to itself)
"""
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARAMS = {"block_size_x": [16, 32, 64, 128, 256], "tile": [1, 2, 3, 4], "unroll": [0, 1], "vec": [1, 2, 4]}


def outcome(b, t, u, v):
    compile_ms = 400.0 + 60.0 * t + 90.0 * u + 25.0 * math.log2(v) + (b % 48)
    if t == 3 and v == 4:
        return "CompilationFailedConfig", compile_ms, 0.0
    if b == 256 and t == 4:
        return "RuntimeFailedConfig", compile_ms, 5.0
    ms = 2.0 + 0.9 * abs(math.log2(b / 64.0)) ** 1.5 + 1.3 / t + (0.7 if t == 3 else 0.0)
    ms *= (0.85 if (u == 1 and t >= 2) else 1.0) * (1.0 - 0.06 * math.log2(v))
    ms *= 1.0 + 0.02 * math.sin(b * 0.37 + t * 1.7 + u * 0.9 + v * 2.3)
    ms = round(ms, 5)
    return ms, compile_ms, 32 * ms + 2.0


def main():
    keys = list(PARAMS)
    cache, results = {}, []
    for b in PARAMS["block_size_x"]:
        for t in PARAMS["tile"]:
            for u in PARAMS["unroll"]:
                for v in PARAMS["vec"]:
                    time, compile_ms, bench_ms = outcome(b, t, u, v)
                    cfg = {"block_size_x": b, "tile": t, "unroll": u, "vec": v}
                    e = dict(cfg)
                    e.update({"time": time, "compile_time": compile_ms, "verification_time": 0,
                              "benchmark_time": bench_ms})
                    cache[",".join(str(cfg[k]) for k in keys)] = e
                    ok = not isinstance(time, str)
                    results.append({
                        "configuration": cfg, "objectives": ["time"],
                        "times": {"compilation": compile_ms, "validation": 0, "benchmark": bench_ms, "runtimes": []},
                        "invalidity": "correct" if ok else ("compile" if time == "CompilationFailedConfig" else "runtime"),
                        "correctness": 1 if ok else 0,
                        "measurements": [{"name": "time", "value": time, "unit": "ms"}] if ok else []})
    doc = {"device_name": "made-up GPU", "kernel_name": "small", "problem_size": [1], "tune_params_keys": keys,
           "tune_params": PARAMS, "objective": "time", "cache": cache}
    (HERE / "small.cache.json").write_text(json.dumps(doc, indent=0) + "\n")
    (HERE / "small.t4.json").write_text(
        '{"schema_version": "1.0.0", "results": [\n' +
        ",\n".join(json.dumps(r, separators=(",", ":")) for r in results) + "\n]}\n")


if __name__ == "__main__":
    main()
