#!/usr/bin/env python3
"""Writes the inputs of scripts/check_tf32.sh: representative configurations of the split-TF32
SGEMM template (templates/sgemm/sgemm_tf32.cu, spec templates/sgemm/sgemm_tf32.json) as kernel
files for `kopt evaluate`, a spec for them with adversarial accuracy cases, and a synthetic
generated pair for bench/.

    python3 scripts/tf32_configs.py OUT_DIR
    python3 scripts/tf32_configs.py --wgmma OUT_DIR    the seeds of sgemm_tf32_wgmma.json instead:
                                                       cfg_NN.cu, configs.txt, tf32_wgmma_kinds.json
                                                       (every correctness case, the adversarial ones,
                                                       two flagship shapes), adv_*.npy, gen/

Writes into OUT_DIR (the formats of scripts/sgemm_kinds.py):
  tf32_kinds.json    sgemm_tf32.json with every correctness case, the adversarial cases below and a
                     handful of DeepBench and flagship shapes as performance cases (5 + 30 launches)
  accuracy.json      sgemm_tf32.json with the adversarial cases added to its own (for `kopt optimize`,
                     which checks the cuBLAS baseline on every case too: the run folder then holds
                     cuBLAS's errors beside every candidate's)
  adv_*.npy          the adversarial inputs (float32, written here with the standard library):
                       wide-exponent  A, B uniform in (-1, 1) times 2^e, e uniform in -20..20
                       split-tie      random high mantissa bits, the 13 low ones at the TF32 rounding
                                      tie 0x1000 (+-3): x - tf32(x) at its largest, the split loses
                                      its last bit
                     each 256 x 256 x 4096
  cfg_NN.cu, configs.txt, gen/sgemm.cu, gen/sgemm_launch.h
                     as scripts/sgemm_kinds.py writes them (NOT a tuned kernel: a placeholder
                     dispatch by shape)

Every configuration is checked against sgemm_tf32.json's constraints (H200 constants) first.
"""

import argparse
import array
import json
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sgemm_kinds  # noqa: E402  (write_inputs, check, full_config, pick; TEMPLATE_DIR)

P = dict(SPLITK=1, SWZ=8, MINB=1, CVT=2, ACC2=1)
# (label, parameters): at most 12 (one GPU call). Every configuration has the two-level sums (ACC2 =
# 1, the only value the spec allows: one-level sums broke the 2x error contract on deep K). Large
# shapes: 8-warp 128x128 blocks of 64 x 32 or 32 x 64 warp tiles (no spill; 64 x 64 warp tiles do
# not fit the registers with two-level sums), the three CVT roundings side by side, BK 16, 256x64,
# 4 stages; mid shapes: 4-warp blocks, two per SM; deep K with few outputs: cluster split-K.
CONFIGS = [
    ("tf32 128x128x32 w64x32 cvt2", dict(P, BM=128, BN=128, BK=32, WM=64, WN=32, STAGES=3)),
    ("tf32 128x128x32 w64x32 cvt1", dict(P, BM=128, BN=128, BK=32, WM=64, WN=32, STAGES=3, CVT=1)),
    ("tf32 128x128x32 w64x32 cvt0", dict(P, BM=128, BN=128, BK=32, WM=64, WN=32, STAGES=3, CVT=0)),
    ("tf32 128x128x32 w32x64 4st", dict(P, BM=128, BN=128, BK=32, WM=32, WN=64, STAGES=4)),
    ("tf32 128x128x16 w64x32 4st", dict(P, BM=128, BN=128, BK=16, WM=64, WN=32, STAGES=4)),
    ("tf32 256x64x32 w64x32", dict(P, BM=256, BN=64, BK=32, WM=64, WN=32, STAGES=3)),
    ("tf32 128x128x32 w64x32 4st", dict(P, BM=128, BN=128, BK=32, WM=64, WN=32, STAGES=4)),
    ("tf32 128x64x16 4 warps 2/SM", dict(P, BM=128, BN=64, BK=16, WM=64, WN=32, STAGES=4, MINB=2)),
    ("tf32 64x64x32 2/SM", dict(P, BM=64, BN=64, BK=32, WM=32, WN=32, STAGES=4, SWZ=1, MINB=2)),
    ("tf32 64x128x32 w32x64", dict(P, BM=64, BN=128, BK=32, WM=32, WN=64, STAGES=4)),
    ("tf32 64x64 split 4", dict(P, BM=64, BN=64, BK=32, WM=32, WN=32, STAGES=4, SPLITK=4, SWZ=1, MINB=2)),
    ("tf32 64x32 split 8", dict(P, BM=64, BN=32, BK=32, WM=32, WN=16, STAGES=4, SPLITK=8, SWZ=1, MINB=2)),
]

# Performance cases of tf32_kinds.json (kopt evaluate): flagship and DeepBench shapes by class.
PERF_SHAPES = [(4096, 2048, 1024), (3000, 1000, 2000), (35, 700, 2048), (512, 1500, 2048), (1024, 3000, 2560),
               (6144, 4, 2048)]

ADV_SHAPE = (256, 256, 4096)


def adversarial(kind, count, rng):
    """`count` float32 values of one adversarial class, as an array('f')."""
    out = array.array("f")
    for _ in range(count):
        if kind == "wide-exponent":
            out.append(rng.uniform(-1.0, 1.0) * 2.0 ** rng.randint(-20, 20))
        else:  # split-tie
            m = (rng.getrandbits(23) & 0x7FE000) | (0x1000 ^ rng.getrandbits(2))
            e = 127 - rng.randint(0, 3)
            bits = (rng.getrandbits(1) << 31) | (e << 23) | m
            out.append(struct.unpack("<f", struct.pack("<I", bits))[0])
    return out


def write_npy(path, values):
    """A little-endian float32 .npy file (format version 1.0) of shape (len(values),)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"  # total header a multiple of 64
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        if sys.byteorder != "little":
            values.byteswap()
        f.write(values.tobytes())


def adversarial_cases(out):
    m, n, k = ADV_SHAPE
    rng = random.Random(20261206)
    cases = []
    for kind in ("wide-exponent", "split-tie"):
        name = "%s-%dx%dx%d" % (kind, m, n, k)
        files = {}
        for buf, count in (("A", m * k), ("B", k * n)):
            fname = "adv_%s_%s.npy" % (kind.replace("-", "_"), buf)
            write_npy(os.path.join(out, fname), adversarial(kind, count, rng))
            files[buf] = {"kind": "npy", "path": os.path.abspath(os.path.join(out, fname))}
        cases.append({"name": name, "sizes": {"M": m, "N": n, "K": k}, "role": "correctness", "inputs": files})
    return cases


# Performance cases of the wgmma configurations' spec (kopt evaluate, --wgmma): two flagship shapes.
WGMMA_PERF_SHAPES = [(4096, 2048, 1024), (3000, 1000, 2000)]


def write_wgmma(out):
    """The seeds of sgemm_tf32_wgmma.json as kernel files and a spec with every correctness case, the
    adversarial cases and two flagship shapes (kopt evaluate in check_tf32.sh's wgmma stage)."""
    spec = json.load(open(os.path.join(sgemm_kinds.TEMPLATE_DIR, "sgemm_tf32_wgmma.json")))
    names = sorted(spec["tuning"]["params"])
    configs = []
    for seed in spec["tuning"]["seeds"]:
        cfg = sgemm_kinds.full_config(seed, names)
        label = "wgmma %dx%d k%d kstep%d layout%d" % (64 * cfg["WGM"], cfg["WN"] * cfg["WGN"], cfg["BK"], cfg["KSTEP"],
                                                      cfg["LAYOUT"])
        label += "".join(" %s%d" % (k.lower(), cfg[k]) for k in ("DBUF", "AREG", "SPLITK", "DEFER") if cfg.get(k, 0) > (k == "SPLITK"))
        configs.append((label, cfg))
    os.makedirs(out, exist_ok=True)
    adv = adversarial_cases(out)
    select = ["// Placeholder rule (not measured): variant 0 everywhere.",
              "inline int select_variant(long long M, long long N, long long K) {",
              "  (void)M; (void)N; (void)K;", "  return 0;", "}"]
    sgemm_kinds.write_inputs(out, spec, "tf32_wgmma_kinds.json", configs, WGMMA_PERF_SHAPES, select,
                             "tf32_configs.py --wgmma", extra_cases=adv)
    print("tf32_configs --wgmma: %d configurations (the spec's seeds) -> %s" % (len(configs), out))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--wgmma", action="store_true",
                    help="write the seeds of sgemm_tf32_wgmma.json instead (kernel files, spec, configs.txt)")
    args = ap.parse_args()
    if args.wgmma:
        return write_wgmma(args.out)
    spec = json.load(open(os.path.join(sgemm_kinds.TEMPLATE_DIR, "sgemm_tf32.json")))
    names = sorted(spec["tuning"]["params"])
    configs = [(l, sgemm_kinds.full_config(p, names)) for l, p in CONFIGS]
    bad = [(l, why) for l, c in configs for why in [sgemm_kinds.check(spec, c)] if why]
    if bad:
        for l, why in bad:
            print("tf32_configs: %s is not in the space: violates %s" % (l, why), file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    adv = adversarial_cases(args.out)
    big = sgemm_kinds.pick(configs, lambda c: c["BM"] == 128 and c["BN"] == 64)
    small = sgemm_kinds.pick(configs, lambda c: c["BM"] == 64 and c["SPLITK"] == 1)
    split4 = sgemm_kinds.pick(configs, lambda c: c["SPLITK"] == 4)
    split8 = sgemm_kinds.pick(configs, lambda c: c["SPLITK"] == 8)
    select = ["// Placeholder rule (not measured): N <= 16 or M <= 64 -> split 8, deep K on a small grid ->",
              "// split 4, fewer than 132 tiles of 128x128 -> 128x64 or 64x64, else variant 0.",
              "inline int select_variant(long long M, long long N, long long K) {",
              "  if (N <= 16 || M <= 64) return %d;" % split8,
              "  const long long tiles = ceil_div(M, 128) * ceil_div(N, 128);",
              "  if (tiles < 32 && K >= 4 * (M > N ? M : N)) return %d;" % split4,
              "  if (tiles < 66) return %d;" % small,
              "  if (tiles < 132) return %d;" % big,
              "  return 0;", "}"]
    sgemm_kinds.write_inputs(args.out, spec, "tf32_kinds.json", configs, PERF_SHAPES, select, "tf32_configs.py",
                             extra_cases=adv)
    acc = dict(spec)
    for key in ("reference", "initial", "template"):
        acc[key] = dict(acc[key], source=os.path.join(sgemm_kinds.TEMPLATE_DIR, acc[key]["source"]))
    acc["name"] = "sgemm-tf32-accuracy"
    acc["cases"] = spec["cases"] + adv
    with open(os.path.join(args.out, "accuracy.json"), "w") as f:
        json.dump(acc, f, indent=1)
    print("tf32_configs: %d configurations, %d performance cases, %d adversarial cases -> %s" % (
        len(configs), len(PERF_SHAPES), len(adv), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
