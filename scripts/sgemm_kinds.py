#!/usr/bin/env python3
"""Writes the inputs of scripts/check_sgemm_kinds.sh: representative configurations of every KIND
of templates/sgemm/sgemm_tiled.cu, as kernel files for `kopt evaluate`, a spec for them, and a
synthetic generated pair for bench/.

    python3 scripts/sgemm_kinds.py OUT_DIR [--kind K]...

Writes into OUT_DIR:
  sgemm_kinds.json   templates/sgemm/sgemm.json with every correctness case, a handful of
                     DeepBench inference-server shapes (one or two per shape class) as the
                     performance cases, quick timing (5 warm-up + 30 launches) and absolute paths
  cfg_NN.cu          `// kopt:param` lines (and the same #defines) for configuration NN, then
                     an #include of the template by its absolute path: configuration NN (kopt evaluate --kernel cfg_*.cu evaluates them all in one
                     worker session)
  configs.txt        NN, KIND and the parameters of each configuration
  gen/sgemm.cu, gen/sgemm_launch.h
                     every configuration as one variant of a generated pair in the format of
                     `kopt generate` (bench/README.md, "The launch header it expects"), so that
                     `bench/run.sh OUT_DIR/gen --shapes-file ...` times each of them on each shape
                     against cuBLAS. NOT a tuned kernel: the dispatch in launch_config() is a
                     placeholder rule by shape class (see select_variant() in the header).

Every configuration is checked against sgemm.json's constraints (with the H200's constants)
before anything is written: a configuration outside the space is an error here.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TEMPLATE_DIR = os.path.join(ROOT, "templates", "sgemm")
sys.path.insert(0, TEMPLATE_DIR)
import check_configs  # noqa: E402  (the spec's expression grammar and the H200 constants)

K0 = dict(KIND=0, SPLITK=1)
K1_PINNED = dict(KIND=1, BN=64, BK=8, WM=32, WN=32, STAGES=1, ASYNC_A=0, PAD=0, MINB=1)

# (label, parameters). KIND 0: the tiled kernel (SPLITK > 1: cluster split-K); KIND 1: the row kernel.
CONFIGS = [
    ("k0 128x256 best single", dict(K0, BM=128, BN=256, BK=16, WM=64, WN=64, TM=8, TN=16, STAGES=3, ASYNC_A=0, PAD=0, MINB=1)),
    ("k0 128x64 small grids", dict(K0, BM=128, BN=64, BK=16, WM=64, WN=32, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=1)),
    ("k0 128x128 split 2", dict(K0, BM=128, BN=128, BK=16, WM=64, WN=32, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=1, SPLITK=2)),
    ("k0 64x128 split 4", dict(K0, BM=64, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=1, SPLITK=4)),
    ("k0 64x64 split 8", dict(K0, BM=64, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=1, SPLITK=8)),
    ("k0 128x256 split 2", dict(K0, BM=128, BN=256, BK=16, WM=64, WN=64, TM=8, TN=16, STAGES=3, ASYNC_A=0, PAD=4, MINB=1, SPLITK=2)),
    ("k1 N=1 8 rows 256 thr", dict(K1_PINNED, BM=128, TM=8, TN=1, SPLITK=1)),
    ("k1 N=1 16 rows split 8", dict(K1_PINNED, BM=128, TM=16, TN=1, SPLITK=8)),
    ("k1 N=2 8 rows 256 thr", dict(K1_PINNED, BM=128, TM=8, TN=2, SPLITK=1)),
    ("k1 N=2 16 rows split 4", dict(K1_PINNED, BM=128, TM=16, TN=2, SPLITK=4)),
    ("k1 N=4 8 rows 128 thr", dict(K1_PINNED, BM=64, TM=8, TN=4, SPLITK=1)),
    ("k1 N=4 16 rows split 8", dict(K1_PINNED, BM=64, TM=16, TN=4, SPLITK=8)),
]

# Performance cases of sgemm_kinds.json: DeepBench inference-server shapes, by class.
PERF_SHAPES = [(512, 1, 500000), (1024, 4, 500000), (35, 700, 2048), (35, 1500, 2560), (7680, 1, 2560),
               (6144, 4, 2048), (3072, 2, 1024), (512, 1500, 2048), (1024, 3000, 2560), (4096, 2048, 1024)]


def full_config(params, names):
    cfg = dict(params)
    missing = [n for n in names if n not in cfg]
    if missing:
        raise SystemExit("sgemm_kinds: configuration %s misses %s" % (params, missing))
    return {n: cfg[n] for n in names}


def check(spec, cfg):
    env = dict(check_configs.H200, **cfg)
    for text in spec["tuning"]["constraints"]:
        if not check_configs.Expr(text).eval(env):
            return text
    for n, v in cfg.items():
        if v not in spec["tuning"]["params"][n]:
            return "%s=%d is not one of its values" % (n, v)
    return None


def launch_cxx(expr_text):
    return expr_text  # the expressions are C++ as written (integer arithmetic, comparisons as 0/1)


def write_inputs(out, spec, spec_file, configs, perf_shapes, select_lines, tool, extra_cases=()):
    """Writes into `out`: `spec_file` (the spec with its correctness cases, `extra_cases` and
    `perf_shapes` as performance cases, quick timing, absolute paths), cfg_NN.cu and configs.txt
    (one kernel file per (label, params) of `configs`), and gen/sgemm.cu + gen/sgemm_launch.h with
    every configuration as a variant; `select_lines` are the C++ lines of select_variant(M, N, K)'s
    body (the placeholder dispatch). `tool` names the script in the files' comments."""
    names = sorted(spec["tuning"]["params"])
    # The template by its absolute path, not its text: it includes headers beside it (sgemm_cluster.cuh,
    # ...), which kopt (local includes) and nvcc find from the template's folder, not from `out`.
    tmpl_src = '#include "%s"\n' % os.path.join(TEMPLATE_DIR, spec["template"]["source"])
    os.makedirs(os.path.join(out, "gen"), exist_ok=True)
    for old in os.listdir(out):  # a previous call's configurations (another --kind)
        if old.startswith("cfg_") and old.endswith(".cu"):
            os.remove(os.path.join(out, old))

    # -- the spec: every correctness case, the performance shapes, quick timing ---------------------
    s = dict(spec)
    s["name"] = os.path.splitext(spec_file)[0].replace("_", "-")
    for key in ("reference", "initial", "template"):
        s[key] = dict(s[key], source=os.path.join(TEMPLATE_DIR, s[key]["source"]))
    perf_names = set("%dx%dx%d" % mnk for mnk in perf_shapes)
    # (a correctness case that is also a performance shape here is checked as the performance case)
    cases = [c for c in spec["cases"] if c["role"] == "correctness" and c["name"] not in perf_names]
    cases += list(extra_cases)
    for m, n, k in perf_shapes:
        cases.append({"name": "%dx%dx%d" % (m, n, k), "sizes": {"M": m, "N": n, "K": k}, "role": "performance"})
    s["cases"] = cases
    s["timing"] = dict(spec.get("timing", {}), warmup=5, iterations=30)
    with open(os.path.join(out, spec_file), "w") as f:
        json.dump(s, f, indent=1)

    # -- one kernel file per configuration ----------------------------------------------------------
    with open(os.path.join(out, "configs.txt"), "w") as listing:
        for i, (label, cfg) in enumerate(configs):
            head = "// %s (scripts/%s)\n" % (label, tool)
            head += "".join("// kopt:param %s=%d\n" % (n, cfg[n]) for n in names)
            # The same values as #defines (as kopt's best.cu has them): the file also builds with nvcc.
            head += "".join("#ifndef %s\n#define %s %d\n#endif\n" % (n, n, cfg[n]) for n in names)
            with open(os.path.join(out, "cfg_%02d.cu" % i), "w") as f:
                f.write(head + tmpl_src)
            listing.write("cfg_%02d  %-26s %s\n" % (i, label, ",".join("%s=%d" % (n, cfg[n]) for n in names)))

    # -- the synthetic generated pair for bench/ ----------------------------------------------------
    entry = spec["template"]["entry"]
    launch = spec["template"]["launch"]
    grid = [str(x) for x in launch["grid"]] + ["1"] * (3 - len(launch["grid"]))
    block = [str(x) for x in launch["block"]] + ["1"] * (3 - len(launch["block"]))
    shared = str(launch.get("shared_bytes", 0))
    n = len(configs)
    cu = ["// Generated by scripts/%s (NOT kopt generate, NOT tuned): %d configurations of" % (tool, n),
          "// %s as variants, entry points %s_v0..%s_v%d, for bench/ to time each on each shape." % (
              entry, entry, entry, n - 1)]
    for i, (label, cfg) in enumerate(configs):
        cu.append("\n// ===== variant %d: %s =====" % (i, label))
        cu += ["#undef %s" % p for p in names]
        cu += ["#define %s %d" % (p, cfg[p]) for p in names]
        cu.append("#define %s %s_v%d" % (entry, entry, i))
        cu.append("namespace kopt_variant_%d {" % i)
        cu.append(tmpl_src)
        cu.append("}  // namespace kopt_variant_%d" % i)
        cu.append("#undef %s" % entry)
        cu.append("using kopt_variant_%d::%s_v%d;" % (i, entry, i))
    cu += ["#undef %s" % p for p in names]
    with open(os.path.join(out, "gen", "sgemm.cu"), "w") as f:
        f.write("\n".join(cu) + "\n")

    h = ["// Generated by scripts/%s: the launch configuration of sgemm.cu's %d variants." % (tool, n),
         "// NOT a tuned dispatch: launch_config() picks by a placeholder rule (select_variant below);",
         "// bench/ --all-variants times every variant anyway.",
         "#pragma once", "", "#include <cstddef>", "", "namespace kopt_sgemm {", "",
         "inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }",
         "inline long long min(long long a, long long b) { return a < b ? a : b; }",
         "inline long long max(long long a, long long b) { return a > b ? a : b; }",
         "", "constexpr const char* kEntry = \"%s_v0\";" % entry, "constexpr int kVariants = %d;" % n,
         "constexpr const char* kVariantLabels[] = {%s};" % ", ".join(
             json.dumps(l + ": " + ",".join("%s=%d" % (p, c[p]) for p in names)) for l, c in configs),
         "", "struct LaunchConfig {", "  unsigned grid[3];", "  unsigned block[3];", "  std::size_t shared_bytes;",
         "  int variant;", "};", ""]
    for i, (_, cfg) in enumerate(configs):
        h.append("namespace variant%d {" % i)
        h += ["constexpr long long %s = %d;" % (p, cfg[p]) for p in names]
        h.append("inline LaunchConfig launch_config(long long M, long long N, long long K) {")
        h.append("  (void)M; (void)N; (void)K;")
        h.append("  LaunchConfig c;")
        h += ["  c.grid[%d] = static_cast<unsigned>(%s);" % (d, launch_cxx(grid[d])) for d in range(3)]
        h += ["  c.block[%d] = static_cast<unsigned>(%s);" % (d, launch_cxx(block[d])) for d in range(3)]
        h.append("  c.shared_bytes = static_cast<std::size_t>(%s);" % launch_cxx(shared))
        h.append("  c.variant = %d;" % i)
        h.append("  return c;")
        h.append("}")
        h.append("}  // namespace variant%d" % i)
        h.append("")
    h.append("inline LaunchConfig launch_config_variant(int v, long long M, long long N, long long K) {")
    h.append("  switch (v) {")
    h += ["    case %d: return variant%d::launch_config(M, N, K);" % (i, i) for i in range(1, n)]
    h.append("    default: return variant0::launch_config(M, N, K);")
    h.append("  }")
    h.append("}")
    h += [""] + select_lines + ["",
          "inline LaunchConfig launch_config(long long M, long long N, long long K) {",
          "  return launch_config_variant(select_variant(M, N, K), M, N, K);", "}", "",
          "}  // namespace kopt_sgemm", "", "#ifdef __CUDACC__"]
    for i in range(n):
        h.append("extern \"C\" __global__ void %s_v%d(const float* A, const float* B, float* C, int M, int N, int K);"
                 % (entry, i))
    h += ["namespace kopt_sgemm {",
          "inline constexpr decltype(&::%s_v0) kernels[] = {%s};" % (
              entry, ", ".join("&::%s_v%d" % (entry, i) for i in range(n))),
          "inline constexpr auto kernel = kernels[0];",
          "inline auto kernel_for(const LaunchConfig& c) { return kernels[c.variant]; }",
          "}  // namespace kopt_sgemm", "#endif"]
    with open(os.path.join(out, "gen", "sgemm_launch.h"), "w") as f:
        f.write("\n".join(h) + "\n")


def pick(configs, pred):
    """The first configuration for which pred(params) holds, else 0."""
    for i, (_, c) in enumerate(configs):
        if pred(c):
            return i
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--kind", type=int, action="append", default=[], help="only this KIND (repeatable)")
    args = ap.parse_args()
    spec_path = os.path.join(TEMPLATE_DIR, "sgemm.json")
    spec = json.load(open(spec_path))
    names = sorted(spec["tuning"]["params"])
    configs = [(l, full_config(p, names)) for l, p in CONFIGS if not args.kind or p["KIND"] in args.kind]
    bad = [(l, why) for l, c in configs for why in [check(spec, c)] if why]
    if bad:
        for l, why in bad:
            print("sgemm_kinds: %s is not in the space: violates %s" % (l, why), file=sys.stderr)
        return 2
    v_rows = {tn: pick(configs, lambda c, tn=tn: c["KIND"] == 1 and c["TN"] == tn and c["SPLITK"] == 1)
              for tn in (1, 2, 4)}
    v_deep = {tn: pick(configs, lambda c, tn=tn: c["KIND"] == 1 and c["TN"] == tn and c["SPLITK"] > 1)
              for tn in (1, 2, 4)}
    v_small_m = pick(configs, lambda c: c["KIND"] == 0 and c["SPLITK"] == 8)
    v_mid = pick(configs, lambda c: c["KIND"] == 0 and c["SPLITK"] == 2 and c["BN"] == 128)
    select = ["// Placeholder rule (not measured): skinny N -> the row kernel for its TN, small M -> split 8,",
              "// min(M, N) <= 1024 -> split 2, else variant 0.",
              "inline int select_variant(long long M, long long N, long long K) {",
              "  const int tn = N <= 1 ? 1 : N <= 2 ? 2 : 4;",
              "  if (N <= 4 && K >= 100000) return tn == 1 ? %d : tn == 2 ? %d : %d;" % (
                  v_deep[1], v_deep[2], v_deep[4]),
              "  if (N <= 4) return tn == 1 ? %d : tn == 2 ? %d : %d;" % (v_rows[1], v_rows[2], v_rows[4]),
              "  if (M <= 64) return %d;" % v_small_m,
              "  if ((M < N ? M : N) <= 1024) return %d;" % v_mid,
              "  return 0;", "}"]
    write_inputs(args.out, spec, "sgemm_kinds.json", configs, PERF_SHAPES, select, "sgemm_kinds.py")
    print("sgemm_kinds: %d configurations, %d performance cases -> %s" % (len(configs), len(PERF_SHAPES), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
