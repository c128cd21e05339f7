#!/usr/bin/env python3
"""Writes the polygon of the pnpoly workload (pnpoly.json): inputs/d_vertices.npy, inputs/d_slopes.npy.

The kernel reads the polygon from its __constant__ arrays d_vertices (600 float2: x, y) and
d_slopes (600 float: the slope (vk.x - vj.x) / (vk.y - vj.y) of the edge from vertex j to vertex
k = j - 1, k = 599 for j = 0, as the kernel computes it). As in Kernel Tuner's example, the
vertices lie on the unit circle at descending angles; the angles here are a deterministic
low-discrepancy set, 2 pi (599 - j + frac(j * 0.6180339887498949)) / 600, which reference.cu
computes the same way (in double, rounded to float). Float arithmetic is emulated exactly: the
difference of two floats rounded once to float, the quotient in double rounded to float (double
rounding is innocuous for division at these precisions). No third-party package is needed.

Usage: python3 make_inputs.py [FOLDER]   (default: the folder of this script)
"""
import math
import os
import struct
import sys

VERTICES = 600
GOLDEN = 0.6180339887498949


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def write_npy(path, values):
    """A version 1.0 .npy file of little-endian float32, shape (len(values),)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    with open(path + ".tmp", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))
    os.replace(path + ".tmp", path)


def polygon():
    verts = []
    for j in range(VERTICES):
        t = j * GOLDEN
        turns = ((599.0 - j) + (t - math.floor(t))) / 600.0
        angle = turns * 6.283185307179586
        verts.append((f32(math.cos(angle)), f32(math.sin(angle))))
    slopes = []
    for j in range(VERTICES):
        vj, vk = verts[j], verts[j - 1]
        slopes.append(f32(f32(vk[0] - vj[0]) / f32(vk[1] - vj[1])))
    return verts, slopes


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    folder = os.path.join(base, "inputs")
    os.makedirs(folder, exist_ok=True)
    verts, slopes = polygon()
    write_npy(os.path.join(folder, "d_vertices.npy"), [c for v in verts for c in v])
    write_npy(os.path.join(folder, "d_slopes.npy"), slopes)
    print("pnpoly polygon written to %s" % folder)


if __name__ == "__main__":
    main()
