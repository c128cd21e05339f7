#!/usr/bin/env python3
"""CTest scripts.compare_kernel_tuner: scripts/compare_kernel_tuner.py without Kernel Tuner.

On a small Kernel Tuner cache file written here, the script measures runs saved
as --save-runs writes them (--load-runs: no Kernel Tuner needed) beside kopt's
strategies replayed by kopt_search_replay, and prints one table with both.

    check_compare_kernel_tuner.py SOURCE_DIR BUILD_DIR
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    source, build = Path(sys.argv[1]), Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # 8 x 8 configurations, x + y ms (the best 0 + 1 = 1 ms at x=1, y=0), x = 7 failing.
        cache = {"device_name": "GPU", "kernel_name": "k", "problem_size": [1], "tune_params_keys": ["x", "y"],
                 "tune_params": {"x": list(range(1, 9)), "y": list(range(8))}, "objective": "time", "cache": {}}
        for x in range(1, 9):
            for y in range(8):
                t = "CompilationFailedConfig" if x == 7 else float(x + y)
                cache["cache"][f"{x},{y}"] = {"x": x, "y": y, "time": t, "compile_time": 1000.0,
                                              "verification_time": 0, "benchmark_time": 0}
        (tmp / "small.json").write_text(json.dumps(cache, indent="") + "\n")
        # Two runs of an outside strategy: the best at the 3rd and at the 1st evaluation.
        runs = [{"space": "small", "strategy": "KT fake", "runs": [[[5.0, 1.0], [None, 1.0], [1.0, 1.0]],
                                                                  [[1.0, 1.0], [2.0, 1.0]]]}]
        (tmp / "runs.json").write_text(json.dumps(runs))
        cmd = [sys.executable, str(source / "scripts" / "compare_kernel_tuner.py"), str(tmp / "small.json"),
               "--load-runs", str(tmp / "runs.json"), "--seeds", "3", "--kopt-strategies", "random,portfolio",
               "--build", str(build), "--json", str(tmp / "out.json")]
        p = subprocess.run(cmd, capture_output=True, text=True)
        out = p.stdout + p.stderr
        print(out)
        if p.returncode != 0:
            print(f"FAIL: exit {p.returncode}")
            return 1
        for want in ("small: 64 configurations, 8 failed; optimum 1", "| random |", "| portfolio |",
                     "| KT fake | 2.0 | 2.0 | 2 | 2 |"):
            if want not in out:
                print(f"FAIL: {want!r} not in the output")
                return 1
        doc = json.loads((tmp / "out.json").read_text())
        names = [r["strategy"] for r in doc[0]["results"]]
        if names != ["random", "portfolio", "KT fake"]:
            print(f"FAIL: strategies {names}")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
