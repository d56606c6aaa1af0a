//! TF32 NN and TN on Hopper. tf32 `wgmma` reads k-contiguous operands only (16-bit ones may be
//! MN-major; 32-bit ones may not), so the MN-major operands (B for NN, A and B for TN) are
//! first copied k-contiguous by the 2-D transpose, and the product runs as NT on the tf32 TMA
//! GEMM. The copies cost one read and one write of those operands, a small part of a product
//! whose other dimension is in the hundreds or more; `mma.sync`, which reads either layout, is
//! the alternative and runs at a third of the tensor cores' rate there.
//!
//! The copies need memory: [`super::gemm`] allocates them, a caller's [`GemmWorkspace`] holds
//! them inside a graph capture. Where neither can (a capture without one, a sealed device, a
//! workspace without room) the problem runs on `mma.sync` as before, so that a sealed program
//! gets the same bits from a graph and from direct launches.

use super::epilogue::Epilogue;
use super::layout::GemmShape;
use super::ops::{run as run_planned, Choice, Splits};
use super::select::{select, Math};
use super::workspace::GemmWorkspace;
use crate::layout::transpose_prefix;
use crate::{Error, Float};
use kernel_dsl::Target;
use kernel_runtime::{Buffer, Stream};
use kernels_gen::gemm::Layout;
use std::any::Any;

/// The elements of the k-contiguous copies of A and B that `layout` needs (0: read as stored).
pub(crate) fn transposed_elems(layout: Layout, shape: &GemmShape) -> [usize; 2] {
    let b = shape.n * shape.k;
    match layout {
        Layout::Nn => [0, b],
        Layout::Tn => [shape.m * shape.k, b],
        Layout::Nt => [0, 0],
    }
}

/// Runs a `Launch::TmaTransposed(layout)` plan for `shape`: copies the MN-major operands,
/// then the NT product on the copies (split along k as `requested` allows), or, where the
/// copies have nowhere to go, the `mma.sync` kernel on the operands as stored.
#[allow(clippy::too_many_arguments)]
pub(super) fn run<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    layout: Layout,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    epilogue: &Epilogue<T>,
    requested: Splits<'_>,
) -> Result<(), Error> {
    let elems = transposed_elems(layout, shape);
    let device = stream.device();
    // The kernel any device from sm_80 runs, on the operands as stored.
    let stored_plan = select(T::TYPE, O::TYPE, Math::Tf32, shape, Target::Sm80)?;
    let stored = |requested: Splits<'_>, c: &mut Buffer<O>| {
        let plan = Choice::Plan(stored_plan);
        run_planned(stream, shape, a, b, c, None, epilogue, plan, requested)
    };
    let (mut copies, mut workspace, forced) = match requested {
        Splits::Into(ws) => match taken_from(ws, elems) {
            Some(copies) => (copies, Some(ws), None),
            None => return stored(Splits::Into(ws), c),
        },
        _ if stream.is_capturing() || device.is_sealed() => return stored(requested, c),
        Splits::Exactly(n) => (allocated(stream, elems)?, None, Some(n)),
        Splits::Auto => (allocated(stream, elems)?, None, None),
    };
    if workspace.is_none() {
        // A capture of this call without a workspace runs the stored-layout kernel, so load
        // it too: a step pre-warmed outside a capture then finds it loaded when captured.
        device.prewarm(&[stored_plan.kernel.artifacts()])?;
    }
    let splits = match (workspace.as_deref_mut(), forced) {
        (Some(ws), _) => Splits::Into(ws),
        (None, Some(n)) => Splits::Exactly(n),
        (None, None) => Splits::Auto,
    };
    let result = on_copies(
        stream,
        shape,
        layout,
        a,
        b,
        c,
        epilogue,
        &mut copies,
        splits,
    );
    if let Some(ws) = workspace {
        for (slot, copy) in ws.operands.iter_mut().zip(copies) {
            if copy.is_some() {
                *slot = copy;
            }
        }
    }
    result
}

/// Copies the operands that need it into `copies`, then runs the NT product on them.
#[allow(clippy::too_many_arguments)]
fn on_copies<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    layout: Layout,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<O>,
    epilogue: &Epilogue<T>,
    copies: &mut [Option<Buffer<f32>>; 2],
    splits: Splits<'_>,
) -> Result<(), Error> {
    let (rows_a, cols_a) = layout.a_rows_cols(shape.m, shape.k);
    let (rows_b, cols_b) = layout.b_rows_cols(shape.n, shape.k);
    if let Some(at) = &mut copies[0] {
        transpose_prefix(stream, a, as_t_mut(at)?, rows_a, cols_a)?;
    }
    if let Some(bt) = &mut copies[1] {
        transpose_prefix(stream, b, as_t_mut(bt)?, rows_b, cols_b)?;
    }
    let nt = GemmShape {
        layout: Layout::Nt,
        lda: shape.k,
        ldb: shape.k,
        stride_a: shape.m * shape.k,
        stride_b: shape.n * shape.k,
        ..*shape
    };
    let plan = select(T::TYPE, O::TYPE, Math::Tf32, &nt, stream.device().target())?;
    let a_nt = match &copies[0] {
        Some(at) => as_t(at)?,
        None => a,
    };
    let b_nt = match &copies[1] {
        Some(bt) => as_t(bt)?,
        None => b,
    };
    run_planned(
        stream,
        &nt,
        a_nt,
        b_nt,
        c,
        None,
        epilogue,
        Choice::Plan(plan),
        splits,
    )
}

/// The workspace's copies, taken out for this call, where each operand that needs one has
/// room: `None` (the workspace keeps them) otherwise.
fn taken_from(ws: &mut GemmWorkspace, elems: [usize; 2]) -> Option<[Option<Buffer<f32>>; 2]> {
    let fits = |slot: &Option<Buffer<f32>>, n: usize| {
        n == 0 || slot.as_ref().is_some_and(|buf| buf.len() >= n)
    };
    if !(fits(&ws.operands[0], elems[0]) && fits(&ws.operands[1], elems[1])) {
        return None;
    }
    let mut take = |i: usize| (elems[i] > 0).then(|| ws.operands[i].take()).flatten();
    Some([take(0), take(1)])
}

/// Copies of this call's own (unfilled: the transpose writes every element read).
fn allocated(stream: &Stream, elems: [usize; 2]) -> Result<[Option<Buffer<f32>>; 2], Error> {
    let copy = |n: usize| (n > 0).then(|| Buffer::uninit(stream, n)).transpose();
    Ok([copy(elems[0])?, copy(elems[1])?])
}

/// A copy as the operands' type, which is f32 wherever `select` plans this route.
fn as_t<T: Float>(x: &Buffer<f32>) -> Result<&Buffer<T>, Error> {
    (x as &dyn Any).downcast_ref().ok_or_else(not_f32::<T>)
}

fn as_t_mut<T: Float>(x: &mut Buffer<f32>) -> Result<&mut Buffer<T>, Error> {
    (x as &mut dyn Any).downcast_mut().ok_or_else(not_f32::<T>)
}

fn not_f32<T: Float>() -> Error {
    Error::Unsupported {
        op: "gemm",
        detail: format!(
            "transposed operands are for f32 inputs (TF32), not {}; this plan was made for other types",
            T::TYPE.suffix()
        ),
    }
}
