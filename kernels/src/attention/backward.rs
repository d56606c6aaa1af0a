//! The fused flash-attention backward: shapes checked, then three launches in a fixed order
//! (`delta = rowsum(dO ∘ O)`, dK/dV, dQ), none of them with atomics, so the gradients are
//! bit-identical run to run. dK/dV and dQ run `mma.sync` kernels, or on Hopper `wgmma` ones
//! ([`AttentionPath`]).

use super::backward_delta_kernel::flash_backward_delta;
use super::backward_dkdv_kernel::flash_backward_dkdv;
use super::backward_dkdv_wgmma_kernel::{self as dkdv_wgmma, flash_backward_dkdv_wgmma};
use super::backward_dq_kernel::flash_backward_dq;
use super::backward_dq_wgmma_kernel::{self as dq_wgmma, flash_backward_dq_wgmma};
use super::pair_mma::{Bf16Pairs, F16Pairs};
use super::{head_tiles, Attention, AttentionPath, Batch, HalfElement, Heads, Mask};
use crate::FloatType;
use crate::{check_len, Error};
use kernel_runtime::{Buffer, LaunchConfig, Stream};

const OP: &str = "flash_backward";

/// Threads of a delta block: four warps, a row each.
const DELTA_BLOCK: u32 = 128;

/// Warps of a dK/dV or dQ block, 16 keys or queries each: eight, so that a K/V (Q/dO) tile
/// read from L2 serves twice the work, but four for head size 256, whose tiles would not fit
/// in shared memory twice as tall.
fn warps(dim: usize) -> u32 {
    if dim == 256 {
        4
    } else {
        8
    }
}
/// The head columns one dK/dV block accumulates: all of them up to 128, else halves (the
/// accumulators of 256 columns do not fit in registers).
fn slice_cols(dim: usize) -> usize {
    dim.min(128)
}

/// f32 elements of the workspace [`flash_backward`] needs for a batch of `batch_tokens`
/// tokens (`delta`, one per query head and token).
///
/// ```
/// use kernels::attention::{flash_backward_workspace, Heads};
/// let heads = Heads { q: 8, kv: 2, dim: 128 };
/// assert_eq!(flash_backward_workspace(1000, heads)?, 8000);
/// # Ok::<(), kernels::Error>(())
/// ```
pub fn flash_backward_workspace(batch_tokens: usize, heads: Heads) -> Result<usize, Error> {
    heads.q.checked_mul(batch_tokens).ok_or_else(|| {
        unsupported(format!(
            "{} heads × {batch_tokens} tokens overflows usize; split the batch",
            heads.q
        ))
    })
}

/// The gradients of attention with respect to `q`, `k` and `v`, given the forward's output
/// `o`, its row log-sum-exp `lse` and the gradient `d_o` of `o` (layouts as the
/// [module](super) documents them). kv heads sum the gradients of the query heads that share
/// them (GQA, MQA). `workspace` holds at least [`flash_backward_workspace`] f32 elements.
///
/// bf16 or f16, head size 64, 128 or 256, sm_80 or newer: `mma.sync`, or on Hopper `wgmma`
/// for head sizes 64 and 128 ([`AttentionPath::for_target`]; [`flash_backward_with`] picks
/// one). Every length, the head counts, the head size and the scale are checked before
/// anything runs; nothing is written on error. The sums run in a fixed order with no atomics:
/// the same inputs give bit-identical gradients on every run. The offsets are read on the
/// device only: a sequence reaching past `batch.tokens` is clipped to it, and one longer than
/// `batch.max_len` gets gradients only for the tokens the launch covers (`max_len` rounded up
/// to a tile of 64 or 128).
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::attention::{flash_backward, flash_backward_workspace, Attention, Batch, Heads, Mask};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let heads = Heads { q: 1, kv: 1, dim: 64 };
/// // One sequence of one token: its softmax is 1, so dV = dO and dQ = dK = 0.
/// let x = |v: f32| Buffer::from_host(&stream, &vec![Bf16::from_f32(v); 64]);
/// let (q, k, v, o, d_o) = (x(0.5)?, x(0.25)?, x(1.0)?, x(1.0)?, x(2.0)?);
/// let lse = Buffer::from_host(&stream, &[0.5f32 * 0.25 * 64.0 * 0.125])?;
/// let cu = Buffer::from_host(&stream, &[0u32, 1])?;
/// let batch = Batch { cu_seqlens: &cu, seqs: 1, tokens: 1, max_len: 1 };
/// let attn = Attention { heads, mask: Mask::Causal, scale: 0.125 };
/// let (mut dq, mut dk, mut dv) = (x(9.0)?, x(9.0)?, x(9.0)?);
/// let mut ws = Buffer::<f32>::zeros(&stream, flash_backward_workspace(1, heads)?)?;
/// flash_backward(&stream, &q, &k, &v, &o, &d_o, &lse, batch, attn, &mut dq, &mut dk, &mut dv, &mut ws)?;
/// assert!(dv.to_host(&stream)?.iter().all(|x| x.to_f32() == 2.0));
/// assert!(dq.to_host(&stream)?.iter().all(|x| x.to_f32() == 0.0));
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_backward<T: HalfElement>(
    stream: &Stream,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    o: &Buffer<T>,
    d_o: &Buffer<T>,
    lse: &Buffer<f32>,
    batch: Batch,
    attn: Attention,
    dq: &mut Buffer<T>,
    dk: &mut Buffer<T>,
    dv: &mut Buffer<T>,
    workspace: &mut Buffer<f32>,
) -> Result<(), Error> {
    let path = AttentionPath::for_target(stream.device().target());
    flash_backward_with(
        stream, path, q, k, v, o, d_o, lse, batch, attn, dq, dk, dv, workspace,
    )
}

/// [`flash_backward`] on the kernels of `path`, for comparing the two paths on a Hopper
/// device. [`AttentionPath::Wgmma`] is refused on any other device, before launch; with head
/// size 256 or a scale that is not positive it runs `mma.sync`.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::attention::{flash_backward_with, flash_backward_workspace};
/// use kernels::attention::{Attention, AttentionPath, Batch, Heads, Mask};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
/// let heads = Heads { q: 1, kv: 1, dim: 64 };
/// // One sequence of one token: its softmax is 1, so dV = dO and dQ = dK = 0.
/// let x = |v: f32| Buffer::from_host(&stream, &vec![Bf16::from_f32(v); 64]);
/// let (q, k, v, o, d_o) = (x(0.5)?, x(0.25)?, x(1.0)?, x(1.0)?, x(2.0)?);
/// let lse = Buffer::from_host(&stream, &[0.5f32 * 0.25 * 64.0 * 0.125])?;
/// let cu = Buffer::from_host(&stream, &[0u32, 1])?;
/// let batch = Batch { cu_seqlens: &cu, seqs: 1, tokens: 1, max_len: 1 };
/// let attn = Attention { heads, mask: Mask::Full, scale: 0.125 };
/// let (mut dq, mut dk, mut dv) = (x(9.0)?, x(9.0)?, x(9.0)?);
/// let mut ws = Buffer::<f32>::zeros(&stream, flash_backward_workspace(1, heads)?)?;
/// let path = AttentionPath::Wgmma;
/// flash_backward_with(&stream, path, &q, &k, &v, &o, &d_o, &lse, batch, attn, &mut dq, &mut dk, &mut dv, &mut ws)?;
/// assert!(dv.to_host(&stream)?.iter().all(|x| x.to_f32() == 2.0));
/// assert!(dq.to_host(&stream)?.iter().all(|x| x.to_f32() == 0.0));
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn flash_backward_with<T: HalfElement>(
    stream: &Stream,
    path: AttentionPath,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    o: &Buffer<T>,
    d_o: &Buffer<T>,
    lse: &Buffer<f32>,
    batch: Batch,
    attn: Attention,
    dq: &mut Buffer<T>,
    dk: &mut Buffer<T>,
    dv: &mut Buffer<T>,
    workspace: &mut Buffer<f32>,
) -> Result<(), Error> {
    let target = stream.device().target();
    path.check_runs_on(target, OP)?;
    let heads = attn.heads;
    check_heads(heads)?;
    if !attn.scale.is_finite() {
        return Err(unsupported(format!(
            "the scale {} is not finite; pass a finite softmax scale such as 1/sqrt(head dim)",
            attn.scale
        )));
    }
    check_len(
        OP,
        "cu_seqlens",
        batch.cu_seqlens.len(),
        batch.seqs.saturating_add(1),
        || format!("seqs + 1 offsets for {} sequences", batch.seqs),
    )?;
    if batch.max_len > batch.tokens {
        return Err(unsupported(format!(
            "max_len {} exceeds the batch's {} tokens; pass the longest sequence's length",
            batch.max_len, batch.tokens
        )));
    }
    let tokens = batch.tokens;
    let q_len = elements(&[tokens, heads.q, heads.dim])?;
    let kv_len = elements(&[tokens, heads.kv, heads.dim])?;
    let rows = elements(&[tokens, heads.q])?;
    let why_q = || {
        format!(
            "tokens × heads.q × dim = {tokens} × {} × {}",
            heads.q, heads.dim
        )
    };
    let why_kv = || {
        format!(
            "tokens × heads.kv × dim = {tokens} × {} × {}",
            heads.kv, heads.dim
        )
    };
    check_len(OP, "q", q.len(), q_len, why_q)?;
    check_len(OP, "o", o.len(), q_len, why_q)?;
    check_len(OP, "d_o", d_o.len(), q_len, why_q)?;
    check_len(OP, "dq", dq.len(), q_len, why_q)?;
    check_len(OP, "k", k.len(), kv_len, why_kv)?;
    check_len(OP, "v", v.len(), kv_len, why_kv)?;
    check_len(OP, "dk", dk.len(), kv_len, why_kv)?;
    check_len(OP, "dv", dv.len(), kv_len, why_kv)?;
    check_len(OP, "lse", lse.len(), rows, || {
        format!("heads.q × tokens = {} × {tokens}", heads.q)
    })?;
    let needed = flash_backward_workspace(tokens, heads)?;
    if workspace.len() < needed {
        return Err(Error::Length {
            op: OP,
            buffer: "workspace",
            expected: needed,
            actual: workspace.len(),
            why: format!("at least {needed}, from `flash_backward_workspace(tokens, heads)`"),
        });
    }
    // The kernels index in 32 bits and launch a grid of at most 65535 in y and z.
    if q_len.max(kv_len) > u32::MAX as usize {
        return Err(unsupported(format!(
            "{q_len} elements per tensor exceed the kernels' 32-bit indexing; split the batch"
        )));
    }
    let slices = heads.dim / slice_cols(heads.dim);
    if batch.seqs > 65535 || heads.q > 65535 || heads.kv * slices > 65535 {
        return Err(unsupported(format!(
            "{} sequences and {} query heads exceed a launch grid's 65535; split the batch",
            batch.seqs, heads.q
        )));
    }
    // Two tiles of 16 heads a warp and two stages of 64, in padded rows (`backward_tiles.rs`);
    // checked here rather than at the second launch, so that nothing is written on a device
    // without room for it.
    let w = warps(heads.dim);
    let shared = (32 * w + 128) * (heads.dim as u32 / 2 + 4) * 4;
    let room = stream.device().props().shared_bytes_per_block_optin;
    if shared > room {
        return Err(unsupported(format!(
            "head size {} needs {shared} bytes of shared memory per block, but this device allows {room}; use a smaller head size on it",
            heads.dim
        )));
    }
    if tokens == 0 || batch.seqs == 0 || batch.max_len == 0 {
        return Ok(());
    }

    let u = |x: usize| x as u32;
    let d = u(heads.dim);
    let tiles = u(batch.max_len.div_ceil(16 * w as usize));
    let causal = (attn.mask == Mask::Causal) as u32;
    let scale_log2 = attn.scale * std::f32::consts::LOG2_E;
    let delta_cfg = LaunchConfig {
        grid: [u(rows.div_ceil(4)), 1, 1],
        block: [DELTA_BLOCK, 1, 1],
        dynamic_shared_bytes: 0,
    };
    flash_backward_delta::<T>(
        stream,
        delta_cfg,
        d,
        o,
        d_o,
        &mut *workspace,
        u(rows),
        u(heads.q),
        u(tokens),
    )?;
    // The `wgmma` kernels fold the scale into each exponent, which needs it positive, and
    // hold dK and dV for 64 keys in a thread's registers, which head size 256 outgrows.
    if path == AttentionPath::Wgmma && attn.scale > 0.0 && heads.dim <= 128 {
        return backward_hopper(
            stream,
            q,
            k,
            v,
            d_o,
            lse,
            &*workspace,
            batch,
            attn,
            dq,
            dk,
            dv,
        );
    }
    let dkdv_cfg = LaunchConfig {
        grid: [tiles, u(heads.kv * slices), u(batch.seqs)],
        block: [32 * w, 1, 1],
        dynamic_shared_bytes: shared,
    };
    let dkdv = match T::TYPE {
        FloatType::F16 => flash_backward_dkdv::<T, F16Pairs>,
        _ => flash_backward_dkdv::<T, Bf16Pairs>,
    };
    dkdv(
        stream,
        dkdv_cfg,
        d,
        u(slice_cols(heads.dim)),
        w,
        q,
        k,
        v,
        d_o,
        lse,
        &*workspace,
        batch.cu_seqlens,
        dk,
        dv,
        u(tokens),
        u(heads.q),
        u(heads.kv),
        attn.scale,
        scale_log2,
        causal,
    )?;
    let dq_cfg = LaunchConfig {
        grid: [tiles, u(heads.q), u(batch.seqs)],
        block: [32 * w, 1, 1],
        dynamic_shared_bytes: shared,
    };
    let dq_launch = match T::TYPE {
        FloatType::F16 => flash_backward_dq::<T, F16Pairs>,
        _ => flash_backward_dq::<T, Bf16Pairs>,
    };
    dq_launch(
        stream,
        dq_cfg,
        d,
        w,
        q,
        k,
        v,
        d_o,
        lse,
        &*workspace,
        batch.cu_seqlens,
        dq,
        u(tokens),
        u(heads.q),
        u(heads.kv),
        attn.scale,
        scale_log2,
        causal,
    )?;
    Ok(())
}

/// dK/dV, then dQ, by the `wgmma` kernels, after `delta` is in `workspace`.
#[allow(clippy::too_many_arguments)]
fn backward_hopper<T: HalfElement>(
    stream: &Stream,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    d_o: &Buffer<T>,
    lse: &Buffer<f32>,
    delta: &Buffer<f32>,
    batch: Batch,
    attn: Attention,
    dq: &mut Buffer<T>,
    dk: &mut Buffer<T>,
    dv: &mut Buffer<T>,
) -> Result<(), Error> {
    let heads = attn.heads;
    let dim = heads.dim as u32;
    let map = |buf: &Buffer<T>, n_heads: usize, rows: u32| {
        head_tiles(buf, batch.tokens, n_heads, heads.dim, rows)
    };
    let u = |x: usize| x as u32;
    let causal = u32::from(attn.mask == Mask::Causal);
    // The instances' `HALF`: 1 selects the f16 `wgmma`.
    let half = u32::from(T::TYPE == FloatType::F16);
    let scale_log2 = attn.scale * std::f32::consts::LOG2_E;
    let longest = batch.max_len.min(batch.tokens);

    let (kv_rows, q_rows) = (dkdv_wgmma::BLOCK_KEYS, dkdv_wgmma::QUERY_TILE);
    let dkdv_cfg = LaunchConfig {
        grid: [
            u(longest.div_ceil(kv_rows as usize)),
            u(heads.kv),
            u(batch.seqs),
        ],
        block: [dkdv_wgmma::THREADS, 1, 1],
        dynamic_shared_bytes: 0,
    }
    .with_dynamic_shared(dkdv_wgmma::shared_bytes(dim));
    let dkdv = match T::TYPE {
        FloatType::F16 => flash_backward_dkdv_wgmma::<T, F16Pairs>,
        _ => flash_backward_dkdv_wgmma::<T, Bf16Pairs>,
    };
    dkdv(
        stream,
        dkdv_cfg,
        half,
        dim,
        causal,
        &map(q, heads.q, q_rows)?,
        &map(k, heads.kv, kv_rows)?,
        &map(v, heads.kv, kv_rows)?,
        &map(d_o, heads.q, q_rows)?,
        lse,
        delta,
        batch.cu_seqlens,
        dk,
        dv,
        u(batch.tokens),
        u(heads.kv),
        u(heads.group()),
        attn.scale,
        scale_log2,
    )?;

    let (q_rows, kv_rows) = (dq_wgmma::BLOCK_ROWS, dq_wgmma::KEY_TILE);
    let dq_cfg = LaunchConfig {
        grid: [
            u(longest.div_ceil(q_rows as usize)),
            u(heads.q),
            u(batch.seqs),
        ],
        block: [dq_wgmma::THREADS, 1, 1],
        dynamic_shared_bytes: 0,
    }
    .with_dynamic_shared(dq_wgmma::shared_bytes(dim));
    let dq_launch = match T::TYPE {
        FloatType::F16 => flash_backward_dq_wgmma::<T, F16Pairs>,
        _ => flash_backward_dq_wgmma::<T, Bf16Pairs>,
    };
    dq_launch(
        stream,
        dq_cfg,
        half,
        dim,
        causal,
        &map(q, heads.q, q_rows)?,
        &map(k, heads.kv, kv_rows)?,
        &map(v, heads.kv, kv_rows)?,
        &map(d_o, heads.q, q_rows)?,
        lse,
        delta,
        batch.cu_seqlens,
        dq,
        u(batch.tokens),
        u(heads.q),
        u(heads.group()),
        attn.scale,
        scale_log2,
    )?;
    Ok(())
}

fn unsupported(detail: String) -> Error {
    Error::Unsupported { op: OP, detail }
}

/// Heads the kernels can run: some of each, kv dividing q, a head size they are built for.
fn check_heads(heads: Heads) -> Result<(), Error> {
    if heads.q == 0 || heads.kv == 0 {
        return Err(unsupported(format!(
            "{} query heads and {} kv heads: pass at least one of each",
            heads.q, heads.kv
        )));
    }
    if !heads.q.is_multiple_of(heads.kv) {
        return Err(unsupported(format!(
            "{} query heads do not share {} kv heads evenly; pass kv heads that divide the query heads",
            heads.q, heads.kv
        )));
    }
    if ![64, 128, 256].contains(&heads.dim) {
        return Err(unsupported(format!(
            "head size {} is not built; use 64, 128 or 256",
            heads.dim
        )));
    }
    Ok(())
}

/// The product of `dims`, or an error where it overflows.
fn elements(dims: &[usize]) -> Result<usize, Error> {
    dims.iter()
        .try_fold(1usize, |acc, &x| acc.checked_mul(x))
        .ok_or_else(|| {
            unsupported(format!(
                "a tensor of {dims:?} elements overflows usize; split the batch"
            ))
        })
}
