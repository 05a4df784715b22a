#!/usr/bin/env python3
"""The GPT of ddplab's [model] type = "gpt", written independently in PyTorch (float64), for
tests/runtime/test_gpt_torch.cpp: reads the weights, tokens and labels ddplab used, and writes the logits, the
mean cross-entropy and every parameter's gradient.

usage: gpt_torch.py IN.json OUT.json
IN: {"config": {blocks, dim, heads, kv_heads, ffn, seq, vocab, norm, activation, position, tied, bias},
     "batch": n, "params": [{"name", "shape", "values"}...], "tokens": [...], "labels": [...]}
"""
import json
import math
import sys

import torch
import torch.nn.functional as F


def norm(x, p, name, kind):
    w = p[name + ".weight"]
    if kind == "layernorm":
        return F.layer_norm(x, (x.shape[-1],), w, p[name + ".bias"], eps=1e-5)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w


def rope(x):
    """Rotates interleaved pairs (x[2i], x[2i+1]) of each head by position / 10000^(2i / head_dim)."""
    b, h, t, hd = x.shape
    pos = torch.arange(t, dtype=torch.float64)[:, None]
    inv = 10000.0 ** (-2.0 * torch.arange(hd // 2, dtype=torch.float64) / hd)
    theta = pos * inv[None, :]
    c, s = torch.cos(theta), torch.sin(theta)
    pairs = x.reshape(b, h, t, hd // 2, 2)
    a, bb = pairs[..., 0], pairs[..., 1]
    return torch.stack((a * c - bb * s, a * s + bb * c), dim=-1).reshape(b, h, t, hd)


def linear(x, p, name, bias):
    return F.linear(x, p[name + ".weight"], p[name + ".bias"] if bias else None)


def forward(cfg, p, tokens):
    B, T = tokens.shape
    H, KV, D = cfg["heads"], cfg["kv_heads"], cfg["dim"]
    hd = D // H
    bias = cfg["bias"]
    x = p["wte.weight"][tokens]
    if cfg["position"] == "learned":
        x = x + p["wpe.weight"][torch.arange(T)]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(cfg["blocks"]):
        pre = f"h.{i}."
        qkv = linear(norm(x, p, pre + "ln_1", cfg["norm"]), p, pre + "attn.c_attn", bias)
        q, k, v = qkv.split([H * hd, KV * hd, KV * hd], dim=-1)
        q = q.view(B, T, H, hd).transpose(1, 2)
        k = k.view(B, T, KV, hd).transpose(1, 2)
        v = v.view(B, T, KV, hd).transpose(1, 2)
        if cfg["position"] == "rope":
            q, k = rope(q), rope(k)
        k = k.repeat_interleave(H // KV, dim=1)  # query head h reads key/value head h // (H / KV)
        v = v.repeat_interleave(H // KV, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        att = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + linear(ctx, p, pre + "attn.c_proj", bias)
        f = linear(norm(x, p, pre + "ln_2", cfg["norm"]), p, pre + "mlp.c_fc", bias)
        if cfg["activation"] == "swiglu":
            gate, up = f.split(f.shape[-1] // 2, dim=-1)
            f = F.silu(gate) * up
        else:
            f = F.gelu(f, approximate="tanh")
        x = x + linear(f, p, pre + "mlp.c_proj", bias)
    x = norm(x, p, "ln_f", cfg["norm"])
    head = p["wte.weight"] if cfg["tied"] else p["lm_head.weight"]
    return x @ head.T


def main(inp, out):
    with open(inp) as f:
        d = json.load(f)
    cfg = d["config"]
    params = {e["name"]: torch.tensor(e["values"], dtype=torch.float64).reshape(e["shape"]).requires_grad_()
              for e in d["params"]}
    tokens = torch.tensor(d["tokens"], dtype=torch.long).view(d["batch"], cfg["seq"])
    labels = torch.tensor(d["labels"], dtype=torch.long)
    logits = forward(cfg, params, tokens)
    loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), labels)
    loss.backward()
    result = {"loss": loss.item(), "logits": logits.detach().reshape(-1).tolist(),
              "grads": {n: t.grad.reshape(-1).tolist() for n, t in params.items()}}
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
