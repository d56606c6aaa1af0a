#!/usr/bin/env python3
"""Cross-checks one ptxkit decoder step against Hugging Face transformers.

    ptxkit train --dump-step DIR [--qlora] [--precision bf16|tf32]   # writes DIR (dump.rs)
    python3 scripts/crosscheck_hf.py DIR

DIR holds the checkpoint the step starts from (config.json + model.safetensors; with QLoRA
the base as its NF4 weights decode, plus adapter_config.json + adapter_model.safetensors)
and step.safetensors: the batch's input_ids and targets, ptxkit's logits, loss and the
gradient of every trained tensor ("grad.<name>").

The script loads the checkpoint into transformers.LlamaForCausalLM (Qwen2ForCausalLM when
config.json says qwen2; peft's LoRA on top when there are adapters) in float64 with eager
attention, runs the same batch, takes the mean next-token cross-entropy against the same
targets, backpropagates, and compares. It prints a table and exits 1 on any mismatch.

Tolerances (relative). ptxkit keeps f32 master weights and computes in f32, except attention,
which runs in bf16 (q, k, v, the output and its gradient rounded to bf16, 8 significant bits,
about 4e-3 relative per rounding), and its GEMMs read their f32 inputs as TF32 (the top 19
bits, about 1e-3 relative). The logits and the loss see attention only through o_proj and the
residual stream: LOGITS (max |diff| / max |logit|) and LOSS. Gradients carry the roundings
directly, elementwise; the q and k gradients most (their dS is a difference of near-equal
terms while the attention is nearly uniform), so a tensor's relative L2 error can reach a few
1e-2: GRAD. A real mistake (a wrong layout, a missing term) gives errors of order 1.

With --precision bf16 (step.safetensors' metadata says which) every GEMM reads bf16 inputs
(the weights' bf16 copies, the norms' outputs, q/k/v, gate/up, SwiGLU, the logits and every
gradient a GEMM reads: 8 significant bits, 2^-9 relative per rounding at most, eight times
TF32's) and the logits are stored in bf16. The dump still holds the f32 master weights, so
transformers in float64 sees the unrounded model and every rounding shows up as error. A
product of k terms with independently rounded inputs is off by about 2^-9 * sqrt(2/3) of its
magnitude: 2.5e-3 per GEMM, and the logits sit behind a chain of a few (norm, projection,
residual, head) plus their own bf16 storage (up to 2^-9 of the largest logit): BF16_LOGITS
is four times LOGITS. The loss averages those errors over every token (they are of either
sign): BF16_LOSS. Each gradient passes through more bf16 GEMMs and roundings than the
forward, twice the forward's chain, and the q/k gradients keep their dS cancellation:
BF16_GRAD, three times GRAD. A real mistake still gives errors of order 1.
"""

import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import load_file

LOGITS = 5e-3
LOSS = 1e-3
GRAD = 5e-2
BF16_LOGITS = 2e-2
BF16_LOSS = 4e-3
BF16_GRAD = 1.5e-1


def rel(a, b):
    """Relative L2 error of a against the reference b (absolute when b is zero)."""
    denom = b.norm().item()
    diff = (a - b).norm().item()
    return diff / denom if denom > 0 else diff


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="the directory `ptxkit train --dump-step DIR` wrote")
    ap.add_argument(
        "--device",
        default="cuda" if torch.cuda.is_available() else "cpu",
        help="where transformers runs (default: cuda if available)",
    )
    args = ap.parse_args()

    from transformers import LlamaForCausalLM, Qwen2ForCausalLM

    with open(os.path.join(args.dir, "config.json")) as f:
        cfg = json.load(f)
    step_path = os.path.join(args.dir, "step.safetensors")
    step = load_file(step_path)
    with safe_open(step_path, framework="pt") as f:
        precision = (f.metadata() or {}).get("precision", "tf32")
    if precision == "bf16":
        tol_logits, tol_loss, tol_grad = BF16_LOGITS, BF16_LOSS, BF16_GRAD
    else:
        tol_logits, tol_loss, tol_grad = LOGITS, LOSS, GRAD
    print(f"ptxkit computed this step in {precision}")
    cls = Qwen2ForCausalLM if cfg["model_type"] == "qwen2" else LlamaForCausalLM
    model = cls.from_pretrained(
        args.dir, torch_dtype=torch.float64, attn_implementation="eager"
    )
    lora = os.path.exists(os.path.join(args.dir, "adapter_config.json"))
    if lora:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, args.dir, is_trainable=True)
    model.to(args.device)
    model.train()  # dropout is 0 everywhere; train() only enables the gradients' paths

    ids = step["input_ids"].long().to(args.device)
    targets = step["targets"].long().to(args.device)
    out = model(input_ids=ids, use_cache=False)
    logits = out.logits
    vocab = logits.shape[-1]
    loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
    loss.backward()

    rows = []

    def check(name, err, tol):
        rows.append((name, err, tol, err <= tol))

    ours_logits = step["logits"].double().to(args.device)
    scale = logits.abs().max().item()
    check("logits (max |diff| / max |logit|)",
          (ours_logits - logits.detach()).abs().max().item() / scale, tol_logits)
    ref_loss = loss.item()
    ours_loss = step["loss"].double().item()
    check(f"loss ({ours_loss:.6f} vs {ref_loss:.6f})",
          abs(ours_loss - ref_loss) / abs(ref_loss), tol_loss)

    params = {}
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        params[name.replace(".default", "")] = p
    compared = 0
    for key, ours in sorted(step.items()):
        if not key.startswith("grad."):
            continue
        name = key[len("grad."):]
        p = params.get(name)
        if p is None:
            rows.append((f"grad {name}: no such trained parameter in transformers", 1.0, 0.0, False))
            continue
        ref = p.grad.detach()
        check(f"grad {name}", rel(ours.double().to(args.device).reshape(ref.shape), ref), tol_grad)
        compared += 1
    missing = [n for n in params if f"grad.{n}" not in step]
    for n in missing:
        rows.append((f"grad {n}: trained by transformers but not dumped", 1.0, 0.0, False))

    width = max(len(r[0]) for r in rows)
    print(f"{'quantity':<{width}}  {'rel error':>10}  {'tol':>7}")
    for name, err, tol, ok in rows:
        print(f"{name:<{width}}  {err:>10.2e}  {tol:>7.0e}{'' if ok else '  MISMATCH'}")
    bad = [r for r in rows if not r[3]]
    kind = "LoRA adapters" if lora else "weights"
    print(f"{compared} gradients of {kind} compared; {len(bad)} mismatches")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
