#!/usr/bin/python3
"""PyTorch DDP reference for ddplab's throughput comparison (docs/benchmarks.md).

Trains the model ddplab's default scenario trains, the same way, with PyTorch's DistributedDataParallel
on the gloo backend, and prints its steady-state throughput:

  model     Linear+ReLU MLP 784-1024-1024-1024-10, cross-entropy loss
  data      Fashion-MNIST IDX files (gzip), normalised with mean 0.2860, std 0.3530, loaded into tensors
            before training (no disk I/O or DataLoader workers inside the timed steps)
  sampling  DistributedSampler (shuffle, seed), batch 64 per rank, last partial batch kept
  optimizer SGD lr 0.05, momentum 0.9
  DDP       defaults (bucket_cap_mb 25, gradients all-reduced while backward goes on)
  ranks     2 processes started with torch.multiprocessing.spawn, 1 thread each

Every step (gathering the batch, forward, backward with the all-reduce, SGD) is timed as ddplab times its
steps: ddp_harness.py, which also starts the ranks, defines how. Unless --no-eval, the test-set accuracy
after training is reported too.

Needs Debian's python3-torch (1.13), which installs into /usr/bin/python3; run it with that interpreter.
The last line of output is `PYTORCH_RESULT {json}` for scripts.
"""
import argparse
import gzip
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_harness as harness  # first: one thread per rank, set before torch loads; torch checked

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

MEAN, STD = 0.2860, 0.3530


def read_idx(path, magic):
    """An IDX file (optionally gzip) as a numpy array of uint8."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for an IDX file")
    got, n = struct.unpack(">II", data[:8])
    if got != magic:
        raise ValueError(f"{path}: IDX magic {got}, expected {magic}")
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        arr = np.frombuffer(data, dtype=np.uint8, offset=16)
        if arr.size != n * rows * cols:
            raise ValueError(f"{path}: {arr.size} bytes of pixels, expected {n * rows * cols}")
        return arr.reshape(n, rows * cols)
    arr = np.frombuffer(data, dtype=np.uint8, offset=8)
    if arr.size != n:
        raise ValueError(f"{path}: {arr.size} labels, expected {n}")
    return arr


def find(directory, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(directory, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(f"{directory}: no {stem}(.gz) (install dataset-fashion-mnist)")


def load_split(directory, prefix):
    x = read_idx(find(directory, f"{prefix}-images-idx3-ubyte"), 2051)
    y = read_idx(find(directory, f"{prefix}-labels-idx1-ubyte"), 2049)
    if len(x) != len(y):
        raise ValueError(f"{directory}: {len(x)} {prefix} images but {len(y)} labels")
    xt = (torch.from_numpy(x.astype(np.float32)) / 255.0 - MEAN) / STD
    return xt.contiguous(), torch.from_numpy(y.astype(np.int64))


def mlp(layers):
    mods = []
    for i in range(len(layers) - 1):
        mods.append(nn.Linear(layers[i], layers[i + 1]))
        if i + 2 < len(layers):
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


def worker(rank, args):
    x_train, y_train = load_split(args.data, "train")
    x_test, y_test = load_split(args.data, "t10k")

    model = DDP(mlp(args.layers))  # defaults: bucket_cap_mb=25, overlapped all-reduce during backward
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)

    def step(_, b):
        xb, yb = x_train.index_select(0, b), y_train.index_select(0, b)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.item()

    model.train()
    timing = harness.timed_steps(rank, args, len(x_train), step)

    acc = None
    if not args.no_eval:
        model.eval()
        with torch.no_grad():
            shard = range(rank, len(x_test), args.np)
            ix = torch.tensor(list(shard), dtype=torch.int64)
            correct = torch.zeros(2, dtype=torch.float64)
            for at in range(0, len(ix), 1000):
                b = ix[at:at + 1000]
                pred = model.module(x_test.index_select(0, b)).argmax(dim=1)
                correct[0] += (pred == y_test.index_select(0, b)).sum().item()
                correct[1] += len(b)
            dist.all_reduce(correct)
            acc = float(correct[0] / correct[1])
    return {"np": args.np, "batch": args.batch, "warmup": args.warmup, "steps": args.steps, **timing,
            "test_accuracy": acc, **harness.versions()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_run_args(p, "/usr/share/datasets/fashion-mnist", "directory with the IDX files",
                         steps=300, warmup=20, batch=64, batch_help="samples per rank per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--layers", type=lambda s: [int(v) for v in s.split(",")], default=[784, 1024, 1024, 1024, 10],
                   help="comma-separated layer widths (default 784,1024,1024,1024,10)")
    p.add_argument("--no-eval", action="store_true", help="skip the test-set evaluation at the end")
    args = p.parse_args()
    harness.check_run_args(p, args)

    r = harness.run(worker, args, "install dataset-fashion-mnist")
    harness.print_result(r, "", f"{r['samples_per_s']:.0f} samples/s (wall {r['wall_samples_per_s']:.0f})",
                         "test acc", r["test_accuracy"])


if __name__ == "__main__":
    main()
