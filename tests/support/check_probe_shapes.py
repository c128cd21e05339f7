#!/usr/bin/env python3
"""scripts.probe_shapes: scripts/probe_shapes.py remakes the probe shapes that
tests/data/dispatch/h200_six_seeds_probes.json recorded, and names a bad line.

Usage: check_probe_shapes.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

src = sys.argv[1]
script = os.path.join(src, "scripts", "probe_shapes.py")
run = subprocess.run([sys.executable, script, os.path.join(src, "templates", "sgemm", "application_shapes.json")],
                     capture_output=True, text=True)
assert run.returncode == 0, run.stderr
made = [tuple(int(x) for x in line.split()) for line in run.stdout.splitlines() if not line.startswith("#")]
assert len(made) == len(set(made)), "repeated shapes"
record = json.load(open(os.path.join(src, "tests", "data", "dispatch", "h200_six_seeds_probes.json")))
recorded = {(r["M"], r["N"], r["K"]) for r in record["held_out"]}
tuned = {(r["M"], r["N"], r["K"]) for r in record["tuned"]}
assert set(made) == recorded, f"made {len(made)}, recorded {len(recorded)}: {sorted(set(made) ^ recorded)[:5]}"
assert not set(made) & tuned, "a tuned shape among the probes"
# Each probe is a tuned shape with one size changed, a size of at least 64 (--min-size): a size
# that makes a class, such as N = 2, stays as it is.
for p in made:
    assert any(sum(a != b for a, b in zip(p, t)) == 1 and all(b >= 64 for a, b in zip(p, t) if a != b)
               for t in tuned), f"{p}: not one size of a tuned shape scaled"

with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    f.write("# a comment\n4096 4096 4096\n4096 x 1\n")
bad = subprocess.run([sys.executable, script, f.name], capture_output=True, text=True)
os.unlink(f.name)
assert bad.returncode == 2 and f"{f.name}:3:" in bad.stderr, (bad.returncode, bad.stderr)
print(f"check_probe_shapes.py: {len(made)} probe shapes, as recorded; a bad line named ({bad.stderr.strip()})")
