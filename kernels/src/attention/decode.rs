//! Decode attention over a paged KV cache, split along the cache (flash-decoding).
//!
//! The cache is the token-major layout [`crate::layout::kv_cache_append`] writes:
//! `[num_blocks, block_size, heads.kv · heads.dim]` for keys and for values, a sequence's
//! logical block `b` at physical block `block_table[s · blocks_per_seq + b]`. Token-major rows
//! suit both sides: an append writes each new token as one contiguous row, and a decode warp
//! reads a kv head's part of a row as whole 16-byte chunks, consecutive tokens of a page being
//! one row apart.
//!
//! One block per (split, kv head, sequence) handles every query row of that kv head (the
//! group's heads times the `new` tokens), so each cache byte is read once. With several
//! splits each block covers an equal contiguous share of its sequence's length (read on the
//! device, so all splits share a sequence shorter than `max_len`) and writes its normalized
//! partial output and log-sum-exp to the workspace; a second kernel merges the splits in
//! split order, so the result does not depend on scheduling and reruns are bit-identical.
//!
//! Sequence lengths live on the device: only `max_len` and `splits` size the launch, so a
//! captured graph replays with new lengths. A length above `max_len` is read as `max_len`;
//! a sequence holding fewer tokens than `new` (zero included) attends nothing and its output
//! rows are zeros, as are rows whose block-table entries point outside the cache for every
//! position they attend (such positions are skipped).

use super::decode_kernel;
use super::{HalfElement, Heads};
use crate::layout::PagedLayout;
use crate::{check_len, Error};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

const OP: &str = "paged_decode";
/// Threads of a decode block (eight warps; fixed by the kernel).
const BLOCK: u32 = 256;
/// The kernel's pipeline: eight stages of 256 key and 256 value chunks of 16 bytes (four to
/// eight in flight, two blocks an SM). After the loop the warps merge their `R` rows of `D`
/// floats in it.
const SHARED_BYTES: u32 = 8 * 512 * 16;
// The largest merge: eight warps' eight query rows of head dim 256.
const _: () = assert!(8 * 8 * 256 * 4 <= SHARED_BYTES);
/// Fewest positions a split should cover for the split to pay for its combine traffic.
const MIN_SPLIT_LEN: usize = 256;

/// What a decode step computes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decode {
    /// Head counts and head size (64, 128 or 256).
    pub heads: Heads,
    /// Softmax scale, usually `1 / sqrt(heads.dim)`.
    pub scale: f32,
    /// Query tokens per sequence (at least 1), already appended to the cache.
    pub new: usize,
    /// The longest sequence the launch covers; at most `blocks_per_seq · block_size`.
    pub max_len: usize,
    /// Ranges of the cache each sequence is split into (at least 1; [`decode_splits`] picks
    /// one).
    pub splits: usize,
}

/// Query rows of a kv head one block handles, for `rows` rows in all (the instances' `R`).
fn rows_per_block(rows: usize) -> usize {
    if rows <= 4 {
        4
    } else {
        8
    }
}

/// The workspace a [`paged_decode`] of `seqs` sequences needs, in f32 elements: none for one
/// split, else each split's partial output and log-sum-exp per query row.
///
/// ```
/// use kernels::attention::{paged_decode_workspace, Decode, Heads};
/// let heads = Heads { q: 32, kv: 8, dim: 128 };
/// let d = Decode { heads, scale: 0.088, new: 1, max_len: 8192, splits: 4 };
/// assert_eq!(paged_decode_workspace(2, d)?, 4 * 2 * 32 * 129);
/// assert_eq!(paged_decode_workspace(2, Decode { splits: 1, ..d })?, 0);
/// # Ok::<(), kernels::Error>(())
/// ```
pub fn paged_decode_workspace(seqs: usize, decode: Decode) -> Result<usize, Error> {
    check_decode(decode)?;
    if decode.splits == 1 {
        return Ok(0);
    }
    seqs.checked_mul(decode.new)
        .and_then(|r| r.checked_mul(decode.heads.q))
        .and_then(|r| r.checked_mul(decode.heads.dim + 1))
        .and_then(|r| r.checked_mul(decode.splits))
        .ok_or_else(|| {
            unsupported("the workspace size overflows; decode fewer sequences or use fewer splits")
        })
}

/// A split count for `seqs` sequences of up to `max_len` tokens on a device of `sms`
/// multiprocessors. One block per SM already reads at about the device's bandwidth, and a
/// split costs a combine pass, so sequences are split only where one split would leave more
/// than half the SMs idle; then into as many splits as give each SM one block, but none
/// shorter than a few hundred positions. (Two blocks an SM, the kernel's occupancy, measured
/// slower for one sequence: each block then covers half the positions.)
///
/// ```
/// use kernels::attention::{decode_splits, Heads};
/// let heads = Heads { q: 32, kv: 8, dim: 128 };
/// assert_eq!(decode_splits(1, heads, 8192, 132), 16);
/// assert_eq!(decode_splits(8, heads, 8192, 132), 2);
/// assert_eq!(decode_splits(16, heads, 8192, 132), 1);
/// assert_eq!(decode_splits(1, heads, 100, 132), 1);
/// ```
pub fn decode_splits(seqs: usize, heads: Heads, max_len: usize, sms: usize) -> usize {
    let blocks = seqs.max(1).saturating_mul(heads.kv.max(1));
    let sms = sms.max(1);
    if blocks.saturating_mul(2) > sms {
        return 1;
    }
    (sms / blocks).min(max_len / MIN_SPLIT_LEN).max(1)
}

fn unsupported(detail: &str) -> Error {
    Error::Unsupported {
        op: OP,
        detail: detail.into(),
    }
}

/// Checks what does not depend on the buffers.
fn check_decode(d: Decode) -> Result<(), Error> {
    let h = d.heads;
    if !matches!(h.dim, 64 | 128 | 256) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!("head dim {} is not supported; use 64, 128 or 256", h.dim),
        });
    }
    if h.kv == 0 || h.q == 0 || !h.q.is_multiple_of(h.kv) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "{} query heads cannot share {} kv heads; heads.q must be a positive multiple of heads.kv",
                h.q, h.kv
            ),
        });
    }
    if d.new == 0 {
        return Err(unsupported(
            "new is 0; a decode step has at least one query token per sequence",
        ));
    }
    if d.splits == 0 {
        return Err(unsupported(
            "splits is 0; use 1 (no split) or `decode_splits(..)`",
        ));
    }
    Ok(())
}

/// Checks the layout and every buffer's length.
#[allow(clippy::too_many_arguments)]
fn check(
    d: Decode,
    layout: PagedLayout,
    [q, k_cache, v_cache, table, seq_lens, o]: [usize; 6],
    workspace: usize,
) -> Result<(), Error> {
    check_decode(d)?;
    let h = d.heads;
    if layout.block_size == 0 {
        return Err(unsupported(
            "block_size is 0; a cache block holds at least one token",
        ));
    }
    if h.kv.checked_mul(h.dim) != Some(layout.width) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "the cache rows hold {} elements but heads.kv × heads.dim = {} × {} = {}; lay the cache out with width = heads.kv × heads.dim",
                layout.width,
                h.kv,
                h.dim,
                h.kv as u128 * h.dim as u128
            ),
        });
    }
    let capacity = layout.blocks_per_seq.checked_mul(layout.block_size);
    if capacity.is_none_or(|c| d.max_len > c) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "max_len {} exceeds what a sequence's table row addresses (blocks_per_seq × block_size = {} × {}); raise blocks_per_seq or lower max_len",
                d.max_len, layout.blocks_per_seq, layout.block_size
            ),
        });
    }
    let tiles = (h.group() * d.new).div_ceil(rows_per_block(h.group() * d.new));
    let seqs = layout.seqs;
    let rows = seqs
        .checked_mul(d.new)
        .and_then(|r| r.checked_mul(h.q))
        .and_then(|r| r.checked_mul(h.dim));
    let needed = paged_decode_workspace(seqs, d)?;
    let fits = |x: Option<usize>| x.is_some_and(|x| x <= u32::MAX as usize);
    // Indices are 32-bit in the kernel, but for a cache row times its width. Positions run
    // past `max_len` by a step (of at most 32 tokens) a split and a dozen steps more.
    let in_range = fits(rows)
        && fits(layout.num_blocks.checked_mul(layout.block_size))
        && fits(layout.seqs.checked_mul(layout.blocks_per_seq))
        && fits(
            d.splits
                .checked_mul(16 * 32)
                .and_then(|x| x.checked_add(d.max_len + 1024)),
        )
        && fits(Some(needed))
        && layout
            .num_blocks
            .checked_mul(layout.block_size)
            .and_then(|r| r.checked_mul(layout.width))
            .is_some()
        && seqs <= 65535
        && h.kv.checked_mul(tiles).is_some_and(|y| y <= 65535)
        && d.splits <= i32::MAX as usize;
    if !in_range {
        return Err(unsupported(
            "the problem overflows the kernel's 32-bit indices or launch grid; decode fewer sequences at once",
        ));
    }
    let rows = seqs * d.new * h.q * h.dim;
    let why = |what: &'static str| {
        move || match what {
            "rows" => format!(
                "seqs × new × heads.q × heads.dim = {seqs} × {} × {} × {}",
                d.new, h.q, h.dim
            ),
            "cache" => format!(
                "num_blocks × block_size × width = {} × {} × {}",
                layout.num_blocks, layout.block_size, layout.width
            ),
            "table" => format!("seqs × blocks_per_seq = {seqs} × {}", layout.blocks_per_seq),
            _ => format!("one per sequence, seqs = {seqs}"),
        }
    };
    check_len(OP, "q", q, rows, why("rows"))?;
    check_len(OP, "o", o, rows, why("rows"))?;
    check_len(OP, "k_cache", k_cache, layout.cache_len(), why("cache"))?;
    check_len(OP, "v_cache", v_cache, layout.cache_len(), why("cache"))?;
    check_len(
        OP,
        "block_table",
        table,
        seqs * layout.blocks_per_seq,
        why("table"),
    )?;
    check_len(OP, "seq_lens", seq_lens, seqs, why("seqs"))?;
    if workspace < needed {
        return Err(Error::Length {
            op: OP,
            buffer: "workspace",
            expected: needed,
            actual: workspace,
            why: "at least `paged_decode_workspace(seqs, decode)`".into(),
        });
    }
    Ok(())
}

/// Attention of `decode.new` query tokens per sequence over a paged KV cache:
/// `o = softmax(scale · q·kᵀ)·v`, query `i` of sequence `s` attending cache positions
/// `0 ..= seq_lens[s] − new + i` (its own token included), as
/// [`reference::decode`](super::reference::decode) defines it.
///
/// `q` and `o` are `[seqs · new, heads.q, heads.dim]` (a sequence's tokens together), the
/// caches `[num_blocks, block_size, heads.kv · heads.dim]` addressed through `block_table`
/// (`[seqs, blocks_per_seq]`), `seq_lens` one length per sequence (`seqs = layout.seqs`).
/// `workspace` holds at least [`paged_decode_workspace`] elements (none for one split).
/// Sequences shorter than `new` give zero rows; see the module docs for the other edge cases.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::attention::{paged_decode, Decode, Heads};
/// use kernels::layout::PagedLayout;
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let heads = Heads { q: 2, kv: 1, dim: 64 };
/// // One sequence of 3 tokens in pages of 2: logical block 0 at physical 1, 1 at 0.
/// let layout = PagedLayout { num_blocks: 2, block_size: 2, width: 64, seqs: 1, blocks_per_seq: 2 };
/// let bf = |x: f32| Bf16::from_f32(x);
/// let q = Buffer::from_host(&stream, &vec![bf(0.0); 2 * 64])?;
/// let k = Buffer::from_host(&stream, &vec![bf(0.5); 4 * 64])?;
/// // Values 1, 2, 3 at positions 0, 1, 2 (physical rows 2, 3, 0).
/// let rows = [3.0, 0.0, 1.0, 2.0];
/// let v: Vec<Bf16> = rows.iter().flat_map(|&x| vec![bf(x); 64]).collect();
/// let v = Buffer::from_host(&stream, &v)?;
/// let table = Buffer::from_host(&stream, &[1u32, 0])?;
/// let lens = Buffer::from_host(&stream, &[3u32])?;
/// let decode = Decode { heads, scale: 0.125, new: 1, max_len: 4, splits: 1 };
/// let mut o = Buffer::<Bf16>::zeros(&stream, 2 * 64)?;
/// let mut workspace = Buffer::<f32>::zeros(&stream, 0)?;
/// paged_decode(&stream, &q, &k, &v, &table, &lens, layout, decode, &mut workspace, &mut o)?;
/// // Equal scores: the mean of the values.
/// assert!(o.to_host(&stream)?.iter().all(|x| x.to_f32() == 2.0));
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn paged_decode<T: HalfElement>(
    stream: &Stream,
    q: &Buffer<T>,
    k_cache: &Buffer<T>,
    v_cache: &Buffer<T>,
    block_table: &Buffer<u32>,
    seq_lens: &Buffer<u32>,
    layout: PagedLayout,
    decode: Decode,
    workspace: &mut Buffer<f32>,
    o: &mut Buffer<T>,
) -> Result<(), Error> {
    let lens = [
        q.len(),
        k_cache.len(),
        v_cache.len(),
        block_table.len(),
        seq_lens.len(),
        o.len(),
    ];
    check(decode, layout, lens, workspace.len())?;
    let h = decode.heads;
    let seqs = layout.seqs;
    if seqs == 0 {
        return Ok(());
    }
    let r = rows_per_block(h.group() * decode.new);
    let tiles = (h.group() * decode.new).div_ceil(r);
    let u = |x: usize| x as u32;
    let cfg = LaunchConfig {
        grid: [u(decode.splits), u(h.kv * tiles), u(seqs)],
        block: [BLOCK, 1, 1],
        dynamic_shared_bytes: SHARED_BYTES,
    };
    let bs = layout.block_size;
    let page_shift = if bs.is_power_of_two() {
        bs.trailing_zeros()
    } else {
        32
    };
    decode_kernel::paged_decode::<T>(
        stream,
        cfg,
        u(h.dim),
        u(r),
        q,
        k_cache,
        v_cache,
        block_table,
        seq_lens,
        &mut *workspace,
        &mut *o,
        u(h.q),
        u(h.kv),
        u(decode.new),
        u(decode.max_len),
        u(bs),
        page_shift,
        u(layout.num_blocks),
        u(layout.blocks_per_seq),
        decode.scale * std::f32::consts::LOG2_E,
    )?;
    if decode.splits > 1 {
        let rows = seqs * decode.new * h.q;
        let cfg = LaunchConfig::linear(u((rows * h.dim).div_ceil(256)), 256);
        decode_kernel::paged_decode_combine::<T>(
            stream,
            cfg,
            &*workspace,
            o,
            u(rows),
            u(h.dim),
            u(decode.splits),
        )?;
    }
    Ok(())
}
