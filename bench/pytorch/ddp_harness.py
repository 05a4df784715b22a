"""What the PyTorch DDP references for ddplab's throughput comparisons share (ddp_mlp.py, ddp_gpt.py).

The scripts import this module before torch: it sets one thread per rank (OMP, MKL and OpenBLAS, before their
runtimes load, here and in the spawned ranks) and checks that torch and numpy import, ending the run with a
hint at Debian's python3-torch (1.13, which installs into /usr/bin/python3) when they do not. It then runs the
ranks: --np processes started with torch.multiprocessing.spawn, one thread each, in a gloo process group on
127.0.0.1 at a free port, seeded with --seed; each trains through its shard of a DistributedSampler (shuffle,
seed, last partial batch kept) with the step the script gives, and rank 0's result comes back to the parent,
which prints it as the last line of output, `PYTORCH_RESULT {json}`, for scripts.

Timing matches ddplab's: every step is timed on every rank, from gathering the batch to the end of the
optimizer step; per step the slowest rank counts; the first --warmup steps are skipped; throughput is the
samples of all ranks over the sum of the slowest step times. The wall-clock throughput of the same steps
(barriers at both ends) is reported too.
"""
import json
import os
import socket
import sys
import time

# One thread per rank: set before torch (and its OpenMP runtime) is imported, here and in spawned children.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

try:
    import numpy
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.utils.data.distributed import DistributedSampler
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.exit(f"error: {e} (this script needs Debian's python3-torch: run it with /usr/bin/python3; "
             f"install with `apt-get install python3-torch`)")
del numpy  # only checked here: the scripts import it themselves


def add_run_args(p, data, data_help, steps, warmup, batch, batch_help):
    """The options every script has, with its defaults: --data, --np, --steps, --warmup, --batch."""
    p.add_argument("--data", default=data, help=data_help)
    p.add_argument("--np", type=int, default=2, help="ranks (processes)")
    p.add_argument("--steps", type=int, default=steps, help="timed steps")
    p.add_argument("--warmup", type=int, default=warmup, help="untimed steps first")
    p.add_argument("--batch", type=int, default=batch, help=batch_help)


def check_run_args(p, args):
    """Ends the run with a usage error when add_run_args' numbers are out of range."""
    if args.np < 1 or args.steps < 1 or args.warmup < 0 or args.batch < 1:
        p.error("--np, --steps and --batch must be >= 1, --warmup >= 0")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank, body, args, port, queue):
    """One rank process: one thread, the seed, the process group, then body(rank, args); rank 0 sends its
    dict back. An error is printed with the rank and raised again, which fails the spawn."""
    try:
        torch.set_num_threads(1)
        torch.manual_seed(args.seed)
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.np)
        result = body(rank, args)
        if rank == 0:
            queue.put(result)
        dist.destroy_process_group()
    except Exception as e:
        print(f"error: rank {rank}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        raise


def run(body, args, data_hint):
    """Runs body(rank, args) on args.np spawned ranks (body a module-level function, for the spawn) and
    returns the dict rank 0's body returned. Ends the run with an error first when args.data is no directory
    (data_hint: how to install it), and when a rank failed or none reported."""
    if not os.path.isdir(args.data):
        sys.exit(f"error: {args.data}: no such directory ({data_hint})")
    queue = mp.get_context("spawn").SimpleQueue()
    try:
        mp.spawn(_rank, args=(body, args, free_port(), queue), nprocs=args.np, join=True)
    except Exception as e:
        sys.exit(f"error: PyTorch DDP run failed: {e}")
    if queue.empty():
        sys.exit("error: rank 0 reported no result")
    return queue.get()


def timed_steps(rank, args, samples, step):
    """Trains args.warmup + args.steps steps on this rank and times them as the module's docstring says.

    Each epoch a DistributedSampler (shuffle, args.seed, set to the epoch) deals this rank its indices of
    range(samples), cut into batches of args.batch; step(step_number, batch_indices) runs one step (gather the
    batch, forward, backward, optimizer) and returns its loss as a float. A collective: every rank calls it.
    Returns, the same on every rank but final_loss (this rank's last loss), a dict of samples_per_s,
    wall_samples_per_s, step_ms_mean, step_ms_median (the slowest rank's step times after warm-up) and
    final_loss.
    """
    sampler = DistributedSampler(range(samples), num_replicas=args.np, rank=rank, shuffle=True, seed=args.seed)
    total = args.warmup + args.steps
    step_s = torch.zeros(total, dtype=torch.float64)
    counts = torch.zeros(total, dtype=torch.float64)
    n, epoch, loss_v = 0, 0, float("nan")
    wall0 = None
    while n < total:
        sampler.set_epoch(epoch)
        idx = torch.tensor(list(iter(sampler)), dtype=torch.int64)
        for at in range(0, len(idx), args.batch):
            if n == args.warmup:
                dist.barrier()
                wall0 = time.perf_counter()
            if n >= total:
                break
            t0 = time.perf_counter()
            b = idx[at:at + args.batch]
            loss_v = step(n, b)
            step_s[n] = time.perf_counter() - t0
            counts[n] = len(b)
            n += 1
        epoch += 1
    dist.barrier()
    wall = time.perf_counter() - wall0

    # Per step, the slowest rank sets the pace; samples add up over ranks.
    all_s = [torch.zeros_like(step_s) for _ in range(args.np)]
    dist.all_gather(all_s, step_s)
    slowest = torch.stack(all_s).max(dim=0).values[args.warmup:]
    tot_samples = counts[args.warmup:].sum()
    dist.all_reduce(tot_samples)
    return {
        "samples_per_s": float(tot_samples / slowest.sum()),
        "wall_samples_per_s": float(tot_samples / wall),
        "step_ms_mean": float(slowest.mean() * 1e3),
        "step_ms_median": float(slowest.median() * 1e3),
        "final_loss": loss_v,
    }


def versions():
    """The torch version and this rank's thread count, the last fields of a result."""
    return {"torch": torch.__version__, "threads": torch.get_num_threads()}


def print_result(r, model, rate, quality, value):
    """Prints rank 0's result r as a line for people, then as `PYTORCH_RESULT {json}`. The line names the
    model (the script's words, ending in ", ", or nothing), its throughput rate and the figure named quality
    with its value (4 decimals, "-" when None)."""
    value = "-" if value is None else f"{value:.4f}"
    print(f"pytorch {torch.__version__} DDP gloo: {model}{r['np']} ranks x {r['threads']} thread, "
          f"batch {r['batch']}/rank, {r['steps']} steps after {r['warmup']} warmup: {rate}, "
          f"step {r['step_ms_mean']:.2f} ms mean / {r['step_ms_median']:.2f} ms median, "
          f"final loss {r['final_loss']:.4f}, {quality} {value}")
    print("PYTORCH_RESULT " + json.dumps(r), flush=True)
