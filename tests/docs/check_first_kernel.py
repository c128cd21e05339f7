#!/usr/bin/env python3
"""docs/first-kernel.md stays true: its files load and compile.

    check_first_kernel.py --kopt KOPT --source-dir SRC --work-dir DIR

1. Every file of docs/first-kernel/ is shown in docs/first-kernel.md as a
   fenced block with exactly its text (the page and the files cannot drift),
   and README.md's walkthrough shows affine.json as it is.
2. Copied to DIR (as a user's own folder), the walkthrough's commands run:
   `kopt evaluate --spec affine.json --arch sm_90` compiles the initial
   kernel; `kopt optimize --spec affine.json --arch sm_90 --budget evals=8`
   compiles 8 configurations, none failing; `kopt generate ... --no-tune`
   writes affine.cu and affine_launch.h from the initial kernel. GPUs are
   hidden (CUDA_VISIBLE_DEVICES=-1): the first two exit 77 (compile-only),
   as the page shows them on a machine without a GPU.
3. The page's set-up copies the files with `cp .../docs/first-kernel/* .`
   into a folder made with `mkdir -p`, and its `$ ls` before configuring
   lists what the folder holds then: the files and step 5's listing.json.
Exit status: 0 all hold, 1 something does not (said on stderr), 2 bad usage.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

FILES = ["affine.cu", "reference.cu", "affine.json", "CMakeLists.txt", "main.cu"]


def fail(msg):
    print("check_first_kernel: " + msg, file=sys.stderr)
    sys.exit(1)


def run(cmd, cwd, env):
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=600)
    print("$ %s  (exit %d)\n%s" % (" ".join(cmd[1:]), p.returncode, p.stderr))
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kopt", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    a = ap.parse_args()
    folder = os.path.join(a.source_dir, "docs", "first-kernel")
    page = open(os.path.join(a.source_dir, "docs", "first-kernel.md"), encoding="utf-8").read()
    blocks = [m.group(1) for m in re.finditer(r"^```[a-z]*\n(.*?)^```$", page, re.S | re.M)]
    for name in FILES:
        text = open(os.path.join(folder, name), encoding="utf-8").read()
        if text not in blocks:
            fail("docs/first-kernel.md shows no block with the exact text of docs/first-kernel/%s" % name)
    # The README's walkthrough shows the same spec.
    readme = open(os.path.join(a.source_dir, "README.md"), encoding="utf-8").read()
    spec = open(os.path.join(folder, "affine.json"), encoding="utf-8").read()
    if spec not in [m.group(1) for m in re.finditer(r"^```json\n(.*?)^```$", readme, re.S | re.M)]:
        fail("README.md shows no json block with the exact text of docs/first-kernel/affine.json")

    if "mkdir -p ~/affine" not in page or "cp /path/to/KernelOptimizer/docs/first-kernel/* ." not in page:
        fail("docs/first-kernel.md does not show `mkdir -p ~/affine` and the `cp` of docs/first-kernel/*")

    work = os.path.abspath(a.work_dir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for name in FILES:
        shutil.copy(os.path.join(folder, name), work)
    env = dict(os.environ, KOPT_CACHE_DIR=os.path.join(work, "cache"), CUDA_VISIBLE_DEVICES="-1")
    kopt = os.path.abspath(a.kopt)

    p = run([kopt, "evaluate", "--spec", "affine.json", "--arch", "sm_90"], work, env)
    if p.returncode != 77:
        fail("kopt evaluate --arch sm_90 exit %d, expected 77 (compiled, no GPU)" % p.returncode)
    results = json.loads(p.stdout)
    if len(results) != 1 or not results[0].get("compiled"):
        fail("kopt evaluate: the initial kernel did not compile: %s" % p.stdout)

    p = run([kopt, "optimize", "--spec", "affine.json", "--arch", "sm_90", "--budget", "evals=8"], work, env)
    if p.returncode != 77:
        fail("kopt optimize --arch sm_90 exit %d, expected 77 (compile-only)" % p.returncode)
    out = json.loads(p.stdout)
    if out.get("compiled") != 8 or out.get("failed") != 0:
        fail("kopt optimize --arch sm_90: compiled %s, failed %s" % (out.get("compiled"), out.get("failed")))
    with open(os.path.join(work, "listing.json"), "w", encoding="utf-8") as f:  # step 5's `> listing.json`
        f.write(p.stdout)
    shown = re.search(r"^\$ ls\n(.*?)^\$ ", page, re.S | re.M)
    held = sorted(n for n in os.listdir(work) if n != "cache")  # KOPT_CACHE_DIR is the test's own
    if not shown or shown.group(1).split() != held:
        fail("docs/first-kernel.md's `$ ls` shows %s; the folder holds %s"
             % (shown.group(1).split() if shown else "nothing", held))

    p = run([kopt, "generate", "--spec", "affine.json", "--name", "affine", "--no-tune", "--out-dir", "gen"], work, env)
    if p.returncode != 0:
        fail("kopt generate --no-tune exit %d" % p.returncode)
    for name in ("affine.cu", "affine_launch.h"):
        if not os.path.isfile(os.path.join(work, "gen", name)):
            fail("kopt generate wrote no gen/%s" % name)
    print("check_first_kernel: %d files shown as they are; evaluate, optimize (compile-only) and generate ran"
          % len(FILES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
