#!/usr/bin/python3
"""PyTorch DDP reference for ddplab's GPT throughput comparison (bench/compare_pytorch_gpt.sh).

Trains the model scenarios/gpt-tiny.toml trains, the same way, with PyTorch's DistributedDataParallel on the
gloo backend, and prints its steady-state throughput:

  model     ddplab's [model] type = "gpt" (the functional float64 reference is tests/python/gpt_torch.py),
            here an nn.Module in float32 with the same parameter names, shapes and order: GPT-2's parts by
            default (LayerNorm eps 1e-5, tanh-GELU MLP of 4 dim, learned positions, output tied to wte,
            biases), 4 blocks of width 128, 4 heads, 128-token context, vocabulary of 256 bytes; optional
            RMSNorm, SwiGLU, RoPE, grouped-query attention (--kv-heads), an untied lm_head, no biases.
            Attention is the plain masked softmax over the full seq x seq scores (PyTorch 1.13 has no
            scaled_dot_product_attention). Initialised as GPT-2: weights and embeddings N(0, 0.02), c_proj
            weights N(0, 0.02 / sqrt(2 blocks)), biases 0, norm weights 1.
  data      Debian's fortunes as ddplab's runtime/src/text_data.cpp reads them: regular files (not links)
            without an extension, sorted by name, cut into fortunes at lines holding only "%"; every 10th
            fortune (0-based count % 10 == 9, over all files) held out for validation; each set is its
            fortunes' text followed by "%\\n" each, cut into sequences of seq bytes at stride seq, the label of
            each byte the next one. Loaded into tensors before training (no I/O inside the timed steps).
  sampling  DistributedSampler (shuffle, seed), batch 16 sequences per rank, last partial batch kept
  loss      mean cross-entropy over the batch's tokens
  optimizer AdamW lr 0.003, betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on every parameter (as ddplab's
            [train] weight_decay), the global gradient norm clipped to 1.0, and ddplab's learning-rate plan
            (strategies/src/optimizers/optimizers.cpp): update t < W gets lr (t + 1) / W, then cosine decay
            from lr at the first update after warm-up to 0 at the last one (min_factor 0), over the run's
            warmup + steps updates
  DDP       defaults (bucket_cap_mb 25, gradients all-reduced while backward goes on)
  ranks     --np processes started with torch.multiprocessing.spawn, 1 thread each

Every step (gathering the batch, the learning rate, forward, backward with the all-reduce, clipping, AdamW) is
timed as ddplab times its steps: ddp_harness.py, which also starts the ranks, defines how. Its samples are
sequences; tokens/s = samples/s x seq. With --eval, the mean validation cross-entropy per token after
training is reported too.

Needs Debian's python3-torch (1.13), which installs into /usr/bin/python3; run it with that interpreter.
The last line of output is `PYTORCH_RESULT {json}` for scripts.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_harness as harness  # first: one thread per rank, set before torch loads; torch checked

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB = 256  # byte-level text


# ---- data: runtime/src/text_data.cpp, line for line ----

def has_extension(name):
    """std::filesystem::path::has_extension: a dot after the first character of the file name."""
    return name.rfind(".") > 0


def split_fortunes(text):
    """The fortunes of one file (bytes): the text between its lines holding only "%", each line + "\\n"."""
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":  # std::getline: a final "\n" ends the last line, no empty line after it
        lines.pop()
    out, current = [], []
    for line in lines:
        if line == b"%":
            if current:
                out.append(b"".join(current))
            current = []
        else:
            current.append(line + b"\n")
    if current:
        out.append(b"".join(current))
    return out


def load_fortunes(directory, seq):
    """(train tokens, train labels, validation tokens, validation labels), each an int64 [n, seq] tensor."""
    files = sorted((e for e in os.scandir(directory)
                    if e.is_file() and not e.is_symlink() and not has_extension(e.name)),
                   key=lambda e: os.fsencode(e.name))
    streams = {True: [], False: []}
    count = 0
    for f in files:
        with open(f.path, "rb") as fh:
            text = fh.read()
        for fortune in split_fortunes(text):
            streams[count % 10 != 9].append(fortune + b"%\n")
            count += 1
    if count == 0:
        raise ValueError(f"{directory}: no fortune files (apt-get install fortunes)")
    out = []
    for train in (True, False):
        stream = np.frombuffer(b"".join(streams[train]), dtype=np.uint8)
        n = (stream.size - 1) // seq if stream.size > 1 else 0
        if n == 0:
            raise ValueError(f"{directory}: the {'training' if train else 'validation'} set has {stream.size} "
                             f"bytes, less than one sequence of {seq} tokens")
        x = torch.from_numpy(stream[:n * seq].astype(np.int64)).view(n, seq)
        y = torch.from_numpy(stream[1:n * seq + 1].astype(np.int64)).view(n, seq)
        out += [x.contiguous(), y.contiguous()]
    return tuple(out)


# ---- model: tests/python/gpt_torch.py as an nn.Module ----

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(cfg):
    return nn.LayerNorm(cfg.dim, eps=1e-5) if cfg.norm == "layernorm" else RMSNorm(cfg.dim)


def rope_tables(seq, hd):
    """cos and sin of position / 10000^(2i / hd) for interleaved pairs (x[2i], x[2i+1]), [seq, hd / 2]."""
    pos = torch.arange(seq, dtype=torch.float64)[:, None]
    inv = 10000.0 ** (-2.0 * torch.arange(hd // 2, dtype=torch.float64) / hd)
    theta = pos * inv[None, :]
    return torch.cos(theta).float(), torch.sin(theta).float()


def rope(x, cos, sin):
    b, h, t, hd = x.shape
    pairs = x.reshape(b, h, t, hd // 2, 2)
    a, bb = pairs[..., 0], pairs[..., 1]
    return torch.stack((a * cos - bb * sin, a * sin + bb * cos), dim=-1).reshape(b, h, t, hd)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads, self.kv, self.hd = cfg.heads, cfg.kv_heads, cfg.dim // cfg.heads
        self.c_attn = nn.Linear(cfg.dim, (cfg.heads + 2 * cfg.kv_heads) * self.hd, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.dim, cfg.dim, bias=cfg.bias)

    def forward(self, x, masked, rot):
        B, T, D = x.shape
        H, KV, hd = self.heads, self.kv, self.hd
        q, k, v = self.c_attn(x).split([H * hd, KV * hd, KV * hd], dim=-1)
        q = q.view(B, T, H, hd).transpose(1, 2)
        k = k.view(B, T, KV, hd).transpose(1, 2)
        v = v.view(B, T, KV, hd).transpose(1, 2)
        if rot is not None:
            q, k = rope(q, *rot), rope(k, *rot)
        if KV != H:  # query head h reads key/value head h // (H / KV)
            k = k.repeat_interleave(H // KV, dim=1)
            v = v.repeat_interleave(H // KV, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(masked, float("-inf")).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, D))


class Mlp(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.swiglu = cfg.activation == "swiglu"
        self.c_fc = nn.Linear(cfg.dim, cfg.ffn * (2 if self.swiglu else 1), bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.ffn, cfg.dim, bias=cfg.bias)

    def forward(self, x):
        f = self.c_fc(x)
        if self.swiglu:
            gate, up = f.chunk(2, dim=-1)
            f = F.silu(gate) * up
        else:
            f = F.gelu(f, approximate="tanh")
        return self.c_proj(f)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = make_norm(cfg)
        self.attn = Attention(cfg)
        self.ln_2 = make_norm(cfg)
        self.mlp = Mlp(cfg)

    def forward(self, x, masked, rot):
        x = x + self.attn(self.ln_1(x), masked, rot)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Parameters in ddplab's order (strategies/src/gpt.cpp): wte, wpe, h.{i}.*, ln_f, lm_head."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(VOCAB, cfg.dim)
        self.wpe = nn.Embedding(cfg.seq, cfg.dim) if cfg.position == "learned" else None
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg.blocks))
        self.ln_f = make_norm(cfg)
        self.lm_head = None if cfg.tied else nn.Linear(cfg.dim, VOCAB, bias=False)
        # Constants as plain attributes, not buffers: DDP would broadcast buffers from rank 0 at every forward,
        # a collective ddplab's plan has no counterpart for.
        self.masked = ~torch.ones(cfg.seq, cfg.seq, dtype=torch.bool).tril()
        self.rot = rope_tables(cfg.seq, cfg.dim // cfg.heads) if cfg.position == "rope" else None
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        residual_std = 0.02 / math.sqrt(2 * self.cfg.blocks)
        for name, p in self.named_parameters():
            if ".ln_" in name or name.startswith("ln_f."):
                p.fill_(1.0 if name.endswith(".weight") else 0.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:
                p.normal_(0.0, residual_std if name.endswith("c_proj.weight") else 0.02)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.wte(tokens)
        if self.wpe is not None:
            x = x + self.wpe.weight[:T]
        rot = None if self.rot is None else (self.rot[0][:T], self.rot[1][:T])
        masked = self.masked[:T, :T]
        for block in self.h:
            x = block(x, masked, rot)
        x = self.ln_f(x)
        return F.linear(x, self.wte.weight if self.lm_head is None else self.lm_head.weight)


# ---- ddplab's learning-rate plan ----

def lr_at(t, peak, warmup, total):
    """ddplab's LrPlan::lr with lr_schedule "cosine" (min_factor 0) and no batch scaling; t from 0."""
    if t < warmup:
        return peak * (t + 1) / warmup
    n = max(1, total - warmup)
    progress = min(1.0, (t - warmup) / (n - 1)) if n > 1 else 1.0
    return peak * 0.5 * (1.0 + math.cos(math.pi * progress))


def worker(rank, args):
    x_train, y_train, x_val, y_val = load_fortunes(args.data, args.seq)

    model = DDP(GPT(args))  # defaults: bucket_cap_mb=25, overlapped all-reduce during backward
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps,
                            weight_decay=args.weight_decay)
    total = args.warmup + args.steps

    def step(t, b):
        xb, yb = x_train.index_select(0, b), y_train.index_select(0, b)
        for g in opt.param_groups:
            g["lr"] = lr_at(t, args.lr, args.lr_warmup, total)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xb).view(-1, VOCAB), yb.view(-1))
        loss.backward()
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        return loss.item()

    model.train()
    timing = harness.timed_steps(rank, args, len(x_train), step)

    val_loss = None
    if args.eval:
        model.eval()
        with torch.no_grad():
            ix = torch.arange(rank, len(x_val), args.np, dtype=torch.int64)
            acc = torch.zeros(2, dtype=torch.float64)  # summed token losses, tokens
            for at in range(0, len(ix), 64):
                b = ix[at:at + 64]
                logits = model.module(x_val.index_select(0, b))
                acc[0] += F.cross_entropy(logits.view(-1, VOCAB), y_val.index_select(0, b).view(-1),
                                          reduction="sum").item()
                acc[1] += b.numel() * args.seq
            dist.all_reduce(acc)
            val_loss = float(acc[0] / acc[1])
    sps = timing["samples_per_s"]
    # The harness's figures after samples_per_s and tokens_per_s (a dict keeps a key where it first stood).
    return {"np": args.np, "batch": args.batch, "seq": args.seq, "warmup": args.warmup, "steps": args.steps,
            "samples_per_s": sps, "tokens_per_s": sps * args.seq, **timing, "val_loss": val_loss,
            "params": sum(p.numel() for p in model.parameters()),
            "train_sequences": len(x_train), "val_sequences": len(x_val), **harness.versions()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_run_args(p, "/usr/share/games/fortunes", "directory of Debian's fortune files",
                         steps=60, warmup=5, batch=16, batch_help="sequences per rank per step")
    p.add_argument("--seed", type=int, default=1)
    m = p.add_argument_group("model (ddplab's [model] type = \"gpt\")")
    m.add_argument("--blocks", type=int, default=4)
    m.add_argument("--dim", type=int, default=128)
    m.add_argument("--heads", type=int, default=4)
    m.add_argument("--kv-heads", type=int, default=0, help="key/value heads (0 = as many as heads)")
    m.add_argument("--ffn", type=int, default=0,
                   help="MLP units (0 = 4 dim for gelu, 8 dim / 3 rounded up to a multiple of 8 for swiglu)")
    m.add_argument("--seq", type=int, default=128, help="tokens per sequence")
    m.add_argument("--norm", choices=["layernorm", "rmsnorm"], default="layernorm")
    m.add_argument("--activation", choices=["gelu", "swiglu"], default="gelu")
    m.add_argument("--position", choices=["learned", "rope"], default="learned")
    m.add_argument("--untied", dest="tied", action="store_false", help="an lm_head of its own")
    m.add_argument("--no-bias", dest="bias", action="store_false", help="linear layers without biases")
    o = p.add_argument_group("optimizer (ddplab's [train])")
    o.add_argument("--lr", type=float, default=0.003, help="peak learning rate")
    o.add_argument("--lr-warmup", type=int, default=50, help="updates of linear warm-up (train.warmup_steps)")
    o.add_argument("--beta1", type=float, default=0.9)
    o.add_argument("--beta2", type=float, default=0.95)
    o.add_argument("--eps", type=float, default=1e-8)
    o.add_argument("--weight-decay", type=float, default=0.1)
    o.add_argument("--clip", type=float, default=1.0, help="global gradient-norm clip (0 = off)")
    p.add_argument("--eval", action="store_true", help="report the validation loss after training")
    args = p.parse_args()
    harness.check_run_args(p, args)
    if min(args.blocks, args.dim, args.heads, args.seq) < 1 or args.kv_heads < 0 or args.ffn < 0 or args.lr_warmup < 0:
        p.error("--blocks, --dim, --heads and --seq must be >= 1; --kv-heads, --ffn and --lr-warmup >= 0")
    args.kv_heads = args.kv_heads or args.heads
    if args.dim % args.heads or args.heads % args.kv_heads:
        p.error(f"--dim {args.dim} must split into --heads {args.heads}, and those into --kv-heads {args.kv_heads}")
    if args.position == "rope" and (args.dim // args.heads) % 2:
        p.error("--position rope needs an even head width (dim / heads)")
    if args.ffn == 0:
        args.ffn = (8 * args.dim // 3 + 7) // 8 * 8 if args.activation == "swiglu" else 4 * args.dim

    r = harness.run(worker, args, "apt-get install fortunes")
    model = f"GPT {args.blocks}x{args.dim}, {args.heads} heads, seq {args.seq} ({r['params']} parameters), "
    rate = (f"{r['samples_per_s']:.1f} samples/s, {r['tokens_per_s']:.0f} tokens/s "
            f"(wall {r['wall_samples_per_s']:.1f} samples/s)")
    harness.print_result(r, model, rate, "validation loss", r["val_loss"])


if __name__ == "__main__":
    main()
