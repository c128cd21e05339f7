"""What the JSON Schema tests share (tests/interop/t4_schema_test.py,
tests/records/records_schema_test.py): python3-jsonschema or a visible skip,
and the pass/fail bookkeeping.

    import schema_check as sc
    jsonschema = sc.require_jsonschema("the T4 export cannot be validated")
    sc.check(ok, "what was checked")   # prints ok:/FAIL:, remembers failures
    sc.errors(validator, doc)          # its validation errors, by JSON path
    sc.run(cmd)                        # runs a command; exits failing on a non-zero status
    return sc.finish()                 # 0 when every check passed, else 1
"""
import subprocess
import sys

failures = []


def require_jsonschema(what):
    """The jsonschema module with a Draft 2020-12 validator, else exit 77 (CTest's SKIP_RETURN_CODE)."""
    try:
        import jsonschema
    except ImportError:
        print("SKIP: python3-jsonschema is not installed (apt-get install python3-jsonschema, "
              "or scripts/install_deps.sh --tests), so " + what)
        sys.exit(77)
    if not hasattr(jsonschema, "Draft202012Validator"):
        print("SKIP: this python3-jsonschema has no Draft 2020-12 validator (version 4.0 or later is needed)")
        sys.exit(77)
    return jsonschema


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def errors(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        print(" ".join(cmd))
        print(r.stdout[-4000:])
        print(r.stderr[-4000:])
        raise SystemExit("FAIL: exit %d from %s" % (r.returncode, cmd[0]))
    return r


def finish():
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0
