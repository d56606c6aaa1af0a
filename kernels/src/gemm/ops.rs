//! The public GEMM entry points: check every buffer against the shape, select the kernel,
//! launch.

use super::async_wgmma_kernel;
use super::epilogue::Epilogue;
use super::layout::{extent, GemmShape};
use super::mma_kernel::{self, Bf16Mma, F16Mma, Tf32Mma};
use super::select::{select, Launch, Math, Plan};
use super::simt_kernel;
use super::split_k::{mma_splits_evenly, planned_splits, splits_types, MMA_SPLIT_GRANULE};
use super::split_reduce_kernel::{self, REDUCE_THREADS};
use super::stream_k::{
    cuts_per_tile, planned_stream_k, shape_tiles, COUNTERS_PER_BLOCK, PARTIALS_PER_BLOCK,
};
use super::tma_wgmma_kernel::{self, slab_depth, BK, MN_BOX, TILE_M, TILE_N};
use super::transposed_operands;
use super::workspace::GemmWorkspace;
use crate::Error;
use crate::Float;
use crate::FloatType;
use kernel_runtime::{
    Buffer, BufferViewMut, KernelArg, LaunchConfig, Stream, TensorMap, TensorSwizzle, TensorTiling,
};
use kernels_gen::gemm::epilogue::{
    FLAG_COLUMN_PAIRS, FLAG_F32_COPY, FLAG_PLAIN_PAIRS, FLAG_ROW_CHUNKS, FLAG_STREAM_K, FLAG_VEC_A,
    FLAG_VEC_B, STREAM_K_CUTS_SHIFT,
};
use kernels_gen::gemm::Layout;
use std::any::Any;

/// `C = act(alpha·op(A)·op(B) + beta·C + bias) + residual` for every batch of `shape`.
///
/// `A`, `B` (and the epilogue's bias and residual) are stored as `T`; `C` as `O` (`T` or
/// f32). f32 inputs use the fp32 SIMT kernel or, with [`Math::Tf32`], TF32 tensor cores;
/// bf16/f16 inputs use tensor cores (sm_80+). A buffer too small for the shape, a leading
/// dimension below its row width or an unsupported type combination is an error before
/// anything runs.
///
/// A shape with too few tiles to fill the SMs is split along k (f32 partials added in a fixed
/// order) by the Hopper TMA kernel, and by the `mma.sync` kernel (one batch, k a whole number
/// of equal 64-element ranges); one batch whose whole tiles would leave more than an eighth
/// of their waves idle, over more than one wave, runs stream-K on the TMA kernel (the full
/// waves as whole tiles, then each SM an equal stretch of the last wave's k-slabs across tile
/// boundaries, a cut tile's parts added in a fixed order). Both keep whole tiles
/// inside a graph capture and on a sealed device: a sealed program gets the same bits from a
/// graph and from direct launches. TF32 NN
/// and TN on Hopper copy their MN-major operands k-contiguous and run the tf32 `wgmma` GEMM
/// on the copies, under the same rule (a capture or a sealed device runs `mma.sync` instead;
/// [`super::gemm_with_workspace`] gives both a place for the copies).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// // [1 2; 3 4] · [5 6; 7 8]ᵀ, then + bias [1, -1]
/// let a = Buffer::from_host(&stream, &[1.0f32, 2.0, 3.0, 4.0])?;
/// let b = Buffer::from_host(&stream, &[5.0f32, 6.0, 7.0, 8.0])?;
/// let bias = Buffer::from_host(&stream, &[1.0f32, -1.0])?;
/// let mut c = Buffer::<f32>::zeros(&stream, 4)?;
/// let shape = GemmShape::new(Layout::Nt, 2, 2, 2);
/// gemm(&stream, &shape, &a, &b, &mut c, &Epilogue::default().with_bias(&bias), Math::Fp32)?;
/// assert_eq!(c.to_host(&stream)?, vec![18.0, 22.0, 40.0, 52.0]);
/// # Ok(()) }
/// ```
pub fn gemm<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    epilogue: &Epilogue<T>,
    math: Math,
) -> Result<(), Error> {
    super::workspace::gemm_in(None, stream, shape, a, b, c, epilogue, math)
}

/// [`gemm`] into a bf16 or f16 `C` that also writes each finished value, before rounding, to
/// `copy`, an f32 matrix laid out like `C` (its `ldc` and batch stride): one pass gives the
/// 16-bit activation the next layer reads and the f32 value kept for precision (a residual
/// stream, the input of a loss). With `beta ≠ 0` the old value is read from `copy`, not from
/// `C`, so `copy = α·A·B + β·copy` accumulates in f32 while `C` holds its rounding. The
/// epilogue's other parts apply as in [`gemm`]; the rounding of `C` is that of [`gemm`]'s
/// 16-bit output, so `C` equals `copy` converted to `O`.
///
/// Every `#[kernel]` GEMM does this in its epilogue (on Hopper the TMA GEMM, whole tiles or
/// split-k, and the `cp.async` one for strides the copy engine cannot address). An f32 `C`
/// is an error: it is already the f32 value.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::gemm::{gemm_with_f32_copy, Epilogue, GemmShape, Layout, Math};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// // (1·1 + 2·1) / 9 = 1/3: rounded to bf16 in C, to f32 in the copy.
/// let a = Buffer::from_host(&stream, &[Bf16::from_f32(1.0), Bf16::from_f32(2.0)])?;
/// let b = Buffer::from_host(&stream, &[Bf16::from_f32(1.0); 2])?;
/// let mut c = Buffer::<Bf16>::zeros(&stream, 1)?;
/// let mut copy = Buffer::<f32>::zeros(&stream, 1)?;
/// let shape = GemmShape::new(Layout::Nt, 1, 1, 2);
/// let third = Epilogue::default().scaled(1.0 / 9.0, 0.0);
/// gemm_with_f32_copy(&stream, &shape, &a, &b, &mut c, &mut copy, &third, Math::Fp32)?;
/// assert_eq!(copy.to_host(&stream)?, vec![1.0f32 / 3.0]);
/// assert_eq!(c.to_host(&stream)?, vec![Bf16::from_f32(1.0 / 3.0)]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gemm_with_f32_copy<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    copy: &mut Buffer<f32>,
    epilogue: &Epilogue<T>,
    math: Math,
) -> Result<(), Error> {
    if O::TYPE == FloatType::F32 {
        return Err(Error::Unsupported {
            op: "gemm_with_f32_copy",
            detail: "C is f32 already, so it holds the values the copy would; call `gemm`, or pass a bf16 or f16 C".to_string(),
        });
    }
    run(
        stream,
        shape,
        a,
        b,
        c,
        Some(copy),
        epilogue,
        Choice::Select(math),
        Splits::Auto,
    )
}

/// [`gemm`] with the kernel of `plan`, a [`select`] result for this very problem, possibly
/// made for another target the device can run (an sm_80 `mma.sync` plan on a Hopper device,
/// say, to compare kernels). A plan made for other types or another shape is an error.
///
/// ```
/// use kernel_dsl::Target;
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::gemm::{gemm_with_plan, select, Epilogue, GemmShape, Layout, Math};
/// use kernels::FloatType;
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(Target::Sm90a).stream()?;
/// let shape = GemmShape::new(Layout::Nt, 16, 8, 16);
/// let a = Buffer::from_host(&stream, &vec![Bf16::from_f32(1.0); 16 * 16])?;
/// let b = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.5); 8 * 16])?;
/// let mut c = Buffer::<f32>::zeros(&stream, 16 * 8)?;
/// // The sm_80 tensor-core kernel, on the emulated Hopper.
/// let plan = select(FloatType::Bf16, FloatType::F32, Math::Fp32, &shape, Target::Sm80)?;
/// gemm_with_plan(&stream, &plan, &shape, &a, &b, &mut c, &Epilogue::default())?;
/// assert!(c.to_host(&stream)?.iter().all(|&x| x == 8.0));
/// # Ok(()) }
/// ```
pub fn gemm_with_plan<T: Float, O: Float>(
    stream: &Stream,
    plan: &Plan,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    epilogue: &Epilogue<T>,
) -> Result<(), Error> {
    if plan.problem != (T::TYPE, O::TYPE, *shape) {
        return Err(Error::Unsupported {
            op: "gemm_with_plan",
            detail: format!(
                "the plan was made for {} inputs, {} output and {:?}, not {} → {} and {:?}; call select for this problem",
                plan.problem.0.suffix(),
                plan.problem.1.suffix(),
                plan.problem.2,
                T::TYPE.suffix(),
                O::TYPE.suffix(),
                shape
            ),
        });
    }
    run(
        stream,
        shape,
        a,
        b,
        c,
        None,
        epilogue,
        Choice::Plan(*plan),
        Splits::Auto,
    )
}

/// Where the kernel comes from: selected for the device, or given.
#[derive(Clone, Copy)]
pub(super) enum Choice {
    Select(Math),
    Plan(Plan),
}

/// [`gemm`] with k split into `splits` ranges whose f32 partial products are added in a
/// fixed order (bit-identical run to run) before the epilogue. [`gemm`] already splits skinny
/// problems (LoRA adapters) on its own where that fills the device; this forces a count.
/// Split-k needs the Hopper TMA kernel (bf16/f16 inputs, leading dimensions and strides that
/// are multiples of 8) or the `mma.sync` kernel (one batch, k a multiple of 64 × `splits`), and
/// allocates its partials, so it cannot run inside a graph capture.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device};
/// use kernels::gemm::{gemm_split_k, Epilogue, GemmShape, Layout};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
/// let (m, n, k) = (8, 8, 512);
/// let a = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.5); m * k])?;
/// let b = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.25); n * k])?;
/// let mut c = Buffer::<f32>::zeros(&stream, m * n)?;
/// let shape = GemmShape::new(Layout::Nt, m, n, k);
/// gemm_split_k(&stream, &shape, &a, &b, &mut c, &Epilogue::default(), 4)?;
/// assert!(c.to_host(&stream)?.iter().all(|&x| x == 64.0));
/// # Ok(()) }
/// ```
pub fn gemm_split_k<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    epilogue: &Epilogue<T>,
    splits: usize,
) -> Result<(), Error> {
    run(
        stream,
        shape,
        a,
        b,
        c,
        None,
        epilogue,
        Choice::Select(Math::Fp32),
        Splits::Exactly(splits),
    )
}

/// How k is split: as the device and shape suggest (into partials of its own, or into the
/// caller's workspace), or a forced count.
pub(super) enum Splits<'w> {
    Auto,
    Into(&'w mut GemmWorkspace),
    Exactly(usize),
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    copy: Option<&mut Buffer<f32>>,
    epilogue: &Epilogue<T>,
    choice: Choice,
    requested: Splits<'_>,
) -> Result<(), Error> {
    const OP: &str = "gemm";
    shape.check(OP, a.len(), b.len(), c.len())?;
    if let Some(bias) = epilogue.bias {
        at_least(OP, "bias", bias.len(), shape.n, "n, one per output column")?;
    }
    let c_extent = extent(shape.m, shape.n, shape.ldc, shape.batch, shape.stride_c);
    if let Some(res) = epilogue.residual {
        at_least(
            OP,
            "residual",
            res.len(),
            c_extent,
            "C's shape, ldc and stride",
        )?;
    }
    if let Some(copy) = &copy {
        at_least(
            OP,
            "copy",
            copy.len(),
            c_extent,
            "C's shape, ldc and stride",
        )?;
    }
    let plan = match choice {
        Choice::Select(math) => select(T::TYPE, O::TYPE, math, shape, stream.device().target())?,
        Choice::Plan(plan) => plan,
    };
    if copy.is_some() && matches!(plan.launch, Launch::Builder | Launch::Simt(_)) {
        return Err(Error::Unsupported {
            op: "gemm_with_f32_copy",
            detail: format!(
                "the {} kernel writes no f32 copy; use 16-bit inputs and output",
                plan.kernel.kernel().name
            ),
        });
    }
    if let Launch::TmaTransposed(layout) = plan.launch {
        return transposed_operands::run(stream, shape, layout, a, b, c, epilogue, requested);
    }
    let (forced, mut workspace) = match requested {
        Splits::Exactly(0) => {
            return Err(unsupported_split("split into 0 ranges; pass 1 or more"))
        }
        Splits::Exactly(n)
            if n > 1
                && !plan.tensor_maps
                && !(mma_splittable(&plan, shape) && mma_splits_evenly(shape.k, n)) =>
        {
            return Err(unsupported_split(&format!(
                "split-k needs the Hopper TMA kernel (bf16 or f16 inputs on sm_90 with leading dimensions and batch strides that are multiples of 8), or the mma.sync kernel on one batch with k a multiple of {MMA_SPLIT_GRANULE} × the ranges (k = {}, {n} ranges)",
                shape.k
            )))
        }
        Splits::Exactly(n) if n > 1 && stream.is_capturing() => {
            return Err(unsupported_split(
                "split-k allocates its partials, which a graph capture cannot; run it outside the capture or use `gemm`",
            ))
        }
        Splits::Exactly(n) => (Some(n), None),
        Splits::Auto => (None, None),
        Splits::Into(workspace) => (None, Some(workspace)),
    };
    if shape.is_empty() {
        return Ok(());
    }
    let mut flags = epilogue.flags() | operand_vector_flags(shape, plan.vector_elems);
    if copy.is_some() {
        flags |= FLAG_F32_COPY;
    }
    flags |= output_store_flags(shape, epilogue.is_plain() && copy.is_none());
    let maps = plan
        .tensor_maps
        .then(|| tensor_maps(shape, a, b))
        .transpose()?;
    let mut config = plan.config;
    // Split-k allocates its partials, which a graph capture cannot; such captures (and
    // problems whose partials outgrow a 32-bit index) keep whole tiles, unless the caller
    // gave a workspace. So does a sealed device, so that a program that has sealed its
    // runtime computes the same bits in a graph and in direct launches (with a workspace,
    // both split alike).
    let device = stream.device();
    let whole_tiles = workspace.is_none() && (stream.is_capturing() || device.is_sealed());
    if let Some(maps) = &maps {
        // Persistent: one CTA per SM at most (the tile loop covers the rest), spread over
        // the batches.
        let sms = device.props().sm_count.max(1);
        let per_batch = sms.div_ceil(config.grid[2]).max(1);
        let per_split = shape.batch.max(1) * shape.m * shape.n;
        let splits = forced.unwrap_or_else(|| planned_splits(&plan, shape, sms as usize));
        // A caller's workspace holds as many ranges as fit in it.
        let splits = match &workspace {
            Some(ws) => splits.min(ws.partials.len() / per_split.max(1)).max(1),
            None => splits,
        };
        let partial_elems = splits * per_split;
        if forced.is_some() && partial_elems >= 1 << 31 {
            return Err(unsupported_split(
                "the partials of this many ranges outgrow a 32-bit index; split into fewer",
            ));
        }
        if splits > 1
            && !whole_tiles
            && partial_elems < 1 << 31
            && plan.launch == Launch::Tma
            && splits_types(T::TYPE, O::TYPE)
        {
            config.grid[0] = (config.grid[0] * splits as u32).min(per_batch);
            // A capture of this call without a workspace keeps whole tiles (above), in the
            // instance for `O`, so load that one too: a step pre-warmed outside a capture then
            // finds it loaded when it is captured.
            if workspace.is_none() {
                device.prewarm(&[plan.kernel.artifacts()])?;
            }
            let split = SplitLaunch {
                splits,
                partial_elems,
                config,
            };
            return split.run(
                stream,
                shape,
                a,
                c,
                copy,
                epilogue,
                flags,
                maps,
                workspace.take().map(|ws| &mut ws.partials),
            );
        }
        if forced.is_none() && !whole_tiles && splits_types(T::TYPE, O::TYPE) {
            if let Some(grid) = planned_stream_k(&plan, shape, sms as usize) {
                let room = |ws: &GemmWorkspace| {
                    ws.partials.len() >= grid * PARTIALS_PER_BLOCK
                        && ws.counters.as_ref().map_or(0, |c| c.len()) >= grid * COUNTERS_PER_BLOCK
                };
                // A workspace without room for every block's part keeps whole tiles, as
                // it would in a capture.
                if workspace.as_deref().is_none_or(room) {
                    config.grid[0] = grid as u32;
                    return stream_k(
                        stream,
                        config,
                        shape,
                        a,
                        maps,
                        c,
                        copy,
                        epilogue,
                        flags,
                        workspace.take(),
                    );
                }
            }
        }
        config.grid[0] = config.grid[0].min(per_batch);
    }
    if mma_splittable(&plan, shape) {
        let sms = device.props().sm_count.max(1) as usize;
        let planned = forced.unwrap_or_else(|| planned_splits(&plan, shape, sms));
        // A caller's workspace holds as many equal ranges as fit in it.
        let room = |splits: usize| {
            workspace
                .as_ref()
                .is_none_or(|ws| ws.partials.len() >= splits * shape.m * shape.n)
        };
        let splits = (2..=planned)
            .rev()
            .find(|&s| room(s) && mma_splits_evenly(shape.k, s))
            .unwrap_or(1);
        if splits > 1 && !whole_tiles && splits * shape.m * shape.n < 1 << 31 {
            if workspace.is_none() {
                device.prewarm(&[plan.kernel.artifacts()])?;
            }
            return mma_split(
                stream,
                config,
                shape,
                a,
                b,
                c,
                copy,
                epilogue,
                flags,
                splits,
                workspace.take().map(|ws| &mut ws.partials),
            );
        }
    }
    match plan.launch {
        Launch::Simt(layout) => {
            return simt(stream, config, layout, shape, a, b, c, epilogue, flags)
        }
        Launch::Mma(_) => return mma(stream, config, shape, a, b, c, copy, epilogue, flags),
        Launch::AsyncWgmma(_) => {
            return async_wgmma(stream, config, shape, a, b, c, copy, epilogue, flags)
        }
        Launch::Tma => {
            // `select` plans the TMA kernel with `tensor_maps`, so the maps were encoded above.
            let maps = maps.as_ref().expect("a TMA plan reads through tensor maps");
            return tma(
                stream, config, shape, a, maps, c, copy, epilogue, flags, 1, None,
            );
        }
        Launch::TmaTransposed(_) => unreachable!("transposed-operand plans returned above"),
        Launch::Builder => {}
    }
    let args = gemm_args(shape, a, b, c, epilogue, flags, maps.as_ref());
    stream.launch(plan.kernel.artifacts(), config, &args)?;
    Ok(())
}

/// The `#[kernel]` `mma.sync` GEMM through its launcher, with the `mma` flavour of `T`
/// (`select` plans it for the shipped type pairs only; another is `Error::NoInstance`).
#[allow(clippy::too_many_arguments)]
fn mma<T: Float, O: Float>(
    stream: &Stream,
    config: LaunchConfig,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    copy: Option<&mut Buffer<f32>>,
    epilogue: &Epilogue<T>,
    flags: u32,
) -> Result<(), Error> {
    let launch = match T::TYPE {
        FloatType::Bf16 => mma_kernel::gemm_mma::<T, O, Bf16Mma>,
        FloatType::F16 => mma_kernel::gemm_mma::<T, O, F16Mma>,
        FloatType::F32 => mma_kernel::gemm_mma::<T, O, Tf32Mma>,
    };
    let u = |x: usize| x as u32;
    launch(
        stream,
        config,
        shape.layout.a_k_contiguous() as u32,
        shape.layout.b_k_contiguous() as u32,
        a,
        b,
        c,
        &mut copy_arg(copy, a),
        epilogue.bias.unwrap_or(a),
        epilogue.residual.unwrap_or(a),
        u(shape.m),
        u(shape.n),
        u(shape.k),
        u(shape.lda),
        u(shape.ldb),
        u(shape.ldc),
        u(shape.stride_a),
        u(shape.stride_b),
        u(shape.stride_c),
        epilogue.alpha,
        epilogue.beta,
        flags,
    )?;
    Ok(())
}

/// The `#[kernel]` `cp.async`-fed `wgmma` GEMM through its launcher (`select` plans it for
/// bf16 and f16 inputs only; another is `Error::NoInstance`). Unused epilogue inputs are bound
/// to `a`, which the kernel then never reads.
#[allow(clippy::too_many_arguments)]
fn async_wgmma<T: Float, O: Float>(
    stream: &Stream,
    config: LaunchConfig,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    copy: Option<&mut Buffer<f32>>,
    epilogue: &Epilogue<T>,
    flags: u32,
) -> Result<(), Error> {
    let u = |x: usize| x as u32;
    async_wgmma_kernel::gemm_async_wgmma::<T, O>(
        stream,
        config,
        (T::TYPE == FloatType::F16) as u32,
        shape.layout.a_k_contiguous() as u32,
        shape.layout.b_k_contiguous() as u32,
        a,
        b,
        c,
        &mut copy_arg(copy, a),
        epilogue.bias.unwrap_or(a),
        epilogue.residual.unwrap_or(a),
        u(shape.m),
        u(shape.n),
        u(shape.k),
        u(shape.lda),
        u(shape.ldb),
        u(shape.ldc),
        u(shape.stride_a),
        u(shape.stride_b),
        u(shape.stride_c),
        epilogue.alpha,
        epilogue.beta,
        flags,
    )?;
    Ok(())
}

/// The `#[kernel]` TMA-fed `wgmma` GEMM through its launcher (`select` plans it for bf16 and
/// f16 inputs only; another is `Error::NoInstance`). Unused epilogue inputs are bound to `a`,
/// which the kernel then never reads (and an absent f32 copy to a view of none of its
/// elements).
#[allow(clippy::too_many_arguments)]
fn tma<T: Float, O: Float>(
    stream: &Stream,
    config: LaunchConfig,
    shape: &GemmShape,
    a: &Buffer<T>,
    (map_a, map_b): &(TensorMap, TensorMap),
    c: &mut Buffer<O>,
    copy: Option<&mut Buffer<f32>>,
    epilogue: &Epilogue<T>,
    flags: u32,
    splits: u32,
    stream_k: Option<StreamKRoom<'_>>,
) -> Result<(), Error> {
    let u = |x: usize| x as u32;
    let (flags, mut partials, mut counters) = match stream_k {
        Some(room) => (
            flags | FLAG_STREAM_K | room.cuts << STREAM_K_CUTS_SHIFT,
            room.partials.view_mut(),
            room.counters.view_mut(),
        ),
        None => (flags, a.unused_output::<f32>(), a.unused_output::<u32>()),
    };
    tma_wgmma_kernel::gemm_tma_wgmma::<T, O>(
        stream,
        config,
        (T::TYPE == FloatType::F16) as u32,
        shape.layout.a_k_contiguous() as u32,
        shape.layout.b_k_contiguous() as u32,
        (splits > 1) as u32,
        0,
        map_a,
        map_b,
        map_b,
        c,
        &mut copy_arg(copy, a),
        &mut partials,
        &mut counters,
        epilogue.bias.unwrap_or(a),
        epilogue.residual.unwrap_or(a),
        u(shape.m),
        u(shape.n),
        u(shape.k),
        u(shape.ldc),
        u(shape.stride_c),
        epilogue.alpha,
        epilogue.beta,
        flags,
        splits,
    )?;
    Ok(())
}

/// The TMA kernel under stream-K on `config`'s grid, its partials and counters in the
/// caller's workspace or in buffers of its own (the counters zeroed).
#[allow(clippy::too_many_arguments)]
fn stream_k<T: Float, O: Float>(
    stream: &Stream,
    config: LaunchConfig,
    shape: &GemmShape,
    a: &Buffer<T>,
    maps: &(TensorMap, TensorMap),
    c: &mut Buffer<O>,
    copy: Option<&mut Buffer<f32>>,
    epilogue: &Epilogue<T>,
    flags: u32,
    workspace: Option<&mut GemmWorkspace>,
) -> Result<(), Error> {
    let grid = config.grid[0] as usize;
    let cuts = cuts_per_tile(shape_tiles(shape), grid);
    let (mut own_partials, mut own_counters);
    let room = match workspace {
        Some(GemmWorkspace {
            partials,
            counters: Some(counters),
            ..
        }) => StreamKRoom {
            partials,
            counters,
            cuts,
        },
        _ => {
            // Unfilled: a block reads only the parts that later blocks store first.
            own_partials = Buffer::<f32>::uninit(stream, grid * PARTIALS_PER_BLOCK)?;
            own_counters = Buffer::<u32>::zeros(stream, grid * COUNTERS_PER_BLOCK)?;
            StreamKRoom {
                partials: &mut own_partials,
                counters: &mut own_counters,
                cuts,
            }
        }
    };
    tma(
        stream,
        config,
        shape,
        a,
        maps,
        c,
        copy,
        epilogue,
        flags,
        1,
        Some(room),
    )
}

/// Where a stream-K launch of the TMA kernel keeps the parts of tiles that blocks other than
/// the tile's first compute: [`PARTIALS_PER_BLOCK`] f32 and [`COUNTERS_PER_BLOCK`] zeroed
/// counters per block (`stream_k.rs`).
struct StreamKRoom<'a> {
    partials: &'a mut Buffer<f32>,
    counters: &'a mut Buffer<u32>,
    /// The most blocks a last-wave tile is cut among ([`cuts_per_tile`]).
    cuts: u32,
}

/// The argument for a kernel's f32-copy parameter: the copy, or where there is none (and the
/// flags say so) a view of none of `a`'s elements.
fn copy_arg<'a, T: Float>(
    copy: Option<&'a mut Buffer<f32>>,
    a: &'a Buffer<T>,
) -> BufferViewMut<'a> {
    match copy {
        Some(copy) => copy.view_mut(),
        None => a.unused_output::<f32>(),
    }
}

/// `x` as the `Buffer<f32>` it is, where `T` is f32.
fn as_f32<T: Float>(x: &Buffer<T>) -> Option<&Buffer<f32>> {
    (x as &dyn Any).downcast_ref()
}

/// The `#[kernel]` fp32 SIMT GEMM through its launcher. [`select`] plans it for f32 buffers
/// only; the buffers are seen as `Buffer<f32>` here by their type, never reinterpreted.
#[allow(clippy::too_many_arguments)]
fn simt<T: Float, O: Float>(
    stream: &Stream,
    config: LaunchConfig,
    layout: Layout,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    epilogue: &Epilogue<T>,
    flags: u32,
) -> Result<(), Error> {
    let not_f32 = || {
        Error::Unsupported {
        op: "gemm",
        detail: format!(
            "the fp32 SIMT kernel takes f32 buffers, not {} → {}; plan with `select` for these types",
            T::TYPE.suffix(),
            O::TYPE.suffix()
        ),
    }
    };
    let (Some(a), Some(b)) = (as_f32(a), as_f32(b)) else {
        return Err(not_f32());
    };
    let c = (c as &mut dyn Any)
        .downcast_mut::<Buffer<f32>>()
        .ok_or_else(not_f32)?;
    // Unused epilogue inputs are bound to `a`, which the kernel then never reads.
    let bias = epilogue.bias.and_then(as_f32).unwrap_or(a);
    let residual = epilogue.residual.and_then(as_f32).unwrap_or(a);
    let u = |x: usize| x as u32;
    simt_kernel::gemm_simt(
        stream,
        config,
        layout.a_k_contiguous() as u32,
        layout.b_k_contiguous() as u32,
        a,
        b,
        c,
        bias,
        residual,
        u(shape.m),
        u(shape.n),
        u(shape.k),
        u(shape.lda),
        u(shape.ldb),
        u(shape.ldc),
        u(shape.stride_a),
        u(shape.stride_b),
        u(shape.stride_c),
        epilogue.alpha,
        epilogue.beta,
        flags,
    )?;
    Ok(())
}

fn unsupported_split(detail: &str) -> Error {
    Error::Unsupported {
        op: "gemm_split_k",
        detail: detail.to_string(),
    }
}

/// The parameters every GEMM kernel declares ([`super::params::declare`]), then the tensor
/// maps where the kernel reads through them.
fn gemm_args<'a, T: Float, O: Float>(
    shape: &GemmShape,
    a: &'a Buffer<T>,
    b: &'a Buffer<T>,
    c: &'a mut Buffer<O>,
    epilogue: &Epilogue<'a, T>,
    flags: u32,
    maps: Option<&'a (TensorMap, TensorMap)>,
) -> Vec<KernelArg<'a>> {
    let u = |x: usize| KernelArg::from(x as u32);
    let mut args = vec![
        KernelArg::from(a),
        KernelArg::from(b),
        KernelArg::from(c),
        KernelArg::from(epilogue.bias.unwrap_or(a)),
        KernelArg::from(epilogue.residual.unwrap_or(a)),
        u(shape.m),
        u(shape.n),
        u(shape.k),
        u(shape.lda),
        u(shape.ldb),
        u(shape.ldc),
        u(shape.stride_a),
        u(shape.stride_b),
        u(shape.stride_c),
        KernelArg::from(epilogue.alpha),
        KernelArg::from(epilogue.beta),
        KernelArg::from(flags),
    ];
    if let Some((map_a, map_b)) = maps {
        args.push(KernelArg::from(map_a));
        args.push(KernelArg::from(map_b));
    }
    args
}

/// A split-k launch pair: the TMA kernel over k-ranges into f32 partials, then the ordered
/// reduce with the epilogue into `C`.
struct SplitLaunch {
    splits: usize,
    partial_elems: usize,
    config: LaunchConfig,
}

impl SplitLaunch {
    #[allow(clippy::too_many_arguments)]
    fn run<T: Float, O: Float>(
        &self,
        stream: &Stream,
        shape: &GemmShape,
        a: &Buffer<T>,
        c: &mut Buffer<O>,
        copy: Option<&mut Buffer<f32>>,
        epilogue: &Epilogue<'_, T>,
        flags: u32,
        maps: &(TensorMap, TensorMap),
        workspace: Option<&mut Buffer<f32>>,
    ) -> Result<(), Error> {
        let mut owned;
        let partials = match workspace {
            Some(ws) => ws,
            None => {
                // Unfilled: the reduce reads only what the split ranges write.
                owned = Buffer::<f32>::uninit(stream, self.partial_elems)?;
                &mut owned
            }
        };
        // The kernel's `c` is the partials buffer, with no epilogue: ranges and batches are
        // whole m × n matrices of it, n apart per row, so column pairs stay 8-byte aligned
        // where n is even.
        let plain = Epilogue::<T>::default();
        let raw = GemmShape {
            ldc: shape.n,
            stride_c: shape.m * shape.n,
            ..*shape
        };
        let pairs = output_store_flags(&raw, true);
        let splits = self.splits as u32;
        tma(
            stream,
            self.config,
            &raw,
            a,
            maps,
            partials,
            None,
            &plain,
            pairs,
            splits,
            None,
        )?;
        reduce(
            stream,
            shape,
            partials,
            self.splits,
            a,
            c,
            copy,
            epilogue,
            flags,
        )
    }
}

/// Whether `plan` is the `mma.sync` kernel on one batch, which splits k by launching its
/// equal ranges as a batch.
fn mma_splittable(plan: &Plan, shape: &GemmShape) -> bool {
    let (input, output, _) = plan.problem;
    matches!(plan.launch, Launch::Mma(_)) && shape.batch <= 1 && splits_types(input, output)
}

/// The `mma.sync` kernel's split form: k cut into `splits` equal ranges, run as a batch whose
/// operands are one range apart along k and whose outputs are whole `m × n` f32 partials (the
/// kernel unchanged, with no epilogue), then the ordered reduce with the epilogue into `C`.
#[allow(clippy::too_many_arguments)]
fn mma_split<T: Float, O: Float>(
    stream: &Stream,
    config: LaunchConfig,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    copy: Option<&mut Buffer<f32>>,
    epilogue: &Epilogue<'_, T>,
    flags: u32,
    splits: usize,
    workspace: Option<&mut Buffer<f32>>,
) -> Result<(), Error> {
    let range = shape.k / splits;
    let layout = shape.layout;
    let along_k = |k_contiguous: bool, ld: usize| if k_contiguous { range } else { range * ld };
    let raw = GemmShape {
        k: range,
        batch: splits,
        stride_a: along_k(layout.a_k_contiguous(), shape.lda),
        stride_b: along_k(layout.b_k_contiguous(), shape.ldb),
        ldc: shape.n,
        stride_c: shape.m * shape.n,
        ..*shape
    };
    let mut owned;
    let partials = match workspace {
        Some(ws) => ws,
        None => {
            // Unfilled: the reduce reads only what the ranges write.
            owned = Buffer::<f32>::uninit(stream, splits * shape.m * shape.n)?;
            &mut owned
        }
    };
    let raw_flags =
        operand_vector_flags(&raw, 16 / T::TYPE.bytes()) | output_store_flags(&raw, true);
    let config = LaunchConfig {
        grid: [config.grid[0], config.grid[1], splits as u32],
        ..config
    };
    let plain = Epilogue::<T>::default();
    mma(
        stream, config, &raw, a, b, partials, None, &plain, raw_flags,
    )?;
    reduce(stream, shape, partials, splits, a, c, copy, epilogue, flags)
}

/// The ordered reduce of `splits` ranges of f32 `partials` (range-major, then batch-major
/// `m × n` matrices), with the epilogue, into `C`. Unused epilogue inputs are bound to `a`.
#[allow(clippy::too_many_arguments)]
fn reduce<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    partials: &Buffer<f32>,
    splits: usize,
    a: &Buffer<T>,
    c: &mut Buffer<O>,
    copy: Option<&mut Buffer<f32>>,
    epilogue: &Epilogue<'_, T>,
    flags: u32,
) -> Result<(), Error> {
    let elems = (shape.m * shape.n) as u32;
    let reduce_config = LaunchConfig {
        grid: [elems.div_ceil(REDUCE_THREADS), 1, shape.batch.max(1) as u32],
        block: [REDUCE_THREADS, 1, 1],
        dynamic_shared_bytes: 0,
    };
    let u = |x: usize| x as u32;
    split_reduce_kernel::gemm_splitk_reduce::<T, O>(
        stream,
        reduce_config,
        partials,
        c,
        &mut copy_arg(copy, a),
        epilogue.bias.unwrap_or(a),
        epilogue.residual.unwrap_or(a),
        u(shape.m),
        u(shape.n),
        u(shape.ldc),
        u(shape.stride_c),
        u(splits),
        epilogue.alpha,
        epilogue.beta,
        flags,
    )?;
    Ok(())
}

/// `C = A·B` for row-major `A` (`m × k`), `B` (`k × n`) and `C` (`m × n`), with the default
/// math for `T` (fp32 SIMT for f32, tensor cores for 16-bit types).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let a = Buffer::from_host(&stream, &[1.0f32, 2.0])?; // 1 × 2
/// let b = Buffer::from_host(&stream, &[3.0f32, 4.0])?; // 2 × 1
/// let mut c = Buffer::<f32>::zeros(&stream, 1)?;
/// kernels::gemm::matmul(&stream, &a, &b, &mut c, 1, 1, 2)?;
/// assert_eq!(c.to_host(&stream)?, vec![11.0]);
/// # Ok(()) }
/// ```
pub fn matmul<T: Float>(
    stream: &Stream,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<T>,
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), Error> {
    let shape = GemmShape::new(Layout::Nn, m, n, k);
    gemm(stream, &shape, a, b, c, &Epilogue::default(), Math::Fp32)
}

/// The tensor maps the TMA kernel reads A and B through: k-contiguous operands in boxes of
/// the whole tile × one k-slab, the others in 64-wide blocks, all 128-byte swizzled, one
/// matrix per batch index.
fn tensor_maps<T: Float>(
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
) -> Result<(TensorMap, TensorMap), Error> {
    let (a_rows, a_cols) = shape.layout.a_rows_cols(shape.m, shape.k);
    let (b_rows, b_cols) = shape.layout.b_rows_cols(shape.n, shape.k);
    let map = |buf: &Buffer<T>, rows, cols, ld, stride, k_major, tile| {
        let (box_rows, box_cols) = if k_major {
            (tile, slab_depth(T::TYPE))
        } else {
            (BK, MN_BOX)
        };
        let batch_stride = if shape.batch <= 1 { rows * ld } else { stride };
        let tiling = TensorTiling::matrix(
            rows as u64,
            cols as u64,
            ld as u64,
            box_rows,
            box_cols,
            TensorSwizzle::B128,
        )
        .batched(shape.batch.max(1) as u64, batch_stride as u64);
        TensorMap::tiled(buf.view(), &tiling)
    };
    let layout = shape.layout;
    let map_a = map(
        a,
        a_rows,
        a_cols,
        shape.lda,
        shape.stride_a,
        layout.a_k_contiguous(),
        TILE_M,
    )?;
    let map_b = map(
        b,
        b_rows,
        b_cols,
        shape.ldb,
        shape.stride_b,
        layout.b_k_contiguous(),
        TILE_N,
    )?;
    Ok((map_a, map_b))
}

/// `FLAG_VEC_A` and `FLAG_VEC_B` for the operands of `shape` whose rows hold whole aligned
/// vectors of `v` elements ([`vector_ok`]).
fn operand_vector_flags(shape: &GemmShape, v: usize) -> u32 {
    let (_, a_cols) = shape.layout.a_rows_cols(shape.m, shape.k);
    let (_, b_cols) = shape.layout.b_rows_cols(shape.n, shape.k);
    let mut flags = 0;
    if vector_ok(a_cols, shape.lda, shape.stride_a, shape.batch, v) {
        flags |= FLAG_VEC_A;
    }
    if vector_ok(b_cols, shape.ldb, shape.stride_b, shape.batch, v) {
        flags |= FLAG_VEC_B;
    }
    flags
}

/// How the kernels may store `C`: column pairs where n, ldc and the batch stride are even
/// (for a `plain` product, α = 1, β = 0, nothing fused, no f32 copy, also the flag that says
/// so), and 16-byte row pieces of a 16-bit output where they are multiples of 8.
pub(super) fn output_store_flags(shape: &GemmShape, plain: bool) -> u32 {
    let mut flags = 0;
    if vector_ok(shape.n, shape.ldc, shape.stride_c, shape.batch, 2) {
        flags |= FLAG_COLUMN_PAIRS;
        if plain {
            flags |= FLAG_PLAIN_PAIRS;
        }
    }
    if vector_ok(shape.n, shape.ldc, shape.stride_c, shape.batch, 8) {
        flags |= FLAG_ROW_CHUNKS;
    }
    flags
}

/// Runs of `v` elements along stored rows are wholly inside or outside every matrix, and
/// start 16-byte aligned (buffers themselves are allocation-aligned).
fn vector_ok(cols: usize, ld: usize, stride: usize, batch: usize, v: usize) -> bool {
    cols.is_multiple_of(v) && ld.is_multiple_of(v) && (batch <= 1 || stride.is_multiple_of(v))
}

fn at_least(
    op: &'static str,
    buffer: &'static str,
    actual: usize,
    need: usize,
    why: &str,
) -> Result<(), Error> {
    if actual >= need {
        Ok(())
    } else {
        Err(Error::Length {
            op,
            buffer,
            expected: need,
            actual,
            why: format!("at least: {why}"),
        })
    }
}
