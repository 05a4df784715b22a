#!/usr/bin/env python3
"""PyTorch on one GPU, for the GPU check's side-by-side throughput comparison (scripts/gpu-check.sh).

The model, data and step of ddplab-gpu-train: Linear+ReLU MLP 784-1024-1024-1024-10, cross-entropy,
Fashion-MNIST normalised with mean 0.2860 / std 0.3530 and held on the device, batch 64, SGD lr 0.05
momentum 0.9, shuffled with a seeded permutation, one epoch. Eager mode, fp32 (TF32 off) unless --tf32.
Every step reads its loss back to the host after the optimizer step (ddplab reads it after the forward
pass, so its backward and optimizer overlap the next step's host work). No DDP wrapper: at world size 1
neither side communicates (ddplab's plan skips collectives of one rank). The whole dataset is held on the
device, so PyTorch's batches cost an index, where ddplab's come from the host through its input
pipeline. Timing covers the training steps only, with a synchronize at both ends; samples are counted
as trained (a last partial batch counts its size); `steady_samples_per_s` leaves out the first
--warmup-steps steps (lazy module loading, cuBLAS and allocator warm-up), as ddplab-gpu-train does.
--graph captures the whole step (forward, backward, SGD) in one CUDA graph after three eager steps on a
side stream, as PyTorch's documentation shows; a last partial batch runs eagerly. --batches runs several
batch sizes, each from a fresh model. Needs no numpy: IDX files are parsed with struct and
torch.frombuffer. Each run prints one line `PYTORCH_RESULT {json}`.
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


def make_model(seed, dev):
    torch.manual_seed(seed)
    layers = [784, 1024, 1024, 1024, 10]
    mods = []
    for i in range(len(layers) - 1):
        mods.append(nn.Linear(layers[i], layers[i + 1]))
        if i + 2 < len(layers):
            mods.append(nn.ReLU())
    return nn.Sequential(*mods).to(dev)


def train(a, batch, graph, xtr, ytr, xte, yte, dev):
    model = make_model(a.seed, dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    static_x = static_y = static_loss = g = None
    if graph:  # capture after warm-up on a side stream (PyTorch docs, "whole-network capture")
        static_x = torch.zeros(batch, 784, device=dev)
        static_y = torch.zeros(batch, dtype=torch.long, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                static_x.copy_(xtr[:batch]); static_y.copy_(ytr[:batch])
                step(static_x, static_y)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            static_loss = F.cross_entropy(model(static_x), static_y)
            static_loss.backward()
            opt.step()
    steps, samples, warm_samples, last, t_warm = 0, 0, 0, None, None
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for epoch in range(a.epochs):
        gen = torch.Generator().manual_seed(a.seed + epoch)
        perm = torch.randperm(xtr.shape[0], generator=gen).to(dev)
        for at in range(0, xtr.shape[0], batch):
            if steps == a.warmup_steps:
                t_warm, warm_samples = time.perf_counter(), samples
            idx = perm[at:at + batch]
            if graph and idx.shape[0] == batch:
                static_x.copy_(xtr[idx]); static_y.copy_(ytr[idx])
                g.replay()
                last = static_loss.item()
            else:
                last = step(xtr[idx], ytr[idx]).item()
            steps += 1
            samples += idx.shape[0]
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    r = {"backend": "pytorch-" + torch.__version__, "mode": "graph" if graph else "eager", "steps": steps,
         "batch": batch, "epochs": a.epochs, "train_s": round(t1 - t0, 4),
         "samples_per_s": round(samples / (t1 - t0), 1), "final_loss": last, "test_accuracy": round(acc, 4),
         "tf32": a.tf32}
    if t_warm is not None:
        r["steady_samples_per_s"] = round((samples - warm_samples) / (t1 - t_warm), 1)
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--batches", default="", help="comma-separated batch sizes (overrides --batch)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--warmup-steps", type=int, default=20)
    p.add_argument("--tf32", action="store_true")
    p.add_argument("--graph", action="store_true", help="also run each batch with the step in a CUDA graph")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("error: torch.cuda.is_available() is False (no CUDA device visible to PyTorch)")
    batches = [int(b) for b in a.batches.split(",")] if a.batches else [a.batch]
    if any(b <= 0 for b in batches) or a.epochs <= 0 or a.warmup_steps < 0:
        sys.exit("error: batch sizes and --epochs must be > 0, --warmup-steps >= 0")
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    dev = torch.device("cuda")
    xtr, ytr = load(a.data, "train", dev)
    xte, yte = load(a.data, "t10k", dev)
    failed = False
    for batch in batches:
        for graph in ([False, True] if a.graph else [False]):
            try:
                print("PYTORCH_RESULT " + json.dumps(train(a, batch, graph, xtr, ytr, xte, yte, dev)), flush=True)
            except RuntimeError as e:  # one failed mode must not hide the other runs' figures
                print(f"error: batch {batch}, {'graph' if graph else 'eager'}: {e}", file=sys.stderr, flush=True)
                failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
