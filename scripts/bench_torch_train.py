#!/usr/bin/env python3
"""Training throughput of ptxkit's decoder beside the same model in PyTorch, on one GPU.

    python3 scripts/bench_torch_train.py --ptxkit .gpu/ptxkit [--ptxkit-args "--precision bf16"]

Runs, in one process and on one GPU, one training step after another of the decoder that
`ptxkit train` trains by default on a GPU (config.json of a `ptxkit train --checkpoint` run,
or the built-in SMALL preset: 8 layers, hidden 512, 8/2 heads of 64, ffn 1408, vocab 260;
8 windows of 512 tokens), written with transformers' LlamaForCausalLM (SDPA attention), with
AdamW (fused, f32 master weights), global-norm clipping to 1.0 and zeroed gradients:

  eager-bf16        autocast to bf16 (what `torch.autocast` users run)
  compile-bf16      the same with the model under torch.compile (default mode)
  eager-tf32        f32 activations, TF32 matmuls (ptxkit's `--precision tf32` path)
  compile-tf32      the same under torch.compile
  graphs-bf16       (not in the default list) torch.compile(mode="reduce-overhead"), the
                    model's kernels replayed from CUDA graphs as ptxkit replays its step; with
                    transformers' Llama (torch 2.11, transformers on the GPU machine) the
                    backward fails, reading a graph output a later graph overwrote
  qlora-*           (--qlora) frozen NF4 projections with rank-16 LoRA on q, k, v, o, gate, up,
                    down: bitsandbytes' Linear4bit through peft when bitsandbytes is installed,
                    otherwise a pure-PyTorch NF4 linear that dequantizes its 64-blocks in the
                    forward (bitsandbytes' code table and layout) plus a hand-written LoRA

With --ptxkit, the binary's `train --device cuda` runs in the same call (each --ptxkit-args
string once) and its "N steps in S s (M ms/step, T tokens/s)" line is parsed.

MFU: model FLOPs per token over the GPU's dense peak (--peak-tflops, default 989.4, the
H100/H200 SXM bf16 dense figure). Full training: 6·P (P the parameters of every matrix the
tokens pass through: the projections and the LM head; the embedding lookup is not a product)
plus causal attention 6·L·S·d_q (forward QKᵀ and PV at 2·S·d each, halved by the mask, times
three for forward and backward). QLoRA: the frozen base has no weight gradient, so 4·P for
the base plus 6·P_lora, plus attention.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = dict(
    vocab_size=260,
    hidden_size=512,
    num_hidden_layers=8,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=64,
    intermediate_size=1408,
    rope_theta=10000.0,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
    max_position_embeddings=512,
)

# bitsandbytes' NormalFloat4 code values, code 0 to 15.
NF4 = [
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
]

PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class Nf4LoraLinear(nn.Module):
    """A frozen NF4 weight (blocks of 64, one absmax each, two codes a byte, first in the
    high nibble) dequantized to bf16 in every forward, plus a trained LoRA adapter."""

    def __init__(self, linear, rank, alpha):
        super().__init__()
        w = linear.weight.detach().float()
        self.out_features, self.in_features = w.shape
        blocks = w.reshape(-1, 64)
        absmax = blocks.abs().amax(dim=1, keepdim=True).clamp_min(1e-12)
        table = torch.tensor(NF4, device=w.device)
        codes = (blocks / absmax).unsqueeze(-1).sub(table).abs().argmin(dim=-1).to(torch.uint8)
        codes = codes.reshape(-1)
        self.register_buffer("packed", (codes[0::2] << 4) | codes[1::2])
        self.register_buffer("absmax", absmax.reshape(-1))
        self.register_buffer("table", table)
        dev = w.device
        self.lora_a = nn.Parameter(torch.randn(rank, self.in_features, device=dev) / rank)
        self.lora_b = nn.Parameter(torch.zeros(self.out_features, rank, device=dev))
        self.scale = alpha / rank

    def weight_bf16(self):
        hi = (self.packed >> 4).long()
        lo = (self.packed & 15).long()
        codes = torch.stack([hi, lo], dim=1).reshape(-1, 64)
        w = self.table[codes] * self.absmax.unsqueeze(1)
        return w.reshape(self.out_features, self.in_features).to(torch.bfloat16)

    def forward(self, x):
        y = F.linear(x, self.weight_bf16())
        return y + self.scale * F.linear(F.linear(x, self.lora_a.to(x.dtype)), self.lora_b.to(x.dtype))


def load_config(path):
    if path is None:
        return dict(SMALL)
    with open(path) as f:
        cfg = json.load(f)
    out = dict(SMALL)
    for k in SMALL:
        if k in cfg:
            out[k] = cfg[k]
    if "head_dim" not in cfg:
        out["head_dim"] = out["hidden_size"] // out["num_attention_heads"]
    return out


def build(cfg, device, qlora, rank, alpha):
    from transformers import LlamaConfig, LlamaForCausalLM

    conf = LlamaConfig(**cfg, attn_implementation="sdpa", use_cache=False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(conf).to(device=device, dtype=torch.float32)
    backend = None
    if qlora:
        try:
            import bitsandbytes  # noqa: F401
            from peft import LoraConfig, get_peft_model
            from transformers import BitsAndBytesConfig

            conf_q = LlamaConfig(**cfg, attn_implementation="sdpa", use_cache=False)
            bnb = BitsAndBytesConfig(
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_compute_dtype=torch.bfloat16,
            )
            state = model.state_dict()
            model = LlamaForCausalLM.from_pretrained(
                None, config=conf_q, state_dict=state, quantization_config=bnb
            )
            model = get_peft_model(
                model, LoraConfig(r=rank, lora_alpha=alpha, target_modules=PROJECTIONS)
            )
            backend = "bitsandbytes + peft"
        except Exception as e:  # bitsandbytes missing or unusable here: pure PyTorch
            print(f"# bitsandbytes path unavailable ({type(e).__name__}: {e}); pure-PyTorch NF4")
            for p in model.parameters():
                p.requires_grad_(False)
            for layer in model.model.layers:
                for parent in (layer.self_attn, layer.mlp):
                    for name in PROJECTIONS:
                        if hasattr(parent, name):
                            setattr(parent, name, Nf4LoraLinear(getattr(parent, name), rank, alpha))
            backend = "pure PyTorch NF4 + LoRA"
    return model, backend


def flops_per_token(cfg, seq, qlora, rank):
    h, L, f, v = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"], cfg["vocab_size"]
    dq = cfg["num_attention_heads"] * cfg["head_dim"]
    dkv = cfg["num_key_value_heads"] * cfg["head_dim"]
    proj = L * (h * dq + 2 * h * dkv + dq * h + 3 * h * f)
    head = h * v
    attention = 6 * L * seq * dq
    if not qlora:
        return 6 * (proj + head) + attention
    lora = L * rank * ((h + dq) + 2 * (h + dkv) + (dq + h) + 2 * (h + f) + (f + h))
    return 4 * (proj + head) + 6 * lora + attention


def time_mode(name, cfg, args, device, tokens):
    qlora = name.startswith("qlora")
    compile_mode = None
    if "compile" in name:
        compile_mode = "default"
    if "graphs" in name:
        compile_mode = "reduce-overhead"
    bf16 = name.endswith("bf16")
    model, backend = build(cfg, device, qlora, args.lora_rank, args.lora_alpha)
    model.train()
    if compile_mode:
        # The model compiled, as the PyTorch recipes do; the fused AdamW is one multi-tensor
        # kernel already, and clipping two.
        model = torch.compile(model, mode=compile_mode)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True)
    torch.set_float32_matmul_precision("highest" if bf16 else "high")
    torch.backends.cudnn.allow_tf32 = not bf16

    def step(ids):
        if compile_mode == "reduce-overhead":
            # A new iteration: the graphs' outputs of the previous one may be overwritten.
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=ids).logits
        loss = F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=False)
        return loss

    batches = [tokens[i % len(tokens)] for i in range(args.warmup + args.steps)]
    t0 = time.perf_counter()
    for ids in batches[: args.warmup]:
        loss = step(ids)
    torch.cuda.synchronize()
    warm = time.perf_counter() - t0
    start = time.perf_counter()
    for ids in batches[args.warmup :]:
        loss = step(ids)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    del model, opt
    torch.cuda.empty_cache()
    return seconds / args.steps, warm, float(loss), backend


def run_ptxkit(binary, extra, steps):
    cmd = [binary, "train", "--device", "cuda", "--steps", str(steps)] + shlex.split(extra)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout + out.stderr, file=sys.stderr)
        raise SystemExit(f"{' '.join(cmd)} failed with status {out.returncode}")
    m = re.search(r"(\d+) steps in ([\d.]+) s \(([\d.]+) ms/step, (\d+) tokens/s\)", out.stdout)
    if not m:
        raise SystemExit(f"no throughput line in the output of {' '.join(cmd)}:\n{out.stdout}")
    return float(m.group(3)) / 1e3, out.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", help="a config.json (default: the SMALL preset)")
    ap.add_argument("--seqs", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--steps", type=int, default=100, help="timed steps per mode")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps first (compilation)")
    ap.add_argument("--modes", default="eager-bf16,compile-bf16,eager-tf32,compile-tf32")
    ap.add_argument("--qlora", action="store_true", help="time the QLoRA modes instead")
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--lora-alpha", type=float, default=32.0)
    ap.add_argument("--ptxkit", help="ptxkit binary to run beside, in the same call")
    ap.add_argument("--ptxkit-args", action="append", default=None,
                    help="extra arguments of one `ptxkit train` run (repeatable)")
    ap.add_argument("--ptxkit-steps", type=int, default=300)
    ap.add_argument("--peak-tflops", type=float, default=989.4)
    args = ap.parse_args()

    device = torch.device("cuda")
    cfg = load_config(args.config)
    if args.seq_len > cfg["max_position_embeddings"]:
        raise SystemExit(f"--seq-len {args.seq_len} is longer than the model's max_position_embeddings")
    g = torch.Generator().manual_seed(0)
    tokens = [
        torch.randint(0, cfg["vocab_size"], (args.seqs, args.seq_len), generator=g).to(device)
        for _ in range(8)
    ]
    per_step = args.seqs * args.seq_len
    fpt = flops_per_token(cfg, args.seq_len, args.qlora, args.lora_rank)
    modes = args.modes.split(",")
    if args.qlora:
        modes = ["qlora-" + m for m in modes if m.endswith("bf16")]
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, config {json.dumps(cfg)}")
    print(f"# {args.seqs} × {args.seq_len} tokens a step, {fpt / 1e6:.1f} MFLOP a token, peak {args.peak_tflops} TFLOPS")
    print(f"{'run':<28} {'ms/step':>9} {'tokens/s':>11} {'MFU %':>7} {'warm-up s':>10}  note")
    rows = []
    for name in modes:
        sec, warm, loss, backend = time_mode(name, cfg, args, device, tokens)
        tps = per_step / sec
        mfu = 100 * tps * fpt / (args.peak_tflops * 1e12)
        note = f"loss {loss:.3f}" + (f", {backend}" if backend else "")
        print(f"{'torch ' + name:<28} {sec * 1e3:>9.3f} {tps:>11.0f} {mfu:>7.2f} {warm:>10.1f}  {note}", flush=True)
        rows.append((name, sec))
    if args.ptxkit:
        for extra in args.ptxkit_args or ([" --qlora"] if args.qlora else [""]):
            sec, _ = run_ptxkit(args.ptxkit, extra, args.ptxkit_steps)
            tps = per_step / sec
            mfu = 100 * tps * fpt / (args.peak_tflops * 1e12)
            label = ("ptxkit " + extra.strip()).strip()
            print(f"{label:<28} {sec * 1e3:>9.3f} {tps:>11.0f} {mfu:>7.2f} {'':>10}", flush=True)


if __name__ == "__main__":
    main()
