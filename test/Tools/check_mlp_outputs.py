"""Helper of run_program.test for test/Import/Inputs/mlp.json (relu(x @ w.T + b)):
  write DIR   inputs as .npy and raw files
  check DIR   compares neuron-run's DIR/output0.npy with NumPy
  oob DIR     DIR/oob.json: DIR/mlp.json whose first DMA reads past its HBM buffer"""
import json
import sys

import numpy as np

mode, folder = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
x = rng.standard_normal((3, 200), dtype=np.float32)
w = rng.standard_normal((300, 200), dtype=np.float32)
b = rng.standard_normal(300, dtype=np.float32)
if mode == "oob":
    with open(f"{folder}/mlp.json") as f:
        program = json.load(f)
    program["instructions"][0]["srcs"][0]["offset"] = 100000
    with open(f"{folder}/oob.json", "w") as f:
        json.dump(program, f)
elif mode == "write":
    np.save(f"{folder}/x.npy", x)
    np.save(f"{folder}/w.npy", w)
    b.tofile(f"{folder}/b.bin")  # raw bytes: any name not ending in .npy
    np.save(f"{folder}/x_f64.npy", x.astype(np.float64))
else:
    got = np.load(f"{folder}/output0.npy")
    want = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + b, 0)
    assert got.shape == want.shape and got.dtype == np.float32, (got.shape, got.dtype)
    err = np.abs(got - want).max()
    # fp32 matmul over K=200 of unit normals: sums of size ~14, rounding well under 1e-3.
    assert err < 1e-3, f"max abs error {err}"
    print("outputs match NumPy (max abs error < 1e-3)")
