//! NF4 products on Llama-3-8B's shapes. The decode GEMV (M = 1 and 16) as a share of the
//! device's copy bandwidth over the weight's stored bytes (codes and f32 absmax), the copy
//! measured in the same run; the training-step forward and input gradient at M = 512, 1024 and
//! 4096
//! (`matmul`, which on Hopper dequantizes and runs the bf16 GEMM from `DEQUANTIZED_MIN_ROWS`
//! rows) beside the fused tensor-core kernel and the two steps by hand, in the same run.
//!
//! ```text
//! cargo run --release -p kernels --example bench_nf4          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_nf4      # tiny shapes on the emulator
//! ```

mod common;

use common::{filled, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
use kernels::quant::nf4::{fused_tensor_core_product, matmul, matmul_input_grad, Nf4Weight};

/// (name, N, K) of the projections: qkv, o, gate_up, down.
const SHAPES: [(&str, usize, usize); 4] = [
    ("qkv", 6144, 4096),
    ("o", 4096, 4096),
    ("gate_up", 28672, 4096),
    ("down", 4096, 14336),
];

fn weight(b: &Bench, n: usize, k: usize) -> Res<Nf4Weight> {
    let w = filled::<Bf16>(&b.stream, n * k, 5)?;
    Ok(Nf4Weight::quantize(&b.stream, &w, n, k)?)
}

fn main() -> Res {
    let b = Bench::new()?;
    let small = Bench::small();
    let shapes: Vec<(&str, usize, usize)> = if small {
        vec![("tiny", 40, 256)]
    } else {
        SHAPES.to_vec()
    };

    println!("\n| GEMV (bf16 x) | N × K | M | % of copy bandwidth over NF4 bytes (two passes) |");
    println!("| --- | --- | --- | --- |");
    for &(name, n, k) in &shapes {
        let q = weight(&b, n, k)?;
        for m in [1usize, 16] {
            let x = filled::<Bf16>(&b.stream, m * k, 3)?;
            let mut y = Buffer::<Bf16>::zeros(&b.stream, m * n)?;
            let [p0, p1] = b.percent_twice(q.stored_bytes() as f64, |s| {
                Ok(matmul(s, &x, &q, &mut y, m)?)
            })?;
            println!("| {name} | {n} × {k} | {m} | {p0:.1} / {p1:.1} |");
        }
    }

    // `matmul` (what the library runs: on Hopper from DEQUANTIZED_MIN_ROWS rows, a dequantized
    // copy and the wgmma GEMM) beside the fused tensor-core kernel it ran before and the two
    // steps by hand into a buffer allocated once.
    let rows: &[usize] = if small { &[32] } else { &[512, 1024, 4096] };
    println!("\n| op | N × K | M | matmul ms | fused kernel ms | dequant + bf16 GEMM ms | fused / matmul |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for &(name, n, k) in &shapes {
        let q = weight(&b, n, k)?;
        let mut wb = Buffer::<Bf16>::zeros(&b.stream, n * k)?;
        let plain = Epilogue::default();
        for &m in rows {
            // The forward `x·Wᵀ`, then the input gradient `dy·W`.
            for transposed in [false, true] {
                let (op, x_cols, y_cols, seed) = if transposed {
                    ("input grad", n, k, 4)
                } else {
                    ("forward", k, n, 3)
                };
                let shape = if transposed {
                    GemmShape::new(Layout::Nn, m, k, n)
                } else {
                    GemmShape::new(Layout::Nt, m, n, k)
                };
                let x = filled::<Bf16>(&b.stream, m * x_cols, seed)?;
                let mut y = Buffer::<Bf16>::zeros(&b.stream, m * y_cols)?;
                let ours = b.time(|s| {
                    if transposed {
                        matmul_input_grad(s, &x, &q, &mut y, m)?;
                    } else {
                        matmul(s, &x, &q, &mut y, m)?;
                    }
                    Ok(())
                })?;
                let fused =
                    b.time(|s| Ok(fused_tensor_core_product(s, &x, &q, &mut y, m, transposed)?))?;
                let two_step = b.time(|s| {
                    q.dequantize(s, &mut wb)?;
                    gemm(s, &shape, &x, &wb, &mut y, &plain, Math::Fp32)?;
                    Ok(())
                })?;
                println!(
                    "| {op} {name} | {n} × {k} | {m} | {ours:.3} | {fused:.3} | {two_step:.3} | {:.2}× |",
                    fused / ours
                );
            }
        }
    }
    Ok(())
}
