#!/usr/bin/env python3
"""Every template under templates/ loads and compiles; every planted wrong kernel is rejected.

    check_templates.py compile --kopt KOPT --source-dir SRC --work-dir DIR [--evals N] [--only a,b]
    check_templates.py planted --kopt KOPT --source-dir SRC --work-dir DIR [--only a,b]

A template is a folder templates/<name>/ holding the spec <name>.json. A folder that also holds
make_inputs.py (a spec whose inputs are .npy files written by a script) is copied into the work
folder and the script is run there first; the copy is what gets checked.

compile (no GPU; CTest templates.compile): for each template,
  1. `kopt optimize --spec <name>.json --arch sm_90 --budget evals=N` (compile-only mode, exit 77)
     compiles N configurations of the template's space (all of it when smaller): every one must
     compile (the compile-only JSON's "failed" is 0, "compiled" is N or the space's size);
  2. the reference kernel (a spec reference of kind "kernel") compiles for sm_90 as the run
     compiles it: `kopt evaluate --spec <name>.json` compiles the spec's reference before its
     candidate, and stops (kopt.eval.602) when it does not compile; the candidate is the initial
     kernel (step 3) or else the template at a configuration step 1 compiled;
  3. the initial kernel, when the spec has one, compiles (`kopt evaluate --spec`);
  4. the planted kernels of tests/gpu/gallery/<name>.json (below), when there are any, compile.

planted (GPU; CTest gpu.gallery_planted): for each template with a file
tests/gpu/gallery/<name>.json, one `kopt evaluate --spec <name>.json --no-time` over its planted
kernels. Each is the template's kernel file with one string replaced ("replace": [old, new]; old
must occur in the file exactly once, so a change of the template cannot silently disarm it), at
a configuration ("params": kopt:param lines, and the spec's compile options as a kopt:options
line), with the verdicts the reference check may give it ("expect": wrong_result,
out_of_bounds, ...). One of them, "control", replaces nothing and expects ok, so that a
rejection is the kernel's fault and not the harness's. Exit 77 (skipped) when kopt finds no CUDA
device.

Every compile gets --compile-timeout 900: the check is whether a kernel compiles, and on a loaded
machine the convolution's fully unrolled configurations take over the default minute.

Exit status: 0 pass, 1 fail, 77 skipped.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

# What a compile may take here (kopt's default is 60 s; see the docstring).
COMPILE_TIMEOUT = ["--compile-timeout", "900"]

VERDICTS = {"ok", "compile_error", "infeasible", "launch_error", "runtime_error", "timeout",
            "wrong_result", "out_of_bounds", "nondeterministic", "worker_crash"}


def templates(source_dir, only):
    root = os.path.join(source_dir, "templates")
    names = sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, d + ".json")))
    if only:
        missing = [n for n in only if n not in names]
        if missing:
            raise SystemExit("no template named %s under %s (templates: %s)" % (missing, root, names))
        names = [n for n in names if n in only]
    return [(n, os.path.join(root, n)) for n in names]


def prepared(name, folder, work_dir):
    """The folder to check: the template itself, or a copy with its inputs written."""
    if not os.path.isfile(os.path.join(folder, "make_inputs.py")):
        return folder
    copy = os.path.join(work_dir, "copies", name)
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("inputs"))
    run([sys.executable, os.path.join(copy, "make_inputs.py"), copy], timeout=600)
    return copy


def run(argv, timeout):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       universal_newlines=True)
    return p


def describe(p):
    tail = lambda s: "\n".join(s.strip().splitlines()[-15:])
    return "exit %d\n--- stdout (end)\n%s\n--- stderr (end)\n%s" % (p.returncode, tail(p.stdout), tail(p.stderr))


def check_compile(kopt, name, folder, work_dir, evals, planted_json=None):
    """Returns a list of failure messages for one template."""
    failures = []
    spec_path = os.path.join(folder, name + ".json")
    spec = json.load(open(spec_path))
    cache = os.path.join(work_dir, "cache")

    compiled_config = None  # a configuration of the space that compiled (step 1)
    if "template" in spec:
        p = run([kopt, "optimize", "--spec", spec_path, "--arch", "sm_90", "--budget", "evals=%d" % evals,
                 "--cache-dir", cache, "--results-dir", os.path.join(work_dir, "results"), "-q"] + COMPILE_TIMEOUT,
                timeout=1800)
        if p.returncode != 77:
            failures.append("kopt optimize --arch sm_90: expected exit 77 (compile-only), got " + describe(p))
        else:
            try:
                out = json.loads(p.stdout)
            except ValueError:
                out = None
            if not isinstance(out, dict) or not out.get("compile_only"):
                failures.append("kopt optimize --arch sm_90: no compile-only JSON on stdout: " + describe(p))
            else:
                wanted = min(evals, out.get("valid_configurations") or evals)
                bad = [c for c in out.get("candidates", []) if not c.get("compiled")]
                if out.get("failed") != 0 or bad or out.get("compiled") != wanted:
                    failures.append("template: %s of %s configuration(s) compiled, %s failed; first failure: %s"
                                    % (out.get("compiled"), wanted, out.get("failed"),
                                       json.dumps(bad[0]) if bad else "-"))
                else:
                    print("  template: %d configuration(s) of %s compiled for sm_90"
                          % (out["compiled"], out.get("valid_configurations")))
                    compiled_config = next((c["params"] for c in out.get("candidates", []) if c.get("compiled")),
                                           None)

    ref = spec.get("reference", {})
    if ref.get("kind") == "kernel" and "initial" not in spec and compiled_config:
        # The spec's reference is compiled as the run compiles it (its defines, options and the
        # constants it declares) before any candidate is checked: a reference that does not
        # compile stops `kopt evaluate` (kopt.eval.602, exit 2). The candidate is the template at
        # a configuration step 1 compiled. (With an initial kernel, step 3 does the same.)
        params = ",".join("%s=%d" % (k, v) for k, v in sorted(compiled_config.items()))
        argv = [kopt, "evaluate", "--spec", spec_path, "--params", params, "--arch", "sm_90",
                "--cache-dir", cache, "-q"] + COMPILE_TIMEOUT
        failures += check_evaluate_compiles(run(argv, timeout=900), "reference %s (beside the template)"
                                            % ref["source"])
    if "initial" in spec:
        p = run([kopt, "evaluate", "--spec", spec_path, "--arch", "sm_90", "--cache-dir", cache, "-q"] + COMPILE_TIMEOUT,
                timeout=900)
        failures += check_evaluate_compiles(p, "initial " + spec["initial"]["source"] +
                                            (" and reference " + ref["source"] if ref.get("kind") == "kernel" else ""))

    if planted_json and os.path.isfile(planted_json):
        try:
            files = [f for f, _ in write_planted(spec, folder, planted_json, os.path.join(work_dir, "planted-" + name))]
        except ValueError as ex:
            return failures + [str(ex)]
        p = run([kopt, "evaluate", "--spec", spec_path, "--arch", "sm_90", "--cache-dir", cache, "-q"] + COMPILE_TIMEOUT +
                ["--kernel"] + files, timeout=1800)
        failures += check_evaluate_compiles(p, "%d planted kernel(s) of tests/gpu/gallery/%s.json" % (len(files), name))
    return failures


def check_evaluate_compiles(p, what):
    if p.returncode != 77:
        return ["%s: kopt evaluate --arch sm_90: expected exit 77, got %s" % (what, describe(p))]
    try:
        results = json.loads(p.stdout)
    except ValueError:
        return ["%s: kopt evaluate printed no JSON: %s" % (what, describe(p))]
    bad = [r for r in results if not r.get("compiled")]
    if bad:
        log = (bad[0].get("compile_log") or "").strip().splitlines()
        return ["%s does not compile for sm_90 (%s): %s" % (what, bad[0].get("error_name"), " | ".join(log[:4]))]
    print("  %s: compiled for sm_90" % what)
    return []


def write_planted(spec, folder, planted_json, out_dir):
    """Writes the planted kernels of planted_json into out_dir; returns [(file, expected verdicts)]."""
    with open(planted_json) as f:
        doc = json.load(f)
    tmpl = spec["template"]
    with open(os.path.join(folder, tmpl["source"])) as f:
        source = f.read()
    options = spec.get("tuning", {}).get("compile_options", []) + tmpl.get("compile_options", [])
    os.makedirs(out_dir, exist_ok=True)
    out = []
    for k in doc["kernels"]:
        text = source
        if "replace" in k:
            old, new = k["replace"]
            if text.count(old) != 1:
                raise ValueError("%s: kernel '%s': %r occurs %d times in %s (must be once)"
                                 % (planted_json, k["name"], old, text.count(old), tmpl["source"]))
            text = text.replace(old, new)
        expect = k["expect"]
        bad = [v for v in expect if v not in VERDICTS]
        if not expect or bad:
            raise ValueError("%s: kernel '%s': expect %s (known verdicts: %s)" % (planted_json, k["name"], expect,
                                                                                ", ".join(sorted(VERDICTS))))
        head = ["// Planted kernel '%s' of the %s template (%s): %s"
                % (k["name"], spec["name"], os.path.basename(planted_json), k["what"])]
        head += ["// kopt:param %s=%d" % (p, v) for p, v in sorted(k.get("params", doc["params"]).items())]
        if options:
            head.append("// kopt:options " + " ".join(options))
        path = os.path.join(out_dir, k["name"] + ".cu")
        with open(path, "w") as f:
            f.write("\n".join(head) + "\n" + text)
        out.append((path, expect))
    if not any(e == ["ok"] for _, e in out):
        raise ValueError("%s: no control (a kernel that replaces nothing and expects ok)" % planted_json)
    return out


def check_planted(kopt, name, folder, planted_json, work_dir):
    """Returns (skipped, failures) for one template."""
    spec_path = os.path.join(folder, name + ".json")
    try:
        spec = json.load(open(spec_path))
        kernels = write_planted(spec, folder, planted_json, os.path.join(work_dir, "planted-" + name))
    except ValueError as ex:
        return False, [str(ex)]
    files = [f for f, _ in kernels]
    out = os.path.join(work_dir, name + "_planted.json")
    argv = [kopt, "evaluate", "--spec", spec_path, "--no-time", "--json", out,
            "--cache-dir", os.path.join(work_dir, "cache")] + COMPILE_TIMEOUT + ["--kernel"] + files
    p = run(argv, timeout=1800)
    if p.returncode == 77:
        return True, []
    if p.returncode not in (0, 1) or not os.path.isfile(out):
        return False, ["kopt evaluate: " + describe(p)]
    results = json.load(open(out))
    if len(results) != len(files):
        return False, ["kopt evaluate: %d results for %d kernels" % (len(results), len(files))]
    failures = []
    for (f, expect), r in zip(kernels, results):
        verdict = r.get("verdict")
        ok = verdict in expect
        print("  %-24s %-16s expect %-40s %s" % (os.path.basename(f), verdict, "|".join(expect),
                                                 "ok" if ok else "MISMATCH: " + str(r.get("detail", ""))[:200]))
        if not ok:
            failures.append("%s: verdict %s, expected %s (%s)" % (os.path.basename(f), verdict,
                                                                  " or ".join(expect), r.get("detail", "")))
    return False, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["compile", "planted"])
    ap.add_argument("--kopt", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--evals", type=int, default=4)
    ap.add_argument("--only", default="", help="comma-separated template names")
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    only = [s for s in a.only.split(",") if s]
    all_failures, skipped = [], False
    for name, folder in templates(a.source_dir, only):
        planted_json = os.path.join(a.source_dir, "tests", "gpu", "gallery", name + ".json")
        if a.mode == "planted" and not os.path.isfile(planted_json):
            continue
        print("== %s" % name)
        folder = prepared(name, folder, a.work_dir)
        if a.mode == "compile":
            failures = check_compile(a.kopt, name, folder, a.work_dir, a.evals, planted_json)
        else:
            skip, failures = check_planted(a.kopt, name, folder, planted_json, a.work_dir)
            if skip:
                print("SKIP: kopt found no CUDA device: the planted kernels need a GPU")
                return 77
        all_failures += ["%s: %s" % (name, f) for f in failures]
    if all_failures:
        print("\nFAILED:\n  " + "\n  ".join(all_failures))
        return 1
    print("\nall templates passed (%s)" % a.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
