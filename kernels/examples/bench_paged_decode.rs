//! Paged decode attention as a share of the device's copy bandwidth (the driver's
//! device-to-device copy of 1 GiB, measured in the same run), over the key and value bytes a
//! decode step reads: GQA 32/8, head dim 128, bf16 caches in shuffled pages, one new token per
//! sequence. Each row is timed twice, so that clock drift shows as disagreement between the
//! passes, in two ways: one step launched on an idle stream (its launch latency counted), and
//! steady, as a decode loop runs: steps back to back over a ring of caches larger than any L2,
//! so that no step finds the last one's bytes cached. Also printed: the microseconds of a step.
//!
//! ```text
//! cargo run --release -p kernels --example bench_paged_decode      # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_paged_decode  # tiny shapes on the emulator
//! BENCH_BATCH=1 cargo run --release -p kernels --example bench_paged_decode  # one batch's rows
//! ```

mod common;

use common::{filled, Bench, Res};
use kernel_runtime::{Bf16, Buffer};
use kernels::attention::{decode_splits, paged_decode, paged_decode_workspace, Decode, Heads};
use kernels::layout::PagedLayout;

/// Bytes of cache the steady timing cycles through: more than any GPU's L2.
const RING_BYTES: usize = 512 << 20;
/// Steps a steady timing launches back to back.
const STEADY_STEPS: usize = 20;
/// [`STEADY_STEPS`] on the emulator.
const STEADY_STEPS_SMALL: usize = 2;

/// A seeded permutation of `0..n`: pages scattered over the cache as an allocator leaves them.
fn shuffled(n: usize, mut seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    v
}

/// Times a decode of `seqs` sequences of `len` tokens, in a cache sized for `cap` tokens a
/// sequence (the launch's `max_len`), in pages of `block_size` with `splits` (`None`: the
/// chooser's for `cap`) and prints one table row.
fn bench(
    b: &Bench,
    seqs: usize,
    [len, cap]: [usize; 2],
    block_size: usize,
    splits: Option<usize>,
) -> Res {
    let s = &b.stream;
    let heads = Heads {
        q: 32,
        kv: 8,
        dim: 128,
    };
    let per_seq = cap.div_ceil(block_size);
    let layout = PagedLayout {
        num_blocks: seqs * per_seq,
        block_size,
        width: heads.kv * heads.dim,
        seqs,
        blocks_per_seq: per_seq,
    };
    let sms = b.device.props().sm_count as usize;
    let splits = splits.unwrap_or_else(|| decode_splits(seqs, heads, cap, sms));
    let decode = Decode {
        heads,
        scale: 1.0 / (heads.dim as f32).sqrt(),
        new: 1,
        max_len: cap,
        splits,
    };
    let bytes = (2 * seqs * len * layout.width * 2) as f64;
    let ring = if Bench::small() {
        2
    } else {
        (RING_BYTES as f64 / bytes).ceil().max(1.0) as usize
    };
    let caches = (0..ring as u32)
        .map(|i| {
            Ok((
                filled::<Bf16>(s, layout.cache_len(), 3 + 2 * i)?,
                filled::<Bf16>(s, layout.cache_len(), 4 + 2 * i)?,
            ))
        })
        .collect::<Res<Vec<_>>>()?;
    let q = filled::<Bf16>(s, seqs * heads.q * heads.dim, 7)?;
    let table = Buffer::from_host(s, &shuffled(layout.num_blocks, 11))?;
    let lens = Buffer::from_host(s, &vec![len as u32; seqs])?;
    let mut workspace = Buffer::<f32>::zeros(s, paged_decode_workspace(seqs, decode)?.max(1))?;
    let mut o = Buffer::<Bf16>::zeros(s, seqs * heads.q * heads.dim)?;
    let mut at = 0;
    let mut step = |s: &kernel_runtime::Stream| -> Res {
        let (k, v) = &caches[at % ring];
        at += 1;
        paged_decode(
            s,
            &q,
            k,
            v,
            &table,
            &lens,
            layout,
            decode,
            &mut workspace,
            &mut o,
        )?;
        Ok(())
    };
    let first = b.time(&mut step)?;
    let second = b.time(&mut step)?;
    let steps = if Bench::small() {
        STEADY_STEPS_SMALL
    } else {
        STEADY_STEPS
    };
    let mut steady = |s: &kernel_runtime::Stream| -> Res {
        for _ in 0..steps {
            step(s)?;
        }
        Ok(())
    };
    let steady_first = b.time(&mut steady)? / steps as f64;
    let steady_second = b.time(&mut steady)? / steps as f64;
    let len = if cap == len {
        len.to_string()
    } else {
        format!("{len} of {cap}")
    };
    println!(
        "| {seqs:>5} | {len:>6} | {block_size:>5} | {splits:>6} | {:>5.1} / {:>5.1} | {:>7.1} | {:>5.1} / {:>5.1} | {:>7.1} |",
        b.percent(bytes, first),
        b.percent(bytes, second),
        1e3 * (first + second) / 2.0,
        b.percent(bytes, steady_first),
        b.percent(bytes, steady_second),
        1e3 * (steady_first + steady_second) / 2.0,
    );
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    println!("paged decode, GQA 32/8, head dim 128, bf16, one new token: % of copy bandwidth over the K+V bytes read");
    println!("| batch | kv len | page | splits | one step: % copy bw (2 passes) | µs | steady: % copy bw (2 passes) | µs |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let long = if Bench::small() { 64 } else { 8192 };
    let mid = if Bench::small() { 32 } else { 2048 };
    let short = if Bench::small() { 16 } else { 256 };
    let (batch, half, wide) = if Bench::small() {
        (2, 1, 3)
    } else {
        (16, 8, 64)
    };
    // BENCH_BATCH=1 (say) keeps only the rows of that batch (a profile of one row family).
    let only: Option<usize> = std::env::var("BENCH_BATCH")
        .ok()
        .and_then(|v| v.parse().ok());
    let row_of = |seqs: usize, len: [usize; 2], page: usize, splits: Option<usize>| -> Res {
        if only.is_none_or(|o| o == seqs) {
            bench(&b, seqs, len, page, splits)?;
        }
        Ok(())
    };
    let row = |seqs: usize, len: usize, page: usize, splits: Option<usize>| -> Res {
        row_of(seqs, [len, len], page, splits)
    };
    row(batch, long, 16, Some(1))?;
    row(batch, long, 64, Some(1))?;
    row(batch, long, 16, None)?;
    // Half the batch: the chooser splits it in two.
    row(half, long, 16, None)?;
    row(1, long, 16, None)?;
    row(1, long, 16, Some(1))?;
    // Around the chooser's split count for one sequence (16 on 132 SMs, timed above; 32 is
    // two blocks an SM).
    let sweep: &[usize] = if Bench::small() { &[2] } else { &[8, 32, 64] };
    for &splits in sweep {
        row(1, long, 16, Some(splits))?;
    }
    row(wide, mid, 16, None)?;
    // One sequence at the contexts a short chat decodes at: latency, not bytes (the chooser
    // splits 2048 positions in eight and leaves 256 whole).
    row(1, mid, 16, None)?;
    row(1, short, 16, None)?;
    // Short sequences in a cache sized (and split) for long ones, as a captured decode graph
    // replays them.
    row_of(1, [short, mid], 16, None)?;
    row_of(4, [short, mid], 16, None)?;
    Ok(())
}
