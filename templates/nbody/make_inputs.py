#!/usr/bin/env python3
"""Writes the input files of the nbody workload (nbody.json): inputs/<case>_<buffer>.npy.

The kernel reads the bodies either as float4 records (oldBodyInfo = x, y, z, mass; oldVel =
vx, vy, vz, 0) or as one array per component (oldPosX ... mass, oldVelX ... oldVelZ), chosen by
the tuning parameter USE_SOA; both copies must hold the same bodies, which kopt's declarative
generators cannot express, so they are written here. Every value is standard normal, as BAT's
"Random" fill draws them (numpy.random.randn), from Python's Mersenne Twister seeded per case:
the files are the same on every machine. No third-party package is needed.

Usage: python3 make_inputs.py [FOLDER]   (default: the folder of this script)
"""
import os
import random
import struct
import sys

CASES = {"n4096": 4096, "n12288": 12288, "n131072": 131072}  # the spec's cases
SEED = 20261214


def write_npy(path, values):
    """A version 1.0 .npy file of little-endian float32, shape (len(values),)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path + ".tmp", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))
    os.replace(path + ".tmp", path)


def make_case(folder, name, n):
    rng = random.Random("%d/%s" % (SEED, name))
    cols = {k: [struct.unpack("<f", struct.pack("<f", rng.gauss(0.0, 1.0)))[0] for _ in range(n)]
            for k in ("x", "y", "z", "m", "vx", "vy", "vz")}
    aos_body, aos_vel = [], []
    for i in range(n):
        aos_body += [cols["x"][i], cols["y"][i], cols["z"][i], cols["m"][i]]
        aos_vel += [cols["vx"][i], cols["vy"][i], cols["vz"][i], 0.0]
    files = {"oldBodyInfo": aos_body, "oldVel": aos_vel, "oldPosX": cols["x"], "oldPosY": cols["y"],
             "oldPosZ": cols["z"], "mass": cols["m"], "oldVelX": cols["vx"], "oldVelY": cols["vy"],
             "oldVelZ": cols["vz"]}
    for buf, values in files.items():
        write_npy(os.path.join(folder, "%s_%s.npy" % (name, buf)), values)


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    folder = os.path.join(base, "inputs")
    os.makedirs(folder, exist_ok=True)
    for name, n in CASES.items():
        make_case(folder, name, n)
    print("nbody inputs written to %s (%d cases)" % (folder, len(CASES)))


if __name__ == "__main__":
    main()
