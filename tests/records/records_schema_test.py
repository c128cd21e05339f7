#!/usr/bin/env python3
"""The run folder's records and the tuning cache against their schemas.

    records_schema_test.py --kopt KOPT --fake-worker FAKE --schemas docs/schemas
                           --spec templates/transpose/transpose.json
                           --example-cache example_project/sgemm.tuning.json --work DIR

Checks, with python3-jsonschema (Draft 2020-12):
  1. run, summary, history and tuning-cache schemas are valid JSON Schemas;
  2. the run.json, summary.json and history.json of real `kopt optimize` runs
     (the fake worker standing in for the GPU) are valid: one with shape
     specialisation and the final re-timing, one with shape classes;
  3. the tuning cache `kopt generate` writes after tuning (fake worker) and
     the committed example_project/sgemm.tuning.json are valid;
  4. documents that break the formats are not (so no schema is a rubber stamp).

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

jsonschema = require_jsonschema("the run folder's files cannot be validated")

SCHEMAS = {"run": "run.schema.json", "summary": "summary.schema.json", "history": "history.schema.json",
           "cache": "tuning-cache.schema.json"}


def validators(folder):
    """One validator per schema; the schemas refer to each other by $id."""
    docs = {}
    for key, name in SCHEMAS.items():
        with open(os.path.join(folder, name)) as f:
            docs[key] = json.load(f)
        try:
            jsonschema.Draft202012Validator.check_schema(docs[key])
            check(True, "%s is a valid Draft 2020-12 JSON Schema" % name)
        except jsonschema.exceptions.SchemaError as e:
            check(False, "%s is not a valid JSON Schema: %s" % (name, e.message))
            raise SystemExit(1)
    try:
        from referencing import Registry, Resource
        registry = Registry().with_resources(
            (d["$id"], Resource.from_contents(d)) for d in docs.values())
        return {k: jsonschema.Draft202012Validator(d, registry=registry) for k, d in docs.items()}
    except ImportError:  # jsonschema before 4.18: RefResolver
        store = {d["$id"]: d for d in docs.values()}
        return {k: jsonschema.Draft202012Validator(d, resolver=jsonschema.RefResolver(d["$id"], d, store=store))
                for k, d in docs.items()}


def valid(validator, doc, what):
    errs = errors(validator, doc)
    for e in errs[:5]:
        print("      %s: %s" % ("/".join(str(p) for p in e.absolute_path), e.message[:300]))
    check(not errs, what)


def load(path):
    with open(path) as f:
        return json.load(f)


def check_run_folder(v, folder, what):
    docs = {}
    for key, name in (("run", "run.json"), ("summary", "summary.json"), ("history", "history.json")):
        docs[key] = load(os.path.join(folder, name))
        valid(v[key], docs[key], "%s: %s is valid" % (what, name))
    return docs


def rejected(v, good, cases):
    for what, mutate in cases:
        d = copy.deepcopy(good)
        mutate(d)
        check(bool(errors(v, d)), "rejected: " + what)


def main():
    ap = argparse.ArgumentParser()
    for a in ("--kopt", "--fake-worker", "--schemas", "--spec", "--example-cache", "--work"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    v = validators(args.schemas)

    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    common = ["--arch", "sm_90", "--quiet", "--strategy", "random", "--top", "3", "--retime-rounds", "1",
              "--results-dir", os.path.join(work, "results"), "--cache-dir", os.path.join(work, "cache"),
              "--worker-command", args.fake_worker]

    # A run with the final re-timing and shape-specialised variants.
    run([args.kopt, "optimize", "--spec", args.spec, "--budget", "evals=8", "--shape-classes", "off"] + common)
    a = check_run_folder(v, os.path.join(work, "results", "run-001"), "a run with variants")
    s = a["summary"]
    check("specialization" in s and len(s["specialization"]["variants"]) > 1 and "dispatch" in s["specialization"],
          "it has shape-specialised variants and a dispatch (so their schema is exercised)")
    check(len(s.get("retime", [])) > 1, "it has the finalists' re-timing")
    check(len(a["history"]["attempts"]) == s["attempts"], "history.json has summary.json's attempts")

    # A run with shape classes (the class search's keys).
    run([args.kopt, "optimize", "--spec", args.spec, "--budget", "evals=8", "--shape-classes", "2"] + common)
    b = check_run_folder(v, os.path.join(work, "results", "run-002"), "a run with shape classes")
    check(len(b["summary"].get("shape_classes", [])) == 2, "it has two shape classes")
    check(b["run"].get("options", {}).get("shape_classes") == 2, "run.json records the option")

    # The tuning cache generate writes after tuning, and the committed example's.
    cache = os.path.join(work, "gen", "transpose.tuning.json")
    run([args.kopt, "generate", "--spec", args.spec, "--name", "transpose", "--out-dir", os.path.join(work, "gen"),
         "--cache-file", cache, "--budget", "evals=6", "--quiet", "--cache-dir", os.path.join(work, "cache"),
         "--worker-command", args.fake_worker])
    c = load(cache)
    valid(v["cache"], c, "the tuning cache kopt generate wrote is valid")
    check(len(c["entries"]) == 1, "it has one entry")
    example = load(args.example_cache)
    valid(v["cache"], example, "the committed example_project/sgemm.tuning.json is valid")

    # Broken documents are not.
    rejected(v["run"], a["run"], [
        ("run.json without spec_hash", lambda d: d.pop("spec_hash")),
        ("run.json of format_version 2", lambda d: d.update(format_version=2)),
        ("run.json with a string seed", lambda d: d.update(seed="7")),
        ("run.json with shape_classes 65", lambda d: d.update(options={"shape_classes": 65})),
    ])
    rejected(v["summary"], s, [
        ("summary.json with a string attempts count", lambda d: d.update(attempts="5")),
        ("summary.json with an unknown verdict count", lambda d: d["counts"].update(fine=1)),
        ("summary.json without a verdict's count", lambda d: d["counts"].pop("timeout")),
        ("summary.json with a string variant latency",
         lambda d: d["specialization"]["latency_ms"][next(iter(d["specialization"]["latency_ms"]))].__setitem__(0, "1")),
        ("summary.json with a variant file outside the run folder",
         lambda d: d["specialization"]["variants"][0].update(file="../../etc/passwd")),
        ("summary.json with a negative re-timed median", lambda d: d["retime"][0].update(median_ms=-1)),
        ("summary.json with a best of kind baseline", lambda d: d.update(best=dict(d["best"], kind="baseline"))),
    ])
    rejected(v["history"], a["history"], [
        ("history.json with an attempt of kind 'other'", lambda d: d["attempts"][0].update(kind="other")),
        ("history.json with verdict 'fine'", lambda d: d["attempts"][0].update(verdict="fine")),
        ("history.json with index 0", lambda d: d["attempts"][0].update(index=0)),
        ("history.json with a string parameter", lambda d: d["attempts"][-1]["params"].update(TILE="16")),
    ])
    entry = lambda d: d["entries"][0]
    rejected(v["cache"], example, [
        ("a cache without entries", lambda d: d.pop("entries")),
        ("a cache entry without kernel_source", lambda d: entry(d).pop("kernel_source")),
        ("a cache entry with a string cublas_geomean_ms", lambda d: entry(d).update(cublas_geomean_ms="0.16")),
        ("a cache entry with a string parameter", lambda d: entry(d)["params"].update(BM="64")),
        ("a cache entry whose variant shapes have size 0",
         lambda d: entry(d)["variants"][0]["shapes"][0].update(M=0)),
    ])

    return finish()


if __name__ == "__main__":
    sys.exit(main())
