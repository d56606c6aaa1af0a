//! The flash-attention forward's throughput at B4 H32 S4096 (four sequences of 4096 tokens
//! packed as one varlen batch), head dims 64, 128 and 256, full and causal: bf16 throughout,
//! f16 for one row. FLOPs count both matrix products, 4·B·H·S²·d, half of that when causal.
//! On Hopper each row times both paths in turn, `mma.sync` and `wgmma`; elsewhere
//! `mma.sync` alone.
//!
//! ```text
//! cargo run --release -p kernels --example bench_flash_forward          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_flash_forward      # tiny shapes on the emulator
//! ```

mod common;

use common::{Bench, Res};
use kernel_runtime::{Bf16, Buffer, Stream, F16};
use kernels::attention::{
    flash_forward_with, Attention, AttentionPath, Batch, HalfElement, Heads, Mask,
};

/// A deterministic pattern in [-1, 1), never all zeros.
fn filled<T: HalfElement>(stream: &Stream, n: usize, seed: u32) -> Res<Buffer<T>> {
    let host: Vec<T> = (0..n)
        .map(|i| {
            let h = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed);
            T::from_f32((h >> 8) as f32 / (1u32 << 23) as f32 - 1.0)
        })
        .collect();
    Ok(Buffer::from_host(stream, &host)?)
}

/// The paths to time on this device: `mma.sync`, and `wgmma` where it runs.
fn paths(stream: &Stream) -> Vec<AttentionPath> {
    AttentionPath::available(stream.device().target())
}

/// One table row: `seqs` sequences of `len` tokens, `heads` heads of `dim`.
fn row<T: HalfElement>(
    b: &Bench,
    name: &str,
    seqs: usize,
    len: usize,
    heads: usize,
    dim: usize,
    mask: Mask,
) -> Res {
    let tokens = seqs * len;
    let n = tokens * heads * dim;
    let q = filled::<T>(&b.stream, n, 1)?;
    let k = filled::<T>(&b.stream, n, 2)?;
    let v = filled::<T>(&b.stream, n, 3)?;
    let mut o = Buffer::<T>::zeros(&b.stream, n)?;
    let mut lse = Buffer::<f32>::zeros(&b.stream, tokens * heads)?;
    let cu: Vec<u32> = (0..=seqs).map(|s| (s * len) as u32).collect();
    let cu = Buffer::from_host(&b.stream, &cu)?;
    let batch = Batch {
        cu_seqlens: &cu,
        seqs,
        tokens,
        max_len: len,
    };
    let attn = Attention {
        heads: Heads {
            q: heads,
            kv: heads,
            dim,
        },
        mask,
        scale: 1.0 / (dim as f32).sqrt(),
    };
    let mut flops = 4.0 * (seqs * heads) as f64 * (len * len) as f64 * dim as f64;
    if mask == Mask::Causal {
        flops /= 2.0;
    }
    let mask_name = if mask == Mask::Causal {
        "causal"
    } else {
        "full"
    };
    let mut cells = Vec::new();
    let mut tflops = Vec::new();
    for path in paths(&b.stream) {
        let ms = b.time(|s| {
            Ok(flash_forward_with(
                s, path, &q, &k, &v, batch, attn, &mut o, &mut lse,
            )?)
        })?;
        let rate = flops / (ms * 1e-3) / 1e12;
        cells.push(format!("{ms:>8.3} | {rate:>7.1}"));
        tflops.push(rate);
    }
    let ratio = match tflops.as_slice() {
        [old, new] => format!("{:.2}", new / old),
        _ => "—".into(),
    };
    println!(
        "| {name:<4} | {dim:>3} | {mask_name:<6} | {seqs} × {heads} × {len:>4} | {} | {ratio} |",
        cells.join(" | ")
    );
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    let (seqs, len, heads) = if Bench::small() {
        (2, 80, 2)
    } else {
        (4, 4096, 32)
    };
    println!();
    if paths(&b.stream).len() == 2 {
        println!("| type | d | mask | B × H × S | mma.sync ms | TFLOP/s | wgmma ms | TFLOP/s | wgmma / mma.sync |");
        println!("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |");
    } else {
        println!("| type | d | mask | B × H × S | mma.sync ms | TFLOP/s | |");
        println!("| --- | ---: | --- | --- | ---: | ---: | --- |");
    }
    for dim in [64, 128, 256] {
        for mask in [Mask::Full, Mask::Causal] {
            row::<Bf16>(&b, "bf16", seqs, len, heads, dim, mask)?;
        }
    }
    row::<F16>(&b, "f16", seqs, len, heads, 128, Mask::Causal)?;
    Ok(())
}
