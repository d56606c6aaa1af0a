//! The public flash-attention forward: check every shape, then launch the `#[kernel]`
//! ([`super::forward_kernel`]) for the element type, head dim and mask.

use super::pair_mma::{Bf16Pairs, F16Pairs};
use super::{forward_kernel, forward_wgmma_kernel};
use super::{head_tiles, Attention, AttentionPath, Batch, HalfElement, Mask};
use crate::FloatType;
use crate::{check_len, Error};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

const OP: &str = "flash_forward";

/// Query rows per block.
pub(crate) const BLOCK_ROWS: usize = 64;

/// Keys per tile for head dim `dim` (smaller for 256, so two stages of K and V fit).
pub(crate) fn key_tile(dim: usize) -> usize {
    if dim == 256 {
        32
    } else {
        64
    }
}

/// Dynamic shared memory of the kernel for head dim `dim`: two stages of K and V tiles, and a
/// Q tile of its own for 256 (smaller heads stage Q in the second stage), rows padded by 16
/// bytes.
pub(crate) fn shared_bytes(dim: usize) -> u32 {
    let row = 2 * dim + 16;
    let rows = 4 * key_tile(dim) + if dim == 256 { BLOCK_ROWS } else { 0 };
    (rows * row) as u32
}

/// `o = softmax(attn.scale · q·kᵀ + mask)·v` over each sequence of a packed batch, with the
/// row log-sum-exp `lse` the backward reads (layouts as [`crate::attention`] documents).
///
/// bf16 or f16, head dim 64, 128 or 256, [`Mask::Full`] or [`Mask::Causal`], query heads a
/// multiple of kv heads (GQA, MQA). On Hopper it runs `wgmma` kernels, elsewhere `mma.sync`
/// ones ([`AttentionPath::for_target`]; [`flash_forward_with`] picks one). The launch covers `batch.max_len` rows of every sequence;
/// blocks past a sequence's length exit, so a captured graph replays with new lengths up to
/// `max_len`. Softmax and accumulation are in f32; `o` is rounded to `T`. Every size is
/// checked before launch and nothing is written on error; zero tokens or sequences launch
/// nothing.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::attention::{flash_forward, Attention, Batch, Heads, Mask};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let heads = Heads { q: 1, kv: 1, dim: 64 };
/// // One sequence of two tokens; every key is zero, so each query averages the values
/// // it attends.
/// let q = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.5); 2 * 64])?;
/// let k = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.0); 2 * 64])?;
/// let mut vals = vec![Bf16::from_f32(1.0); 64];
/// vals.extend(vec![Bf16::from_f32(3.0); 64]);
/// let v = Buffer::from_host(&stream, &vals)?;
/// let cu_seqlens = Buffer::from_host(&stream, &[0u32, 2])?;
/// let batch = Batch { cu_seqlens: &cu_seqlens, seqs: 1, tokens: 2, max_len: 2 };
/// let attn = Attention { heads, mask: Mask::Causal, scale: 0.125 };
/// let mut o = Buffer::<Bf16>::zeros(&stream, 2 * 64)?;
/// let mut lse = Buffer::<f32>::zeros(&stream, 2)?;
/// flash_forward(&stream, &q, &k, &v, batch, attn, &mut o, &mut lse)?;
/// let o = o.to_host(&stream)?;
/// assert_eq!((o[0].to_f32(), o[64].to_f32()), (1.0, 2.0)); // the first token sees only itself
/// let lse = lse.to_host(&stream)?;
/// assert!((lse[1] - 2f32.ln()).abs() < 1e-3);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_forward<T: HalfElement>(
    stream: &Stream,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    batch: Batch,
    attn: Attention,
    o: &mut Buffer<T>,
    lse: &mut Buffer<f32>,
) -> Result<(), Error> {
    let path = AttentionPath::for_target(stream.device().target());
    flash_forward_with(stream, path, q, k, v, batch, attn, o, lse)
}

/// [`flash_forward`] on the kernels of `path`, for comparing the two paths on a Hopper
/// device. [`AttentionPath::Wgmma`] is refused on any other device, before launch.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::attention::{flash_forward_with, Attention, Batch, AttentionPath, Heads, Mask};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
/// let heads = Heads { q: 2, kv: 1, dim: 64 };
/// let q = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.5); 3 * 2 * 64])?;
/// let kv = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.25); 3 * 64])?;
/// let cu_seqlens = Buffer::from_host(&stream, &[0u32, 3])?;
/// let batch = Batch { cu_seqlens: &cu_seqlens, seqs: 1, tokens: 3, max_len: 3 };
/// let attn = Attention { heads, mask: Mask::Full, scale: 0.125 };
/// let mut outs = Vec::new();
/// for path in [AttentionPath::MmaSync, AttentionPath::Wgmma] {
///     let mut o = Buffer::<Bf16>::zeros(&stream, 3 * 2 * 64)?;
///     let mut lse = Buffer::<f32>::zeros(&stream, 2 * 3)?;
///     flash_forward_with(&stream, path, &q, &kv, &kv, batch, attn, &mut o, &mut lse)?;
///     outs.push(o.to_host(&stream)?);
/// }
/// // Every key and value is the same, so both paths return the values exactly.
/// assert!(outs.iter().flatten().all(|x| x.to_f32() == 0.25));
/// // An sm_80 device has no `wgmma`.
/// let ampere = Device::emulator().stream()?;
/// let mut o = Buffer::<Bf16>::zeros(&ampere, 3 * 2 * 64)?;
/// let mut lse = Buffer::<f32>::zeros(&ampere, 2 * 3)?;
/// let (q, kv, cu_seqlens) = (q.to_host(&stream)?, kv.to_host(&stream)?, [0u32, 3]);
/// let (q, kv) = (Buffer::from_host(&ampere, &q)?, Buffer::from_host(&ampere, &kv)?);
/// let cu_seqlens = Buffer::from_host(&ampere, &cu_seqlens)?;
/// let batch = Batch { cu_seqlens: &cu_seqlens, ..batch };
/// let path = AttentionPath::Wgmma;
/// assert!(flash_forward_with(&ampere, path, &q, &kv, &kv, batch, attn, &mut o, &mut lse).is_err());
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_forward_with<T: HalfElement>(
    stream: &Stream,
    path: AttentionPath,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    batch: Batch,
    attn: Attention,
    o: &mut Buffer<T>,
    lse: &mut Buffer<f32>,
) -> Result<(), Error> {
    let target = stream.device().target();
    path.check_runs_on(target, OP)?;
    let launch = Launch::plan(&batch, &attn)?;
    let heads = attn.heads;
    let q_len = launch.q_elems;
    let kv_len = launch.kv_elems;
    let shape = || {
        format!(
            "tokens × heads.q × heads.dim = {} × {} × {}",
            batch.tokens, heads.q, heads.dim
        )
    };
    check_len(OP, "q", q.len(), q_len, shape)?;
    check_len(OP, "o", o.len(), q_len, shape)?;
    let kv_shape = || {
        format!(
            "tokens × heads.kv × heads.dim = {} × {} × {}",
            batch.tokens, heads.kv, heads.dim
        )
    };
    check_len(OP, "k", k.len(), kv_len, kv_shape)?;
    check_len(OP, "v", v.len(), kv_len, kv_shape)?;
    check_len(OP, "lse", lse.len(), launch.lse_elems, || {
        format!("heads.q × tokens = {} × {}", heads.q, batch.tokens)
    })?;
    check_len(
        OP,
        "cu_seqlens",
        batch.cu_seqlens.len(),
        batch.seqs + 1,
        || format!("seqs + 1 = {} + 1 offsets", batch.seqs),
    )?;
    let Some(config) = launch.config else {
        return Ok(());
    };
    // The `wgmma` kernels fold the scale into each exponent, which needs it positive; a zero
    // or negative scale takes the `mma.sync` kernels, which run on Hopper too.
    if path == AttentionPath::Wgmma && attn.scale > 0.0 {
        return forward_hopper(stream, q, k, v, batch, attn, o, lse);
    }
    let kernel = match T::TYPE {
        FloatType::Bf16 => forward_kernel::flash_forward::<T, Bf16Pairs>,
        FloatType::F16 => forward_kernel::flash_forward::<T, F16Pairs>,
        FloatType::F32 => {
            return Err(Error::Unsupported {
                op: OP,
                detail: "f32 attention is not supported; store q, k, v and o as bf16 or f16".into(),
            })
        }
    };
    let u = |x: usize| x as u32;
    kernel(
        stream,
        config,
        u(heads.dim),
        u(key_tile(heads.dim)),
        u32::from(attn.mask == Mask::Causal),
        q,
        k,
        v,
        batch.cu_seqlens,
        o,
        lse,
        u(batch.tokens),
        u(heads.q),
        u(heads.kv),
        u(heads.group()),
        attn.scale * std::f32::consts::LOG2_E,
    )?;
    Ok(())
}

/// The Hopper path ([`forward_wgmma_kernel`]), for a call already checked: tensor maps over
/// `q`, `k` and `v`, one block of three warpgroups per 128 query rows of a head of a sequence.
#[allow(clippy::too_many_arguments)]
fn forward_hopper<T: HalfElement>(
    stream: &Stream,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    batch: Batch,
    attn: Attention,
    o: &mut Buffer<T>,
    lse: &mut Buffer<f32>,
) -> Result<(), Error> {
    let heads = attn.heads;
    let dim = heads.dim as u32;
    let causal = attn.mask == Mask::Causal;
    let keys = forward_wgmma_kernel::key_tile(dim, causal);
    let rows = forward_wgmma_kernel::BLOCK_ROWS;
    let map = |buf: &Buffer<T>, n_heads: usize, rows: u32| {
        head_tiles(buf, batch.tokens, n_heads, heads.dim, rows)
    };
    let (map_q, map_k, map_v) = (
        map(q, heads.q, rows)?,
        map(k, heads.kv, keys)?,
        map(v, heads.kv, keys)?,
    );
    let tiles = batch.max_len.min(batch.tokens).div_ceil(rows as usize) as u32;
    let config = LaunchConfig {
        grid: [tiles, heads.q as u32, batch.seqs as u32],
        block: [forward_wgmma_kernel::THREADS, 1, 1],
        dynamic_shared_bytes: 0,
    }
    .with_dynamic_shared(forward_wgmma_kernel::shared_bytes(dim, keys));
    let kernel = match T::TYPE {
        FloatType::Bf16 => forward_wgmma_kernel::flash_forward_wgmma::<T, Bf16Pairs>,
        _ => forward_wgmma_kernel::flash_forward_wgmma::<T, F16Pairs>,
    };
    // The instances' `HALF`: 1 selects the f16 `wgmma`.
    let half = u32::from(T::TYPE == FloatType::F16);
    let u = |x: usize| x as u32;
    kernel(
        stream,
        config,
        half,
        dim,
        keys,
        u32::from(causal),
        &map_q,
        &map_k,
        &map_v,
        batch.cu_seqlens,
        o,
        lse,
        u(batch.tokens),
        u(heads.q),
        u(heads.group()),
        attn.scale * std::f32::consts::LOG2_E,
    )?;
    Ok(())
}

/// The checked sizes of one call and its launch (`None`: nothing to do).
struct Launch {
    q_elems: usize,
    kv_elems: usize,
    lse_elems: usize,
    config: Option<LaunchConfig>,
}

impl Launch {
    fn plan(batch: &Batch, attn: &Attention) -> Result<Launch, Error> {
        let heads = attn.heads;
        let unsupported = |detail: String| Error::Unsupported { op: OP, detail };
        if ![64, 128, 256].contains(&heads.dim) {
            return Err(unsupported(format!(
                "head dim {} is not supported; use 64, 128 or 256 (pad the heads to the next of these)",
                heads.dim
            )));
        }
        if heads.q == 0 || heads.kv == 0 {
            return Err(unsupported(format!(
                "{} query heads and {} kv heads: each needs at least one",
                heads.q, heads.kv
            )));
        }
        if !heads.q.is_multiple_of(heads.kv) {
            return Err(unsupported(format!(
                "{} query heads do not split evenly over {} kv heads; heads.q must be a multiple of heads.kv",
                heads.q, heads.kv
            )));
        }
        if !attn.scale.is_finite() {
            return Err(unsupported(format!(
                "the softmax scale {} is not finite; pass a finite scale such as 1 / sqrt(heads.dim)",
                attn.scale
            )));
        }
        // Indices in the kernel are 32-bit: every buffer, plus a tile's worth of rows read
        // past a sequence's end, must fit.
        let too_big = || {
            unsupported(format!(
                "{} tokens × {} heads × {} elements overflow the kernel's 32-bit indices; split the batch",
                batch.tokens, heads.q, heads.dim
            ))
        };
        let limit = u32::MAX as usize;
        let elems = |h: usize| {
            batch
                .tokens
                .checked_add(BLOCK_ROWS)
                .and_then(|t| t.checked_mul(h))
                .and_then(|x| x.checked_mul(heads.dim))
                .filter(|&x| x <= limit)
                .map(|x| x - BLOCK_ROWS * h * heads.dim)
        };
        let q_elems = elems(heads.q).ok_or_else(too_big)?;
        let kv_elems = elems(heads.kv).ok_or_else(too_big)?;
        let lse_elems = q_elems / heads.dim;
        // No sequence outgrows the packed tokens, whatever `max_len` says.
        let tiles = batch.max_len.min(batch.tokens).div_ceil(BLOCK_ROWS);
        if heads.q > u16::MAX as usize || batch.seqs > u16::MAX as usize {
            return Err(unsupported(format!(
                "{} query heads and {} sequences: the grid holds at most 65535 of each; split the batch",
                heads.q, batch.seqs
            )));
        }
        let config = (batch.tokens > 0 && batch.seqs > 0 && batch.max_len > 0).then(|| {
            LaunchConfig {
                grid: [tiles as u32, heads.q as u32, batch.seqs as u32],
                block: [128, 1, 1],
                dynamic_shared_bytes: 0,
            }
            .with_dynamic_shared(shared_bytes(heads.dim))
        });
        Ok(Launch {
            q_elems,
            kv_elems,
            lse_elems,
            config,
        })
    }
}
