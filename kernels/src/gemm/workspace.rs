//! Room for split-k's partial sums (and for the operands a TF32 NN or TN problem transposes),
//! owned by the caller: a graph capture cannot allocate, so without it a captured GEMM keeps
//! whole tiles, and a skinny problem (a LoRA adapter) leaves most SMs idle inside the graph
//! that a training step replays.

use super::epilogue::Epilogue;
use super::layout::GemmShape;
use super::ops::{run, Choice, Splits};
use super::select::{select, Launch, Math};
use super::split_k::planned_splits;
use super::stream_k::{planned_stream_k, COUNTERS_PER_BLOCK, PARTIALS_PER_BLOCK};
use super::transposed_operands::transposed_elems;
use crate::{Error, Float};
use kernel_runtime::{Bf16, Buffer, Stream};

/// f32 partials for [`gemm_with_workspace`] (split-k's ranges, or stream-K's parts of cut
/// tiles with the counters that order them), room for the k-contiguous copies a TF32 NN or TN
/// problem reads on Hopper, and for a quantized weight dequantized to bf16
/// (`quant::nf4::workspace_size`), allocated once outside any capture and reused by every call
/// (each call overwrites what it reads, so calls on one stream may share it; calls on streams
/// that run concurrently may not).
pub struct GemmWorkspace {
    pub(super) partials: Buffer<f32>,
    /// Stream-K's counters (`stream_k.rs`), zeroed, and zero again after every call.
    pub(super) counters: Option<Buffer<u32>>,
    /// Copies of A and B, each taken out while a call uses it (`transposed_operands.rs`).
    pub(super) operands: [Option<Buffer<f32>>; 2],
    /// Room for a quantized weight dequantized to bf16, which products of many rows through
    /// it read on Hopper (`quant::nf4`).
    pub(crate) dense_weight: Option<Buffer<Bf16>>,
}

impl GemmWorkspace {
    /// A workspace of `elems` f32 partials, with no room for transposed operands (a TF32 NN
    /// or TN problem through it runs as a capture does: on `mma.sync`).
    pub fn new(stream: &Stream, elems: usize) -> Result<GemmWorkspace, Error> {
        Ok(GemmWorkspace {
            partials: Buffer::zeros(stream, elems)?,
            counters: None,
            operands: [None, None],
            dense_weight: None,
        })
    }

    /// The smallest workspace in which [`gemm_with_workspace`] runs each of `shapes` (inputs
    /// `T`, output `O`, `math`) as [`super::gemm`] does on `stream`'s device outside a
    /// capture: split as far, and with room for the operands it transposes.
    ///
    /// ```
    /// use kernel_runtime::{Bf16, Device, EmulatorOptions};
    /// use kernels::gemm::{GemmShape, GemmWorkspace, Layout, Math};
    /// # fn main() -> Result<(), kernels::Error> {
    /// let hopper = EmulatorOptions::new().target(kernel_dsl::Target::Sm90a).sm_count(132);
    /// let stream = Device::emulator_with(hopper).stream()?;
    /// // A rank-16 adapter: one tile, k = 4096, split into 8 ranges of 16 × 64 partials.
    /// let lora = GemmShape::new(Layout::Nt, 64, 16, 4096);
    /// let ws = GemmWorkspace::for_shapes::<Bf16, f32>(&stream, &[lora], Math::Fp32)?;
    /// assert_eq!(ws.len(), 8 * 16 * 64);
    /// # Ok(()) }
    /// ```
    pub fn for_shapes<T: Float, O: Float>(
        stream: &Stream,
        shapes: &[GemmShape],
        math: Math,
    ) -> Result<GemmWorkspace, Error> {
        let mut size = WorkspaceSize::default();
        for shape in shapes {
            size = size.max(WorkspaceSize::of::<T, O>(stream, shape, math)?);
        }
        GemmWorkspace::with_size(stream, size)
    }

    /// A workspace of `size` (the largest of several problems' [`WorkspaceSize`]s, whose
    /// types differ).
    pub fn with_size(stream: &Stream, size: WorkspaceSize) -> Result<GemmWorkspace, Error> {
        let room = |n: usize| (n > 0).then(|| Buffer::zeros(stream, n)).transpose();
        Ok(GemmWorkspace {
            partials: Buffer::zeros(stream, size.partials)?,
            counters: (size.counters > 0)
                .then(|| Buffer::zeros(stream, size.counters))
                .transpose()?,
            operands: [room(size.operands[0])?, room(size.operands[1])?],
            dense_weight: (size.dense_weight > 0)
                .then(|| Buffer::zeros(stream, size.dense_weight))
                .transpose()?,
        })
    }

    /// How many f32 partials it holds.
    pub fn len(&self) -> usize {
        self.partials.len()
    }

    /// Whether it holds none (every GEMM through it then keeps whole tiles).
    pub fn is_empty(&self) -> bool {
        self.partials.is_empty()
    }
}

/// What a [`GemmWorkspace`] holds for one problem, or the largest of several: f32 partials,
/// and the f32 copies of A and B that TF32 NN and TN transpose.
///
/// ```
/// use kernel_runtime::{Bf16, Device, EmulatorOptions};
/// use kernels::gemm::{GemmShape, GemmWorkspace, Layout, Math, WorkspaceSize};
/// # fn main() -> Result<(), kernels::Error> {
/// let hopper = EmulatorOptions::new().target(kernel_dsl::Target::Sm90a).sm_count(132);
/// let stream = Device::emulator_with(hopper).stream()?;
/// let lora = GemmShape::new(Layout::Nt, 64, 16, 4096);
/// let grad = GemmShape::new(Layout::Tn, 256, 256, 256);
/// let size = WorkspaceSize::of::<Bf16, Bf16>(&stream, &lora, Math::Fp32)?
///     .max(WorkspaceSize::of::<f32, f32>(&stream, &grad, Math::Tf32)?);
/// let ws = GemmWorkspace::with_size(&stream, size)?;
/// assert_eq!(ws.len(), 8 * 16 * 64);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkspaceSize {
    partials: usize,
    counters: usize,
    operands: [usize; 2],
    dense_weight: usize,
}

impl WorkspaceSize {
    /// What `shape` (inputs `T`, output `O`, `math`) needs on `stream`'s device.
    pub fn of<T: Float, O: Float>(
        stream: &Stream,
        shape: &GemmShape,
        math: Math,
    ) -> Result<WorkspaceSize, Error> {
        let device = stream.device();
        let plan = select(T::TYPE, O::TYPE, math, shape, device.target())?;
        let sms = device.props().sm_count.max(1) as usize;
        let splits = planned_splits(&plan, shape, sms);
        let stream_k = if splits > 1 {
            None
        } else {
            planned_stream_k(&plan, shape, sms)
        };
        Ok(WorkspaceSize {
            partials: match stream_k {
                _ if splits > 1 => splits * shape.batch.max(1) * shape.m * shape.n,
                Some(grid) => grid * PARTIALS_PER_BLOCK,
                None => 0,
            },
            counters: stream_k.map_or(0, |grid| grid * COUNTERS_PER_BLOCK),
            operands: match plan.launch {
                Launch::TmaTransposed(layout) => transposed_elems(layout, shape),
                _ => [0, 0],
            },
            dense_weight: 0,
        })
    }

    /// Room for `elems` bf16 elements of a dequantized weight (what
    /// `quant::nf4::dequantized_weight_elems` says a product through an NF4 weight reads).
    pub fn dense_weight(elems: usize) -> WorkspaceSize {
        WorkspaceSize {
            dense_weight: elems,
            ..WorkspaceSize::default()
        }
    }

    /// Room for both.
    pub fn max(self, other: WorkspaceSize) -> WorkspaceSize {
        WorkspaceSize {
            partials: self.partials.max(other.partials),
            counters: self.counters.max(other.counters),
            operands: [
                self.operands[0].max(other.operands[0]),
                self.operands[1].max(other.operands[1]),
            ],
            dense_weight: self.dense_weight.max(other.dense_weight),
        }
    }
}

/// The f32 partials [`super::gemm`] would split `shape` into on `stream`'s device outside a
/// capture (split-k's ranges, or one tile per SM under stream-K): 0 where it keeps whole
/// tiles.
pub fn split_k_partials<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    math: Math,
) -> Result<usize, Error> {
    Ok(WorkspaceSize::of::<T, O>(stream, shape, math)?.partials)
}

/// The f32 elements of the k-contiguous copies of A and B that [`super::gemm`] makes for
/// `shape` on `stream`'s device (TF32 NN and TN on Hopper): 0 for an operand it reads as
/// stored.
///
/// ```
/// use kernel_runtime::{Device, EmulatorOptions};
/// use kernels::gemm::{transposed_operand_elems, GemmShape, Layout, Math};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
/// // NN: B (k × n) is copied as n × k; A is k-contiguous already.
/// let nn = GemmShape::new(Layout::Nn, 256, 512, 64);
/// assert_eq!(transposed_operand_elems::<f32, f32>(&stream, &nn, Math::Tf32)?, [0, 512 * 64]);
/// assert_eq!(transposed_operand_elems::<f32, f32>(&stream, &nn, Math::Fp32)?, [0, 0]);
/// # Ok(()) }
/// ```
pub fn transposed_operand_elems<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    math: Math,
) -> Result<[usize; 2], Error> {
    Ok(WorkspaceSize::of::<T, O>(stream, shape, math)?.operands)
}

/// [`super::gemm`], splitting k into `workspace` rather than into partials of its own: it
/// splits inside a graph capture and on a sealed device too, so a captured step runs a skinny
/// problem as fast as a direct launch does, with the same bits. A workspace smaller than the
/// problem wants holds fewer ranges (as many as fit; with room for fewer than two, whole
/// tiles); [`GemmWorkspace::for_shapes`] sizes one that never limits.
///
/// ```
/// use kernel_runtime::{Bf16, Buffer, Device, EmulatorOptions};
/// use kernels::gemm::{gemm_with_workspace, Epilogue, GemmShape, GemmWorkspace, Layout, Math};
/// # fn main() -> Result<(), kernels::Error> {
/// let hopper = EmulatorOptions::new().target(kernel_dsl::Target::Sm90a).sm_count(132);
/// let stream = Device::emulator_with(hopper).stream()?;
/// let shape = GemmShape::new(Layout::Nt, 16, 8, 1024);
/// let a = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.5); 16 * 1024])?;
/// let b = Buffer::from_host(&stream, &vec![Bf16::from_f32(0.25); 8 * 1024])?;
/// let mut c = Buffer::<f32>::zeros(&stream, 16 * 8)?;
/// let mut ws = GemmWorkspace::for_shapes::<Bf16, f32>(&stream, &[shape], Math::Fp32)?;
/// let none = Epilogue::default();
/// // Loads the split kernels outside the capture, as a warm-up step would.
/// gemm_with_workspace(&stream, &shape, &a, &b, &mut c, &none, Math::Fp32, &mut ws)?;
/// let mut recorded = Ok(());
/// let graph = stream.capture(|s| {
///     recorded = gemm_with_workspace(s, &shape, &a, &b, &mut c, &none, Math::Fp32, &mut ws);
///     Ok(())
/// })?;
/// recorded?;
/// graph.replay()?;
/// assert!(c.to_host(&stream)?.iter().all(|&x| x == 128.0));
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gemm_with_workspace<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    epilogue: &Epilogue<T>,
    math: Math,
    workspace: &mut GemmWorkspace,
) -> Result<(), Error> {
    gemm_in(Some(workspace), stream, shape, a, b, c, epilogue, math)
}

/// [`gemm_with_workspace`] where the caller gave a workspace, [`super::gemm`] where not (how an
/// op that runs several GEMMs, a LoRA adapter's, lets its caller split them inside a capture).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_in<T: Float, O: Float>(
    workspace: Option<&mut GemmWorkspace>,
    stream: &Stream,
    shape: &GemmShape,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    epilogue: &Epilogue<T>,
    math: Math,
) -> Result<(), Error> {
    let splits = match workspace {
        Some(w) => Splits::Into(w),
        None => Splits::Auto,
    };
    run(
        stream,
        shape,
        a,
        b,
        c,
        None,
        epilogue,
        Choice::Select(math),
        splits,
    )
}
