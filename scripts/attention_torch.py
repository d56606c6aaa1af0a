#!/usr/bin/env python3
"""PyTorch's attention at the shapes bench_flash_forward, bench_flash_backward and
bench_paged_decode use, run in the same GPU call so the ratios are side by side.

Prints markdown rows: TFLOP/s for the forward and backward (causal counts half the FLOPs, the
backward 2.5x the forward), and % of this process's copy bandwidth for decode over the KV bytes.
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from torch_timing import median_ms


def copy_bandwidth():
    """Bytes read plus written per second by a device-to-device copy of 1 GiB."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    return 2 * src.numel() / (ms * 1e-3)


BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def flash(b=4, h=32, s=4096):
    print("| path | head dim | mask | forward TFLOP/s | backward TFLOP/s |")
    print("| --- | --- | --- | --- | --- |")
    for d in (64, 128):
        for causal in (False, True):
            flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
            q, k, v = (torch.randn(b, h, s, d, dtype=torch.bfloat16, device="cuda", requires_grad=True)
                       for _ in range(3))
            for name, backend in BACKENDS.items():
                try:
                    with sdpa_kernel(backend):
                        fwd = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        g = torch.randn_like(o)
                        bwd = median_ms(lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True))
                except RuntimeError as err:
                    print(f"| torch {name} | {d} | {'causal' if causal else 'full'} | unavailable: {err} | |")
                    continue
                mask = "causal" if causal else "full"
                print(f"| torch {name} | {d} | {mask} | {flops / fwd / 1e9:.0f} | {2.5 * flops / bwd / 1e9:.0f} |")
            del q, k, v
            torch.cuda.empty_cache()


def decode(copy):
    """One query token per sequence over a contiguous cache, GQA 32/8, head dim 128."""
    print("| torch SDPA decode (contiguous cache) | batch | KV | % of copy |")
    print("| --- | --- | --- | --- |")
    for batch, kv in ((16, 8192), (1, 8192), (64, 2048)):
        q = torch.randn(batch, 32, 1, 128, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(batch, 8, kv, 128, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
        bytes_read = 2 * k.numel() * k.element_size()
        print(f"| torch SDPA | {batch} | {kv} | {100 * bytes_read / (ms * 1e-3) / copy:.0f}% |")


def main():
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    copy = copy_bandwidth()
    print(f"copy bandwidth: {copy / 1e12:.2f} TB/s")
    if "decode" not in sys.argv[1:]:
        flash()
    if "flash" not in sys.argv[1:]:
        decode(copy)


if __name__ == "__main__":
    main()
