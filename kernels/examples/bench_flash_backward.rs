//! Throughput of the flash-attention backward (`kernels::attention::flash_backward_with`, on
//! the `mma.sync` kernels and, on Hopper, the `wgmma` ones) at B4 H32 S4096, head sizes 64
//! and 128, full and causal, bf16: the median time of the whole backward (delta, dK/dV and
//! dQ) and TFLOP/s, counting the backward as 2.5 × the forward's `4·B·H·S²·d` (half of it
//! when causal).
//!
//! ```text
//! cargo run --release -p kernels --example bench_flash_backward            # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_flash_backward        # tiny, emulator
//! ```
//!
//! The inputs are a fixed pattern, `o` included, and `lse` one plausible constant rather than
//! the forward's output: the kernels' time does not depend on the values (no branch reads
//! them), so no forward and no CPU reference are needed.

mod common;

use common::{Bench, Res};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::attention::{
    flash_backward_with, flash_backward_workspace, Attention, AttentionPath, Batch, Heads, Mask,
};

/// A fixed pattern in [-0.5, 0.5), the range of normalized activations.
fn pattern(stream: &Stream, n: usize, seed: u32) -> Res<Buffer<Bf16>> {
    let host: Vec<Bf16> = (0..n)
        .map(|i| {
            let h = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed);
            Bf16::from_f32((h >> 8) as f32 / (1u32 << 24) as f32 - 0.5)
        })
        .collect();
    Ok(Buffer::from_host(stream, &host)?)
}

fn main() -> Res {
    let mut bench = Bench::new()?;
    let (b, h, s) = if Bench::small() {
        (1, 2, 128)
    } else {
        (4, 32, 4096)
    };
    if !Bench::small() {
        bench.runs = bench.runs.min(10);
    }
    let stream = &bench.stream;
    let tokens = b * s;
    let cu: Vec<u32> = (0..=b).map(|i| (i * s) as u32).collect();
    let cu = Buffer::from_host(stream, &cu)?;
    let batch = Batch {
        cu_seqlens: &cu,
        seqs: b,
        tokens,
        max_len: s,
    };
    println!("flash_backward, bf16, B{b} H{h} S{s} (kv heads = query heads)");
    println!("| path     | head dim | mask   |      ms | TFLOP/s |");
    println!("|----------|----------|--------|---------|---------|");
    let paths = AttentionPath::available(stream.device().target());
    for dim in [64, 128] {
        let heads = Heads { q: h, kv: h, dim };
        let n = tokens * h * dim;
        let (q, k, v) = (
            pattern(stream, n, 1)?,
            pattern(stream, n, 2)?,
            pattern(stream, n, 3)?,
        );
        let (o, d_o) = (pattern(stream, n, 4)?, pattern(stream, n, 5)?);
        // ln of S keys of similar weight: the order of magnitude a real lse has.
        let lse = Buffer::from_host(stream, &vec![(s as f32).ln(); h * tokens])?;
        let (mut dq, mut dk, mut dv) = (
            Buffer::<Bf16>::zeros(stream, n)?,
            Buffer::<Bf16>::zeros(stream, n)?,
            Buffer::<Bf16>::zeros(stream, n)?,
        );
        let mut ws = Buffer::<f32>::zeros(stream, flash_backward_workspace(tokens, heads)?)?;
        for (mask, &path) in [Mask::Full, Mask::Causal]
            .into_iter()
            .flat_map(|m| paths.iter().map(move |p| (m, p)))
        {
            let attn = Attention {
                heads,
                mask,
                scale: 1.0 / (dim as f32).sqrt(),
            };
            let ms = bench.time(|st| {
                flash_backward_with(
                    st, path, &q, &k, &v, &o, &d_o, &lse, batch, attn, &mut dq, &mut dk, &mut dv,
                    &mut ws,
                )?;
                Ok(())
            })?;
            let forward = 4.0 * (b * h) as f64 * (s * s) as f64 * dim as f64;
            let flops = 2.5 * forward * if mask == Mask::Causal { 0.5 } else { 1.0 };
            let name = if mask == Mask::Causal {
                "causal"
            } else {
                "full"
            };
            println!(
                "| {:<8} | {dim:>8} | {name:<6} | {ms:>7.3} | {:>7.1} |",
                format!("{path:?}"),
                flops / (ms * 1e-3) / 1e12
            );
        }
    }
    Ok(())
}
