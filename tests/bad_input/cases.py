"""The bad-input suite's table: every case, by group. See README.md.

A case is a Case(id, argv, exit=2, first=REGEX, ...) (run_bad_input.py says
what each field means). Most rows come from the small helpers below: spec(),
which writes a damaged copy of fixtures/tiny.json; evaluate()/optimize()/
generate()/bench(), the commands with the options every case shares; and
npy(), the bytes of a .npy file. `first` is matched against the first line of
stderr: it names the file (its basename, plus the JSON path where there is one)
or the option.
"""
import json
import os
import re
import signal
import subprocess
import time

from run_bad_input import Case

K = "{kopt}"
SPEC = "tiny\\.json"   # the fixture spec's basename, as a regex
GIB4 = 4 << 30        # a sparse file this large must hit a size limit, not memory

# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------


def evaluate(*extra, spec="{spec}", arch="sm_90"):
    """Loads the spec and compiles (no GPU: exit 77 when all is well)."""
    a = [K, "evaluate", "--spec", spec, "--no-time", "--quiet"]
    if arch is not None:
        a += ["--arch", arch]
    return a + list(extra)


def optimize(*extra, spec="{spec}", budget="evals=2", arch="sm_90", top="1", rounds="1", worker=True):
    """A run with the fake worker standing in for the GPU. A default option
    that `extra` gives itself is left out (an option given twice is an error)."""
    a = [K, "optimize", "--quiet"]
    if spec is not None:
        a += ["--spec", spec]
    for flag, v in (("--budget", budget), ("--arch", arch), ("--top", top), ("--retime-rounds", rounds),
                    ("--results-dir", "{dir}/results")):
        if v is not None and flag not in extra:
            a += [flag, v]
    if worker:
        a += ["--worker-command", "{fake}"]
    return a + list(extra)


def generate(*extra, spec="{spec}", name="tiny", out="{dir}/gen", cache="{dir}/tiny.tuning.json"):
    """What optimize_kernel() runs; --no-tune so that a GPU machine does not tune."""
    a = [K, "generate", "--spec", spec, "--quiet", "--no-tune"]
    if name is not None:
        a += ["--name", name]
    if out is not None:
        a += ["--out-dir", out]
    if cache is not None:
        a += ["--cache-file", cache]
    return a + list(extra)


def bench(*extra, kernel="{dir}/tiny_naive.cu"):
    return [K, "bench", "--spec", "{spec}", "--kernel", kernel] + list(extra)


def resume(*extra, budget="evals=5", spec="{spec}"):
    return optimize("--resume", "{run}", *extra, budget=budget, spec=spec)


def P(path):
    """Regex: the spec file, then this JSON path (dots and brackets literal)."""
    return SPEC + ".*" + re.escape(path)


def notreg(name):
    """Regex: the first line names `name` and does not call an existing file missing
    (a directory, a device or a FIFO exists: it is not 'not found')."""
    return r"^(?!.*(?:not found|does not exist|No such file|is missing))(?=.*(?:%s))" % name


def isdir(name):
    """Regex: notreg(name), and the line says it is a directory."""
    return notreg(name) + r"(?=.*(?i:director))"


# --------------------------------------------------------------------------
# File helpers for setups
# --------------------------------------------------------------------------


def fifo(ctx, rel):
    p = ctx.path(rel)
    p.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(p)
    return p


def sparse(ctx, rel, size=GIB4, head=b""):
    p = ctx.path(rel)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "wb") as f:
        f.write(head)
        f.truncate(size)
    return p


def link(ctx, rel, target):
    p = ctx.path(rel)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.exists() or p.is_symlink():
        p.unlink()
    os.symlink(target, p)
    return p


def replace(ctx, rel, what):
    """Replaces the file or folder `rel` by `what`: 'dir', 'fifo', 'missing', 'sparse', '/dev/...'."""
    p = ctx.path(rel)
    if p.is_dir() and not p.is_symlink():
        import shutil
        shutil.rmtree(p)
    elif p.exists() or p.is_symlink():
        p.unlink()
    if what == "dir":
        p.mkdir()
    elif what == "fifo":
        os.mkfifo(p)
    elif what == "sparse":
        sparse(ctx, rel)
    elif what.startswith("/"):
        os.symlink(what, p)
    elif what != "missing":
        raise ValueError(what)


def npy(descr="<f4", shape=(17,), data=None, fortran=False, magic=b"\x93NUMPY", version=(1, 0), header=None,
        extra=b"", header_len=None):
    """The bytes of a .npy file, optionally damaged."""
    if header is None:
        dims = ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "")
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (descr, fortran, dims)
    h = header.encode("latin1")
    size_len = 2 if version[0] == 1 else 4
    pre = magic + bytes(version)
    pad = (64 - (len(pre) + size_len + len(h) + 1) % 64) % 64
    h = h + b" " * pad + b"\n"
    n = len(h) if header_len is None else header_len
    if data is None:
        count = 1
        for s in shape:
            count *= max(int(s), 0)
        data = b"\0\0\0\0" * min(count, 1 << 20)
    return pre + n.to_bytes(size_len, "little") + h + data + extra


# --------------------------------------------------------------------------
# Spec cases: a damaged tiny.json, loaded by `kopt evaluate`
# --------------------------------------------------------------------------

CASES = []


def add(*cases):
    CASES.extend(cases)


def get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def setp(path, value):
    """Mutation: doc[path...] = value."""
    def m(doc, ctx):
        get(doc, path[:-1])[path[-1]] = value
    return m


def delp(path):
    def m(doc, ctx):
        del get(doc, path[:-1])[path[-1]]
    return m


def text(fn):
    """Mutation of the fixture spec's text: fn(text) -> new text (str or bytes)."""
    def m(doc, ctx):
        return fn(ctx.spec.read_text())
    return m


def sub(old, new, count=1):
    """Mutation: replace `old` by `new` in the spec's text (which must contain it)."""
    def fn(t):
        assert old in t, "the fixture spec lacks %r" % old
        return t.replace(old, new, count)
    return text(fn)


def spec(name, mutate, first, exit=2, cmd=None, files=None, **kw):
    """A case whose spec file is tiny.json after `mutate` (and extra `files`)."""
    def setup(ctx):
        doc = ctx.spec_json()
        r = mutate(doc, ctx) if mutate else None
        ctx.write_spec(doc if r is None else r)
        for rel, data in (files or {}).items():
            if callable(data):
                data(ctx, rel)
            else:
                ctx.write(rel, data)
    return Case("spec." + name, cmd or evaluate(), exit=exit, first=first, setup=setup, **kw)


def per_case_define_in_constraint(doc, ctx):
    """A define that depends on the case's size, named by a constraint."""
    doc["defines"] = {"W": "N"}
    doc["tuning"]["constraints"].append("BS <= W")


def append_scalar(entry):
    def m(doc, ctx):
        doc["signature"].append(entry)
    return m


def source(kernel, path):
    return setp([kernel, "source"], path)


# ---- syntax ----
add(
    spec("empty_file", text(lambda t: ""), SPEC),
    spec("whitespace_only", text(lambda t: "  \n\t \n"), SPEC),
    spec("not_json", text(lambda t: "{ not json"), SPEC),
    spec("truncated", text(lambda t: t[: len(t) // 2]), SPEC),
    spec("trailing_garbage", text(lambda t: t + " xyz"), SPEC),
    spec("two_documents", text(lambda t: t + t), SPEC),
    spec("top_level_array", text(lambda t: "[]"), SPEC),
    spec("top_level_string", text(lambda t: '"tiny"'), SPEC),
    spec("top_level_null", text(lambda t: "null"), SPEC),
    spec("top_level_number", text(lambda t: "1"), SPEC),
    spec("nul_bytes", text(lambda t: b"\0" * 100), SPEC),
    spec("binary_garbage", text(lambda t: bytes(range(256)) * 8), SPEC),
    spec("invalid_utf8", text(lambda t: t.encode().replace(b'"tiny"', b'"ti\xffny"', 1)), SPEC),
    spec("comment", text(lambda t: "// a comment\n" + t), SPEC),
    spec("single_quotes", sub('"name": "tiny"', "'name': 'tiny'"), SPEC),
    spec("nan_literal", sub('"seed": 7', '"seed": NaN'), SPEC),
    spec("infinity_literal", sub('"seed": 7', '"seed": Infinity'), SPEC),
    spec("trailing_comma", sub('"seed": 7', '"seed": 7,,'), SPEC),
    spec("deep_nesting_100k", text(lambda t: re.sub(r'"description": "[^"]*"', '"description": ' + "[" * 100000 +
                                                    "]" * 100000, t, count=1)), P("description"),
         note="a type error on 100000 nested arrays: no stack overflow while describing them"),
    spec("deep_nesting_unknown_key", sub('"seed": 7', '"seed": 7, "extra": ' + "{\"a\":" * 50000 + "1" +
                                         "}" * 50000), P("extra")),
)

# ---- duplicate keys and out-of-range numbers ----
add(
    spec("duplicate_top_key", sub('"name": "tiny",', '"name": "tiny", "name": "other",'), P("name")),
    spec("duplicate_size_key", sub('"sizes": {"N": 17}', '"sizes": {"N": 17, "N": 18}'), P("cases[0].sizes")),
    spec("duplicate_param_key", sub('"BS": [', '"BS": [1], "BS": ['), P("tuning.params")),
    spec("duplicate_signature_key", sub('{"name": "x"', '{"name": "x", "name": "z"'), P("signature[0]")),
    spec("duplicate_timing_key", sub('"warmup": 1', '"warmup": 1, "warmup": 2'), P("timing")),
    spec("format_version_1e999", sub('"format_version": 1', '"format_version": 1e999'), P("format_version")),
    spec("seed_1e999", sub('"seed": 7', '"seed": 1e999'), P("seed")),
    spec("seed_minus_1e999", sub('"seed": 7', '"seed": -1e999'), P("seed")),
    spec("seed_2_pow_64", sub('"seed": 7', '"seed": 18446744073709551616'), P("seed")),
    spec("size_1e999", sub('"sizes": {"N": 17}', '"sizes": {"N": 1e999}'), P("cases[0].sizes.N")),
    spec("size_2_pow_63", sub('"sizes": {"N": 17}', '"sizes": {"N": 9223372036854775808}'),
         P("cases[0].sizes.N")),
    spec("param_value_1e999", sub('"BS": [64', '"BS": [1e999'), P("tuning.params.BS")),
    spec("tolerance_1e999", sub('"rtol": 0', '"rtol": 1e999'), P("tolerance.y.rtol")),
    spec("timeout_1e999", sub('"iterations": 3', '"iterations": 3, "launch_timeout_ms": 1e999'),
         P("timing.launch_timeout_ms")),
    spec("generator_low_1e999", sub('"low": -1', '"low": -1e999'), P("signature[0].init.low")),
)

# ---- top level ----
add(
    spec("format_version_2", setp(["format_version"], 2), P("format_version")),
    spec("format_version_string", setp(["format_version"], "1"), P("format_version")),
    spec("format_version_negative", setp(["format_version"], -1), P("format_version")),
    spec("seed_negative", setp(["seed"], -1), P("seed")),
    spec("seed_float", setp(["seed"], 1.5), P("seed")),
    spec("seed_string", setp(["seed"], "7"), P("seed")),
    spec("seed_bool", setp(["seed"], True), P("seed")),
    spec("name_missing", delp(["name"]), P("name")),
    spec("name_number", setp(["name"], 5), P("name")),
    spec("name_null", setp(["name"], None), P("name")),
    spec("name_empty", setp(["name"], ""), P("name")),
    spec("name_slash", setp(["name"], "a/b"), P("name")),
    spec("name_dotdot", setp(["name"], ".."), P("name")),
    spec("name_control_char", setp(["name"], "a\u0001b"), P("name")),
    spec("name_10mb", setp(["name"], "a" * (10 << 20) + "/"), P("name"), note="the error must not echo 10 MB"),
    spec("description_number", setp(["description"], 5), P("description")),
    spec("unknown_top_key", sub('"seed": 7', '"seed": 7, "nmae": "x"'), P("nmae")),
    spec("signature_missing", delp(["signature"]), P("signature")),
    spec("signature_object", setp(["signature"], {}), P("signature")),
    spec("signature_empty", setp(["signature"], []), P("signature")),
    spec("signature_entry_number", setp(["signature"], [5]), P("signature[0]")),
    spec("cases_missing", delp(["cases"]), P("cases")),
    spec("cases_empty", setp(["cases"], []), P("cases")),
    spec("cases_object", setp(["cases"], {}), P("cases")),
    spec("reference_missing", delp(["reference"]), P("reference")),
    spec("timing_string", setp(["timing"], "fast"), P("timing")),
)

# ---- signature ----
add(
    spec("buffer_type_unknown", setp(["signature", 0, "type"], "float128"), P("signature[0].type")),
    spec("buffer_type_number", setp(["signature", 0, "type"], 5), P("signature[0].type")),
    spec("buffer_type_missing", delp(["signature", 0, "type"]), P("signature[0]")),
    spec("buffer_role_unknown", setp(["signature", 0, "role"], "sideways"), P("signature[0].role")),
    spec("buffer_role_missing", delp(["signature", 0, "role"]), P("signature[0]")),
    spec("buffer_count_missing", delp(["signature", 0, "count"]), P("signature[0]")),
    spec("buffer_count_float", setp(["signature", 0, "count"], 1.5), P("signature[0].count")),
    spec("buffer_count_float_string", setp(["signature", 0, "count"], "1.5"), P("signature[0].count")),
    spec("buffer_count_zero", setp(["signature", 0, "count"], "0"), P("signature[0].count")),
    spec("buffer_count_negative", setp(["signature", 0, "count"], -1), P("signature[0].count")),
    spec("buffer_count_bool", setp(["signature", 0, "count"], True), P("signature[0].count")),
    spec("buffer_count_overflow", setp(["signature", 0, "count"], "N*N*N*N*N*N*N"), P("signature[0].count")),
    spec("buffer_bytes_overflow", setp(["signature", 0, "count"], "pow2(62)"), P("signature[0].count")),
    spec("buffer_duplicate_name", setp(["signature", 1, "name"], "x"), P("signature[1]")),
    spec("buffer_name_not_identifier", setp(["signature", 0, "name"], "1x"), P("signature[0].name")),
    spec("buffer_name_empty", setp(["signature", 0, "name"], ""), P("signature[0].name")),
    spec("buffer_name_missing", delp(["signature", 0, "name"]), P("signature[0]")),
    spec("no_output_buffer", setp(["signature", 1, "role"], "input"), P("signature")),
    spec("init_on_output", setp(["signature", 1, "init"], {"kind": "constant", "value": 1}),
         P("signature[1]")),
    spec("scalar_with_role", setp(["signature", 2, "role"], "input"), P("signature[2]")),
    spec("scalar_with_count", setp(["signature", 2, "count"], "N"), P("signature[2]")),
    spec("scalar_int_float", setp(["signature", 2, "value"], 1.5), P("signature[2].value")),
    spec("scalar_int_overflow", setp(["signature", 2, "value"], 3000000000), P("signature[2].value")),
    spec("scalar_int_expr_overflow", setp(["signature", 2, "value"], "pow2(40)"), P("signature[2].value")),
    spec("scalar_float_as_string", append_scalar({"name": "alpha", "type": "float", "value": "1e-5"}),
         P("signature[3].value"), stderr="(?i)quot", note="a hint to write the number unquoted"),
    spec("scalar_half_1e10", append_scalar({"name": "h", "type": "half", "value": 1e10}), P("signature[3].value")),
    spec("scalar_float_1e39", append_scalar({"name": "f", "type": "float", "value": 1e39}),
         P("signature[3].value")),
    spec("scalar_double_1e999", sub('"value": "N"}', '"value": "N"}, {"name": "d", "type": "double", '
                                    '"value": 1e999}'), P("signature[3].value")),
    spec("scalar_bool", append_scalar({"name": "b", "type": "int32", "value": True}), P("signature[3].value")),
)

# ---- generators ----
add(
    spec("init_string", setp(["signature", 0, "init"], "uniform"), P("signature[0].init")),
    spec("generator_kind_unknown", setp(["signature", 0, "init", "kind"], "gaussian"),
         P("signature[0].init.kind")),
    spec("generator_kind_missing", setp(["signature", 0, "init"], {"low": 0}), P("signature[0].init")),
    spec("uniform_low_above_high", setp(["signature", 0, "init"], {"kind": "uniform", "low": 1, "high": -1}),
         P("signature[0].init")),
    spec("uniform_low_string", setp(["signature", 0, "init", "low"], "0"), P("signature[0].init.low")),
    spec("normal_negative_stddev", setp(["signature", 0, "init"], {"kind": "normal", "stddev": -1}),
         P("signature[0].init.stddev")),
    spec("constant_without_value", setp(["signature", 0, "init"], {"kind": "constant"}), P("signature[0].init")),
    spec("iota_step_string", setp(["signature", 0, "init"], {"kind": "iota", "step": "x"}),
         P("signature[0].init.step")),
    spec("generator_unknown_key", setp(["signature", 0, "init"], {"kind": "uniform", "lo": 0}),
         P("signature[0].init.lo")),
    spec("npy_without_path", setp(["signature", 0, "init"], {"kind": "npy"}), P("signature[0].init")),
    spec("npy_path_number", setp(["signature", 0, "init"], {"kind": "npy", "path": 5}),
         P("signature[0].init.path")),
)


# ---- paths inside the spec ----
def npy_at(path):
    return setp(["signature", 0, "init"], {"kind": "npy", "path": path})


add(
    spec("npy_missing", npy_at("missing.npy"), "missing\\.npy"),
    spec("npy_missing_for_one_case", npy_at("x_{case}.npy"), "x_n17\\.npy"),
    spec("npy_is_directory", npy_at("adir"), isdir("adir"),
         files={"adir": lambda ctx, rel: ctx.path(rel).mkdir()}),
    spec("npy_dev_zero", npy_at("/dev/zero"), notreg("/dev/zero")),
    spec("npy_fifo", npy_at("x.fifo"), notreg("x\\.fifo"), files={"x.fifo": fifo}, note="reading it would block"),
    spec("npy_sparse_4g", npy_at("big.npy"), "big\\.npy", files={"big.npy": sparse}),
    spec("source_missing", source("initial", "nope.cu"), "nope\\.cu"),
    spec("source_empty", source("initial", ""), P("initial.source")),
    spec("source_number", source("initial", 5), P("initial.source")),
    spec("source_is_directory", source("initial", "adir"), isdir("adir"),
         files={"adir": lambda ctx, rel: ctx.path(rel).mkdir()}),
    spec("source_dev_zero", source("initial", "/dev/zero"), notreg("/dev/zero")),
    spec("source_dev_urandom", source("initial", "/dev/urandom"), notreg("/dev/urandom")),
    spec("source_fifo", source("initial", "k.fifo"), notreg("k\\.fifo"), files={"k.fifo": fifo}),
    spec("source_sparse_4g", source("initial", "big.cu"), "big\\.cu", files={"big.cu": sparse}),
    spec("source_symlink_loop", source("initial", "loop.cu"), "loop\\.cu",
         files={"loop.cu": lambda ctx, rel: link(ctx, rel, "loop.cu")}),
    spec("source_name_too_long", source("initial", "x" * 300 + ".cu"), "(?i)initial\\.source|too long|xxxx"),
    spec("source_unreadable", source("initial", "tiny_naive.cu"), "^(?!.*not found).*tiny_naive\\.cu",
         files={"tiny_naive.cu": lambda ctx, rel: os.chmod(ctx.path(rel), 0)}, nobody=True),
    spec("source_in_locked_folder", source("initial", "locked/k.cu"),
         "^(?!.*not found).*locked",
         files={"locked/k.cu": lambda ctx, rel: (ctx.write(rel, "// kopt:entry tiny_naive\n"),
                                                 os.chmod(ctx.path("locked"), 0))}, nobody=True),
    spec("template_source_missing", source("template", "nope.cu"), "nope\\.cu"),
    spec("template_source_dev_zero", source("template", "/dev/zero"), notreg("/dev/zero")),
    spec("reference_source_missing", source("reference", "nope.cu"), "nope\\.cu"),
    spec("reference_source_is_directory", source("reference", "."), isdir("reference\\.source|/")),
    spec("golden_missing", setp(["reference"], {"kind": "npy", "outputs": {"y": "golden_{case}.npy"}}),
         "golden_n17\\.npy"),
    spec("golden_for_input", setp(["reference"], {"kind": "npy", "outputs": {"x": "g.npy", "y": "g.npy"}}),
         P("reference.outputs")),
)

# ---- kernels, references, launch ----
add(
    spec("reference_kind_missing", delp(["reference", "kind"]), P("reference")),
    spec("reference_kind_unknown", setp(["reference", "kind"], "magic"), P("reference.kind")),
    spec("entry_missing", delp(["initial", "entry"]), P("initial")),
    spec("entry_number", setp(["initial", "entry"], 5), P("initial.entry")),
    spec("entry_empty", setp(["initial", "entry"], ""), P("initial.entry")),
    spec("compile_options_string", setp(["initial", "compile_options"], "-O3"), P("initial.compile_options")),
    spec("defines_float", setp(["initial", "defines"], {"X": 1.5}), P("initial.defines.X")),
    # The initial kernel may name a tuning parameter (its configuration); the template may not.
    spec("define_is_param", setp(["template", "defines"], {"BS": 64}), P("template.defines.BS")),
    spec("spec_define_is_param", setp(["defines"], {"BS": 64}), P("defines.BS")),
    spec("spec_define_cycle", setp(["defines"], {"A": "B + 1", "B": "A"}), P("defines.A") + ".*cycle"),
    spec("spec_define_unknown_name", setp(["defines"], {"A": "Q * 2"}), P("defines.A") + ".*'Q'"),
    spec("spec_define_size_other_value", setp(["defines"], {"N": 4}), P("defines.N")),
    spec("spec_define_in_constraint_per_case", per_case_define_in_constraint, P("tuning.constraints[1]") + ".*define 'W'"),
    spec("constant_over_64k", append_scalar({"name": "c_table", "type": "float", "role": "constant", "count": "N * 8"}),
         P("signature[3].count") + ".*65536"),
    # A launch in a kernel's kopt: lines: its errors name the .cu file and line.
    spec("annotation_grid_unknown_name", source("initial", "bad_grid.cu"), P("initial") + ".*bad_grid\\.cu:2: kopt:grid",
         files={"bad_grid.cu": "// kopt:entry tiny_naive\n// kopt:grid ceil_div(N, TILE), 1, 1\n// kopt:block 64, 1, 1\n"
                               "extern \"C\" __global__ void tiny_naive(const float* x, float* y, int N) {}\n"}),
    spec("annotation_grid_syntax", source("initial", "bad_grid.cu"), "bad_grid\\.cu:2: kopt:grid",
         files={"bad_grid.cu": "// kopt:entry tiny_naive\n// kopt:grid ceil_div(N, 64 +), 1, 1\n"}),
    spec("kernel_unknown_key", setp(["initial", "sources"], "x.cu"), P("initial.sources")),
    spec("baseline_kind_unknown", setp(["baseline"], {"kind": "mkl"}), P("baseline.kind")),
    spec("launch_grid_four", setp(["launch", "grid"], [1, 1, 1, 1]), P("launch.grid")),
    spec("launch_grid_empty", setp(["launch", "grid"], []), P("launch.grid")),
    spec("launch_grid_float", setp(["launch", "grid"], [1.5]), P("launch.grid")),
    spec("launch_block_zero", setp(["launch", "block"], ["0", 1, 1]), P("launch.block")),
    spec("launch_block_negative", setp(["launch", "block"], [-1, 1, 1]), P("launch.block")),
    spec("launch_shared_negative", setp(["launch", "shared_bytes"], -1), P("launch.shared_bytes")),
    spec("launch_parse_error", setp(["launch", "grid"], ["ceil_div(N,", 1, 1]), P("launch.grid[0]")),
    spec("launch_unknown_name", setp(["launch", "grid"], ["Q", 1, 1]), P("launch.grid[0]")),
    spec("launch_division_by_zero", setp(["launch", "grid"], ["N / 0", 1, 1]), P("launch.grid[0]")),
)

# ---- expressions ----
def count(expr):
    return setp(["signature", 0, "count"], expr)


EXPR = P("signature[0].count")
add(
    spec("expr_float_literal", count("N * 1.5"), EXPR),
    spec("expr_empty", count(""), EXPR),
    spec("expr_unbalanced", count("(N"), EXPR),
    spec("expr_bad_character", count("N @ 2"), EXPR),
    spec("expr_unicode", count("N \u00d7 2"), EXPR),
    spec("expr_huge_literal", count("99999999999999999999"), EXPR),
    spec("expr_unknown_function", count("foo(N)"), EXPR),
    spec("expr_wrong_arg_count", count("abs(N, 2)"), EXPR),
    spec("expr_pow2_63", count("pow2(63)"), EXPR),
    spec("expr_log2_zero", count("log2(N - N)"), EXPR),
    spec("expr_modulo_zero", count("N % (N - N)"), EXPR),
    spec("expr_nesting_10k", count("(" * 10000 + "N" + ")" * 10000), EXPR, note="too deep, no stack overflow"),
    spec("expr_unary_100k", count("-" * 100000 + "N"), EXPR, note="too deep, no stack overflow"),
    spec("expr_5000_tokens", count("N" + " + 1" * 5000), EXPR),
    spec("expr_5mb", count("N" + "+N" * (5 << 19)), EXPR, note="the error must not echo 5 MB"),
)


def size_of_one_case(doc, ctx):
    doc["cases"][0]["sizes"]["M"] = 3
    doc["signature"][0]["count"] = "M"


add(spec("expr_name_not_in_every_case", size_of_one_case, EXPR, note="M is a size of one case only"))

# ---- cases ----
add(
    spec("case_duplicate_name", setp(["cases", 1, "name"], "n17"), P("cases[1].name")),
    spec("case_name_slash", setp(["cases", 0, "name"], "a/b"), P("cases[0].name")),
    spec("case_name_missing", delp(["cases", 0, "name"]), P("cases[0]")),
    spec("case_role_unknown", setp(["cases", 0, "role"], "fast"), P("cases[0].role")),
    spec("case_size_zero", setp(["cases", 0, "sizes", "N"], 0), P("cases[0].sizes.N")),
    spec("case_size_negative", setp(["cases", 0, "sizes", "N"], -5), P("cases[0].sizes.N")),
    spec("case_size_float", setp(["cases", 0, "sizes", "N"], 1.5), P("cases[0].sizes.N")),
    spec("case_size_string", setp(["cases", 0, "sizes", "N"], "17"), P("cases[0].sizes.N")),
    spec("case_size_name_not_identifier", setp(["cases", 0, "sizes"], {"N": 17, "1x": 2}), P("cases[0].sizes")),
    spec("case_inputs_unknown_buffer", setp(["cases", 0, "inputs"], {"z": {"kind": "constant", "value": 1}}),
         P("cases[0].inputs")),
    spec("case_inputs_output_buffer", setp(["cases", 0, "inputs"], {"y": {"kind": "constant", "value": 1}}),
         P("cases[0].inputs")),
    spec("case_unknown_key", setp(["cases", 0, "sizez"], {"N": 1}), P("cases[0].sizez"), stderr="sizes"),
)

# ---- tolerance, timing, checks ----
add(
    spec("tolerance_not_output", setp(["tolerance"], {"x": {"rtol": 0}}), P("tolerance.x")),
    spec("tolerance_negative", setp(["tolerance", "y", "rtol"], -1), P("tolerance.y.rtol")),
    spec("tolerance_kind_unknown", setp(["tolerance", "y", "kind"], "fuzzy"), P("tolerance.y.kind")),
    spec("tolerance_string", setp(["tolerance", "y"], "loose"), P("tolerance.y")),
    spec("tolerance_gemm_factor_zero", setp(["tolerance", "y"], {"kind": "gemm", "factor": 0}),
         P("tolerance.y")),
    spec("tolerance_sum_no_terms", setp(["tolerance", "y"], {"kind": "sum"}), P("tolerance.y"), stderr="terms"),
    spec("tolerance_sum_totals_not_dividing", setp(["tolerance", "y"], {"kind": "sum", "terms": "N", "totals": 2}),
         P("tolerance.y.totals"), stderr="no whole number of 2 totals"),
    spec("tolerance_sum_both_layouts",
         setp(["tolerance", "y"], {"kind": "sum", "terms": "N", "totals": 1, "partials": 1}), P("tolerance.y"),
         stderr="not both"),
    spec("generator_view_of_output", setp(["signature", 0, "init"], {"kind": "view", "of": "y"}),
         P("signature[0].init.of")),
    spec("generator_view_past_the_end",
         append_scalar({"name": "x_odd", "type": "float", "role": "input", "count": "N",
                        "init": {"kind": "view", "of": "x", "start": 1, "stride": 2}}),
         P("signature[3].init"), stderr="which has 17 elements in case 'n17'"),
    spec("generator_view_of_itself", setp(["signature", 0, "init"], {"kind": "view", "of": "x"}),
         P("signature[0].init.of")),
    spec("timing_iterations_zero", setp(["timing", "iterations"], 0), P("timing.iterations")),
    spec("timing_iterations_float", setp(["timing", "iterations"], 1e10), P("timing.iterations")),
    spec("timing_warmup_negative", setp(["timing", "warmup"], -1), P("timing.warmup")),
    spec("timing_timeout_zero", setp(["timing", "launch_timeout_ms"], 0), P("timing.launch_timeout_ms")),
    spec("timing_timeout_negative", setp(["timing", "launch_timeout_ms"], -5), P("timing.launch_timeout_ms")),
    spec("timing_flush_string", setp(["timing", "flush_l2"], "yes"), P("timing.flush_l2")),
    spec("checks_trials_4", setp(["checks", "trials"], 4), P("checks.trials")),
    spec("checks_repeats_zero", setp(["checks", "repeats"], 0), P("checks.repeats")),
)

# ---- tuning ----
add(
    spec("params_not_object", setp(["tuning", "params"], [64]), P("tuning.params")),
    spec("param_no_values", setp(["tuning", "params", "BS"], []), P("tuning.params.BS")),
    spec("param_duplicate_value", setp(["tuning", "params", "BS"], [64, 64]), P("tuning.params.BS")),
    spec("param_float_value", setp(["tuning", "params", "BS"], [64, 1.5]), P("tuning.params.BS")),
    spec("param_string_value", setp(["tuning", "params", "BS"], ["64"]), P("tuning.params.BS")),
    spec("param_named_like_size", setp(["tuning", "params", "N"], [1]), P("tuning.params.N")),
    spec("param_not_identifier", setp(["tuning", "params", "1x"], [1]), P("tuning.params")),
    spec("constraints_string", setp(["tuning", "constraints"], "BS > 0"), P("tuning.constraints")),
    spec("constraint_parse_error", setp(["tuning", "constraints"], ["BS %"]), P("tuning.constraints[0]")),
    spec("constraint_unknown_name", setp(["tuning", "constraints"], ["Q > 1"]), P("tuning.constraints[0]")),
    spec("constraint_device_constant_typo", setp(["tuning", "constraints"], ["BS <= MAX_THREADS_PER_BLOK"]),
         P("tuning.constraints[0]")),
    spec("compile_options_number", setp(["tuning", "compile_options"], [5]), P("tuning.compile_options[0]")),
    # Through `optimize`: the space is built there.
    spec("constraint_rejects_everything", setp(["tuning", "constraints"], ["BS > 100000"]),
         "BS > 100000|tuning\\.constraints", cmd=optimize()),
    spec("constraint_division_by_zero", setp(["tuning", "constraints"], ["BS / (UNROLL - UNROLL) > 0"]),
         "UNROLL - UNROLL|tuning\\.constraints", cmd=optimize()),
    # Constraints may name sizes (spec-format.md): either optimize honours
    # them (exit 0) or the loader rejects them naming the constraint.
    spec("constraint_names_size", setp(["tuning", "constraints"], ["BS <= N * 16"]), P("tuning.constraints[0]"),
         exit={0, 2}, cmd=optimize(), unchanged="on_error"),
)


# --------------------------------------------------------------------------
# npy files: the spec reads x from x_{case}.npy (one per case), n17's is bad
# --------------------------------------------------------------------------

def npy_case(name, data, first="x_n17\\.npy", golden=False, **kw):
    def setup(ctx):
        doc = ctx.spec_json()
        if golden:
            doc["reference"] = {"kind": "npy", "outputs": {"y": "y_{case}.npy"}}
            prefix = "y"
        else:
            doc["signature"][0]["init"] = {"kind": "npy", "path": "x_{case}.npy"}
            prefix = "x"
        ctx.write_spec(doc)
        for c in doc["cases"]:
            ctx.write("%s_%s.npy" % (prefix, c["name"]), npy(shape=(c["sizes"]["N"],)))
        bad = ctx.path(prefix + "_n17.npy")
        bad.unlink()
        if data == "dir":
            bad.mkdir()
        elif callable(data):
            data(ctx, bad.name)
        else:
            bad.write_bytes(data)
    return Case("npy." + name, evaluate(), first=first, setup=setup, **kw)


add(
    npy_case("control_valid", npy(), exit={0, 1, 3, 77}, first=None, unchanged=False,
             note="the valid files load (without a GPU: compiled, exit 77)"),
    npy_case("empty_file", b""),
    npy_case("bad_magic", npy(magic=b"\x93NUMPX")),
    npy_case("text_file", b"1 2 3 4\n"),
    npy_case("version_9", npy(version=(9, 0))),
    npy_case("header_len_beyond_file", npy(header_len=65000)),
    npy_case("header_len_2gib_v2", npy(version=(2, 0), header_len=(2 << 30) - 1)),
    npy_case("header_not_dict", npy(header="[1, 2, 3]")),
    npy_case("header_without_descr", npy(header="{'fortran_order': False, 'shape': (17,), }")),
    npy_case("header_python_code", npy(header="{'descr': __import__('os').getcwd(), 'fortran_order': False, "
                                              "'shape': (17,), }")),
    npy_case("header_unterminated", npy(header="{'descr': '<f4', 'fortran_order': False, 'shape': (17,")),
    npy_case("dtype_complex", npy(descr="<c8", data=b"\0" * 136)),
    npy_case("dtype_string", npy(descr="|S4")),
    npy_case("dtype_big_endian", npy(descr=">f4")),
    npy_case("dtype_other_than_buffer", npy(descr="<f8", data=b"\0" * 136)),
    npy_case("fortran_order", npy(fortran=True)),
    npy_case("shape_negative", npy(shape=(-1,), data=b"")),
    npy_case("shape_huge", npy(shape=(99999999999999999999,), data=b"")),
    npy_case("shape_product_overflow", npy(shape=(1 << 40, 1 << 40), data=b"")),
    npy_case("count_other_than_buffer", npy(shape=(16,))),
    npy_case("truncated_data", npy(data=b"\0" * 30)),
    npy_case("trailing_bytes", npy(extra=b"\0" * 8)),
    npy_case("is_directory", "dir", first=isdir("x_n17\\.npy")),
    npy_case("fifo", lambda ctx, rel: os.mkfifo(ctx.path(rel)), first=notreg("x_n17\\.npy")),
    npy_case("dev_zero", lambda ctx, rel: os.symlink("/dev/zero", ctx.path(rel)), first=notreg("x_n17\\.npy|/dev/zero")),
    npy_case("sparse_4g", lambda ctx, rel: sparse(ctx, rel, head=npy()[:128])),
    npy_case("golden_bad_magic", npy(magic=b"GARBAGE"), first="y_n17\\.npy", golden=True),
    npy_case("golden_other_count", npy(shape=(3,)), first="y_n17\\.npy", golden=True),
)


# --------------------------------------------------------------------------
# File arguments on the command line
# --------------------------------------------------------------------------

def files(name, argv, first, setup=None, **kw):
    return Case("files." + name, argv, first=first, setup=setup, **kw)


def mk_fifo(rel):
    return lambda ctx: fifo(ctx, rel)


def mk_sparse(rel):
    return lambda ctx: sparse(ctx, rel)


def mk_dir(rel):
    return lambda ctx: ctx.path(rel).mkdir(parents=True)


def chmod0(rel):
    return lambda ctx: os.chmod(ctx.path(rel), 0)


def locked_spec(ctx):
    import shutil
    ctx.path("locked").mkdir()
    shutil.copy(ctx.spec, ctx.path("locked", "tiny.json"))
    os.chmod(ctx.path("locked"), 0)


NOT_NOT_FOUND = "^(?!.*(?:not found|does not exist|No such file|is missing))"
add(
    files("spec_missing", evaluate(spec="{dir}/nope.json"), "nope\\.json"),
    files("spec_empty_path", evaluate(spec=""), "--spec"),
    files("spec_is_directory", evaluate(spec="{dir}"), isdir("--spec|/")),
    files("spec_dev_zero", evaluate(spec="/dev/zero"), notreg("/dev/zero")),
    files("spec_dev_urandom", evaluate(spec="/dev/urandom"), notreg("/dev/urandom")),
    files("spec_dev_null", evaluate(spec="/dev/null"), notreg("/dev/null")),
    files("spec_fifo", evaluate(spec="{dir}/s.fifo"), notreg("s\\.fifo"), mk_fifo("s.fifo")),
    files("spec_sparse_4g", evaluate(spec="{dir}/huge.json"), "huge\\.json", mk_sparse("huge.json")),
    files("spec_symlink_loop", evaluate(spec="{dir}/loop.json"), "loop\\.json",
          lambda ctx: link(ctx, "loop.json", "loop.json")),
    files("spec_name_too_long", evaluate(spec="{dir}/" + "s" * 300 + ".json"), "--spec|too long|ssss"),
    files("spec_unreadable", evaluate(), NOT_NOT_FOUND + ".*" + SPEC, chmod0("tiny.json"), nobody=True),
    files("spec_in_locked_folder", evaluate(spec="{dir}/locked/tiny.json"), NOT_NOT_FOUND + ".*locked",
          locked_spec, nobody=True, note="a folder without permission is not 'not found'"),
    files("kernel_missing", evaluate("--kernel", "{dir}/nope.cu"), "nope\\.cu"),
    files("kernel_is_directory", evaluate("--kernel", "{dir}"), isdir("--kernel|/")),
    files("kernel_dev_zero", evaluate("--kernel", "/dev/zero"), notreg("/dev/zero")),
    files("kernel_fifo", evaluate("--kernel", "{dir}/k.fifo"), notreg("k\\.fifo"), mk_fifo("k.fifo")),
    files("kernel_sparse_4g", evaluate("--kernel", "{dir}/big.cu"), "big\\.cu", mk_sparse("big.cu")),
    files("kernel_unreadable", evaluate("--kernel", "{dir}/tiny_naive.cu"), NOT_NOT_FOUND + ".*tiny_naive\\.cu",
          chmod0("tiny_naive.cu"), nobody=True),
    files("kernel_without_entry", evaluate("--kernel", "{dir}/noentry.cu"), "noentry\\.cu",
          lambda ctx: ctx.write("noentry.cu", 'extern "C" __global__ void other(const float* x, float* y, int N)'
                                              " {}\n"),
          note="no kopt:entry and no --entry: say so, not raw NVRTC output"),
    files("kernel_bad_grid_annotation", evaluate("--kernel", "{dir}/bad.cu"), "bad\\.cu.*(:2\\b|line 2)",
          lambda ctx: ctx.write("bad.cu", "// kopt:entry tiny_naive\n// kopt:grid ceil_div(N,\n"),
          note="a launch annotation error names the file and line"),
    files("kernel_unknown_annotation", evaluate("--kernel", "{dir}/bad.cu"), "bad\\.cu.*(:2\\b|line 2)",
          lambda ctx: ctx.write("bad.cu", "// kopt:entry tiny_naive\n// kopt:gird 1, 1, 1\n")),
    files("kernel_bad_param_annotation", evaluate("--kernel", "{dir}/bad.cu"), "bad\\.cu.*(:3\\b|line 3)",
          lambda ctx: ctx.write("bad.cu", "// kopt:entry tiny_naive\n// kopt:block 64\n// kopt:param BS=abc\n")),
    files("initial_kernel_dev_zero", optimize("--initial-kernel", "/dev/zero"), notreg("/dev/zero")),
    files("initial_kernel_is_directory", optimize("--initial-kernel", "{dir}"), isdir("--initial-kernel|/")),
    files("initial_kernel_fifo", optimize("--initial-kernel", "{dir}/k.fifo"), notreg("k\\.fifo"), mk_fifo("k.fifo")),
    files("initial_kernel_without_entry", optimize("--initial-kernel", "{dir}/noentry.cu"),
          "--initial-kernel.*noentry\\.cu|noentry\\.cu", lambda ctx: ctx.write("noentry.cu", "// nothing\n")),
    files("template_dev_zero", optimize("--template", "/dev/zero"), notreg("/dev/zero")),
    files("template_sparse_4g", optimize("--template", "{dir}/big.cu"), "big\\.cu", mk_sparse("big.cu")),
    files("reference_is_directory", optimize("--reference", "{dir}"), isdir("--reference|/")),
    files("reference_without_entry", optimize("--reference", "{dir}/noentry.cu"), "--reference",
          lambda ctx: ctx.write("noentry.cu", "// nothing\n")),
    files("input_cases_dev_zero", optimize("--input-cases", "/dev/zero"), notreg("/dev/zero")),
    files("input_cases_fifo", optimize("--input-cases", "{dir}/c.fifo"), notreg("c\\.fifo"), mk_fifo("c.fifo")),
    files("input_cases_garbage", optimize("--input-cases", "{dir}/bad_cases.json"), "bad_cases\\.json",
          lambda ctx: ctx.write("bad_cases.json", "[{ nope")),
    files("input_cases_bad_size", optimize("--input-cases", "{dir}/bad_cases.json"), "bad_cases\\.json",
          lambda ctx: ctx.write("bad_cases.json", '[{"name": "a", "sizes": {"N": 0}}]'),
          note="blamed on the cases file, not on the spec"),
    files("input_cases_not_array", optimize("--input-cases", "{dir}/bad_cases.json"), "bad_cases\\.json",
          lambda ctx: ctx.write("bad_cases.json", '{"x": 1}')),
    files("input_cases_duplicate_key", optimize("--input-cases", "{dir}/bad_cases.json"), "bad_cases\\.json",
          lambda ctx: ctx.write("bad_cases.json", '[{"name": "a", "name": "b", "sizes": {"N": 3}}]')),
    files("input_cases_1e999", optimize("--input-cases", "{dir}/bad_cases.json"), "bad_cases\\.json",
          lambda ctx: ctx.write("bad_cases.json", '[{"name": "a", "sizes": {"N": 1e999}}]')),
    files("input_cases_deep_nesting", optimize("--input-cases", "{dir}/bad_cases.json"), "bad_cases\\.json",
          lambda ctx: ctx.write("bad_cases.json", '[{"name": "a", "sizes": {"N": 3}, "role": ' + "[" * 100000 +
                                "]" * 100000 + "}]"), note="no stack overflow"),
    files("json_to_symlink", evaluate("--json", "{dir}/out.json"), None, exit={0, 1, 2, 3, 77}, unchanged=False,
          setup=lambda ctx: (ctx.write("real.json", ""), link(ctx, "out.json", "real.json")),
          check=lambda ctx, res: [] if ctx.path("out.json").is_symlink() else
          ["--json replaced the symlink out.json by a regular file (as root, --json /dev/stdout or "
           "/dev/null would replace the device's entry)"]),
    files("input_cases_control_valid", optimize("--input-cases", "{dir}/tiny_cases.json"), None, exit=0,
          note="the fixture's cases file is accepted"),
)


# Warm-start files (optimize --warm-start, docs/interop.md): a recorded time
# that cannot be one is refused before any run folder, naming the entry.
def warm(name, content, first, **kw):
    return files("warm_start_" + name, optimize("--warm-start", "{dir}/w.json"), first,
                 lambda ctx: ctx.write("w.json", content), **kw)


T4_HEAD = '{"schema_version": "1.0.0", "results": [{"configuration": {"BS": 64, "UNROLL": 1}, "invalidity": "correct", '
add(
    warm("t4_unit_furlong", T4_HEAD + '"measurements": [{"name": "time", "value": 1.5, "unit": "furlong"}]}]}',
         "w\\.json.*results\\[0\\]\\.measurements\\[0\\]\\.unit.*furlong"),
    warm("t4_time_negative", T4_HEAD + '"measurements": [{"name": "time", "value": -1.5, "unit": "ms"}]}]}',
         "w\\.json.*results\\[0\\]\\.measurements\\[0\\]\\.value"),
    warm("t4_time_string", T4_HEAD + '"measurements": [{"name": "time", "value": "1.5", "unit": "ms"}]}]}',
         "w\\.json.*results\\[0\\]\\.measurements\\[0\\]\\.value.*without quotes"),
    warm("t4_runtime_string", T4_HEAD + '"times": {"runtimes": [1.0, "2"]}}]}',
         "w\\.json.*results\\[0\\]\\.times\\.runtimes\\[1\\]"),
    warm("cache_time_string", '{"tune_params_keys": ["BS", "UNROLL"], "cache": {"64,1": {"time": "fast"}}}',
         "w\\.json.*cache\\[\"64,1\"\\]\\.time"),
    warm("cache_time_negative", '{"tune_params_keys": ["BS", "UNROLL"], "cache": {"64,1": {"time": -2}}}',
         "w\\.json.*cache\\[\"64,1\"\\]\\.time"),
    warm("control_valid", T4_HEAD + '"measurements": [{"name": "time", "value": 1.5, "unit": "us"}]}]}', None,
         exit=0, note="a T4 time in microseconds is read"),
)

# Shape captures (docs/capture.md) as --input-cases: what a damaged or foreign
# capture file gives; the first line names the file and the JSON path.
def capture_case(name, content, first, **kw):
    return files("capture_" + name, optimize("--input-cases", "{dir}/cap.json"), first,
                 lambda ctx: ctx.write("cap.json", content), **kw)


CAP_HEAD = '{"kopt_capture": 1, "kernel": "tiny", "sizes": ["N"], "launches": '
add(
    capture_case("version_2", '{"kopt_capture": 2, "kernel": "tiny", "sizes": ["N"], "launches": []}',
                 "kopt\\.capture\\.001.*cap\\.json.*kopt_capture"),
    capture_case("unknown_key", CAP_HEAD + '[], "extra": 1}', "kopt\\.capture\\.002.*cap\\.json.*extra"),
    capture_case("other_sizes", '{"kopt_capture": 1, "kernel": "sgemm", "sizes": ["M", "N", "K"], "launches": '
                 '[{"sizes": {"M": 1, "N": 2, "K": 3}, "count": 1}]}', "kopt\\.capture\\.003.*cap\\.json.*sizes"),
    capture_case("launch_missing_size", '{"kopt_capture": 1, "kernel": "tiny", "sizes": ["N", "L"], "launches": '
                 '[{"sizes": {"N": 1}, "count": 1}]}', "kopt\\.capture\\.004.*cap\\.json.*launches\\[0\\]\\.sizes"),
    capture_case("no_launches", CAP_HEAD + '[]}', "kopt\\.capture\\.005.*cap\\.json.*launches"),
    capture_case("count_zero", CAP_HEAD + '[{"sizes": {"N": 5}, "count": 0}]}', "cap\\.json.*launches\\[0\\]\\.count"),
    capture_case("count_quoted", CAP_HEAD + '[{"sizes": {"N": 5}, "count": "7"}]}', "cap\\.json.*count.*without quotes"),
    capture_case("size_negative", CAP_HEAD + '[{"sizes": {"N": -5}, "count": 1}]}', "cap\\.json.*launches\\[0\\]\\.sizes\\.N"),
    capture_case("size_huge", CAP_HEAD + '[{"sizes": {"N": 9000000000000000000}, "count": 1}]}',
                 "cap\\.json.*captured shape does not fit", note="a shape the spec cannot run names the capture"),
    capture_case("truncated", CAP_HEAD + '[{"sizes": {"N": 5}, "cou', "cap\\.json"),
    capture_case("control_valid", CAP_HEAD + '[{"sizes": {"N": 5}, "count": 3}, {"sizes": {"N": 70}, "count": 1}]}',
                 None, exit=0, note="a capture is accepted: its shapes become the performance cases"),
)


# --------------------------------------------------------------------------
# Command-line options of every subcommand
# --------------------------------------------------------------------------

def cli(name, argv, first, **kw):
    return Case("cli." + name, argv, first=first, **kw)


add(
    cli("top_no_subcommand", [K], "(?i)subcommand"),
    cli("top_unknown_subcommand", [K, "tune"], "tune"),
    cli("top_unknown_option", [K, "--bogus"], "--bogus"),
    cli("top_option_typo", [K, "--verison"], "unknown option '--verison' \\(did you mean '--version'\\?\\)"),
    cli("devices_unknown_option", [K, "devices", "--bogus"], "--bogus"),
    cli("devices_extra_argument", [K, "devices", "extra"], "extra"),
    cli("worker_device_abc", [K, "worker", "--device", "abc"], "--device"),
    cli("worker_device_negative", [K, "worker", "--device", "-1"], "--device"),
    cli("worker_unknown_option", [K, "worker", "--bogus"], "--bogus"),
)

# ---- evaluate ----
add(
    cli("evaluate_no_spec", [K, "evaluate", "--quiet"], "--spec"),
    cli("evaluate_unknown_option", evaluate("--bogus"), "--bogus"),
    cli("evaluate_extra_argument", evaluate("extra"), "extra"),
    cli("evaluate_kernel_without_value", evaluate("--kernel"), "--kernel"),
    cli("evaluate_device_negative", evaluate("--device", "-1"), "--device"),
    cli("evaluate_device_abc", evaluate("--device", "abc"), "--device"),
    cli("evaluate_device_huge", evaluate("--device", "99999999999999"), "--device"),
    cli("evaluate_device_empty", evaluate("--device", ""), "--device"),
    cli("evaluate_device_nan", evaluate("--device", "nan"), "--device"),
    cli("evaluate_arch_sm_999", evaluate(arch="sm_999"), "--arch"),
    cli("evaluate_arch_sm_0", evaluate(arch="sm_0"), "--arch"),
    cli("evaluate_arch_compute_90", evaluate(arch="compute_90"), "--arch"),
    cli("evaluate_arch_empty", evaluate(arch=""), "--arch"),
    cli("evaluate_arch_with_option", evaluate(arch="sm_90 -G"), "--arch"),
    cli("evaluate_params_space", evaluate("--params", "B S=64"), "--params"),
    cli("evaluate_params_no_value", evaluate("--params", "BS="), "--params"),
    cli("evaluate_params_no_name", evaluate("--params", "=64"), "--params"),
    cli("evaluate_params_not_number", evaluate("--params", "BS=abc"), "--params"),
    cli("evaluate_params_float", evaluate("--params", "BS=1.5"), "--params"),
    cli("evaluate_params_overflow", evaluate("--params", "BS=99999999999999999999"), "--params"),
    cli("evaluate_params_unknown_name", evaluate("--params", "THREADZ=256"), "--params.*THREADZ|THREADZ",
        note="a name that is no tuning parameter of the spec"),
    cli("evaluate_entry_empty", evaluate("--entry", ""), "--entry"),
    cli("evaluate_entry_with_space", evaluate("--entry", "tiny naive"), "--entry"),
    cli("evaluate_cases_unknown", evaluate("--cases", "nosuch"), "--cases|nosuch"),
    cli("evaluate_cases_empty", evaluate("--cases", ""), "--cases"),
    cli("evaluate_json_directory", evaluate("--json", "{dir}"), "--json",
        note="the results must not be lost: refuse before any work"),
    cli("evaluate_cache_dir_is_file", evaluate("--cache-dir", "{spec}"), "--cache-dir|" + SPEC, exit={2, 3}),
)

# ---- optimize ----
BUDGETS = [
    ("nan", "minutes=nan"), ("inf", "minutes=inf"), ("minutes_negative", "minutes=-1"),
    ("minutes_1e999", "minutes=1e999"), ("minutes_zero", "minutes=0"), ("evals_negative", "evals=-1"),
    ("evals_zero", "evals=0"), ("evals_abc", "evals=abc"), ("evals_float", "evals=1.5"),
    ("evals_overflow", "evals=99999999999999999999"), ("evals_empty_value", "evals="), ("empty", ""),
    ("only_commas", ",,"), ("no_key", "=5"), ("unknown_key", "bogus=3"), ("patience_negative", "patience=-5"),
    ("patience_nan", "patience=nan"), ("semicolon", "evals=2;minutes=1"), ("space", "evals=2 minutes=1"),
    ("unit_garbage", "10x"),
]
for n, b in BUDGETS:
    # a negative budget is not "zero" (the wording the issue reports)
    add(cli("optimize_budget_" + n, optimize(budget=b), ("^(?!.*is zero).*" if "negative" in n else "") + "--budget"))
add(cli("generate_budget_nan", generate("--budget", "minutes=nan"), "--budget"))

for opt, bad in [("--max-iterations", ["-1", "abc"]), ("--seed", ["-1", "abc", "1.5", "99999999999999999999"]),
                 ("--top", ["-1", "0", "abc"]), ("--retime-rounds", ["-1", "abc"]),
                 ("--specialize-threshold", ["nan", "inf", "-0.5", "abc"]),
                 ("--compile-threads", ["-5", "0", "abc"]), ("--device", ["-1", "abc"]),
                 ("--max-repairs", ["-1"]), ("--token-budget", ["-1"]), ("--llm-timeout", ["-1", "nan"]),
                 ("--llm-max-output-tokens", ["-1"]), ("--llm-api", ["bogus"])]:
    for v in bad:
        tag = {"-1": "negative", "-5": "negative", "-0.5": "negative", "1.5": "float",
               "99999999999999999999": "overflow"}.get(v, v)
        add(cli("optimize_%s_%s" % (opt.strip("-").replace("-", "_"), tag), optimize(opt, v), opt))

add(
    cli("optimize_no_spec", optimize(spec=None), "--spec"),
    cli("optimize_unknown_option", optimize("--bogus"), "--bogus"),
    cli("optimize_budget_without_value", optimize("--budget", budget=None), "--budget"),
    cli("optimize_strategy_bogus", optimize("--strategy", "bogus"), "--strategy|strategy 'bogus'"),
    cli("optimize_strategy_empty", optimize("--strategy", ""), "--strategy"),
    cli("optimize_arch_sm_999", optimize(arch="sm_999"), "--arch", note="exit 2, not 77 (CTest: skipped)"),
    cli("optimize_arch_compute_90", optimize(arch="compute_90"), "--arch"),
    cli("optimize_results_dir_is_file", optimize("--results-dir", "{spec}"), "--results-dir|" + SPEC),
    cli("optimize_resume_missing", optimize("--resume", "{dir}/nope"), "--resume|nope"),
    cli("optimize_resume_file", optimize("--resume", "{spec}"), "--resume|" + SPEC),
    cli("optimize_resume_empty_folder", optimize("--resume", "{dir}/empty"), "--resume|empty",
        setup=mk_dir("empty")),
    cli("optimize_description_only_empty", optimize("--description", "", spec=None), "--spec|--description"),
    cli("optimize_option_typo", optimize("--budgte", "40"), "unknown option '--budgte' \\(did you mean '--budget'\\?\\)",
        note="named as typed, with the closest option (CLI11 alone lists the extras backwards)"),
    cli("evaluate_long_option_one_dash", [K, "evaluate", "-spec", "{spec}", "--arch", "sm_90"],
        "\\[kopt\\.cli\\.011\\] '-spec' is not an option: long options take two dashes "
        "\\(did you mean '--spec'\\?\\)", note="not '--spec is required', which is what the typo leaves"),
    cli("optimize_budget_colon", optimize(budget="evals:20"), "'evals:20': an item is key=value "
        "\\(did you mean 'evals=20'\\?\\)"),
    cli("optimize_subcommand_typo", [K, "optimze", "--spec", "{spec}"], "'optimze' \\(did you mean 'optimize'\\?\\)"),
    cli("unknown_subcommand_help", [K, "frobnicate", "--help"], "unknown subcommand 'frobnicate'",
        note="not the general help with exit 0"),
    cli("optimize_worker_launcher_folder", optimize("--worker-launcher", "{dir}"), "--worker-launcher.*folder"),
    cli("evaluate_json_proc", evaluate("--json", "/proc/kopt-bad-input.json"), "--json /proc",
        note="access() says yes to root: the pre-check must create a file to know"),
)

# ---- generate ----
NAME_OPT = "--name|kernel name"
add(
    cli("generate_name_missing", generate(name=None), "--name"),
    cli("generate_name_empty", generate(name=""), "--name"),
    cli("generate_name_slash", generate(name="a/b"), NAME_OPT),
    cli("generate_name_dotdot", generate(name=".."), NAME_OPT),
    cli("generate_name_not_identifier", generate(name="1x"), NAME_OPT),
    cli("generate_name_10k", generate(name="n" * 10000 + "-"), NAME_OPT),
    cli("generate_name_checked_first", generate(name="a b", cache="{dir}/tiny.tuning.json"), NAME_OPT,
        setup=lambda ctx: ctx.write("tiny.tuning.json", '{"format_version": 1, "entries": []}'),
        check=lambda ctx, res: [] if not ctx.path("gen").exists() else ["the output folder was created"],
        note="every argument is checked before any work"),
    cli("generate_out_dir_is_file", generate(out="{spec}"), "--out-dir|" + SPEC),
    cli("generate_out_dir_empty", generate(out=""), "--out-dir"),
    cli("generate_strategy_bogus", generate("--strategy", "bogus"), "--strategy|strategy 'bogus'"),
    cli("generate_budget_abc", generate("--budget", "evals=abc"), "--budget"),
    cli("generate_seed_negative", generate("--seed", "-1"), "--seed"),
    cli("generate_device_negative", generate("--device", "-1"), "--device"),
    cli("generate_unknown_option", generate("--bogus"), "--bogus"),
    cli("generate_from_run_missing", generate("--from-run", "{dir}/nope"), "--from-run|nope"),
    cli("generate_from_run_empty_folder", generate("--from-run", "{dir}/empty"), "--from-run|empty",
        setup=mk_dir("empty")),
)

# ---- bench: every check before its no-GPU exit (77) ----
add(
    cli("bench_tolerance_negative", bench("--tolerance", "-50"), "--tolerance"),
    cli("bench_tolerance_nan", bench("--tolerance", "nan"), "--tolerance"),
    cli("bench_tolerance_inf", bench("--tolerance", "inf"), "--tolerance"),
    cli("bench_tolerance_abc", bench("--tolerance", "abc"), "--tolerance"),
    cli("bench_recorded_ms_negative", bench("--recorded-ms", "-1"), "--recorded-ms"),
    cli("bench_recorded_ms_nan", bench("--recorded-ms", "nan"), "--recorded-ms"),
    cli("bench_recorded_ms_inf", bench("--recorded-ms", "inf"), "--recorded-ms"),
    cli("bench_unknown_option", bench("--bogus"), "--bogus"),
    cli("bench_unknown_benchmark_flag", bench("--benchmark_bogus=1"), "--benchmark_bogus"),
    cli("bench_kernel_missing", bench(kernel="{dir}/nope.cu"), "nope\\.cu|--kernel"),
    cli("bench_no_kernel", [K, "bench", "--spec", "{spec}"], "--kernel"),
    cli("bench_device_negative", bench("--device", "-1"), "--device"),
)


# --------------------------------------------------------------------------
# Tuning caches (generate --cache-file, bench --cache-file)
# --------------------------------------------------------------------------

def cache(name, content, first="tiny\\.tuning\\.json", cmd=None, **kw):
    def setup(ctx):
        if callable(content):
            content(ctx, "tiny.tuning.json")
        else:
            ctx.write("tiny.tuning.json", content)
    return Case("cache." + name, cmd or generate(), first=first, setup=setup, **kw)


def sgemm_cache(name, mutate, first, extra=()):
    """The example project's real H200 entry, for a copy of templates/sgemm, damaged by `mutate`; `extra`
    options follow (--input-cases of the shapes it was tuned on, so that the entry is the one used)."""
    def setup(ctx):
        import shutil
        shutil.copytree(os.path.join(ctx.suite.src, "templates", "sgemm"), ctx.path("sgemm"))
        doc = json.load(open(os.path.join(ctx.suite.src, "example_project", "sgemm.tuning.json")))
        r = mutate(doc["entries"][0])
        ctx.write("sgemm.tuning.json", r if isinstance(r, str) else json.dumps(doc, indent=1))
    argv = [K, "generate", "--spec", "{dir}/sgemm/sgemm.json", "--name", "sgemm", "--out-dir", "{dir}/gen",
            "--cache-file", "{dir}/sgemm.tuning.json", "--no-tune", "--target-gpu", "NVIDIA H200", "--quiet"]
    return Case("cache." + name, argv + list(extra), first=first, setup=setup)


ENTRY = '{"spec_hash": "x", "gpu": {"name": "G", "compute_capability": "9.0"}, "kernel_source": "// k\\n"}'
add(
    cache("garbage", "{ broken"),
    cache("empty_file", ""),
    cache("top_level_array", "[]"),
    cache("format_version_2", '{"format_version": 2, "entries": []}'),
    cache("format_version_1e999", '{"format_version": 1e999, "entries": []}'),
    cache("entries_object", '{"format_version": 1, "entries": {}}', first="tiny\\.tuning\\.json.*entries"),
    cache("entry_number", '{"format_version": 1, "entries": [5]}', first="tiny\\.tuning\\.json.*entries\\[0\\]"),
    cache("entry_missing_kernel", '{"format_version": 1, "entries": [{"spec_hash": "x", "gpu": {}}]}',
          first="tiny\\.tuning\\.json.*entries\\[0\\]"),
    cache("entry_gpu_string", '{"format_version": 1, "entries": [' + ENTRY.replace(
        '{"name": "G", "compute_capability": "9.0"}', '"H200"') + ']}',
          first="tiny\\.tuning\\.json.*entries\\[0\\]\\.gpu"),
    cache("entry_spec_hash_number", '{"format_version": 1, "entries": [' + ENTRY.replace('"x"', "5") + ']}',
          first="tiny\\.tuning\\.json.*entries\\[0\\]\\.spec_hash"),
    cache("duplicate_key", '{"format_version": 1, "entries": [], "entries": []}',
          first="tiny\\.tuning\\.json.*entries"),
    cache("is_directory", lambda ctx, rel: ctx.path(rel).mkdir(), first=isdir("tiny\\.tuning\\.json")),
    cache("dev_zero", lambda ctx, rel: link(ctx, rel, "/dev/zero"), first=notreg("tiny\\.tuning\\.json|/dev/zero")),
    cache("fifo", lambda ctx, rel: fifo(ctx, rel), first=notreg("tiny\\.tuning\\.json")),
    cache("sparse_4g", lambda ctx, rel: sparse(ctx, rel, head=b'{"format_version": 1, "entries": [')),
    cache("unreadable", lambda ctx, rel: (ctx.write(rel, '{"format_version": 1, "entries": []}'),
                                          os.chmod(ctx.path(rel), 0)),
          first=NOT_NOT_FOUND + ".*tiny\\.tuning\\.json", nobody=True),
    cache("bench_garbage", "{ broken", cmd=bench("--cache-file", "{dir}/tiny.tuning.json"),
          note="checked before bench's no-GPU exit"),
    cache("bench_entries_object", '{"format_version": 1, "entries": {}}',
          cmd=bench("--cache-file", "{dir}/tiny.tuning.json")),
    cache("bench_directory", lambda ctx, rel: ctx.path(rel).mkdir(),
          cmd=bench("--cache-file", "{dir}/tiny.tuning.json")),
    sgemm_cache("matching_entry_source_number", lambda e: e.update(kernel_source=5),
                "sgemm\\.tuning\\.json.*entries\\[0\\]\\.kernel_source"),
    sgemm_cache("matching_entry_params_string", lambda e: e.update(params={"BM": "x"}),
                "sgemm\\.tuning\\.json.*entries\\[0\\]\\.params"),
    sgemm_cache("matching_entry_variants_garbage", lambda e: e.update(variants=[5, "x"]),
                "sgemm\\.tuning\\.json.*entries\\[0\\]\\.variants"),
    sgemm_cache("matching_entry_best_string", lambda e: e.update(best="fast"),
                "sgemm\\.tuning\\.json.*entries\\[0\\]\\.best"),
)

def first_key(d):
    return next(iter(d))


# Hand edits that would change the generated code without a word (a latency
# the cost model is fitted on, a parameter of a variant, the variants dropped
# while the specialisation stays): refused, naming the JSON path.
add(
    sgemm_cache("latency_string",
                lambda e: e["specialization"]["latency_ms"][first_key(e["specialization"]["latency_ms"])].__setitem__(
                    0, "0.1"),
                "sgemm\\.tuning\\.json.*entries\\[0\\]\\.specialization\\.latency_ms\\..*\\[0\\].*number"),
    sgemm_cache("cublas_geomean_string", lambda e: e.update(cublas_geomean_ms="0.16"),
                "sgemm\\.tuning\\.json.*entries\\[0\\]\\.cublas_geomean_ms"),
    sgemm_cache("variant_parameter_negative",
                lambda e: e["specialization"]["variants"][3]["params"].update(BM=-64),
                "sgemm\\.tuning\\.json.*entries\\[0\\]\\.specialization\\.variants\\[3\\]\\.params\\.BM.*-64",
                extra=("--input-cases", "{dir}/sgemm/application_shapes.json")),
    sgemm_cache("specialization_without_variants", lambda e: e.pop("variants"),
                "sgemm\\.tuning\\.json.*entries\\[0\\].*variants.*specialization"),
    sgemm_cache("variants_fewer_than_specialization", lambda e: e["variants"].pop(),
                "sgemm\\.tuning\\.json.*entries\\[0\\]\\.variants"),
    sgemm_cache("case_variant_out_of_range",
                lambda e: e["specialization"]["cases"][first_key(e["specialization"]["cases"])].update(variant=11),
                "sgemm\\.tuning\\.json.*entries\\[0\\]\\.specialization\\.cases\\..*\\.variant"),
)
_ctrl = sgemm_cache("control_sgemm_entry", lambda e: None, None)
_ctrl.exit, _ctrl.unchanged = 0, False
add(_ctrl)
_used = sgemm_cache("control_sgemm_entry_used", lambda e: None, None,
                    extra=("--input-cases", "{dir}/sgemm/application_shapes.json"))
_used.exit, _used.unchanged = 0, False
_used.note = "the entry is used as it is: the generated header has its 11 variants"
_used.check = lambda ctx, res: [] if "kVariants = 11" in open(ctx.path("gen", "sgemm_launch.h")).read() else [
    "the example's entry did not give 11 variants"]
add(_used)


# --------------------------------------------------------------------------
# Run folders: a copy of a real run (fixture), damaged; resumed or generated from
# --------------------------------------------------------------------------

def rf(name, damage, first, cmd=None, **kw):
    """damage(ctx): changes files of {run} before the command."""
    return Case("runfolder." + name, cmd or resume(), first=first, setup=damage, run_folder=True, **kw)


def w(rel, content):
    return lambda ctx: ctx.write("results/run-001/" + rel, content)


def rep(rel, what):
    return lambda ctx: replace(ctx, "results/run-001/" + rel, what)


def edit_json(rel, fn):
    def damage(ctx):
        p = ctx.run / rel
        doc = json.loads(p.read_text())
        r = fn(doc)
        p.write_text(r if isinstance(r, str) else json.dumps(doc, indent=1))
    return damage


def summary_ok_or_named(ctx, res):
    """Resume may rebuild summary.json (exit 0: it is then valid JSON) or refuse (exit 2, nothing changed)."""
    if res.returncode == 0:
        try:
            json.loads((ctx.run / "summary.json").read_text())
        except (OSError, ValueError) as e:
            return ["exit 0 but summary.json is not valid JSON afterwards: %s" % e]
    return []


def from_outside(ctx):
    """summary.json's variant 1 names a (valid) kernel file outside the run folder."""
    import shutil
    shutil.copy(ctx.run / "variants" / "v1.cu", ctx.path("outside.cu"))
    p = ctx.run / "summary.json"
    doc = json.loads(p.read_text())
    doc["specialization"]["variants"][1]["file"] = str(ctx.path("outside.cu"))
    p.write_text(json.dumps(doc, indent=1))


HIST = "history\\.json"
add(
    # A resume that would group the performance cases otherwise than the run
    # did (the run: 2 cases, no classes) would credit results timed on other
    # cases: refused, naming the option and the run's value.
    rf("shape_classes_other_grouping", lambda ctx: None, "--shape-classes 2: the run .* without shape classes",
       cmd=resume("--shape-classes", "2")),
    rf("history_garbage", w("history.json", "{ garbage"), HIST),
    rf("history_empty", w("history.json", ""), HIST),
    rf("history_truncated", lambda ctx: (ctx.run / "history.json").write_bytes(
        (ctx.run / "history.json").read_bytes()[:200]), HIST),
    rf("history_array", w("history.json", "[]"), HIST),
    rf("history_attempts_object", w("history.json", '{"format_version": 1, "attempts": {}}'), HIST + ".*attempts"),
    rf("history_format_version_2", edit_json("history.json", lambda d: d.update(format_version=2)), HIST),
    rf("history_attempt_number", edit_json("history.json", lambda d: d["attempts"].__setitem__(1, 5)),
       HIST + ".*attempts\\[1\\]"),
    rf("history_index_string", edit_json("history.json", lambda d: d["attempts"][1].update(index="2")),
       HIST + ".*attempts\\[1\\]"),
    rf("history_index_gap", edit_json("history.json", lambda d: d["attempts"][1].update(index=7)),
       HIST + ".*attempts\\[1\\]"),
    rf("history_index_1e999", lambda ctx: (ctx.run / "history.json").write_text(
        re.sub(r'"index": 2\b', '"index": 1e999', (ctx.run / "history.json").read_text(), count=1)),
       HIST + ".*attempts\\[1\\]"),
    rf("history_duplicate_key", lambda ctx: (ctx.run / "history.json").write_text(
        (ctx.run / "history.json").read_text().replace('"format_version": 1', '"format_version": 1, '
                                                        '"format_version": 1', 1)), HIST),
    rf("history_params_string", edit_json("history.json", lambda d: d["attempts"][1].update(params="BS=64")),
       HIST + ".*attempts\\[1\\].*params"),
    rf("history_missing", rep("history.json", "missing"), HIST),
    rf("history_is_directory", rep("history.json", "dir"), isdir(HIST)),
    rf("history_fifo", rep("history.json", "fifo"), notreg(HIST)),
    rf("history_dev_zero", rep("history.json", "/dev/zero"), notreg(HIST + "|/dev/zero")),
    rf("history_sparse_4g", rep("history.json", "sparse"), HIST),
    rf("candidate_kernel_missing", rep("candidates/0002/kernel.cu", "missing"), "kernel\\.cu"),
    rf("candidate_kernel_dev_zero", rep("candidates/0002/kernel.cu", "/dev/zero"), notreg("kernel\\.cu|/dev/zero")),
    rf("run_json_garbage", w("run.json", "{ garbage"), "run\\.json"),
    rf("run_json_missing", rep("run.json", "missing"), "run\\.json|run-001"),
    rf("run_json_format_version_2", edit_json("run.json", lambda d: d.update(format_version=2)), "run\\.json"),
    rf("run_json_1e999", lambda ctx: (ctx.run / "run.json").write_text(
        (ctx.run / "run.json").read_text().replace('"format_version": 1', '"format_version": 1e999', 1)),
       "run\\.json"),
    rf("spec_json_garbage", w("spec.json", "{ garbage"), "spec\\.json"),
    rf("spec_json_edited", edit_json("spec.json", lambda d: d.update(description="edited")), "spec\\.json"),
    rf("another_spec", lambda ctx: ctx.write_spec(dict(ctx.spec_json(), description="another workload")),
       "--resume|run-001|spec"),
    rf("summary_garbage", w("summary.json", "{ garbage"), "summary\\.json", exit={0, 2}, unchanged="on_error",
       check=summary_ok_or_named, note="resume may rebuild summary.json, or refuse naming it"),
    rf("summary_dev_zero", rep("summary.json", "/dev/zero"), "summary\\.json", exit={0, 2},
       unchanged="on_error", check=summary_ok_or_named),
    rf("device_garbage", w("device.json", "{ garbage"), "device\\.json", exit={0, 2}, unchanged="on_error",
       note="device.json is informative: resume may go on, or refuse naming it"),
    rf("device_fifo", rep("device.json", "fifo"), "device\\.json", exit={0, 2}, unchanged="on_error"),
    rf("read_only_folder", lambda ctx: None, notreg("run-001"), exit={2, 3}, nobody=True,
       note="the folder is made read-only just before the command"),
    # generate --from-run reads summary.json and device.json
    rf("from_run_summary_garbage", w("summary.json", "{ garbage"), "summary\\.json",
       cmd=generate("--from-run", "{run}")),
    rf("from_run_summary_final_best_string", edit_json("summary.json", lambda d: d.update(final_best="x")),
       "summary\\.json.*final_best", cmd=generate("--from-run", "{run}")),
    rf("from_run_summary_1e999", lambda ctx: (ctx.run / "summary.json").write_text(
        (ctx.run / "summary.json").read_text().replace('"format_version": 1', '"format_version": 1e999', 1)),
       "summary\\.json", cmd=generate("--from-run", "{run}")),
    rf("from_run_device_garbage", w("device.json", "{ garbage"), "device\\.json",
       cmd=generate("--from-run", "{run}")),
    rf("from_run_device_array", w("device.json", "[1, 2]"), "device\\.json",
       cmd=generate("--from-run", "{run}")),
    rf("from_run_variant_dev_zero", rep("variants/v1.cu", "/dev/zero"), notreg("v1\\.cu|/dev/zero"),
       cmd=generate("--from-run", "{run}")),
    rf("from_run_variant_outside_folder", from_outside, "summary\\.json.*variants\\[1\\]",
       cmd=generate("--from-run", "{run}"),
       note="summary.json may not make generate read a file outside the run folder"),
)


def history_grew(ctx, res):
    try:
        h = json.loads((ctx.run / "history.json").read_text())
    except (OSError, ValueError) as e:
        return ["history.json unreadable after the resume: %s" % e]
    fails = []
    if len(h.get("attempts", [])) <= 4:
        fails.append("the resume added no attempt (%d)" % len(h.get("attempts", [])))
    if (ctx.dir / "results" / "run-002").exists():
        fails.append("a new run folder was made instead of resuming")
    return fails


add(rf("resume_without_spec", lambda ctx: None, None, cmd=resume(spec=None), exit=0, unchanged=False,
       check=history_grew, note="--resume RUN alone takes the spec from the run folder"))
# A warm start whose configurations the run has already evaluated: the resumed
# session tries none of them again and does not say it tries them first.
def warm_start_of_recorded(ctx):
    h = json.loads((ctx.run / "history.json").read_text())
    configs = [a["params"] for a in h["attempts"] if a.get("kind") == "candidate" and a.get("params")]
    results = [{"configuration": c, "invalidity": "correct",
                "measurements": [{"name": "time", "value": 1.0 + i, "unit": "ms"}]} for i, c in enumerate(configs)]
    ctx.write("w.json", json.dumps({"schema_version": "1.0.0", "results": results}))


def recorded_seeds_not_again(ctx, res):
    h = json.loads((ctx.run / "history.json").read_text())
    keys = [json.dumps(a["params"], sort_keys=True) for a in h["attempts"]
            if a.get("kind") == "candidate" and a.get("params")]
    fails = ["a configuration evaluated twice: %s" % k for k in sorted(set(keys)) if keys.count(k) > 1]
    if re.search(r"[1-9][0-9]* of [0-9]+ configuration\(s\) are in the space and are evaluated first", res.stderr_text):
        fails.append("stderr says recorded configurations are evaluated first: %s" % short_text(res.stderr_text))
    return fails


add(rf("resume_warm_start_already_recorded", warm_start_of_recorded, None,
       cmd=[a for a in resume("--warm-start", "{dir}/w.json") if a != "--quiet"], exit=0, unchanged=False,
       stderr=r"w\.json \(T4 results, 3 entries\): 0 of 3 configuration\(s\) are in the space and are evaluated "
              r"first(.|\n)*3 not used, already recorded in this run",
       check=recorded_seeds_not_again,
       note="a warm start the run has already evaluated: nothing is said to come first, nothing is evaluated twice"))
add(rf("export_output_proc", lambda ctx: None, "--output /proc",
       cmd=[K, "export", "--format", "t4", "-o", "/proc/kopt-bad-input.json", "{run}"],
       note="refused before the export, not after it with a temporary file's name"))


# kopt report: a run folder copied from elsewhere, missing or damaged. The
# records' readers name the folder or the file (and the attempt); a damaged
# summary.json is a warning naming its JSON path, and the report is made.
def report(*extra):
    return [K, "report", "{run}"] + list(extra)


def report_made(ctx, res):
    return [] if (ctx.run / "report.html").is_file() else ["exit 0 but no report.html in the run folder"]


add(
    Case("runfolder.report_missing_folder", [K, "report", "{dir}/no-such-run"], first="no-such-run.*does not exist"),
    Case("runfolder.report_not_a_run_folder", [K, "report", "{dir}"], first="not a run folder.*run\\.json"),
    rf("report_history_garbage", w("history.json", "{ garbage"), HIST, cmd=report()),
    rf("report_history_index_string", edit_json("history.json", lambda d: d["attempts"][1].update(index="2")),
       HIST + ".*attempts\\[1\\]", cmd=report()),
    rf("report_history_missing", rep("history.json", "missing"), HIST, cmd=report()),
    rf("report_run_json_missing", rep("run.json", "missing"), "run\\.json|run-001", cmd=report()),
    rf("report_spec_json_edited", edit_json("spec.json", lambda d: d.update(description="edited")), "spec\\.json",
       cmd=report()),
    rf("report_summary_final_best_string", edit_json("summary.json", lambda d: d.update(final_best="x")),
       "warning.*summary\\.json.*final_best", cmd=report(), exit=0, first_always=True, check=report_made,
       note="a damaged summary.json is shown as far as it reads, with a warning naming the JSON path"),
    rf("report_summary_garbage", w("summary.json", "{ garbage"), "warning.*summary\\.json", cmd=report(), exit=0,
       first_always=True, check=report_made, note="made from history.json, with a warning"),
    rf("report_out_is_directory", lambda ctx: None, "--out", cmd=report("--out", "{dir}")),
    rf("report_out_proc", lambda ctx: None, "--out", cmd=report("--out", "/proc/kopt-bad-input.html"),
       note="refused before the report is drawn"),
    rf("report_read_only_folder", lambda ctx: None, "--out", cmd=report(), nobody=True,
       note="a read-only run folder without --out: refused, naming --out"),
)


def make_read_only(case):
    """read_only_folder: chmod the run folder and everything in it a-w after the copy."""
    inner = case.setup

    def setup(ctx):
        inner(ctx)
        for dirpath, dirnames, filenames in os.walk(ctx.run):
            for n in dirnames + filenames:
                p = os.path.join(dirpath, n)
                if not os.path.islink(p):
                    os.chmod(p, os.stat(p).st_mode & ~0o222)
            os.chmod(dirpath, os.stat(dirpath).st_mode & ~0o222)
    case.setup = setup


for c in CASES:
    if c.id in ("runfolder.read_only_folder", "runfolder.report_read_only_folder"):
        make_read_only(c)


# --------------------------------------------------------------------------
# Worker input: `kopt worker` fed garbage on stdin answers an error, never crashes
# --------------------------------------------------------------------------

HELLO = b'{"op":"hello"}\n'


def worker(name, stdin, replies, ids=None, **kw):
    """replies: what each reply must be, in order: 'error' (a reply "error", or a
    "result" whose verdict is not ok) or 'hello'. ids: expected "id" per reply
    (None: not checked). The worker must exit 0 (EOF) or 3, never by a signal."""
    def check(ctx, res):
        fails = []
        lines = [ln for ln in res.stdout.split(b"\n") if ln.strip()]
        got = []
        for ln in lines:
            try:
                j = json.loads(ln)
            except ValueError:
                return ["stdout has a line that is not JSON: %r" % ln[:200]]
            if not isinstance(j, dict):
                return ["stdout has a reply that is not an object: %r" % ln[:200]]
            got.append(j)
        if len(got) < len(replies):
            fails.append("expected %d replies (%s), got %d: %s" % (len(replies), ", ".join(replies), len(got),
                                                                  res.stdout[:300]))
        for i, (want, j) in enumerate(zip(replies, got)):
            r = j.get("reply")
            if want == "hello" and r != "hello":
                fails.append("reply %d: expected a hello reply, got %s" % (i + 1, json.dumps(j)[:200]))
            if want == "error":
                bad_result = r == "result" and (j.get("result") or {}).get("verdict") not in (None, "ok")
                if r != "error" and not bad_result:
                    fails.append("reply %d: expected an error, got %s" % (i + 1, json.dumps(j)[:200]))
            if ids and i < len(ids) and ids[i] is not None and j.get("id") != ids[i]:
                fails.append("reply %d: expected id %s, got %s" % (i + 1, ids[i], j.get("id")))
        return fails
    return Case("worker." + name, [K, "worker"], exit={0}, first=None, stdin=stdin, check=check, **kw)


def big_line(ctx):
    p = ctx.dir / "big.stdin"
    with open(p, "wb") as f:
        for _ in range(48):
            f.write(b"a" * (1 << 20))
        f.write(b"\n" + HELLO)
    return p


EVAL_GARBAGE = {"op": "evaluate", "id": 4, "candidate": 5, "cases": "x", "timing": [], "seed": -1}
EVAL_HUGE = {"op": "evaluate", "id": 6, "candidate": {"kind": "cubin", "cubin_path": "/dev/zero", "entry": "k",
                                                      "label": "l"},
             "reference": {"kind": "cubin", "cubin_path": "/dev/zero", "entry": "k", "label": "r"},
             "cases": [{"name": "c", "role": "correctness", "sizes": {},
                        "args": [{"name": "x", "is_buffer": True, "dtype": "float", "role": "output",
                                  "count": 10 ** 18, "generator": {"kind": "uniform"}, "int_value": 0,
                                  "float_value": 0}],
                        "launch": {"grid": [1, 1, 1], "block": [1, 1, 1], "shared_bytes": 0}}]}
add(
    worker("empty_input", b"", []),
    worker("not_json", b"garbage\n" + HELLO, ["error", "hello"]),
    worker("empty_object", b"{}\n" + HELLO, ["error", "hello"]),
    worker("array", b"[1, 2]\n" + HELLO, ["error", "hello"]),
    worker("string", b'"hello"\n' + HELLO, ["error", "hello"]),
    worker("null", b"null\n" + HELLO, ["error", "hello"]),
    worker("number", b"5\n" + HELLO, ["error", "hello"]),
    worker("op_number", b'{"op": 5}\n' + HELLO, ["error", "hello"]),
    worker("op_null", b'{"op": null}\n' + HELLO, ["error", "hello"]),
    worker("unknown_op_with_id", b'{"op": "bogus", "id": 5}\n' + HELLO, ["error", "hello"], ids=[5, None]),
    worker("invalid_utf8", b'{"op": "\xff\xfe"}\n' + HELLO, ["error", "hello"]),
    worker("nul_bytes", b"\0\0\0\n" + HELLO, ["error", "hello"]),
    worker("number_1e999", b'{"op": "hello", "x": 1e999}\n' + HELLO, ["error", "hello"]),
    worker("deep_nesting", b"[" * 100000 + b"]" * 100000 + b"\n" + HELLO, ["error", "hello"]),
    worker("line_48mb", big_line, ["error", "hello"]),
    worker("many_bad_lines", b"x\n" * 2000 + HELLO, ["error"] * 2000 + ["hello"]),
    worker("no_final_newline", b"garbage", ["error"]),
    worker("evaluate_missing_fields", b'{"op": "evaluate", "id": 3}\n', ["error"], ids=[3]),
    worker("evaluate_id_string", b'{"op": "evaluate", "id": "x"}\n', ["error"]),
    worker("evaluate_wrong_types", json.dumps(EVAL_GARBAGE).encode() + b"\n", ["error"], ids=[4]),
    worker("evaluate_huge_count", json.dumps(EVAL_HUGE).encode() + b"\n", ["error"], ids=[6]),
    worker("shutdown_then_garbage", b'{"op": "shutdown"}\ngarbage\n', []),
)


# --------------------------------------------------------------------------
# CMake arguments: optimize_kernel() in a generated project, configure only
# --------------------------------------------------------------------------

def cmake(name, call, stderr, setup_files=None):
    """`cmake -S` of a project whose CMakeLists.txt calls `call` ({spec} etc. replaced).
    Configure must fail (exit 1); its message (CMake folds long lines) names
    optimize_kernel() and matches `stderr`, e.g. the keyword."""
    def setup(ctx):
        if not ctx.suite.build:
            raise RuntimeError("the cmake cases need --build-dir (a build tree with KernelOptimizerConfig.cmake)")
        for rel, data in (setup_files or {}).items():
            data(ctx, rel) if callable(data) else ctx.write(rel, data)
        ctx.write("proj/CMakeLists.txt", "cmake_minimum_required(VERSION 3.25)\nproject(badinput NONE)\n"
                  "find_package(KernelOptimizer REQUIRED)\n" + ctx.fmt(call) + "\n")

    def check(ctx, res):
        flat = re.sub(r"\s+", " ", res.stderr_text)
        if res.returncode == 0:
            return []
        return [] if re.search("optimize_kernel\\(.*" + stderr, flat) else ["stderr (folded) does not match /%s/: %s" % (stderr, flat[:400])]
    argv = ["cmake", "-S", "{dir}/proj", "-B", "{dir}/proj/build", "-DKernelOptimizer_DIR={build}",
            "-Wno-dev"]
    return Case("cmake." + name, argv, exit=1, first="CMake Error", setup=setup, check=check, timeout=60,
                unchanged=False)


add(
    cmake("budget_not_a_number", "optimize_kernel(NAME k SPEC {spec} BUDGET evals=abc)", "BUDGET"),
    cmake("budget_with_semicolon", 'optimize_kernel(NAME k SPEC {spec} BUDGET "evals=10;minutes=2")', "BUDGET"),
    cmake("budget_nan", "optimize_kernel(NAME k SPEC {spec} BUDGET minutes=nan)", "BUDGET"),
    cmake("budget_negative", "optimize_kernel(NAME k SPEC {spec} BUDGET evals=-5)", "BUDGET"),
    cmake("spec_names_missing_source", "optimize_kernel(NAME k SPEC {dir}/missing_src.json)", "nope\\.cu",
          {"missing_src.json": lambda ctx, rel: ctx.write(rel, json.dumps(dict(
              ctx.spec_json(), initial={"source": "nope.cu", "entry": "tiny_naive"})))}),
    cmake("spec_is_directory", "optimize_kernel(NAME k SPEC {dir})", "SPEC"),
    cmake("cache_file_is_directory", "optimize_kernel(NAME k SPEC {spec} CACHE_FILE {dir})", "CACHE_FILE"),
    cmake("benchmark_tolerance_negative", "optimize_kernel(NAME k SPEC {spec} BENCHMARK_TOLERANCE -5)",
          "BENCHMARK_TOLERANCE"),
    cmake("search_strategy_bogus", "optimize_kernel(NAME k SPEC {spec} SEARCH_STRATEGY bogus)", "SEARCH_STRATEGY"),
)


# --------------------------------------------------------------------------
# Huge parameter spaces: sampling strategies work far beyond enumeration
# --------------------------------------------------------------------------

def huge_space(doc, ctx):
    # 16^12 = 2.8e14 configurations; the template ignores the extra defines.
    for i in range(12):
        doc["tuning"]["params"]["P%d" % i] = list(range(1, 17))
    doc["tuning"]["constraints"] = ["BS % 64 == 0", "(P0 + P1) % 2 == 0"]


for strat in ["random", "anneal", "genetic", "surrogate", "portfolio"]:
    add(spec("huge_space_" + strat, huge_space, None, exit=0, unchanged=False,
             cmd=optimize("--strategy", strat, budget="evals=2")))
add(spec("huge_space_default_strategy", huge_space, None, exit=0, unchanged=False, cmd=optimize(budget="evals=2")))
add(spec("huge_space_exhaustive", huge_space, "exhaustive|--strategy", cmd=optimize("--strategy", "exhaustive")))
for c in CASES:
    if c.id.startswith("spec.huge_space_"):
        c.id = c.id.replace("spec.", "space.", 1)
        c.group = "space"
    if c.id.startswith("spec.constraint_names_size"):
        c.id, c.group = "space.constraint_names_size", "space"


# --------------------------------------------------------------------------
# Resources: threads, unbounded work
# --------------------------------------------------------------------------

add(
    # The issue: "cap the count (for example at 4x the hardware threads)": refused
    # (exit 2) or capped with a warning (exit 0); either way the first line says so.
    Case("resource.compile_threads_100000", optimize("--compile-threads", "100000"), exit={0, 2},
         first="--compile-threads", first_always=True, nproc=64, unchanged="on_error",
         note="under ulimit -u: no thread storm, no hang, no abort"),
    # A valid count whose threads cannot all start: a clean exit (any code), no
    # deadlock, no abort. Two limits: main aborts under one and deadlocks under the other.
    Case("resource.compile_threads_cannot_start_5", optimize("--compile-threads", "6"), exit={0, 2, 3},
         first="(?i)thread|--compile-threads|worker|fork", nproc=5, unchanged=False),
    Case("resource.compile_threads_cannot_start_8", optimize("--compile-threads", "6"), exit={0, 2, 3},
         first="(?i)thread|--compile-threads|worker|fork", nproc=8, unchanged=False),
    # --devices with more workers than the process limit allows threads: one
    # thread per device used to unwind the pool's constructor while the threads
    # already started waited on its condition variable (deadlock, SIGTERM
    # ignored). Now a clean error naming --devices (or the workers that could
    # not start), whatever the limit.
    Case("resource.devices_1024_threads_200", optimize("--devices", ",".join(str(i) for i in range(1024))),
         exit={0, 2, 3}, first="(?i)--devices|thread|worker|fork", nproc=200, unchanged=False, timeout=60),
    Case("resource.devices_256_threads_100", optimize("--devices", ",".join(str(i) for i in range(256))),
         exit={0, 2, 3}, first="(?i)--devices|thread|worker|fork", nproc=100, unchanged=False, timeout=60),
    # More devices than a plan may have: refused before any work.
    Case("resource.devices_1025_entries", optimize("--worker-launcher", "env", "--devices",
                                                   ",".join("0" for _ in range(1025))),
         first="--devices"),
    Case("resource.retime_rounds_vs_minutes", optimize("--retime-rounds", "100000000", "--top", "3",
                                                       budget="evals=4,minutes=0.1"),
         exit={0, 2}, first="--retime-rounds", unchanged=False, timeout=30,
         note="the minutes budget bounds the re-timing too (or the count is refused)"),
    Case("resource.top_100000", optimize("--top", "100000", top=None), exit={0, 2}, first="--top",
         unchanged=False),
    # A bad KOPT_INPUT_THREADS is an environment error before any work (it used
    # to surface only at the first buffer of 4Mi elements, deep in a run).
    Case("resource.input_threads_env_optimize", optimize(), exit=3, first="KOPT_INPUT_THREADS='two'",
         env={"KOPT_INPUT_THREADS": "two"}),
    Case("resource.input_threads_env_evaluate", evaluate(), exit=3, first="KOPT_INPUT_THREADS='0'",
         env={"KOPT_INPUT_THREADS": "0"}),
)


# --------------------------------------------------------------------------
# Concurrency: two `optimize --resume` on one folder at once
# --------------------------------------------------------------------------

def history_of(run):
    try:
        return json.loads((run / "history.json").read_text()).get("attempts", [])
    except (OSError, ValueError):
        return None


def consistent(run):
    """Every candidate history.json names has a folder whose params.json says the same."""
    fails = []
    for a in history_of(run) or []:
        d = run / "candidates" / ("%04d" % a["index"])
        try:
            params = json.loads((d / "params.json").read_text())
        except (OSError, ValueError) as e:
            fails.append("candidates/%04d/params.json: %s" % (a["index"], e))
            continue
        if params != a.get("params", {}):
            fails.append("candidates/%04d holds %s but history.json says %s" % (a["index"], params, a.get("params")))
    return fails


def wait_until(pred, timeout, step=0.05):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if pred():
            return True
        time.sleep(step)
    return False


def concurrent_resume(ctx):
    from run_bad_input import snapshot, compare, check_result, Result
    fails = []
    start = len(history_of(ctx.run))
    first = ctx.spawn(resume(budget="evals=6"), env={"KOPT_FAKE_EVAL_MS": "1500"}, out_name="first")
    try:
        if not wait_until(lambda: len(history_of(ctx.run) or []) > start, 30):
            return ["the first run recorded nothing within 30 s"]
        os.kill(first.pid, signal.SIGSTOP)  # hold it mid-run: the folder is quiet, the lock is held
        before = snapshot(ctx.run)
        second = ctx.run_cmd(resume(budget="evals=6"), timeout=20, out_name="second")
        c = Case("concurrency.second", exit=2, first="run-001")
        fails += ["second run: " + f for f in check_result(c, second)]
        if str(first.pid) not in second.stderr_text:
            fails.append("the second run does not name the holder (pid %d): %s" % (first.pid,
                                                                                   second.first_line[:300]))
        fails += ["second run changed the folder: " + p for p in compare(before, snapshot(ctx.run), ["."])[:10]]
    finally:
        try:
            os.kill(first.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    res = ctx.wait(first, 40)
    if res.timed_out or res.returncode != 0:
        fails.append("the first run: %s: %s" % ("timed out" if res.timed_out else "exit %d" % res.returncode,
                                                res.first_line[:300]))
    fails += ["after both: " + f for f in consistent(ctx.run)]
    return fails


add(Case("concurrency.two_resumes_one_folder", custom=concurrent_resume, run_folder=True, unchanged=False,
         timeout=90, note="the second exits 2 naming the holder; the folder is unchanged"))


def two_new_runs(ctx):
    """Two runs started at once in one results folder get two folders."""
    fails = []
    a = ctx.spawn(optimize(budget="evals=2"), out_name="a")
    b = ctx.spawn(optimize(budget="evals=2"), out_name="b")
    ra, rb = ctx.wait(a, 60), ctx.wait(b, 60)
    for tag, r in (("first", ra), ("second", rb)):
        if r.timed_out or r.returncode != 0:
            fails.append("%s run: %s: %s" % (tag, "timed out" if r.timed_out else "exit %d" % r.returncode,
                                             r.first_line[:300]))
    runs = sorted(p.name for p in (ctx.dir / "results").glob("run-*"))
    if len(runs) != 2:
        fails.append("expected two run folders, found %s" % runs)
    for r in runs:
        fails += [r + ": " + f for f in consistent(ctx.dir / "results" / r)]
    return fails


add(Case("concurrency.two_new_runs_one_results_dir", custom=two_new_runs, unchanged=False, timeout=90))


# --------------------------------------------------------------------------
# Signals: SIGTERM / Ctrl-C mid-run
# --------------------------------------------------------------------------

def interrupted(sig, code, group):
    def drive(ctx):
        from run_bad_input import snapshot
        fails = []
        run = ctx.dir / "results" / "run-001"
        p = ctx.spawn(optimize(budget="evals=6"), env={"KOPT_FAKE_EVAL_MS": "1000"}, out_name="run")
        if not wait_until(lambda: len(history_of(run) or []) >= 2, 40):
            ctx.wait(p, 1)
            return ["fewer than 2 attempts recorded within 40 s"]
        recorded = history_of(run)
        cands = snapshot(run / "candidates")
        named = {"%04d" % a["index"] for a in recorded}
        (os.killpg if group else os.kill)(p.pid, sig)
        res = ctx.wait(p, 20)
        if res.timed_out:
            return ["still running 20 s after %s" % signal.Signals(sig).name]
        if res.returncode != code:
            fails.append("expected exit %d, got %s" % (code, "signal %d" % -res.returncode if res.returncode < 0
                                                           else "exit %d" % res.returncode))
        try:
            json.loads((run / "summary.json").read_text())
        except (OSError, ValueError) as e:
            fails.append("no valid summary.json: %s" % e)
        after = history_of(run) or []
        for a in recorded:
            if a["index"] > len(after) or after[a["index"] - 1] != a:
                fails.append("attempt %d recorded before the signal is gone or changed" % a["index"])
        now = snapshot(run / "candidates")
        for rel, what in cands.items():
            if rel.split(os.sep)[0] in named and now.get(rel) != what:
                fails.append("candidates/%s changed" % rel)
        if "--resume" not in res.stderr_text:
            fails.append("stderr does not say how to resume (--resume): %s" % short_text(res.stderr_text))
        fails += consistent(run)
        return fails
    return drive


def short_text(s):
    s = s.strip().replace("\n", " | ")
    return s[:300]


add(
    Case("signal.sigterm_mid_run", custom=interrupted(signal.SIGTERM, 143, group=False), unchanged=False,
         timeout=90, note="exit 143, summary.json written, recorded attempts kept"),
    Case("signal.ctrl_c_mid_run", custom=interrupted(signal.SIGINT, 130, group=True), unchanged=False,
         timeout=90, note="SIGINT to the whole process group, as a terminal sends it"),
)


# --------------------------------------------------------------------------
# URLs with credentials: never printed, never stored (the agent's base URL)
# --------------------------------------------------------------------------

def no_sentinel(ctx, res):
    """SENTINEL appears nowhere: not on stdout or stderr, not in a file of the case folder."""
    fails = []
    for name, data in (("stdout", res.stdout), ("stderr", res.stderr)):
        if b"SENTINEL" in data:
            i = data.index(b"SENTINEL")
            fails.append("%s shows a credential: ...%s..." % (name, data[max(0, i - 60):i + 20].decode(errors="replace")))
    for dirpath, _, filenames in os.walk(ctx.dir):
        for f in filenames:
            p = os.path.join(dirpath, f)
            try:
                with open(p, "rb") as fh:
                    if b"SENTINEL" in fh.read(64 << 20):
                        fails.append("%s stores a credential" % os.path.relpath(p, ctx.dir))
            except OSError:
                pass
    return fails


URL = "http://user:SENTINEL1@127.0.0.1:1/v1?key=SENTINEL2&token=SENTINEL3"
add(
    Case("urls.base_url_option_credentials", optimize("--strategy", "agent", "--llm-base-url", URL,
                                                      "--llm-timeout", "2", budget="evals=1"),
         exit={0, 1, 2, 3}, unchanged=False, check=no_sentinel, timeout=90,
         note="no server listens: the agent fails; the URL's user-info and key= values are never shown"),
    Case("urls.base_url_env_credentials", optimize("--strategy", "agent", "--llm-timeout", "2", budget="evals=1"),
         exit={0, 1, 2, 3}, unchanged=False, check=no_sentinel, timeout=90, env={"OPENAI_BASE_URL": URL}),
)
