#!/usr/bin/env python3
"""The two-step QLoRA route in plain torch, at bench_nf4's shapes: dequantize an NF4 weight
stored in bitsandbytes' layout (uint8 codes, first element in the high nibble; an f32 absmax
per block of 64) to bf16, then torch.matmul (cuBLAS). Also cuBLAS on the already-dequantized
weight, the figure the fused forward is compared with.

    python3 scripts/nf4_torch.py        # on the GPU machine (torch, no bitsandbytes needed)
"""
import torch

from torch_timing import median_ms

NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
       -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
       0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
       0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]
SHAPES = [("qkv", 6144, 4096), ("o", 4096, 4096), ("gate_up", 28672, 4096),
          ("down", 4096, 14336)]


def quantize(w):
    blocks = w.float().reshape(-1, 64)
    absmax = blocks.abs().amax(dim=1)
    norm = blocks * (1.0 / absmax)[:, None]
    code = torch.tensor(NF4, device=w.device)
    thresholds = (code[1:] + code[:-1]) / 2
    q = torch.bucketize(norm.reshape(-1), thresholds, right=False).to(torch.uint8)
    q = q.reshape(-1, 2)
    return (q[:, 0] << 4) | q[:, 1], absmax


def dequantize(codes, absmax, n, k, table):
    idx = torch.stack(((codes >> 4), (codes & 15)), dim=1).reshape(-1).long()
    return (table[idx].reshape(-1, 64) * absmax[:, None]).to(torch.bfloat16).reshape(n, k)


def main():
    dev = "cuda"
    print("device:", torch.cuda.get_device_name())
    table = torch.tensor(NF4, device=dev)
    src = torch.empty(1 << 28, device=dev)
    dst = torch.empty_like(src)
    copy_gbs = 8 * src.numel() / (median_ms(lambda: dst.copy_(src)) * 1e-3) / 1e9
    print(f"copy bandwidth (read + write): {copy_gbs:.1f} GB/s")
    print("| shape | M | dequant + matmul ms | % of copy over NF4 bytes | matmul on bf16 W ms |")
    print("| --- | --- | --- | --- | --- |")
    for name, n, k in SHAPES:
        w = (torch.rand(n, k, device=dev) - 0.5) * 0.2
        codes, absmax = quantize(w)
        wb = dequantize(codes, absmax, n, k, table)
        nf4_bytes = codes.numel() + 4 * absmax.numel()
        for m in (1, 16, 4096):
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            two = median_ms(lambda: x @ dequantize(codes, absmax, n, k, table).t())
            one = median_ms(lambda: x @ wb.t())
            pct = 100 * nf4_bytes / (two * 1e-3) / 1e9 / copy_gbs
            print(f"| forward {name} {n}×{k} | {m} | {two:.3f} | {pct:.1f} | {one:.3f} |")
        dy = torch.randn(4096, n, device=dev, dtype=torch.bfloat16)
        two = median_ms(lambda: dy @ dequantize(codes, absmax, n, k, table))
        one = median_ms(lambda: dy @ wb)
        print(f"| input grad {name} {n}×{k} | 4096 | {two:.3f} | | {one:.3f} |")


if __name__ == "__main__":
    main()
