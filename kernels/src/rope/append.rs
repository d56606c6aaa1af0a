//! [`rope_append`]: a decode step's new q, k and v made ready for paged attention in one launch.

use super::append_kernel;
use super::spec::{Rope, RopeLayout};
use crate::attention::Heads;
use crate::layout::PagedLayout;
use crate::Float;
use crate::{check_len, Error};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

const OP: &str = "rope_append";
/// Threads per block (the kernel's `block`).
const THREADS: u32 = 128;

/// Rotates the new tokens' queries and keys by RoPE, writes the queries in the cache's element
/// type into `q_out`, and appends the rotated keys and the values to the paged caches at each
/// token's slot. The same values as [`rope`](super::rope) on q and k, a [`cast`](crate::cast::cast)
/// of q, k and v, and two [`kv_cache_append`](crate::layout::kv_cache_append)s, in one launch.
///
/// `q`: `tokens × heads.q × heads.dim`; `k`, `v`: `tokens × heads.kv × heads.dim`; `positions`,
/// `seq_ids`: one per token; `layout.width` must be `heads.kv × heads.dim`. As with
/// `kv_cache_append`, a token whose sequence, block-table entry or block lies outside `layout`
/// appends nothing (the table lives on the device).
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::attention::Heads;
/// use kernels::layout::PagedLayout;
/// use kernels::rope::{rope_append, Rope, RopeLayout};
/// # fn main() -> Result<(), kernels::Error> {
/// let s = Device::emulator().stream()?;
/// let heads = Heads { q: 1, kv: 1, dim: 2 };
/// let layout = PagedLayout { num_blocks: 2, block_size: 2, width: 2, seqs: 1, blocks_per_seq: 2 };
/// let q = Buffer::from_host(&s, &[1.0f32, 0.0])?;
/// let k = Buffer::from_host(&s, &[0.0f32, 1.0])?;
/// let v = Buffer::from_host(&s, &[3.0f32, 4.0])?;
/// let positions = Buffer::from_host(&s, &[2u32])?; // the sequence's third token
/// let seq_ids = Buffer::from_host(&s, &[0u32])?;
/// let table = Buffer::from_host(&s, &[1u32, 0])?; // logical block 1 is physical block 0
/// let mut q_out = Buffer::<Bf16>::zeros(&s, 2)?;
/// let mut k_cache = Buffer::<Bf16>::zeros(&s, layout.cache_len())?;
/// let mut v_cache = Buffer::<Bf16>::zeros(&s, layout.cache_len())?;
/// let spec = Rope { layout: RopeLayout::NeoX, theta: 10000.0, rotary_dim: 2 };
/// rope_append(&s, [&q, &k, &v], &positions, &seq_ids, &table, &mut q_out,
///             [&mut k_cache, &mut v_cache], 1, heads, spec, layout)?;
/// let q_out: Vec<f32> = q_out.to_host(&s)?.iter().map(|x| x.to_f32()).collect();
/// assert!((q_out[0] - 2f32.cos()).abs() < 1e-2 && (q_out[1] - 2f32.sin()).abs() < 1e-2);
/// // Position 2 is slot 0 of logical block 1, which is physical block 0.
/// let v_cache: Vec<f32> = v_cache.to_host(&s)?.iter().map(|x| x.to_f32()).collect();
/// assert_eq!(v_cache, [3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn rope_append<S: Float, T: Float>(
    stream: &Stream,
    [q, k, v]: [&Buffer<S>; 3],
    positions: &Buffer<u32>,
    seq_ids: &Buffer<u32>,
    block_table: &Buffer<u32>,
    q_out: &mut Buffer<T>,
    [k_cache, v_cache]: [&mut Buffer<T>; 2],
    tokens: usize,
    heads: Heads,
    spec: Rope,
    layout: PagedLayout,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<S>("rope_append")?;
    let Some(items) = check(
        [q.len(), k.len(), v.len(), q_out.len()],
        [positions.len(), seq_ids.len(), block_table.len()],
        [k_cache.len(), v_cache.len()],
        tokens,
        heads,
        spec,
        layout,
    )?
    else {
        return Ok(());
    };
    let u = |n: usize| n as u32;
    append_kernel::rope_append::<S, T>(
        stream,
        LaunchConfig::linear(items.div_ceil(THREADS).min(1 << 16), THREADS),
        (spec.layout == RopeLayout::Interleaved) as u32,
        q,
        k,
        v,
        positions,
        seq_ids,
        block_table,
        q_out,
        k_cache,
        v_cache,
        u(tokens),
        u(heads.q),
        u(heads.kv),
        u(heads.dim),
        u(spec.rotary_dim / 2),
        spec.freq_exponent(),
        u(layout.block_size),
        u(layout.num_blocks),
        u(layout.seqs),
        u(layout.blocks_per_seq),
    )?;
    Ok(())
}

/// Checks every size against the others; the threads to launch, or `None` for no tokens.
fn check(
    [q, k, v, q_out]: [usize; 4],
    [positions, seq_ids, table]: [usize; 3],
    caches: [usize; 2],
    tokens: usize,
    heads: Heads,
    spec: Rope,
    layout: PagedLayout,
) -> Result<Option<u32>, Error> {
    let unsupported = |detail: String| Err(Error::Unsupported { op: OP, detail });
    spec.check(heads.dim)?;
    if heads.q == 0 || heads.kv == 0 || heads.dim % 2 == 1 {
        return unsupported(format!(
            "heads {}/{} of {}: both head counts must be at least 1 and the head size even",
            heads.q, heads.kv, heads.dim
        ));
    }
    if layout.block_size == 0 {
        return unsupported("block_size is 0; a block holds at least one token".into());
    }
    if layout.width != heads.kv * heads.dim {
        return unsupported(format!(
            "the cache's width {} is not heads.kv × heads.dim = {} × {}",
            layout.width, heads.kv, heads.dim
        ));
    }
    let items = tokens
        .checked_mul(heads.q + 2 * heads.kv)
        .and_then(|n| n.checked_mul(heads.dim / 2))
        .filter(|&n| n <= u32::MAX as usize)
        .filter(|_| layout.cache_len() <= u32::MAX as usize);
    let Some(items) = items else {
        return unsupported(format!(
            "{tokens} tokens of {}/{} heads of {}, or a cache of {} elements, exceed the \
             kernel's 32-bit indices; split the batch",
            heads.q,
            heads.kv,
            heads.dim,
            layout.cache_len()
        ));
    };
    let q_len = tokens * heads.q * heads.dim;
    let kv_len = tokens * heads.kv * heads.dim;
    let per_token = || format!("tokens × heads × head_dim, tokens = {tokens}");
    check_len(OP, "q", q, q_len, per_token)?;
    check_len(OP, "k", k, kv_len, per_token)?;
    check_len(OP, "v", v, kv_len, per_token)?;
    check_len(OP, "q_out", q_out, q_len, per_token)?;
    let one = || format!("one per token, tokens = {tokens}");
    check_len(OP, "positions", positions, tokens, one)?;
    check_len(OP, "seq_ids", seq_ids, tokens, one)?;
    let (seqs, per_seq) = (layout.seqs, layout.blocks_per_seq);
    check_len(OP, "block_table", table, seqs * per_seq, || {
        format!("seqs × blocks_per_seq = {seqs} × {per_seq}")
    })?;
    let cache = || "num_blocks × block_size × width".to_string();
    check_len(OP, "k_cache", caches[0], layout.cache_len(), cache)?;
    check_len(OP, "v_cache", caches[1], layout.cache_len(), cache)?;
    Ok((items > 0).then_some(items as u32))
}
