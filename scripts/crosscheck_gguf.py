#!/usr/bin/env python3
"""Cross-checks `ptxkit generate` against Hugging Face transformers on a GGUF model.

The GGUF file is parsed and dequantized here with numpy (Q8_0, Q4_K, Q6_K, F32, as ggml
defines them; no `gguf` package needed), the q/k rows are permuted back from ggml's RoPE
layout to Hugging Face's, and `LlamaForCausalLM` runs the dequantized weights in float64.
(`--reference numpy` runs the same forward in numpy where torch is absent.)
`ptxkit generate --logits-out` gives the device's logits after each prompt's last token;
both must agree within the stated tolerance:

    max |ptxkit - transformers| <= TOL * max |transformers logits|     (TOL = 2e-2)

The tolerance covers what ptxkit rounds on purpose: q, k and v go to bf16 for the
flash-attention and paged-decode kernels; everything else is f32.

Usage (on the GPU machine, from the repository root):

    cargo build --release -p ptxkit
    python3 scripts/crosscheck_gguf.py --model model.gguf --prompt "Once upon" --prompt "GGUF"

Exit status 0 when every prompt agrees, 1 otherwise.
"""

import argparse
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

TOL = 2e-2

# ggml type id -> (name, elements per block, bytes per block)
TYPES = {0: ("f32", 1, 4), 8: ("q8_0", 32, 34), 12: ("q4_K", 256, 144), 14: ("q6_K", 256, 210)}


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.data[self.at:self.at + n].decode("utf-8")
        self.at += n
        return s

    def value(self, ty):
        scalars = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
        if ty in scalars:
            return self.take(scalars[ty])
        if ty == 8:
            return self.string()
        if ty == 9:
            elem, n = self.take("I"), self.take("Q")
            return [self.value(elem) for _ in range(n)]
        raise ValueError(f"unknown value type {ty}")


def read_gguf(path):
    data = open(path, "rb").read()
    r = Reader(data)
    assert data[:4] == b"GGUF", "not a GGUF file"
    r.at = 4
    version = r.take("I")
    assert version == 3, f"GGUF version {version}"
    n_tensors, n_kv = r.take("Q"), r.take("Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("Q") for _ in range(r.take("I"))]
        ty, offset = r.take("I"), r.take("Q")
        infos.append((name, dims, ty, offset))
    align = meta.get("general.alignment", 32)
    start = (r.at + align - 1) // align * align
    tensors = {}
    for name, dims, ty, offset in infos:
        tname, blk, size = TYPES[ty]
        n = int(np.prod(dims))
        raw = np.frombuffer(data, np.uint8, n // blk * size, start + offset)
        values = dequantize(tname, raw, n)
        tensors[name] = values.reshape(list(reversed(dims)))  # ggml lists ne[0] first
    return meta, tensors


def f16(b):
    return b.copy().view(np.float16).astype(np.float32)


def dequantize(name, raw, n):
    if name == "f32":
        return raw.copy().view(np.float32)
    if name == "q8_0":
        b = raw.reshape(-1, 34)
        return (f16(b[:, :2]) * b[:, 2:].view(np.int8).astype(np.float32)).reshape(-1)
    if name == "q4_K":
        b = raw.reshape(-1, 144)
        d, dmin, sc, qs = f16(b[:, 0:2]), f16(b[:, 2:4]), b[:, 4:16].astype(np.int32), b[:, 16:]
        scale = np.zeros((b.shape[0], 8), np.float32)
        mins = np.zeros((b.shape[0], 8), np.float32)
        for j in range(8):
            if j < 4:
                s, m = sc[:, j] & 63, sc[:, j + 4] & 63
            else:
                s = (sc[:, j + 4] & 0xF) | ((sc[:, j - 4] >> 6) << 4)
                m = (sc[:, j + 4] >> 4) | ((sc[:, j] >> 6) << 4)
            scale[:, j], mins[:, j] = s, m
        out = np.zeros((b.shape[0], 256), np.float32)
        for i in range(4):
            q = qs[:, 32 * i:32 * i + 32]
            for half, nib in ((0, q & 0xF), (1, q >> 4)):
                j = 2 * i + half
                out[:, 64 * i + 32 * half:64 * i + 32 * half + 32] = (
                    (d * scale[:, j:j + 1]) * nib.astype(np.float32) - dmin * mins[:, j:j + 1])
        return out.reshape(-1)
    if name == "q6_K":
        b = raw.reshape(-1, 210)
        ql, qh = b[:, :128].astype(np.int32), b[:, 128:192].astype(np.int32)
        sc, d = b[:, 192:208].view(np.int8).astype(np.float32), f16(b[:, 208:210])
        out = np.zeros((b.shape[0], 256), np.float32)
        for h in range(2):
            l_, hh, s = ql[:, 64 * h:], qh[:, 32 * h:], sc[:, 8 * h:]
            for l in range(32):
                si = l // 16
                q = [((l_[:, l] & 0xF) | ((hh[:, l] & 3) << 4)) - 32,
                     ((l_[:, l + 32] & 0xF) | (((hh[:, l] >> 2) & 3) << 4)) - 32,
                     ((l_[:, l] >> 4) | (((hh[:, l] >> 4) & 3) << 4)) - 32,
                     ((l_[:, l + 32] >> 4) | (((hh[:, l] >> 6) & 3) << 4)) - 32]
                for k in range(4):
                    out[:, 128 * h + 32 * k + l] = d[:, 0] * s[:, si + 2 * k] * q[k]
        return out.reshape(-1)
    raise ValueError(name)


def unpermute(w, heads):
    """Inverse of llama.cpp's q/k permutation: ggml's adjacent RoPE pairs back to rotate_half."""
    rows = w.shape[0]
    d = rows // heads
    return w.reshape(heads, d // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_state_dict(meta, t):
    """The dequantized tensors under Hugging Face names and layout, with the config's sizes."""
    hidden = meta["llama.embedding_length"]
    heads = meta["llama.attention.head_count"]
    kv = meta.get("llama.attention.head_count_kv", heads)
    layers = meta["llama.block_count"]
    tied = "output.weight" not in t
    bias = "blk.0.attn_q.bias" in t
    sizes = dict(
        vocab_size=len(meta["tokenizer.ggml.tokens"]), hidden_size=hidden,
        intermediate_size=meta["llama.feed_forward_length"], num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv,
        head_dim=meta.get("llama.rope.dimension_count", hidden // heads),
        max_position_embeddings=meta["llama.context_length"],
        rms_norm_eps=meta["llama.attention.layer_norm_rms_epsilon"],
        rope_theta=meta["llama.rope.freq_base"], tie_word_embeddings=tied, attention_bias=bias)
    sd = {"model.embed_tokens.weight": t["token_embd.weight"], "model.norm.weight": t["output_norm.weight"]}
    if not tied:
        sd["lm_head.weight"] = t["output.weight"]
    for i in range(layers):
        b, p = f"blk.{i}.", f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = t[b + "attn_norm.weight"]
        sd[p + "post_attention_layernorm.weight"] = t[b + "ffn_norm.weight"]
        sd[p + "self_attn.q_proj.weight"] = unpermute(t[b + "attn_q.weight"], heads)
        sd[p + "self_attn.k_proj.weight"] = unpermute(t[b + "attn_k.weight"], kv)
        sd[p + "self_attn.v_proj.weight"] = t[b + "attn_v.weight"]
        sd[p + "self_attn.o_proj.weight"] = t[b + "attn_output.weight"]
        if bias:
            sd[p + "self_attn.q_proj.bias"] = unpermute(t[b + "attn_q.bias"], heads)
            sd[p + "self_attn.k_proj.bias"] = unpermute(t[b + "attn_k.bias"], kv)
            sd[p + "self_attn.v_proj.bias"] = t[b + "attn_v.bias"]
        sd[p + "mlp.gate_proj.weight"] = t[b + "ffn_gate.weight"]
        sd[p + "mlp.up_proj.weight"] = t[b + "ffn_up.weight"]
        sd[p + "mlp.down_proj.weight"] = t[b + "ffn_down.weight"]
    return sizes, sd


def transformers_logits(meta, t):
    """A function from token ids to the last position's logits, by LlamaForCausalLM (f64)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    sizes, sd = hf_state_dict(meta, t)
    tied = sizes["tie_word_embeddings"]
    cfg = LlamaConfig(**sizes, mlp_bias=False, attn_implementation="eager")
    model = LlamaForCausalLM(cfg).double().eval()
    missing, unexpected = model.load_state_dict(
        {k: torch.from_numpy(np.ascontiguousarray(v)).double() for k, v in sd.items()}, strict=False)
    missing = [m for m in missing if not (tied and m == "lm_head.weight") and "rotary" not in m]
    assert not missing and not unexpected, (missing, unexpected)

    def run(ids):
        with torch.no_grad():
            return model(torch.tensor([ids])).logits[0, -1].numpy()
    return run


def numpy_logits(meta, t):
    """The same Llama forward in numpy f64 on the Hugging Face state dict (half-split RoPE),
    for machines without torch: it checks the file reading and weight mapping, not
    transformers."""
    c, sd = hf_state_dict(meta, t)
    w = {k: np.asarray(v, np.float64) for k, v in sd.items()}
    if c["tie_word_embeddings"]:
        w["lm_head.weight"] = w["model.embed_tokens.weight"]
    hq, hkv, d, eps = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["rms_norm_eps"]

    def norm(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    def rope(x, pos):  # x: [T, heads, d]
        inv = c["rope_theta"] ** (-np.arange(0, d, 2) / d)
        ang = pos[:, None] * inv[None, :]
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., :d // 2], x[..., d // 2:]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)

    def run(ids):
        x = w["model.embed_tokens.weight"][ids]
        n_tok = len(ids)
        pos = np.arange(n_tok, dtype=np.float64)
        for i in range(c["num_hidden_layers"]):
            p = f"model.layers.{i}."
            h = norm(x, w[p + "input_layernorm.weight"])
            proj = {}
            for name in "qkv":
                y = h @ w[p + f"self_attn.{name}_proj.weight"].T
                if c["attention_bias"]:
                    y = y + w[p + f"self_attn.{name}_proj.bias"]
                proj[name] = y
            q = rope(proj["q"].reshape(n_tok, hq, d), pos)
            k = rope(proj["k"].reshape(n_tok, hkv, d), pos)
            v = proj["v"].reshape(n_tok, hkv, d)
            k, v = np.repeat(k, hq // hkv, 1), np.repeat(v, hq // hkv, 1)
            s = np.einsum("thd,shd->hts", q, k) / np.sqrt(d)
            s = s + np.triu(np.full((n_tok, n_tok), -np.inf), 1)
            s = np.exp(s - s.max(-1, keepdims=True))
            o = np.einsum("hts,shd->thd", s / s.sum(-1, keepdims=True), v).reshape(n_tok, hq * d)
            x = x + o @ w[p + "self_attn.o_proj.weight"].T
            h = norm(x, w[p + "post_attention_layernorm.weight"])
            g, u = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
            x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
        return norm(x, w["model.norm.weight"])[-1] @ w["lm_head.weight"].T
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="the GGUF file")
    ap.add_argument("--prompt", action="append", required=True, help="a prompt (repeatable)")
    ap.add_argument("--ptxkit", default="target/release/ptxkit", help="the ptxkit binary")
    ap.add_argument("--device", default="best", help="ptxkit's --device (best, cuda, emulator)")
    ap.add_argument("--reference", default="transformers", choices=["transformers", "numpy"],
                    help="transformers' LlamaForCausalLM, or the numpy forward where torch is absent")
    args = ap.parse_args()

    meta, tensors = read_gguf(args.model)
    vocab = len(meta["tokenizer.ggml.tokens"])
    bos = meta["tokenizer.ggml.bos_token_id"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.bin")
        cmd = [args.ptxkit, "generate", "--model", args.model, "--max-tokens", "1",
               "--device", args.device, "--logits-out", out]
        for p in args.prompt:
            cmd += ["--prompt", p]
        subprocess.run(cmd, check=True)
        device = np.fromfile(out, np.float32).reshape(len(args.prompt), vocab)
    reference = (transformers_logits if args.reference == "transformers" else numpy_logits)(meta, tensors)
    ok = True
    for i, prompt in enumerate(args.prompt):
        ids = [bos] + list(prompt.encode("utf-8"))  # ptxkit's byte-level tokenizer
        want = reference(ids)
        err = float(np.abs(device[i].astype(np.float64) - want).max())
        scale = float(np.abs(want).max())
        same_top = int(device[i].argmax()) == int(want.argmax())
        good = err <= TOL * scale
        ok &= good
        print(f"prompt {i} ({len(ids)} tokens): max |diff| {err:.3e}, logits up to {scale:.3e}, "
              f"ratio {err / scale:.3e} (tolerance {TOL:.0e}), same argmax: {same_top} -> "
              f"{'ok' if good else 'FAIL'}")
    print("crosscheck: " + ("ok" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
