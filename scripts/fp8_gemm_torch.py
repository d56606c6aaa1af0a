#!/usr/bin/env python3
"""PyTorch's fp8 matmul (`torch._scaled_mm`, which calls cuBLASLt) at the shapes
bench_gemm_fp8 uses, run in the same GPU call so the two tables sit side by side.

C = (sa * A) . (sb * B)^T for e4m3 A (m x k) and B (n x k), both k-contiguous, into bf16 C,
per-tensor scales 0.5 and 0.25, fast accumulation on (as bench_gemm_fp8 asks of cuBLASLt).
Prints markdown rows: median ms and TFLOP/s. Divide the two TFLOP/s columns for the ratio.
"""
import torch

from torch_timing import median_ms

SHAPES = [
    ("square", 4096, 4096, 4096),
    ("square", 8192, 8192, 8192),
    ("fwd", 4096, 4864, 896),
    ("gate_up", 8192, 28672, 4096),
    ("down", 8192, 4096, 14336),
]


def operand(rows, cols, seed):
    """Small e4m3 values of both signs (1/8 to 1 in magnitude), as the Rust bench draws."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    mag = torch.rand(rows, cols, generator=g, device="cuda") * 0.875 + 0.125
    sign = torch.randint(0, 2, (rows, cols), generator=g, device="cuda") * 2 - 1
    return (mag * sign).to(torch.float8_e4m3fn)


def main():
    print(f"device: {torch.cuda.get_device_name()} (torch {torch.__version__})")
    print("| problem | m     × n     × k     | torch._scaled_mm ms | TFLOP/s |")
    print("|---------|-----------------------|---------------------|---------|")
    sa = torch.tensor(0.5, device="cuda")
    sb = torch.tensor(0.25, device="cuda")
    for label, m, n, k in SHAPES:
        a = operand(m, k, 1)
        # `_scaled_mm` takes its second operand column-major: B^T of a row-major n x k B.
        b = operand(n, k, 2).t()
        run = lambda: torch._scaled_mm(  # noqa: E731
            a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=True
        )
        try:
            ms = median_ms(run)
        except RuntimeError as e:
            print(f"| {label:<7} | {m:>5} × {n:>5} × {k:>5} | refused: {e} | - |")
            continue
        tflops = 2.0 * m * n * k / (ms * 1e-3) / 1e12
        print(f"| {label:<7} | {m:>5} × {n:>5} × {k:>5} | {ms:>19.3f} | {tflops:>7.1f} |")


if __name__ == "__main__":
    main()
