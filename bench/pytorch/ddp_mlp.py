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

Timing matches ddplab's: every step is timed on every rank, from gathering the batch to the end of the
optimizer step; per step the slowest rank counts; the first --warmup steps are skipped; throughput is
the samples of all ranks over the sum of the slowest step times. The wall-clock throughput of the same
steps (barriers at both ends) is reported too.

Needs Debian's python3-torch (1.13), which installs into /usr/bin/python3; run it with that interpreter.
The last line of output is `PYTORCH_RESULT {json}` for scripts.
"""
import argparse
import gzip
import json
import os
import socket
import struct
import sys
import time

# One thread per rank: set before torch (and its OpenMP runtime) is imported, here and in spawned children.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

try:
    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data.distributed import DistributedSampler
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.exit(f"error: {e} (this script needs Debian's python3-torch: run it with /usr/bin/python3; "
             f"install with `apt-get install python3-torch`)")

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


def worker(rank, args, port, queue):
    try:
        torch.set_num_threads(1)
        torch.manual_seed(args.seed)
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.np)
        x_train, y_train = load_split(args.data, "train")
        x_test, y_test = load_split(args.data, "t10k")

        model = DDP(mlp(args.layers))  # defaults: bucket_cap_mb=25, overlapped all-reduce during backward
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
        sampler = DistributedSampler(range(len(x_train)), num_replicas=args.np, rank=rank, shuffle=True,
                                     seed=args.seed)
        total = args.warmup + args.steps
        step_s = torch.zeros(total, dtype=torch.float64)
        samples = torch.zeros(total, dtype=torch.float64)
        step, epoch, loss_v = 0, 0, float("nan")
        wall0 = None
        model.train()
        while step < total:
            sampler.set_epoch(epoch)
            idx = torch.tensor(list(iter(sampler)), dtype=torch.int64)
            for at in range(0, len(idx), args.batch):
                if step == args.warmup:
                    dist.barrier()
                    wall0 = time.perf_counter()
                if step >= total:
                    break
                t0 = time.perf_counter()
                b = idx[at:at + args.batch]
                xb, yb = x_train.index_select(0, b), y_train.index_select(0, b)
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
                loss_v = loss.item()
                step_s[step] = time.perf_counter() - t0
                samples[step] = len(b)
                step += 1
            epoch += 1
        dist.barrier()
        wall = time.perf_counter() - wall0

        # Per step, the slowest rank sets the pace; samples add up over ranks.
        all_s = [torch.zeros_like(step_s) for _ in range(args.np)]
        dist.all_gather(all_s, step_s)
        slowest = torch.stack(all_s).max(dim=0).values[args.warmup:]
        tot_samples = samples[args.warmup:].sum()
        dist.all_reduce(tot_samples)

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
        if rank == 0:
            queue.put({
                "np": args.np, "batch": args.batch, "warmup": args.warmup, "steps": args.steps,
                "samples_per_s": float(tot_samples / slowest.sum()),
                "wall_samples_per_s": float(tot_samples / wall),
                "step_ms_mean": float(slowest.mean() * 1e3),
                "step_ms_median": float(slowest.median() * 1e3),
                "final_loss": loss_v, "test_accuracy": acc,
                "torch": torch.__version__, "threads": torch.get_num_threads(),
            })
        dist.destroy_process_group()
    except Exception as e:
        print(f"error: rank {rank}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        raise


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist", help="directory with the IDX files")
    p.add_argument("--np", type=int, default=2, help="ranks (processes)")
    p.add_argument("--steps", type=int, default=300, help="timed steps")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--layers", type=lambda s: [int(v) for v in s.split(",")], default=[784, 1024, 1024, 1024, 10],
                   help="comma-separated layer widths (default 784,1024,1024,1024,10)")
    p.add_argument("--no-eval", action="store_true", help="skip the test-set evaluation at the end")
    args = p.parse_args()
    if args.np < 1 or args.steps < 1 or args.warmup < 0 or args.batch < 1:
        p.error("--np, --steps and --batch must be >= 1, --warmup >= 0")
    if not os.path.isdir(args.data):
        sys.exit(f"error: {args.data}: no such directory (install dataset-fashion-mnist)")

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    try:
        mp.spawn(worker, args=(args, free_port(), queue), nprocs=args.np, join=True)
    except Exception as e:
        sys.exit(f"error: PyTorch DDP run failed: {e}")
    if queue.empty():
        sys.exit("error: rank 0 reported no result")
    r = queue.get()
    acc = "-" if r["test_accuracy"] is None else f"{r['test_accuracy']:.4f}"
    print(f"pytorch {torch.__version__} DDP gloo: {r['np']} ranks x {r['threads']} thread, batch {r['batch']}/rank, "
          f"{r['steps']} steps after {r['warmup']} warmup: {r['samples_per_s']:.0f} samples/s "
          f"(wall {r['wall_samples_per_s']:.0f}), step {r['step_ms_mean']:.2f} ms mean / "
          f"{r['step_ms_median']:.2f} ms median, final loss {r['final_loss']:.4f}, test acc {acc}")
    print("PYTORCH_RESULT " + json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
