#!/usr/bin/env python3
"""`kopt export --format t4` against the project's T4 results schema.

    t4_schema_test.py --kopt KOPT --fake-worker FAKE --fixture FIXTURE
                      --schema docs/schemas/t4-results.schema.json
                      --spec templates/transpose/transpose.json
                      --data tests/data/interop --work DIR

Checks, with python3-jsonschema (Draft 2020-12):
  1. the schema is a valid JSON Schema;
  2. a document in the form Kernel Tuner writes (tests/data/interop) is valid,
     and documents that break the format are not (so the schema is no
     rubber stamp);
  3. the export of a synthetic run folder with an attempt of every verdict
     (FIXTURE) is valid and uses every one of the six invalidity values;
  4. the export of a real `kopt optimize` run (the fake worker standing in
     for the GPU) is valid.

Exit status: 0 pass, 1 fail, 77 skipped (CTest's SKIP_RETURN_CODE) when
python3-jsonschema is not installed.
"""
import argparse
import copy
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from schema_check import check, errors, finish, require_jsonschema, run  # noqa: E402

jsonschema = require_jsonschema("the T4 export cannot be validated")


def validate_export(validator, kopt, run_dir, out, what):
    run([kopt, "export", "--format", "t4", run_dir, "-o", out])
    with open(out) as f:
        doc = json.load(f)
    errs = errors(validator, doc)
    for e in errs[:5]:
        print("      %s: %s" % ("/".join(str(p) for p in e.absolute_path), e.message))
    check(not errs, "%s: %d results valid against the schema" % (what, len(doc.get("results", []))))
    return doc


def main():
    ap = argparse.ArgumentParser()
    for a in ("--kopt", "--fake-worker", "--fixture", "--schema", "--spec", "--data", "--work"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()

    with open(args.schema) as f:
        schema = json.load(f)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        check(True, "the schema is a valid Draft 2020-12 JSON Schema")
    except jsonschema.exceptions.SchemaError as e:
        check(False, "the schema is not a valid JSON Schema: %s" % e.message)
        return 1
    v = jsonschema.Draft202012Validator(schema)

    with open(os.path.join(args.data, "kernel_tuner_style_t4.json")) as f:
        kt = json.load(f)
    check(not errors(v, kt), "a document in Kernel Tuner's own form is valid")

    def broken(mutate):
        d = copy.deepcopy(kt)
        mutate(d)
        return d

    bad = {
        "no schema_version": broken(lambda d: d.pop("schema_version")),
        "schema_version 2.0.0": broken(lambda d: d.update(schema_version="2.0.0")),
        "results not an array": broken(lambda d: d.update(results={})),
        "no invalidity": broken(lambda d: d["results"][0].pop("invalidity")),
        "invalidity 'fine'": broken(lambda d: d["results"][0].update(invalidity="fine")),
        "no configuration": broken(lambda d: d["results"][0].pop("configuration")),
        "no times": broken(lambda d: d["results"][0].pop("times")),
        "correctness 2": broken(lambda d: d["results"][0].update(correctness=2)),
        "correctness a string": broken(lambda d: d["results"][0].update(correctness="1")),
        "a runtime as a string": broken(lambda d: d["results"][0]["times"].update(runtimes=["1.0"])),
        "a negative compile time": broken(lambda d: d["results"][0]["times"].update(compilation_time=-1)),
        "a measurement without a name": broken(lambda d: d["results"][0]["measurements"][0].pop("name")),
        "a configuration value that is an object": broken(
            lambda d: d["results"][0]["configuration"].update(block_size_x={"a": 1})),
    }
    for what, doc in bad.items():
        check(bool(errors(v, doc)), "rejected: " + what)

    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    fixture_run = run([args.fixture, os.path.join(work, "fixture")]).stdout.strip()
    doc = validate_export(v, args.kopt, fixture_run, os.path.join(work, "fixture_t4.json"),
                          "a run with every verdict")
    seen = {r["invalidity"] for r in doc["results"]}
    check(seen == {"timeout", "compile", "runtime", "correctness", "constraints", "correct"},
          "it uses all six invalidity values (%s)" % ", ".join(sorted(seen)))

    run([args.kopt, "optimize", "--spec", args.spec, "--arch", "sm_90", "--quiet", "--strategy", "random",
         "--budget", "evals=3", "--top", "1", "--retime-rounds", "1", "--no-specialize",
         "--results-dir", os.path.join(work, "results"), "--cache-dir", os.path.join(work, "cache"),
         "--worker-command", args.fake_worker])
    doc = validate_export(v, args.kopt, os.path.join(work, "results", "run-001"),
                          os.path.join(work, "optimize_t4.json"), "a kopt optimize run (fake worker)")
    check(len(doc["results"]) == 3, "it has the run's 3 candidates")

    return finish()


if __name__ == "__main__":
    sys.exit(main())
