#!/usr/bin/env python3
"""Enumerates the tuning space of a kopt workload spec and compiles a sample with nvcc.

Reads the spec (default: sgemm.json beside this script), evaluates its tuning constraints for
every point of the cartesian product of the parameter values, with the device constants of an
H200 (override with --const NAME=VALUE), and prints the size of the valid space. Then it
compiles a sample of the valid configurations (the extremes of the space, the known-good points
listed below and a seeded random draw) with

    nvcc -arch=sm_90 -cubin -Xptxas -v -DNAME=VALUE ... <template>

(sm_90a instead for a template whose `// kopt:options` line names --gpu-architecture=sm_90a)
and reports, per configuration, registers, spill stores/loads, stack frame, static and dynamic
shared memory and threads per block. It also checks that the template's `// kopt:` launch
annotations and the spec's template.launch agree, and that the dynamic shared memory and the
thread count fit the device. Exit status: 0 when every compiled configuration built with no
spill and no stack frame, 1 otherwise, 2 on a usage or spec error.

    python3 check_configs.py                 # 30 configurations
    python3 check_configs.py -n 60 -j 4      # 60 of them, 4 nvcc at a time
    python3 check_configs.py --all           # every valid configuration (slow)
    python3 check_configs.py --list          # print the valid configurations, compile none
    python3 check_configs.py --from FILE     # the NAME=V,... lines of FILE (e.g. --list output)
    python3 check_configs.py --config BM=128,BN=256,BK=16,WM=64,WN=64,TM=8,TN=16,STAGES=3,ASYNC_A=1,PAD=4,MINB=1

Python 3 standard library only. The expression grammar is the one of kopt (tool/src/spec/expr.h):
integers, names, + - * / % (C truncation), comparisons, ! && ||, unary -, and the functions
ceil_div, min, max, abs, pow2, log2, is_pow2, align_up, with 64-bit overflow checks.
"""

import argparse
import concurrent.futures
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# Device constants a constraint may name (an H100/H200, sm_90, with the opt-in shared limit).
H200 = {
    "MAX_SHARED_PER_BLOCK": 232448,
    "MAX_THREADS_PER_BLOCK": 1024,
    "REGS_PER_SM": 65536,
    "SM_COUNT": 132,
    "WARP_SIZE": 32,
}

# Points that must be in the space (from the performance probe), compiled on every run. The KIND 0
# points of the probe predate KIND and SPLITK: they get KIND=0, SPLITK=1 below.
KNOWN_GOOD = [
    dict(BM=128, BN=256, BK=16, WM=64, WN=64, TM=8, TN=16, STAGES=3, ASYNC_A=1, PAD=4, MINB=1),
    dict(BM=128, BN=256, BK=16, WM=64, WN=64, TM=8, TN=16, STAGES=3, ASYNC_A=0, PAD=4, MINB=1),
    dict(BM=128, BN=256, BK=16, WM=32, WN=128, TM=8, TN=16, STAGES=3, ASYNC_A=1, PAD=4, MINB=1),
    dict(BM=128, BN=256, BK=16, WM=64, WN=64, TM=8, TN=16, STAGES=1, ASYNC_A=0, PAD=4, MINB=1),
    dict(BM=128, BN=128, BK=8, WM=64, WN=32, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=2),
    dict(BM=128, BN=128, BK=16, WM=64, WN=32, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=1),
    dict(BM=128, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, STAGES=2, ASYNC_A=0, PAD=4, MINB=2),
    dict(BM=128, BN=128, BK=8, WM=64, WN=32, TM=8, TN=8, STAGES=1, ASYNC_A=0, PAD=4, MINB=2),
    dict(BM=64, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=1),
    dict(BM=64, BN=128, BK=16, WM=64, WN=32, TM=8, TN=8, STAGES=3, ASYNC_A=0, PAD=4, MINB=1),
    dict(BM=64, BN=128, BK=16, WM=64, WN=64, TM=8, TN=16, STAGES=3, ASYNC_A=1, PAD=4, MINB=1),
    dict(BM=64, BN=128, BK=16, WM=32, WN=128, TM=8, TN=16, STAGES=4, ASYNC_A=1, PAD=4, MINB=1),
    dict(BM=64, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, STAGES=1, ASYNC_A=0, PAD=4, MINB=1),
    dict(BM=64, BN=128, BK=8, WM=32, WN=64, TM=8, TN=8, STAGES=2, ASYNC_A=1, PAD=4, MINB=1),
    # KIND 0 with cluster split-K (small M, outputs that leave SMs idle, deep K)
    dict(BM=64, BN=64, BK=16, WM=32, WN=64, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=1, SPLITK=8),
    dict(BM=64, BN=128, BK=16, WM=32, WN=64, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=1, SPLITK=4),
    dict(BM=128, BN=128, BK=16, WM=64, WN=32, TM=8, TN=8, STAGES=3, ASYNC_A=1, PAD=4, MINB=1, SPLITK=2),
    dict(BM=128, BN=256, BK=16, WM=64, WN=64, TM=8, TN=16, STAGES=3, ASYNC_A=0, PAD=4, MINB=1, SPLITK=2),
    # KIND 1, the row kernel: BM = threads / 2, TM rows, TN columns; the other parameters pinned
    dict(KIND=1, BM=128, TM=8, TN=1, SPLITK=1),
    dict(KIND=1, BM=128, TM=16, TN=1, SPLITK=8),
    dict(KIND=1, BM=128, TM=16, TN=2, SPLITK=4),
    dict(KIND=1, BM=64, TM=16, TN=4, SPLITK=8),
    dict(KIND=1, BM=128, TM=8, TN=4, SPLITK=2),
    dict(KIND=1, BM=64, TM=8, TN=8, SPLITK=1),
]
# The values KIND 1 pins (sgemm.json's constraints), and the defaults of the parameters that
# came with kinds.
KIND1_PINNED = dict(BN=64, BK=8, WM=32, WN=32, STAGES=1, ASYNC_A=0, PAD=0, MINB=1)
for _k in KNOWN_GOOD:
    if _k.get("KIND", 0) == 1:
        for _n, _v in KIND1_PINNED.items():
            _k.setdefault(_n, _v)
    _k.setdefault("KIND", 0)
    _k.setdefault("SPLITK", 1)


class ExprError(Exception):
    pass


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(<=|>=|==|!=|&&|\|\||[-+*/%()<>!,]))")
_I64 = (-(1 << 63), (1 << 63) - 1)


def _check(v):
    if not (_I64[0] <= v <= _I64[1]):
        raise ExprError("overflow")
    return v


def _cdiv(a, b):  # C division: truncates toward zero
    if b == 0:
        raise ExprError("division by zero")
    q = abs(a) // abs(b)
    return _check(q if (a >= 0) == (b >= 0) else -q)


def _cmod(a, b):  # C remainder: sign of the dividend
    if b == 0:
        raise ExprError("modulo by zero")
    return a - b * _cdiv(a, b)


def _ceil_div(a, b):  # toward +infinity, any signs
    if b == 0:
        raise ExprError("division by zero")
    q = _cdiv(a, b)
    if q * b != a and ((a > 0) == (b > 0)):
        q += 1
    return q


def _fn(name, args):
    if name == "ceil_div" and len(args) == 2:
        return _ceil_div(*args)
    if name in ("min", "max") and len(args) >= 1:
        return min(args) if name == "min" else max(args)
    if name == "abs" and len(args) == 1:
        return _check(abs(args[0]))
    if name == "pow2" and len(args) == 1:
        if args[0] < 0 or args[0] > 62:
            raise ExprError("pow2 argument out of range")
        return 1 << args[0]
    if name == "log2" and len(args) == 1:
        if args[0] <= 0:
            raise ExprError("log2 needs a > 0")
        return args[0].bit_length() - 1
    if name == "is_pow2" and len(args) == 1:
        return int(args[0] > 0 and args[0] & (args[0] - 1) == 0)
    if name == "align_up" and len(args) == 2:
        if args[1] <= 0:
            raise ExprError("align_up needs b > 0")
        return _check(_ceil_div(args[0], args[1]) * args[1])
    raise ExprError("unknown function or wrong arity: %s/%d" % (name, len(args)))


class Expr:
    """A parsed expression: a tree of tuples, evaluated with C semantics (&&, || short-circuit)."""

    def __init__(self, text):
        self.text = str(text)
        self.toks = []
        pos, s = 0, self.text
        while pos < len(s):
            if s[pos:].strip() == "":
                break
            m = _TOKEN.match(s, pos)
            if not m:
                raise ExprError("bad token at column %d in '%s'" % (pos + 1, s))
            num, name, op = m.groups()
            self.toks.append(("num", int(num)) if num else ("name", name) if name else ("op", op))
            pos = m.end()
        self.i = 0
        self.tree = self._or()
        if self.i != len(self.toks):
            raise ExprError("unexpected token %r in '%s'" % (self.toks[self.i][1], s))
        self.names = set()
        self._collect(self.tree)

    # -- parser (C precedence) --
    def _peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def _eat(self, op):
        if self._peek() == ("op", op):
            self.i += 1
            return True
        return False

    def _binary(self, sub, ops):
        node = sub()
        while True:
            kind, val = self._peek()
            if kind == "op" and val in ops:
                self.i += 1
                node = ("bin", val, node, sub())
            else:
                return node

    def _or(self):
        return self._binary(self._and, ("||",))

    def _and(self):
        return self._binary(self._cmp, ("&&",))

    def _cmp(self):
        return self._binary(self._add, ("==", "!=", "<", "<=", ">", ">="))

    def _add(self):
        return self._binary(self._mul, ("+", "-"))

    def _mul(self):
        return self._binary(self._unary, ("*", "/", "%"))

    def _unary(self):
        kind, val = self._peek()
        if kind == "op" and val in ("-", "!", "+"):
            self.i += 1
            return ("un", val, self._unary())
        return self._primary()

    def _primary(self):
        kind, val = self._peek()
        if kind == "num":
            self.i += 1
            return ("num", val)
        if kind == "name":
            self.i += 1
            if self._eat("("):
                args = [self._or()]
                while self._eat(","):
                    args.append(self._or())
                if not self._eat(")"):
                    raise ExprError("missing ')' in '%s'" % self.text)
                return ("call", val, args)
            return ("name", val)
        if self._eat("("):
            node = self._or()
            if not self._eat(")"):
                raise ExprError("missing ')' in '%s'" % self.text)
            return node
        raise ExprError("unexpected end or token in '%s'" % self.text)

    def _collect(self, n):
        if n[0] == "name":
            self.names.add(n[1])
        elif n[0] == "un":
            self._collect(n[2])
        elif n[0] == "bin":
            self._collect(n[2])
            self._collect(n[3])
        elif n[0] == "call":
            for a in n[2]:
                self._collect(a)

    # -- evaluation --
    def eval(self, env):
        return self._ev(self.tree, env)

    def _ev(self, n, env):
        t = n[0]
        if t == "num":
            return n[1]
        if t == "name":
            if n[1] not in env:
                raise ExprError("unknown name '%s' in '%s'" % (n[1], self.text))
            return env[n[1]]
        if t == "un":
            v = self._ev(n[2], env)
            return _check(-v) if n[1] == "-" else int(not v) if n[1] == "!" else v
        if t == "call":
            return _fn(n[1], [self._ev(a, env) for a in n[2]])
        op, a = n[1], self._ev(n[2], env)
        if op == "&&":
            return int(bool(a) and bool(self._ev(n[3], env)))
        if op == "||":
            return int(bool(a) or bool(self._ev(n[3], env)))
        b = self._ev(n[3], env)
        if op == "+":
            return _check(a + b)
        if op == "-":
            return _check(a - b)
        if op == "*":
            return _check(a * b)
        if op == "/":
            return _cdiv(a, b)
        if op == "%":
            return _cmod(a, b)
        return int({"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


def self_test():
    env = {"A": 7, "B": -2}
    cases = [("7 / -2", -3), ("-7 / 2", -3), ("-7 % 2", -1), ("7 % -2", 1), ("ceil_div(7, 2)", 4),
             ("ceil_div(-7, 2)", -3), ("ceil_div(A, B)", -3), ("min(3, A, 5)", 3), ("max(1, 2) * 3", 6),
             ("1 + 2 * 3 == 7 && !0", 1), ("0 || 1 && 0", 0), ("A > 6 == 1", 1), ("-B * -B", 4),
             ("align_up(13, 8)", 16), ("log2(9)", 3), ("pow2(10)", 1024), ("is_pow2(48)", 0),
             ("0 && 1 / 0", 0), ("1 || 1 / 0", 1), ("(1 + 2) * (3 - 4)", -3)]
    for text, want in cases:
        got = Expr(text).eval(env)
        assert got == want, "%s = %s, expected %s" % (text, got, want)


def config_str(cfg, names):
    return ",".join("%s=%d" % (n, cfg[n]) for n in names)


def parse_annotations(source_text):
    ann = {}
    for line in source_text.splitlines():
        m = re.match(r"\s*//\s*kopt:(\w+)\s+(.*?)\s*$", line)
        if m:
            ann[m.group(1)] = m.group(2)
    return ann


def split_top(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    parts.append(cur.strip())
    return parts


def launch_exprs(launch):
    def dims(v):
        v = v if isinstance(v, list) else [v]
        return [Expr(x) for x in v] + [Expr(1)] * (3 - len(v))
    return {"grid": dims(launch["grid"]), "block": dims(launch["block"]),
            "shared": Expr(launch.get("shared_bytes", 0))}


def compile_one(nvcc, source, cfg, names, extra, workdir, arch="sm_90"):
    defines = ["-D%s=%d" % (n, cfg[n]) for n in names]
    out = os.path.join(workdir, "k_%d_%d.cubin" % (os.getpid(), abs(hash(config_str(cfg, names)))))
    cmd = [nvcc, "-arch=" + arch, "-cubin", "-Xptxas", "-v", "-o", out] + extra + defines + [source]
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    res = {"ok": p.returncode == 0, "seconds": time.time() - t0, "log": p.stdout, "cmd": " ".join(cmd)}
    m = re.search(r"Used (\d+) registers", p.stdout)
    res["regs"] = int(m.group(1)) if m else None
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", p.stdout)
    res["stack"], res["spill_st"], res["spill_ld"] = (int(x) for x in m.groups()) if m else (None,) * 3
    m = re.search(r"(\d+) bytes smem", p.stdout)
    res["static_smem"] = int(m.group(1)) if m else 0
    if os.path.exists(out):
        os.remove(out)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default=os.path.join(HERE, "sgemm.json"))
    ap.add_argument("-n", "--count", type=int, default=30, help="configurations to compile (default 30)")
    ap.add_argument("-j", "--jobs", type=int, default=max(1, os.cpu_count() or 1))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--all", action="store_true", help="compile every valid configuration")
    ap.add_argument("--list", action="store_true", help="print the valid configurations and stop")
    ap.add_argument("--config", action="append", default=[], help="compile this NAME=V,... (repeatable)")
    ap.add_argument("--from", dest="from_file", help="compile the NAME=V,... lines of this file")
    ap.add_argument("--const", action="append", default=[], help="device constant NAME=VALUE")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--json", help="write the per-configuration results here")
    ap.add_argument("--kind", type=int, action="append", default=[],
                    help="sample only configurations with this KIND (repeatable; known-good points too)")
    args = ap.parse_args()

    self_test()
    if args.from_file:
        args.config += [l.strip() for l in open(args.from_file) if "=" in l and not l.startswith(("space", " "))]
    consts = dict(H200)
    for c in args.const:
        k, v = c.split("=")
        consts[k.strip()] = int(v)

    try:
        spec = json.load(open(args.spec))
        tmpl = spec["template"]
        tuning = spec["tuning"]
        params = tuning["params"]
        names = sorted(params)
        constraints = [Expr(c) for c in tuning.get("constraints", [])]
        source = os.path.join(os.path.dirname(os.path.abspath(args.spec)), tmpl["source"])
        src_text = open(source).read()
    except (OSError, KeyError, ValueError, ExprError) as e:
        print("check_configs: cannot read the spec or template: %s" % e, file=sys.stderr)
        return 2
    for c in constraints:
        unknown = c.names - set(names) - set(consts)
        if unknown:
            print("check_configs: constraint '%s' names %s" % (c.text, sorted(unknown)), file=sys.stderr)
            return 2

    # -- enumerate ------------------------------------------------------------------------
    valid, killed = [], [0] * len(constraints)
    total = 0
    for values in itertools.product(*(params[n] for n in names)):
        total += 1
        cfg = dict(zip(names, values))
        env = dict(consts, **cfg)
        ok = True
        for i, c in enumerate(constraints):
            try:
                v = c.eval(env)
            except ExprError:
                v = 0
            if not v:
                killed[i] += 1
                ok = False
                break
        if ok:
            valid.append(cfg)
    print("space: %d parameters, cartesian size %d, valid %d" % (len(names), total, len(valid)))
    for i, c in enumerate(constraints):
        print("  removed first by #%-2d %7d  %s" % (i, killed[i], c.text))
    for n in names:
        dist = {}
        for cfg in valid:
            dist[cfg[n]] = dist.get(cfg[n], 0) + 1
        print("  %-8s " % n + "  ".join("%d:%d" % (v, dist.get(v, 0)) for v in params[n]))
    if not valid:
        print("check_configs: no valid configuration", file=sys.stderr)
        return 1
    if args.list:
        try:
            for cfg in valid:
                print(config_str(cfg, names))
        except BrokenPipeError:
            sys.stderr.close()
        return 0

    # -- launch: the annotations and the spec's template.launch must agree ----------------
    ann = parse_annotations(src_text)
    problems = []
    if ann.get("entry") != tmpl.get("entry"):
        problems.append("kopt:entry %r != spec entry %r" % (ann.get("entry"), tmpl.get("entry")))
    spec_launch = launch_exprs(tmpl["launch"]) if "launch" in tmpl else None
    ann_launch = None
    if all(k in ann for k in ("grid", "block", "shared")):
        ann_launch = launch_exprs({"grid": split_top(ann["grid"]), "block": split_top(ann["block"]),
                                   "shared_bytes": ann["shared"]})
    sizes = [c["sizes"] for c in spec.get("cases", [])] or [{"M": 1, "N": 1, "K": 1}]

    def launch_of(L, env):
        return ([e.eval(env) for e in L["grid"]], [e.eval(env) for e in L["block"]], L["shared"].eval(env))

    valid_keys = set(config_str(c, names) for c in valid)
    for cfg in valid:
        for sz in sizes:
            env = dict(consts, **cfg, **sz)
            got = [launch_of(L, env) for L in (spec_launch, ann_launch) if L]
            if len(got) == 2 and got[0] != got[1]:
                problems.append("%s %s: spec launch %s != annotations %s" % (config_str(cfg, names), sz, got[0], got[1]))
            grid, block, shared = got[0]
            threads = block[0] * block[1] * block[2]
            if threads > consts["MAX_THREADS_PER_BLOCK"] or shared > consts["MAX_SHARED_PER_BLOCK"] or min(grid) < 1:
                problems.append("%s %s: infeasible launch %s" % (config_str(cfg, names), sz, got[0]))
        if len(problems) > 20:
            break
    # The known-good points are sgemm.json's; another spec (sgemm_tf32.json) has its seeds only.
    known_good = [k for k in KNOWN_GOOD if set(k) == set(names)]
    known_good += [dict(s) for s in tuning.get("seeds", []) if set(s) == set(names)]
    for k in known_good:
        if config_str(k, names) not in valid_keys:
            problems.append("known-good configuration not in the valid space: " + config_str(k, names))

    # -- choose the sample ------------------------------------------------------------------
    def threads(c):
        env = dict(consts, **c, M=1, N=1, K=1)
        if spec_launch:
            b = [e.eval(env) for e in spec_launch["block"]]
            return b[0] * b[1] * b[2]
        return (c["BM"] // c["WM"]) * (c["BN"] // c["WN"]) * 32

    def smem(c):
        return spec_launch["shared"].eval(dict(consts, **c, M=1, N=1, K=1)) if spec_launch else 0

    def tile(c):  # per-thread register tile (sgemm.json); the warp tile where there is none (sgemm_tf32.json)
        return c["TM"] * c["TN"] if "TM" in c else c.get("WM", 1) * c.get("WN", 1)

    if args.config:
        sample = []
        for text in args.config:
            cfg = {k.strip(): int(v) for k, v in (kv.split("=") for kv in text.split(","))}
            if set(cfg) != set(names):
                print("check_configs: --config must set exactly %s" % ",".join(names), file=sys.stderr)
                return 2
            if config_str(cfg, names) not in valid_keys:
                print("note: %s violates the constraints; compiling it anyway" % config_str(cfg, names))
            sample.append(cfg)
    elif args.all:
        sample = [c for c in valid if not args.kind or c.get("KIND", 0) in args.kind]
    else:
        if args.kind:
            valid = [c for c in valid if c.get("KIND", 0) in args.kind]
            if not valid:
                print("check_configs: no valid configuration of KIND %s" % args.kind, file=sys.stderr)
                return 1
        picks = [dict(k) for k in known_good if config_str(k, names) in valid_keys
                 and (not args.kind or k.get("KIND", 0) in args.kind)]
        extremes = [
            max(valid, key=lambda c: (tile(c), threads(c), c["MINB"], c["STAGES"])),
            max(valid, key=lambda c: (tile(c) * c["MINB"] * threads(c), tile(c))),
            max(valid, key=lambda c: (smem(c), tile(c))),
            min(valid, key=lambda c: (smem(c), threads(c))),
            max(valid, key=lambda c: (threads(c), tile(c), c["MINB"])),
            min(valid, key=lambda c: (threads(c), tile(c))),
            max(valid, key=lambda c: (c["BK"], c["STAGES"], tile(c), smem(c))),
            max(valid, key=lambda c: (c["MINB"], tile(c), threads(c))),
            max(valid, key=lambda c: (c.get("TM", c.get("WM", 1)), -c.get("TN", c.get("WN", 1)), threads(c))),
            max(valid, key=lambda c: (c.get("TN", c.get("WN", 1)), -c.get("TM", c.get("WM", 1)), threads(c))),
        ]
        for c in extremes:
            picks.append(dict(c))
        rng = random.Random(args.seed)
        rest = [c for c in valid if config_str(c, names) not in set(config_str(p, names) for p in picks)]
        rng.shuffle(rest)
        seen, sample = set(), []
        for c in picks + rest:
            key = config_str(c, names)
            if key not in seen:
                seen.add(key)
                sample.append(c)
        sample = sample[: max(args.count, len(known_good))]

    # -- compile ------------------------------------------------------------------------------
    extra = []
    for o in tuning.get("compile_options", []) + tmpl.get("compile_options", []):
        extra += ["-Xcompiler", o] if o.startswith("-f") else [o]
    # A template that names its architecture (sgemm_tf32_wgmma.cu: `// kopt:options
    # --gpu-architecture=sm_90a`, as kopt's NVRTC applies it) is compiled for that one.
    m = re.search(r"--gpu-architecture[= ](sm_\w+)", ann.get("options", ""))
    arch = m.group(1) if m else "sm_90"
    print("compiling %d configuration(s) with %s for %s, %d at a time" % (len(sample), args.nvcc, arch, args.jobs))
    results = []
    with tempfile.TemporaryDirectory() as work, concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        futs = [ex.submit(compile_one, args.nvcc, source, c, names, extra, work, arch) for c in sample]
        for c, f in zip(sample, futs):
            r = f.result()
            r["config"] = config_str(c, names)
            r["threads"] = threads(c)
            r["dyn_smem"] = smem(c)
            r["cap"] = min(255, consts["REGS_PER_SM"] // (c["MINB"] * threads(c)) // 8 * 8)
            results.append(r)
            flag = "OK"
            if not r["ok"]:
                flag = "COMPILE-ERROR"
            elif r["spill_st"] or r["spill_ld"] or r["stack"]:
                flag = "SPILL"
            r["status"] = flag
            print("%-13s regs %3s/%3d  spill %s/%s B  stack %s B  smem %6d+%d B  thr %4d  %5.1fs  %s" % (
                flag, r["regs"], r["cap"], r["spill_st"], r["spill_ld"], r["stack"], r["dyn_smem"],
                r["static_smem"], r["threads"], r["seconds"], r["config"]), flush=True)
            if flag == "COMPILE-ERROR":
                print("    " + r["cmd"] + "\n    " + "\n    ".join(r["log"].strip().splitlines()[-15:]))

    bad = [r for r in results if r["status"] != "OK"]
    regs = [r["regs"] for r in results if r["regs"] is not None]
    print("summary: valid space %d of %d; compiled %d: %d ok, %d with spills or stack, %d failed to compile;"
          " registers %s..%s; launch problems %d" % (
              len(valid), total, len(results), len(results) - len(bad),
              sum(r["status"] == "SPILL" for r in results), sum(r["status"] == "COMPILE-ERROR" for r in results),
              min(regs) if regs else "-", max(regs) if regs else "-", len(problems)))
    for p in problems[:20]:
        print("problem: " + p)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"valid": len(valid), "cartesian": total, "results": results}, f, indent=1)
    return 1 if bad or problems else 0


if __name__ == "__main__":
    sys.exit(main())
