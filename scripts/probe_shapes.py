#!/usr/bin/env python3
"""Writes probe shapes around tuned GEMM shapes, for bench/sgemm_bench --shapes-file.

Usage: scripts/probe_shapes.py SHAPES [--factors 1/2,2,2/3,3/2] [--min-size 64] [--out FILE]

SHAPES is a shape capture (docs/capture.md; e.g. templates/sgemm/application_shapes.json) or a
file of "M N K" lines. For each shape, each of M, N and K that is at least --min-size is scaled
by each factor in turn (a number or a fraction such as 2/3), the other two kept (so a size that defines a shape class, such as N = 2
or M = 32, stays as it is); the result is rounded to the nearest integer. Shapes already in
SHAPES, and repeats, are left out. The output is "M N K" lines, in the order they were made,
after a comment line that gives the command's settings.

docs/dispatch.md ("Between the tuned shapes") says what these shapes measured: every variant of
a tuned kernel timed on them (bench/run.sh --shapes-file, or sgemm_bench directly) judges the
launch header's dispatch on shapes near the ones it was tuned on.
"""
import argparse
import fractions
import json
import sys


def fail(msg):
    print(f"probe_shapes.py: {msg}", file=sys.stderr)
    sys.exit(2)


def read_shapes(path):
    try:
        text = open(path).read()
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    if text.lstrip().startswith("{"):
        try:
            d = json.loads(text)
            return [(int(l["sizes"]["M"]), int(l["sizes"]["N"]), int(l["sizes"]["K"])) for l in d["launches"]]
        except (ValueError, KeyError, TypeError) as e:
            fail(f"{path}: not a shape capture with launches[].sizes.M, N and K ({e!r})")
    shapes = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            fail(f"{path}:{lineno}: expected \"M N K\" (three positive integers), got {line!r}")
        shapes.append(tuple(int(p) for p in parts))
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes")
    ap.add_argument("--factors", default="1/2,2,2/3,3/2")
    ap.add_argument("--min-size", type=int, default=64)
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        factors = [fractions.Fraction(x.strip()) for x in a.factors.split(",")]
    except (ValueError, ZeroDivisionError):
        fail(f"--factors {a.factors}: expected numbers separated by commas")
    if not factors or any(not f > 0 for f in factors):
        fail(f"--factors {a.factors}: every factor must be > 0")
    tuned = read_shapes(a.shapes)
    seen = set(tuned)
    out = []
    for f in factors:
        for t in tuned:
            for i in range(3):
                if t[i] < a.min_size:
                    continue
                s = list(t)
                s[i] = max(1, round(t[i] * f))  # Fraction: exact, ties to even
                s = tuple(s)
                if s not in seen:
                    seen.add(s)
                    out.append(s)
    text = f"# scripts/probe_shapes.py {a.shapes} --factors {a.factors} --min-size {a.min_size}: {len(out)} shapes\n"
    text += "".join(f"{m} {n} {k}\n" for m, n, k in out)
    if a.out:
        open(a.out, "w").write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
