#!/usr/bin/env python3
"""PyTorch on one GPU, for the GPU check's side-by-side throughput comparison (scripts/gpu-check.sh).

The model, data and step of ddplab-gpu-train: Linear+ReLU MLP 784-1024-1024-1024-10, cross-entropy,
Fashion-MNIST normalised with mean 0.2860 / std 0.3530 and held on the device, batch 64, SGD lr 0.05
momentum 0.9, shuffled with a seeded permutation, one epoch. Eager mode, fp32 (TF32 off) unless --tf32.
Every step reads the loss back to the host, as ddplab's does. Timing covers the training steps only (the
data already on the device), with a synchronize at both ends. Needs no numpy: IDX files are parsed with
struct and torch.frombuffer. The last line is `PYTORCH_RESULT {json}`.
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.exit(f"error: {e} (needs PyTorch with CUDA)")

MEAN, STD = 0.2860, 0.3530


def read_idx(path, magic):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    got, n = struct.unpack(">II", data[:8])
    if got != magic:
        raise ValueError(f"{path}: magic {got}, expected {magic}")
    header = 16 if magic == 2051 else 8
    return torch.frombuffer(bytearray(data[header:]), dtype=torch.uint8), n


def load(dirname, prefix, device):
    x, n = read_idx(os.path.join(dirname, f"{prefix}-images-idx3-ubyte.gz"), 2051)
    y, _ = read_idx(os.path.join(dirname, f"{prefix}-labels-idx1-ubyte.gz"), 2049)
    x = ((x.float() / 255.0 - MEAN) / STD).view(n, 784)
    return x.to(device), y.long().to(device)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tf32", action="store_true")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("error: torch.cuda.is_available() is False (no CUDA device visible to PyTorch)")
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    dev = torch.device("cuda")
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.data, "train", dev)
    xte, yte = load(a.data, "t10k", dev)
    layers = [784, 1024, 1024, 1024, 10]
    mods = []
    for i in range(len(layers) - 1):
        mods.append(nn.Linear(layers[i], layers[i + 1]))
        if i + 2 < len(layers):
            mods.append(nn.ReLU())
    model = nn.Sequential(*mods).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    steps, loss = 0, None
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for epoch in range(a.epochs):
        g = torch.Generator().manual_seed(a.seed + epoch)
        perm = torch.randperm(xtr.shape[0], generator=g).to(dev)
        for at in range(0, xtr.shape[0], a.batch):
            idx = perm[at:at + a.batch]
            out = model(xtr[idx])
            loss = F.cross_entropy(out, ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            last = loss.item()
            steps += 1
    torch.cuda.synchronize()
    train_s = time.perf_counter() - t0
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    r = {"backend": "pytorch-" + torch.__version__, "steps": steps, "batch": a.batch, "train_s": round(train_s, 4),
         "samples_per_s": round(steps * a.batch / train_s, 1), "final_loss": last, "test_accuracy": round(acc, 4),
         "tf32": a.tf32}
    print("PYTORCH_RESULT " + json.dumps(r))


if __name__ == "__main__":
    main()
