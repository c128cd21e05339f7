"""The gallery's kernels as Kernel Tuner, CuPy and a roofline see them (used by scripts/gallery.py).

One entry per template folder of the gallery (templates/<name>/): how Kernel Tuner 1.5 tunes the
same kernel file on the same space (tune_kernel's problem size, grid divisors, restrictions,
compiler options, arguments and check, as the kernel's authors wrote them in their tune script),
the library or framework operation that does the same work (CuPy), and the resource that bounds
it (DRAM bytes moved, or floating-point operations).

The search space itself is not repeated here: Kernel Tuner gets the spec's tuning.params, so both
tools search the same values. Where kopt leaves out configurations that cannot compile before
compiling them (expdist's and the convolution's tiles over the 48 KiB of static shared memory,
from their kernels' kopt:static_shared lines), Kernel Tuner keeps its original restrictions and
meets those configurations as compile errors, as it does when a user runs the example.

Inputs are drawn as the spec draws them (same distributions, not the same bits: each tool has its
own generator); the performance case's sizes come from the spec. Every function takes numpy and
cupy as arguments, so that this file imports on a machine without either.
"""

import os

CCCL_INCLUDE = "-I/usr/local/cuda/include/cccl"


class Kernel:
    """Base: subclasses set the attributes and override the three methods."""

    name = ""
    kt_kernel_name = ""
    kt_restrictions = []  # the original tune script's, in Kernel Tuner's (Python) syntax
    kt_block_size_names = None
    kt_compiler_options = []
    library_label = None  # e.g. "cupy.sum"; None: no library or framework op does this work
    bound_note = ""

    def kt_setup(self, np, cp, sizes, seed):
        """dict of tune_kernel keyword arguments (problem_size, arguments, grid_div_x, ...)."""
        raise NotImplementedError

    def library(self, np, cp, sizes, seed):
        """A callable that runs the library op once on inputs of the performance size, or None."""
        return None

    def bound(self, sizes):
        """(resource, amount): ("dram", bytes), ("fp32", flops) or ("fp64", flops)."""
        raise NotImplementedError


def _close(a, b, rtol, atol):
    return abs(float(a) - float(b)) <= atol + rtol * abs(float(b))


class Stencil(Kernel):
    name = "stencil"
    kt_kernel_name = "stencil_kernel"
    library_label = "cupyx.scipy.ndimage.correlate"
    bound_note = "DRAM: x_old read once, x_new written once"

    def _inputs(self, np, sizes, seed):
        w, h = sizes["domain_width"], sizes["domain_height"]
        rng = np.random.default_rng(seed)
        x_old = rng.standard_normal(w * h, dtype=np.float32)
        return w, h, x_old

    def kt_setup(self, np, cp, sizes, seed):
        w, h, x_old = self._inputs(np, sizes, seed)
        x_new = x_old.copy()
        g = cp.asarray(x_old).reshape(h, w)
        e = g.copy()
        e[1:-1, 1:-1] = (g[1:-1, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] + g[2:, 1:-1] + g[:-2, 1:-1]) / np.float32(5)
        return dict(problem_size=(w, h), arguments=[x_new, x_old], grid_div_x=["block_size_x"],
                    grid_div_y=["block_size_y"], answer=[e.ravel().get(), None], atol=1e-5,
                    compiler_options=["-Ddomain_width=%d" % w, "-Ddomain_height=%d" % h])

    def library(self, np, cp, sizes, seed):
        import cupyx.scipy.ndimage as ndi
        w, h, x_old = self._inputs(np, sizes, seed)
        x = cp.asarray(x_old).reshape(h, w)
        out = cp.empty_like(x)
        weights = cp.asarray([[0, 0.2, 0], [0.2, 0.2, 0.2], [0, 0.2, 0]], dtype=cp.float32)
        return lambda: ndi.correlate(x, weights, output=out, mode="constant")

    def bound(self, sizes):
        return "dram", 2 * 4 * sizes["domain_width"] * sizes["domain_height"]


class Spmv(Kernel):
    name = "spmv"
    kt_kernel_name = "spmv_kernel"
    library_label = "cupyx.scipy.sparse csr @ x (cuSPARSE)"
    bound_note = "DRAM: values and column indices once, row offsets, x and y once"

    def _inputs(self, np, sizes, seed):
        nr, nc, k = sizes["nrows"], sizes["ncols"], sizes["nnz_per_row"]
        rng = np.random.default_rng(seed)
        rows = (np.arange(nr + 1, dtype=np.int64) * k).astype(np.int32)
        cols = rng.integers(0, nc, nr * k, dtype=np.int32)
        vals = rng.standard_normal(nr * k, dtype=np.float32)
        x = rng.standard_normal(nc, dtype=np.float32)
        return nr, nc, rows, cols, vals, x

    def _matrix(self, cp, nr, nc, rows, cols, vals):
        import cupyx.scipy.sparse as sp
        return sp.csr_matrix((cp.asarray(vals), cp.asarray(cols), cp.asarray(rows)), shape=(nr, nc))

    def kt_setup(self, np, cp, sizes, seed):
        nr, nc, rows, cols, vals, x = self._inputs(np, sizes, seed)
        y_ref = (self._matrix(cp, nr, nc, rows, cols, vals) @ cp.asarray(x)).get()
        y = np.zeros(nr, dtype=np.float32)
        return dict(problem_size=nr, arguments=[y, rows, cols, vals, x, np.int32(nr)],
                    grid_div_x=["block_size_x/threads_per_row"], answer=[y_ref, None, None, None, None, None],
                    atol=1e-4)

    def library(self, np, cp, sizes, seed):
        nr, nc, rows, cols, vals, x = self._inputs(np, sizes, seed)
        a = self._matrix(cp, nr, nc, rows, cols, vals)
        xd = cp.asarray(x)
        return lambda: a @ xd

    def bound(self, sizes):
        nr, nc, k = sizes["nrows"], sizes["ncols"], sizes["nnz_per_row"]
        return "dram", 8 * nr * k + 4 * (nr + 1) + 4 * nr + 4 * nc


class Reduction(Kernel):
    name = "reduction"
    kt_kernel_name = "sum_floats"
    library_label = "cupy.sum (the whole sum, both passes)"
    bound_note = "DRAM: the array read once"

    def _inputs(self, cp, sizes, seed):
        cp.random.seed(seed)
        return cp.random.random(sizes["n"], dtype=cp.float32)

    def kt_setup(self, np, cp, sizes, seed):
        x = self._inputs(cp, sizes, seed)  # a cupy array: Kernel Tuner passes it as it is
        total = float(cp.sum(x, dtype=cp.float64))
        max_blocks = 2 ** 15

        def verify(answer, result, atol=None):  # the example's verify_partial_reduce, with an rtol
            return _close(np.sum(result[0], dtype=np.float64), answer[0], 1e-5, 0.0)

        return dict(problem_size="num_blocks", arguments=[np.zeros(max_blocks, dtype=np.float32), x,
                                                          np.int32(sizes["n"])],
                    grid_div_x=[], answer=[np.float64(total), None, None], verify=verify)

    def library(self, np, cp, sizes, seed):
        x = self._inputs(cp, sizes, seed)
        return lambda: cp.sum(x)

    def bound(self, sizes):
        return "dram", 4 * sizes["n"]


class Expdist(Kernel):
    name = "expdist"
    kt_kernel_name = "ExpDist"
    kt_compiler_options = ["--std=c++17", CCCL_INCLUDE]
    library_label = "CuPy expression (exp of the m x n distances, summed)"
    bound_note = "FP64: 10 operations per pair, exp and division counted as one each (a lower bound)"
    pad_x, pad_y = 512 * 8, 32 * 8  # the largest tiles of the space

    def _inputs(self, np, sizes, seed):
        m, n = sizes["m"], sizes["n"]
        rng = np.random.default_rng(seed)
        a = rng.standard_normal(2 * m + self.pad_x)
        b = rng.standard_normal(2 * n + self.pad_y)
        sa = rng.uniform(0.001, 0.02, m + self.pad_x)
        sb = rng.uniform(0.001, 0.02, n + self.pad_y)
        return m, n, a, b, sa, sb

    def _expr(self, cp, m, n, a, b, sa, sb):
        d = (a[:m, None] - b[None, :n]) ** 2 + (a[m:2 * m, None] - b[None, n:2 * n]) ** 2
        return cp.exp(-d / (sa[:m, None] + sb[None, :n])).sum()

    def kt_setup(self, np, cp, sizes, seed):
        m, n, a, b, sa, sb = self._inputs(np, sizes, seed)
        total = float(self._expr(cp, m, n, cp.asarray(a), cp.asarray(b), cp.asarray(sa), cp.asarray(sb)))
        max_blocks = -(-m // 32) * n  # the smallest tiles: 32 x 1

        def verify(answer, result, atol=None):
            return _close(np.sum(result[6]), answer[6], 1e-9, 0.0)

        args = [a, b, np.int32(m), np.int32(n), sa, sb, np.zeros(max_blocks)]
        return dict(problem_size=(m, n), arguments=args, grid_div_x=["block_size_x", "tile_size_x"],
                    grid_div_y=["block_size_y", "tile_size_y"], answer=[None] * 6 + [np.float64(total)],
                    verify=verify)

    def library(self, np, cp, sizes, seed):
        m, n, a, b, sa, sb = self._inputs(np, sizes, seed)
        a, b, sa, sb = (cp.asarray(v) for v in (a, b, sa, sb))
        return lambda: self._expr(cp, m, n, a, b, sa, sb)

    def bound(self, sizes):
        return "fp64", 10 * sizes["m"] * sizes["n"]


class Nbody(Kernel):
    name = "nbody"
    kt_kernel_name = "nbody_kernel"
    kt_block_size_names = ["BLOCK_SIZE"]
    kt_compiler_options = ["--use_fast_math"]
    # BAT's nbody-CAFF.json conditions, as written there.
    kt_restrictions = ["INNER_UNROLL_FACTOR1 * INNER_UNROLL_FACTOR2 <= 256",
                       "INNER_UNROLL_FACTOR2 <= OUTER_UNROLL_FACTOR",
                       "VECTOR_TYPE == 1 and USE_SOA == 0 or VECTOR_TYPE == 1"]
    bound_note = "FP32: 20 operations per pair (the customary count for a softened all-pairs step)"

    def _bodies(self, np, n, seed):
        rng = np.random.default_rng(seed)
        return {k: rng.standard_normal(n, dtype=np.float32) for k in ("x", "y", "z", "m", "vx", "vy", "vz")}

    def _reference(self, np, cp, b, dt, damping, soft):
        """newBodyInfo and newVel as reference.cu computes them (pair terms in float, sums in double)."""
        pos = cp.asarray(np.stack([b["x"], b["y"], b["z"]], axis=1))
        mass = cp.asarray(b["m"])
        acc = cp.zeros((len(b["x"]), 3), dtype=cp.float64)
        for i0 in range(0, len(b["x"]), 256):
            d = pos[None, :, :] - pos[i0:i0 + 256, None, :]
            r = cp.sqrt((d * d).sum(axis=2) + np.float32(soft))
            f = mass[None, :] / (r * r * r)
            acc[i0:i0 + 256] = (d * f[:, :, None]).sum(axis=1, dtype=cp.float64)
        acc = acc.get()
        p = np.stack([b["x"], b["y"], b["z"]], axis=1).astype(np.float64)
        v = np.stack([b["vx"], b["vy"], b["vz"]], axis=1).astype(np.float64)
        new_pos = p + dt * v + damping * dt * dt * acc
        new_vel = v + dt * acc
        body = np.concatenate([new_pos, b["m"][:, None]], axis=1).astype(np.float32).ravel()
        vel = np.concatenate([new_vel, np.zeros((len(b["x"]), 1))], axis=1).astype(np.float32).ravel()
        return body, vel

    def kt_setup(self, np, cp, sizes, seed):
        n = sizes["n"]
        b = self._bodies(np, n, seed)
        dt, damping, soft = 0.001, 0.5, 0.01
        aos_body = np.stack([b["x"], b["y"], b["z"], b["m"]], axis=1).ravel()
        aos_vel = np.stack([b["vx"], b["vy"], b["vz"], np.zeros(n, np.float32)], axis=1).ravel()
        ref_body, ref_vel = self._reference(np, cp, b, dt, damping, soft)

        def verify(answer, result, atol=None):  # the spec's tolerances
            return (np.allclose(result[6], answer[6], rtol=1e-6, atol=1e-5) and
                    np.allclose(result[11], answer[11], rtol=1e-5, atol=2e-4))

        args = [np.float32(dt), aos_body, b["x"], b["y"], b["z"], b["m"], np.zeros(4 * n, np.float32), aos_vel,
                b["vx"], b["vy"], b["vz"], np.zeros(4 * n, np.float32), np.float32(damping), np.float32(soft),
                np.int32(n)]
        answer = [None] * 15
        answer[6], answer[11] = ref_body, ref_vel
        return dict(problem_size=n, arguments=args, grid_div_x=["BLOCK_SIZE", "OUTER_UNROLL_FACTOR"],
                    answer=answer, verify=verify)

    def bound(self, sizes):
        return "fp32", 20 * sizes["n"] ** 2


class Convolution(Kernel):
    name = "convolution"
    kt_kernel_name = "convolution_kernel"
    kt_restrictions = ["use_padding==0 or (block_size_x % 32 != 0)"]  # the example's restriction
    library_label = "torch conv2d (cuDNN, FP32, TF32 off)"
    bound_note = "FP32: 2 operations per filter tap and output pixel"
    fw = fh = 17

    def _inputs(self, np, sizes, seed):
        w, h = sizes["image_width"], sizes["image_height"]
        rng = np.random.default_rng(seed)
        image = rng.standard_normal((w + self.fw - 1) * (h + self.fh - 1), dtype=np.float32)
        filt = rng.standard_normal(33 * 33, dtype=np.float32)  # the kernel's d_filter holds 33 x 33
        return w, h, image, filt

    def _conv(self, w, h, image, filt, dtype):
        import torch
        torch.backends.cudnn.allow_tf32 = False
        x = torch.as_tensor(image, device="cuda").to(dtype).reshape(1, 1, h + self.fh - 1, w + self.fw - 1)
        k = torch.as_tensor(filt[:self.fw * self.fh], device="cuda").to(dtype).reshape(1, 1, self.fh, self.fw)
        return x, k

    def kt_setup(self, np, cp, sizes, seed):
        import torch
        w, h, image, filt = self._inputs(np, sizes, seed)
        x, k = self._conv(w, h, image, filt, torch.float64)
        expected = torch.nn.functional.conv2d(x, k).reshape(-1).float().cpu().numpy()
        out = np.zeros(w * h, dtype=np.float32)
        return dict(problem_size=(w, h), arguments=[out, image, filt], cmem_args={"d_filter": filt},
                    grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
                    answer=[expected, None, None], atol=1e-3,
                    compiler_options=["-Dimage_width=%d" % w, "-Dimage_height=%d" % h])

    def library(self, np, cp, sizes, seed):
        import torch
        w, h, image, filt = self._inputs(np, sizes, seed)
        x, k = self._conv(w, h, image, filt, torch.float32)
        return lambda: torch.nn.functional.conv2d(x, k)

    def bound(self, sizes):
        return "fp32", 2 * self.fw * self.fh * sizes["image_width"] * sizes["image_height"]


class Pnpoly(Kernel):
    name = "pnpoly"
    kt_kernel_name = "cn_pnpoly"
    bound_note = ("FP32: 2 operations per point and edge (the crossing test's subtraction and fused multiply-add; "
                  "a lower bound: the kernel is bound by instruction issue)")
    vertices = 600

    def _polygon(self, np):
        import importlib.util
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates", "pnpoly",
                            "make_inputs.py")
        spec = importlib.util.spec_from_file_location("pnpoly_make_inputs", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        verts, slopes = mod.polygon()
        return np.array([c for v in verts for c in v], dtype=np.float32), np.array(slopes, dtype=np.float32)

    def kt_setup(self, np, cp, sizes, seed):
        n = sizes["n"]
        rng = np.random.default_rng(seed)
        points = rng.standard_normal(2 * n, dtype=np.float32)
        verts, slopes = self._polygon(np)
        # The answer: the spec's reference kernel, compiled by CuPy.
        src = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates", "pnpoly",
                                "reference.cu")).read()
        ref = cp.RawKernel(src, "pnpoly_reference")
        expected = cp.zeros(n, dtype=cp.int32)
        ref(((n + 255) // 256,), (256,), (expected, cp.asarray(points), np.int32(n)))
        expected = expected.get()

        def verify(answer, result, atol=None):  # a few points on an edge may fall either way
            return int(np.count_nonzero(result[0] != answer[0])) <= max(10, n // 1000000)

        return dict(problem_size=n, arguments=[np.zeros(n, dtype=np.int32), points, np.int32(n)],
                    cmem_args={"d_vertices": verts, "d_slopes": slopes}, grid_div_x=["block_size_x", "tile_size"],
                    answer=[expected, None, None], verify=verify)

    def bound(self, sizes):
        return "fp32", 2 * self.vertices * sizes["n"]


class Hotspot(Kernel):
    """BAT's hotspot: ten time steps a launch (the spec's temporal_tiling_factor and max_tfactor
    defines, which Kernel Tuner gets as -D options and, in the restrictions, as their values)."""
    name = "hotspot"
    kt_kernel_name = "calculate_temp"  # a C++ name: Kernel Tuner's cupy backend looks it up by name expression
    bound_note = ("FP64: 11 operations per cell and time step, the update as written (its 2.0 literal makes it "
                  "double); the 4 FP32 ones and the halo's repeated steps not counted")
    steps = max_tfactor = 10  # the spec's defines
    # BAT's hotspot-CAFF.json conditions as written there, with temporal_tiling_factor's value and, for BAT's
    # MAX_THREADS, MAX_SHARED_MEMORY_BLOCK and MAX_SHARED_MEMORY, the H100's and H200's limits (the
    # values of kopt's MAX_THREADS_PER_BLOCK, MAX_STATIC_SHARED_PER_BLOCK and MAX_SHARED_PER_SM on
    # sm_90), as the kernel's own tune script puts in its device's.
    kt_restrictions = [
        "block_size_x*block_size_y>= 32",
        "10 % loop_unroll_factor_t == 0",
        "block_size_x*block_size_y <= 1024",
        "(block_size_x*tile_size_x+ 10 * 2) * (block_size_y*tile_size_y+ 10 * 2) * (2+sh_power) * 4 <= 49152",
        "blocks_per_sm == 0 or (((block_size_x * tile_size_x + 10 * 2) * (block_size_y*tile_size_y +  10 * 2)"
        " * (2+sh_power) * 4) * blocks_per_sm <= 233472)"]
    scalars = (0.1, 0.1, 3.0517578579, 21.845333099365234)  # Rx_1, Ry_1, Rz_1, step_div_cap (BAT's)

    def _defines(self, sizes):
        return ["-Dgrid_width=%d" % sizes["grid_width"], "-Dgrid_height=%d" % sizes["grid_height"],
                "-Dmax_tfactor=%d" % self.max_tfactor, "-Dtemporal_tiling_factor=%d" % self.steps]

    def kt_setup(self, np, cp, sizes, seed):
        w, h = sizes["grid_width"], sizes["grid_height"]
        cells = (w + 2 * self.max_tfactor) * (h + 2 * self.max_tfactor)
        rng = np.random.default_rng(seed)
        power = rng.standard_normal(cells, dtype=np.float32)
        temp = rng.standard_normal(cells, dtype=np.float32)
        scalars = [np.float32(v) for v in self.scalars]
        # The answer: the spec's reference kernel, compiled by CuPy.
        src = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates", "hotspot",
                                "reference.cu")).read()
        ref = cp.RawKernel(src, "hotspot_reference", options=tuple(self._defines(sizes)))
        expected = cp.zeros(w * h, dtype=cp.float32)
        ref(((w + 15) // 16, (h + 15) // 16), (16, 16), (cp.asarray(power), cp.asarray(temp), expected, *scalars))
        expected = expected.get()

        def verify(answer, result, atol=None):  # the spec's tolerance
            return bool(np.allclose(result[2], answer[2], rtol=1e-5, atol=0.0))

        return dict(problem_size=(w, h), arguments=[power, temp, np.zeros(w * h, dtype=np.float32)] + scalars,
                    grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
                    answer=[None, None, expected] + [None] * 4, verify=verify, compiler_options=self._defines(sizes))

    def bound(self, sizes):
        return "fp64", 11 * self.steps * sizes["grid_width"] * sizes["grid_height"]


KERNELS = {k.name: k for k in (Stencil(), Spmv(), Reduction(), Expdist(), Nbody(), Convolution(), Pnpoly(),
                               Hotspot())}
# What `gallery.py` runs by default: the five of the comparison's first table. The convolution
# (its fully unrolled 17 x 17 filter loop makes each compile take seconds, and kopt compiles each
# configuration once per case), pnpoly and hotspot are run on their own: --kernels
# convolution,pnpoly,hotspot.
DEFAULT = ["stencil", "spmv", "reduction", "expdist", "nbody"]
