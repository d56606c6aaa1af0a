//! The products through an NF4 weight: check every buffer, then launch.

use super::gate_up_kernel::{self, nf4_gate_up};
use super::gemv_kernel::{self, nf4_gemv, rows_instance, MAX_M, ROWS_PER_BLOCK};
use super::input_grad_kernel::{self, nf4_input_grad};
use super::mma_kernel::{self, nf4_mma};
use super::Nf4Weight;
use crate::gemm::{gemm_in, Epilogue, GemmShape, GemmWorkspace, Layout, Math, WorkspaceSize};
use crate::quant::loads_in_flight;
use crate::Float;
use crate::{check_len, Error, FloatType};
use kernel_runtime::{Buffer, LaunchConfig, Stream};
use std::any::Any;

/// `y = x·Wᵀ` for `x` of `m × K` and the NF4 weight `W` of `N × K`: `y` is `m × N`, in
/// `x`'s type, accumulated in f32. W is decoded on chip and never written out. Up to 16 rows
/// of bf16 `x` (any number of f32 rows, 16 at a time) go through the kernel that reads each
/// weight byte once for all of them; more bf16 rows go through the tensor-core kernel, which
/// decodes tiles of W into shared memory as bf16. On Hopper, from [`DEQUANTIZED_MIN_ROWS`]
/// bf16 rows, W is instead dequantized to a bf16 copy that the `wgmma` GEMM reads (outside a
/// graph capture and on an unsealed device; the copy is freed after the call).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::nf4::{matmul, Nf4Weight};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let w = Buffer::from_host(&stream, &vec![0.5f32; 2 * 64])?; // every weight is its absmax
/// let q = Nf4Weight::quantize(&stream, &w, 2, 64)?;
/// let x = Buffer::from_host(&stream, &vec![1.0f32; 64])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 2)?;
/// matmul(&stream, &x, &q, &mut y, 1)?;
/// assert_eq!(y.to_host(&stream)?, vec![32.0, 32.0]);
/// # Ok(()) }
/// ```
pub fn matmul<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    w: &Nf4Weight,
    y: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    matmul_in(None, stream, x, w, y, m)
}

/// [`matmul`], reading the dequantized weight from `workspace` where it gives one (its room,
/// [`WorkspaceSize::dense_weight`](crate::gemm::WorkspaceSize::dense_weight), sized by
/// [`dequantized_weight_elems`]), so that inside a graph capture too, and on a sealed device,
/// many rows on Hopper take the `wgmma` GEMM; a workspace without room keeps the fused kernel
/// outside a capture as well, so both compute the same bits.
pub fn matmul_with_workspace<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    w: &Nf4Weight,
    y: &mut Buffer<T>,
    m: usize,
    workspace: &mut GemmWorkspace,
) -> Result<(), Error> {
    matmul_in(Some(workspace), stream, x, w, y, m)
}

fn matmul_in<T: Float>(
    workspace: Option<&mut GemmWorkspace>,
    stream: &Stream,
    x: &Buffer<T>,
    w: &Nf4Weight,
    y: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("matmul")?;
    const OP: &str = "nf4_matmul";
    let (n, k) = (w.rows(), w.cols());
    check_len(OP, "x", x.len(), m * k, || format!("m × K = {m} × {k}"))?;
    check_len(OP, "y", y.len(), m * n, || format!("m × N = {m} × {n}"))?;
    check_u32(OP, "x", m * k)?;
    check_u32(OP, "y", m * n)?;
    if m == 0 || n == 0 || k == 0 {
        return Ok(());
    }
    let s = w.scale_args();
    if T::TYPE == FloatType::Bf16 && m > MAX_M {
        if dequantizes::<T>(stream, m, workspace.as_deref(), n * k) {
            let shape = GemmShape::new(Layout::Nt, m, n, k);
            return through_dequantized(workspace, stream, x, w, y, &shape, 1);
        }
        return launch_mma(stream, x, w, y, m, 1);
    }
    let grid = (n as u32).div_ceil(ROWS_PER_BLOCK);
    let cfg = LaunchConfig::linear(grid, gemv_kernel::THREADS);
    for m0 in (0..m).step_by(MAX_M) {
        let rows = (m - m0).min(MAX_M);
        let xs = x.slice(m0 * k..(m0 + rows) * k)?;
        let mut ys = y.slice_mut(m0 * n..(m0 + rows) * n)?;
        let mt = rows_instance(rows);
        nf4_gemv::<T>(
            stream,
            cfg,
            mt,
            loads_in_flight(mt),
            &xs,
            w.codes(),
            s.absmax,
            s.qabs,
            s.code2,
            s.scale2,
            s.offset,
            s.double,
            &mut ys,
            rows as u32,
            n as u32,
            k as u32,
        )?;
    }
    Ok(())
}

/// The input gradient of [`matmul`]: `dx = dy·W` for `dy` of `m × N`, `dx` of `m × K`, through
/// the frozen NF4 weight without writing it out: more than 16 bf16 rows through the
/// tensor-core kernel (W's tiles decoded into shared memory and read transposed), others by a
/// thread per 8 columns of `dx`. On Hopper, from [`DEQUANTIZED_MIN_ROWS`] bf16 rows, through a
/// dequantized bf16 copy of W and the `wgmma` GEMM, as [`matmul`] does.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::nf4::{matmul_input_grad, Nf4Weight};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let w = Buffer::from_host(&stream, &vec![-0.25f32; 2 * 64])?;
/// let q = Nf4Weight::quantize(&stream, &w, 2, 64)?;
/// let dy = Buffer::from_host(&stream, &[1.0f32, 3.0])?;
/// let mut dx = Buffer::<f32>::zeros(&stream, 64)?;
/// matmul_input_grad(&stream, &dy, &q, &mut dx, 1)?;
/// assert!(dx.to_host(&stream)?.iter().all(|&v| v == -1.0));
/// # Ok(()) }
/// ```
pub fn matmul_input_grad<T: Float>(
    stream: &Stream,
    dy: &Buffer<T>,
    w: &Nf4Weight,
    dx: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    input_grad_in(None, stream, dy, w, dx, m)
}

/// [`matmul_input_grad`] with the dequantized weight in `workspace`, as
/// [`matmul_with_workspace`] does.
pub fn matmul_input_grad_with_workspace<T: Float>(
    stream: &Stream,
    dy: &Buffer<T>,
    w: &Nf4Weight,
    dx: &mut Buffer<T>,
    m: usize,
    workspace: &mut GemmWorkspace,
) -> Result<(), Error> {
    input_grad_in(Some(workspace), stream, dy, w, dx, m)
}

fn input_grad_in<T: Float>(
    workspace: Option<&mut GemmWorkspace>,
    stream: &Stream,
    dy: &Buffer<T>,
    w: &Nf4Weight,
    dx: &mut Buffer<T>,
    m: usize,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("matmul_input_grad")?;
    const OP: &str = "nf4_matmul_input_grad";
    let (n, k) = (w.rows(), w.cols());
    check_len(OP, "dy", dy.len(), m * n, || format!("m × N = {m} × {n}"))?;
    check_len(OP, "dx", dx.len(), m * k, || format!("m × K = {m} × {k}"))?;
    check_u32(OP, "dy", m * n)?;
    check_u32(OP, "dx", m * k)?;
    if m == 0 || k == 0 {
        return Ok(());
    }
    if m > u16::MAX as usize {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!("{m} rows exceed the grid's 65535; split dy by rows"),
        });
    }
    if T::TYPE == FloatType::Bf16 && m > MAX_M {
        if dequantizes::<T>(stream, m, workspace.as_deref(), n * k) {
            let shape = GemmShape::new(Layout::Nn, m, k, n);
            return through_dequantized(workspace, stream, dy, w, dx, &shape, 0);
        }
        return launch_mma(stream, dy, w, dx, m, 0);
    }
    let s = w.scale_args();
    let cols = (k / 8) as u32;
    let cfg = LaunchConfig {
        grid: [cols.div_ceil(input_grad_kernel::THREADS), m as u32, 1],
        block: [input_grad_kernel::THREADS, 1, 1],
        dynamic_shared_bytes: 0,
    };
    nf4_input_grad::<T>(
        stream,
        cfg,
        dy,
        w.codes(),
        s.absmax,
        s.qabs,
        s.code2,
        s.scale2,
        s.offset,
        s.double,
        dx,
        n as u32,
        k as u32,
    )?;
    Ok(())
}

/// A LoRA adapter on a frozen NF4 weight: `y = x·Wᵀ + scale·(x·Aᵀ)·Bᵀ`, with `A` of
/// `rank × K` and `B` of `N × rank`, in the activations' type.
pub struct Lora<'a, T: Float> {
    pub a: &'a Buffer<T>,
    pub b: &'a Buffer<T>,
    pub rank: usize,
    pub scale: f32,
}

/// The GEMMs of an adapter of `rank` on an `n × k` weight for `m` rows, in the order they run:
/// [`matmul_lora`]'s `x·Aᵀ` and `t·Bᵀ`, then [`lora_backward`]'s `dB`, `u`, `dA` and `u·A`,
/// all with `Math::Fp32`: what a caller sizes a
/// [`GemmWorkspace`] by ([`GemmWorkspace::for_shapes`]).
///
/// ```
/// use kernels::gemm::{GemmShape, Layout};
/// use kernels::quant::nf4::lora_gemm_shapes;
/// let [xa, ..] = lora_gemm_shapes(4096, 11008, 4096, 16);
/// assert_eq!(xa, GemmShape::new(Layout::Nt, 4096, 16, 4096));
/// ```
pub fn lora_gemm_shapes(m: usize, n: usize, k: usize, rank: usize) -> [GemmShape; 6] {
    let r = rank;
    [
        // x·Aᵀ: (m × K)·(K × r).
        GemmShape::new(Layout::Nt, m, r, k),
        // t·Bᵀ: (m × r)·(r × N).
        GemmShape::new(Layout::Nt, m, n, r),
        // dB = s·dyᵀ·t: (N × m)·(m × r).
        GemmShape::new(Layout::Tn, n, r, m),
        // u = s·dy·B: (m × N)·(N × r).
        GemmShape::new(Layout::Nn, m, r, n),
        // dA = uᵀ·x: (r × m)·(m × K).
        GemmShape::new(Layout::Tn, r, k, m),
        // dx += u·A: (m × r)·(r × K).
        GemmShape::new(Layout::Nn, m, k, r),
    ]
}

/// The LoRA-adapted forward: [`matmul`], then `t = x·Aᵀ` into the `m × rank` workspace `t`
/// and `y += scale · t·Bᵀ`, both with [`gemm`](crate::gemm::gemm). `t` is kept for the
/// backward ([`lora_backward`]). With a `workspace` the two products split k into it, as
/// [`gemm_with_workspace`](crate::gemm::gemm_with_workspace) does, so that they split inside a
/// graph capture too, and the base product reads the dequantized weight from it as
/// [`matmul_with_workspace`] does ([`workspace_size`] sizes one for all of it); without one
/// they split as `gemm` does.
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::nf4::{matmul_lora, Lora, Nf4Weight};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let q = Nf4Weight::quantize(&stream, &Buffer::from_host(&stream, &vec![0.5f32; 64])?, 1, 64)?;
/// let a = Buffer::from_host(&stream, &vec![1.0f32; 64])?; // rank 1
/// let b = Buffer::from_host(&stream, &[2.0f32])?;
/// let x = Buffer::from_host(&stream, &vec![1.0f32; 64])?;
/// let (mut y, mut t) = (Buffer::<f32>::zeros(&stream, 1)?, Buffer::<f32>::zeros(&stream, 1)?);
/// let lora = Lora { a: &a, b: &b, rank: 1, scale: 0.25 };
/// matmul_lora(&stream, &x, &q, &lora, &mut t, &mut y, 1, None)?;
/// assert_eq!(y.to_host(&stream)?, vec![32.0 + 0.25 * 64.0 * 2.0]);
/// # Ok(()) }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn matmul_lora<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    w: &Nf4Weight,
    lora: &Lora<'_, T>,
    t: &mut Buffer<T>,
    y: &mut Buffer<T>,
    m: usize,
    mut workspace: Option<&mut GemmWorkspace>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("matmul_lora")?;
    const OP: &str = "nf4_matmul_lora";
    let (n, k, r) = (w.rows(), w.cols(), lora.rank);
    check_len(OP, "a", lora.a.len(), r * k, || {
        format!("rank × K = {r} × {k}")
    })?;
    check_len(OP, "b", lora.b.len(), n * r, || {
        format!("N × rank = {n} × {r}")
    })?;
    check_len(OP, "t", t.len(), m * r, || format!("m × rank = {m} × {r}"))?;
    matmul_in(workspace.as_deref_mut(), stream, x, w, y, m)?;
    if m == 0 || n == 0 || r == 0 {
        return Ok(());
    }
    let math = Math::Fp32;
    let [xa, tb, ..] = lora_gemm_shapes(m, n, k, r);
    gemm_in(
        workspace.as_deref_mut(),
        stream,
        &xa,
        x,
        lora.a,
        t,
        &Epilogue::default(),
        math,
    )?;
    gemm_in(
        workspace,
        stream,
        &tb,
        t,
        lora.b,
        y,
        &Epilogue::default().scaled(lora.scale, 1.0),
        math,
    )?;
    Ok(())
}

/// The adapter gradients of [`matmul_lora`] given `dy` (`m × N`), `x`, and `t = x·Aᵀ` from the
/// forward: `dB = scale · dyᵀ·t` (`N × rank`), `u = scale · dy·B` (`m × rank`, a workspace)
/// and `dA = uᵀ·x` (`rank × K`). The input gradient adds `u·A` to [`matmul_input_grad`]'s
/// `dx`, which this does too (`dx` must hold `dy·W`).
#[allow(clippy::too_many_arguments)]
pub fn lora_backward<T: Float>(
    stream: &Stream,
    dy: &Buffer<T>,
    x: &Buffer<T>,
    t: &Buffer<T>,
    lora: &Lora<'_, T>,
    u: &mut Buffer<T>,
    da: &mut Buffer<T>,
    db: &mut Buffer<T>,
    dx: &mut Buffer<T>,
    m: usize,
    n: usize,
    mut workspace: Option<&mut GemmWorkspace>,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("lora_backward")?;
    const OP: &str = "nf4_lora_backward";
    let r = lora.rank;
    let k = lora.a.len().checked_div(r).unwrap_or(0);
    check_len(OP, "u", u.len(), m * r, || format!("m × rank = {m} × {r}"))?;
    check_len(OP, "da", da.len(), r * k, || {
        format!("rank × K = {r} × {k}")
    })?;
    check_len(OP, "db", db.len(), n * r, || {
        format!("N × rank = {n} × {r}")
    })?;
    check_len(OP, "dx", dx.len(), m * k, || format!("m × K = {m} × {k}"))?;
    if m == 0 || r == 0 {
        return Ok(());
    }
    let math = Math::Fp32;
    let scaled = Epilogue::default().scaled(lora.scale, 0.0);
    let [_, _, db_shape, u_shape, da_shape, dx_shape] = lora_gemm_shapes(m, n, k, r);
    // dB = s·dyᵀ·t.
    gemm_in(
        workspace.as_deref_mut(),
        stream,
        &db_shape,
        dy,
        t,
        db,
        &scaled,
        math,
    )?;
    // u = s·dy·B.
    gemm_in(
        workspace.as_deref_mut(),
        stream,
        &u_shape,
        dy,
        lora.b,
        u,
        &scaled,
        math,
    )?;
    // dA = uᵀ·x.
    let plain = Epilogue::default();
    gemm_in(
        workspace.as_deref_mut(),
        stream,
        &da_shape,
        u,
        x,
        da,
        &plain,
        math,
    )?;
    // dx += u·A.
    let acc = Epilogue::default().scaled(1.0, 1.0);
    gemm_in(workspace, stream, &dx_shape, u, lora.a, dx, &acc, math)?;
    Ok(())
}

/// The fewest bf16 rows for which [`matmul`] and [`matmul_input_grad`] on Hopper dequantize
/// the weight and run the `wgmma` GEMM rather than the fused `mma.sync` kernel: well above it
/// the route wins on every measured shape; at half of it, allocating the copy on each call
/// cost more than the route saved on some (BENCHMARKS.md, "NF4 products through a dequantized
/// copy").
pub const DEQUANTIZED_MIN_ROWS: usize = 1024;

/// The bf16 elements of the dequantized weight that [`matmul_with_workspace`] and
/// [`matmul_input_grad_with_workspace`] read from their workspace for `m` rows of `T` through
/// an `n × k` weight on `stream`'s device: `n · k` where they take the `wgmma` GEMM (bf16, on
/// Hopper, from [`DEQUANTIZED_MIN_ROWS`] rows), else 0.
pub fn dequantized_weight_elems<T: Float>(stream: &Stream, m: usize, n: usize, k: usize) -> usize {
    if dequantized_route::<T>(stream, m) {
        n * k
    } else {
        0
    }
}

// The route is one of the tensor-core kernel's (more than 16 bf16 rows).
const _: () = assert!(DEQUANTIZED_MIN_ROWS > MAX_M);

/// Whether a product of `m` rows of `T` on `stream`'s device is one the dequantized route
/// takes where the copy has a place: bf16, on Hopper, from [`DEQUANTIZED_MIN_ROWS`] rows.
fn dequantized_route<T: Float>(stream: &Stream, m: usize) -> bool {
    T::TYPE == FloatType::Bf16 && stream.device().target().sm() == 90 && m >= DEQUANTIZED_MIN_ROWS
}

/// What a [`GemmWorkspace`] holds so that every product of an adapted `n × k` NF4 weight for
/// `m` rows of `T` ([`matmul_lora`], [`matmul_input_grad_with_workspace`], [`lora_backward`])
/// runs inside a graph capture as it does outside one: the adapter products' partials (a rank
/// of 0: no adapter), and on Hopper the dequantized weight and the partials of the GEMMs that
/// read it.
///
/// ```
/// use kernel_runtime::{Bf16, Device};
/// use kernels::quant::nf4::workspace_size;
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
/// let size = workspace_size::<Bf16>(&stream, 4096, 1024, 512, 16)?;
/// let ws = kernels::gemm::GemmWorkspace::with_size(&stream, size)?;
/// # let _ = ws;
/// # Ok(()) }
/// ```
pub fn workspace_size<T: Float>(
    stream: &Stream,
    m: usize,
    n: usize,
    k: usize,
    rank: usize,
) -> Result<WorkspaceSize, Error> {
    let math = Math::Fp32;
    let mut size = WorkspaceSize::default();
    if rank > 0 {
        for shape in lora_gemm_shapes(m, n, k, rank) {
            size = size.max(WorkspaceSize::of::<T, T>(stream, &shape, math)?);
        }
    }
    let dense = dequantized_weight_elems::<T>(stream, m, n, k);
    if dense > 0 {
        size = size.max(WorkspaceSize::dense_weight(dense));
        for shape in [
            GemmShape::new(Layout::Nt, m, n, k),
            GemmShape::new(Layout::Nn, m, k, n),
        ] {
            size = size.max(WorkspaceSize::of::<T, T>(stream, &shape, math)?);
        }
    }
    Ok(size)
}

/// Whether a product of `m` rows of `T` through a weight of `elems` on `stream` goes through a
/// dequantized copy of the weight: where [`dequantized_route`] says so, into the
/// caller's workspace where it has room, or without a workspace into a copy of its own
/// outside a graph capture (which cannot allocate) on an unsealed device (so that a sealed
/// program computes the same bits in a graph and in direct launches, as the GEMM's split-k
/// does). A workspace without room keeps the fused kernel everywhere, for the same reason.
fn dequantizes<T: Float>(
    stream: &Stream,
    m: usize,
    workspace: Option<&GemmWorkspace>,
    elems: usize,
) -> bool {
    if !dequantized_route::<T>(stream, m) {
        return false;
    }
    match workspace {
        Some(ws) => ws.dense_weight.as_ref().is_some_and(|d| d.len() >= elems),
        None => !stream.is_capturing() && !stream.device().is_sealed(),
    }
}

/// `c = a·op(W)` as the GEMM of `shape` (NT: `a·Wᵀ`, `b_k = 1`; NN: `a·W`, `b_k = 0`) on a
/// bf16 copy of `W`: in the workspace's room where [`dequantizes`] found it, else a copy of its
/// own, freed when the stream is done with it. The GEMM splits into the same workspace.
fn through_dequantized<T: Float>(
    mut workspace: Option<&mut GemmWorkspace>,
    stream: &Stream,
    a: &Buffer<T>,
    w: &Nf4Weight,
    c: &mut Buffer<T>,
    shape: &GemmShape,
    b_k: u32,
) -> Result<(), Error> {
    if workspace.is_none() {
        // A capture of this call takes the fused kernel, so load it too: a step warmed up
        // before its capture then finds it loaded.
        stream
            .device()
            .prewarm(&[fused_instance(b_k).artifacts()])?;
    }
    let mut taken = workspace
        .as_deref_mut()
        .and_then(|ws| ws.dense_weight.take());
    let result = match taken.as_mut() {
        Some(room) => match (room as &mut dyn Any).downcast_mut::<Buffer<T>>() {
            Some(room) => dense_product(workspace.as_deref_mut(), stream, a, w, room, c, shape),
            None => Err(Error::Unsupported {
                op: "nf4_matmul",
                detail: format!(
                    "the dequantized weight is bf16, but the activations are {}",
                    T::TYPE.suffix()
                ),
            }),
        },
        None => {
            // Unfilled: the dequantization writes every element the product reads.
            let mut own = Buffer::<T>::uninit(stream, w.rows() * w.cols())?;
            dense_product(workspace.as_deref_mut(), stream, a, w, &mut own, c, shape)
        }
    };
    // The room goes back whatever happened.
    if let (Some(ws), Some(room)) = (workspace, taken) {
        ws.dense_weight = Some(room);
    }
    result
}

/// Dequantizes `w` into the front of `dense`, then `c = a·op(W)` as the GEMM of `shape`.
fn dense_product<T: Float>(
    workspace: Option<&mut GemmWorkspace>,
    stream: &Stream,
    a: &Buffer<T>,
    w: &Nf4Weight,
    dense: &mut Buffer<T>,
    c: &mut Buffer<T>,
    shape: &GemmShape,
) -> Result<(), Error> {
    w.dequantize_into_front(stream, dense)?;
    let plain = Epilogue::default();
    gemm_in(workspace, stream, shape, a, dense, c, &plain, Math::Fp32)
}

/// [`matmul`] (`transposed = false`, `y = x·Wᵀ`) or [`matmul_input_grad`] (`transposed =
/// true`, `y = x·W`) of more than 16 bf16 rows through the fused `mma.sync` kernel whatever the
/// device, for measuring it beside the dequantized route.
#[doc(hidden)]
pub fn fused_tensor_core_product(
    stream: &Stream,
    x: &Buffer<kernel_runtime::Bf16>,
    w: &Nf4Weight,
    y: &mut Buffer<kernel_runtime::Bf16>,
    m: usize,
    transposed: bool,
) -> Result<(), Error> {
    let (n, k) = (w.rows(), w.cols());
    let (x_cols, y_cols) = if transposed { (n, k) } else { (k, n) };
    const OP: &str = "nf4_fused_tensor_core_product";
    check_len(OP, "x", x.len(), m * x_cols, || format!("m × {x_cols}"))?;
    check_len(OP, "y", y.len(), m * y_cols, || format!("m × {y_cols}"))?;
    if m <= MAX_M {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!("the tensor-core kernel takes more than {MAX_M} rows, not {m}"),
        });
    }
    launch_mma(stream, x, w, y, m, (!transposed) as u32)
}

/// The fused tensor-core kernel's instance for bf16 products (`b_k` as [`launch_mma`] takes it).
fn fused_instance(b_k: u32) -> &'static crate::OpKernel {
    // Instances are in `O in [bf16, f32], B_K in [1, 0]` order.
    &super::MMA[if b_k == 1 { 0 } else { 1 }]
}

/// `c = a·Wᵀ` (`b_k = 1`) or `c = a·W` (`b_k = 0`) on the tensor cores, for bf16 `a` of `m`
/// rows; the caller has checked the buffers.
fn launch_mma<T: Float>(
    stream: &Stream,
    a: &Buffer<T>,
    w: &Nf4Weight,
    c: &mut Buffer<T>,
    m: usize,
    b_k: u32,
) -> Result<(), Error> {
    let (rows, cols) = (w.rows() as u32, w.cols() as u32);
    let (n, kred) = if b_k == 1 { (rows, cols) } else { (cols, rows) };
    let s = w.scale_args();
    let tile = mma_kernel::TILE;
    let cfg = LaunchConfig {
        grid: [n.div_ceil(tile), (m as u32).div_ceil(tile), 1],
        block: [mma_kernel::THREADS, 1, 1],
        dynamic_shared_bytes: mma_kernel::shared_bytes(b_k),
    };
    nf4_mma::<T>(
        stream,
        cfg,
        b_k,
        &a.view(),
        w.codes(),
        s.absmax,
        s.qabs,
        s.code2,
        s.scale2,
        s.offset,
        s.double,
        c,
        m as u32,
        n,
        kred,
        cols,
        kred.is_multiple_of(8) as u32,
    )?;
    Ok(())
}

fn check_u32(op: &'static str, name: &str, len: usize) -> Result<(), Error> {
    if len > u32::MAX as usize {
        return Err(Error::Unsupported {
            op,
            detail: format!("`{name}` spans {len} elements, above 2^32; split it by rows"),
        });
    }
    Ok(())
}

/// The gate and up projections of a gated MLP in one pass over `x` (`m × K`): `gate` and `up`
/// are NF4 weights of the same `N × K` shape. `silu = false` writes `y` (`2·m × N`) as the
/// `m × N` gate product followed by the `m × N` up product; `silu = true` writes
/// `y = silu(x·gateᵀ) ⊙ (x·upᵀ)` (`m × N`), 16 rows of `x` at a time, each weight byte read
/// once per 16 rows. Without silu, `m` is at most 16. Both weights must keep f32 absmax
/// values (not double-quantized).
///
/// ```
/// use kernel_runtime::{Buffer, Device};
/// use kernels::quant::nf4::{matmul_gate_up, Nf4Weight};
/// # fn main() -> Result<(), kernels::Error> {
/// let stream = Device::emulator().stream()?;
/// let q = |v: f32| Nf4Weight::quantize(&stream, &Buffer::from_host(&stream, &vec![v; 64])?, 1, 64);
/// let (gate, up) = (q(0.0625)?, q(0.5)?);
/// let x = Buffer::from_host(&stream, &vec![1.0f32; 64])?;
/// let mut y = Buffer::<f32>::zeros(&stream, 2)?;
/// matmul_gate_up(&stream, &x, &gate, &up, &mut y, 1, false)?;
/// assert_eq!(y.to_host(&stream)?, vec![4.0, 32.0]);
/// # Ok(()) }
/// ```
pub fn matmul_gate_up<T: Float>(
    stream: &Stream,
    x: &Buffer<T>,
    gate: &Nf4Weight,
    up: &Nf4Weight,
    y: &mut Buffer<T>,
    m: usize,
    silu: bool,
) -> Result<(), Error> {
    crate::float::f32_or_bf16::<T>("matmul_gate_up")?;
    const OP: &str = "nf4_matmul_gate_up";
    let (n, k) = (gate.rows(), gate.cols());
    if (up.rows(), up.cols()) != (n, k) {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "gate is {n} × {k} but up is {} × {}; pass weights of one shape",
                up.rows(),
                up.cols()
            ),
        });
    }
    let (Some(ga), Some(ua)) = (gate.plain_absmax(), up.plain_absmax()) else {
        return Err(Error::Unsupported {
            op: OP,
            detail: "the fused gate and up read f32 absmax values; quantize the weights without double quantization".into(),
        });
    };
    let outputs = if silu { 1 } else { 2 };
    check_len(OP, "x", x.len(), m * k, || format!("m × K = {m} × {k}"))?;
    check_len(OP, "y", y.len(), outputs * m * n, || {
        format!("{outputs} × m × N = {outputs} × {m} × {n}")
    })?;
    check_u32(OP, "x", m * k)?;
    check_u32(OP, "y", outputs * m * n)?;
    if m == 0 || n == 0 || k == 0 {
        return Ok(());
    }
    if !silu && m > MAX_M {
        return Err(Error::Unsupported {
            op: OP,
            detail: format!(
                "the two outputs are fused for up to {MAX_M} rows; call it per {MAX_M} rows, or `matmul` once per weight"
            ),
        });
    }
    let grid = (n as u32).div_ceil(gate_up_kernel::COLS_PER_BLOCK);
    let cfg = LaunchConfig::linear(grid, gate_up_kernel::THREADS);
    if !silu {
        nf4_gate_up::<T>(
            stream,
            cfg,
            0,
            x,
            gate.codes(),
            ga,
            up.codes(),
            ua,
            y,
            m as u32,
            n as u32,
            k as u32,
        )?;
        return Ok(());
    }
    for m0 in (0..m).step_by(MAX_M) {
        let rows = (m - m0).min(MAX_M);
        let xs = x.slice(m0 * k..(m0 + rows) * k)?;
        let mut ys = y.slice_mut(m0 * n..(m0 + rows) * n)?;
        nf4_gate_up::<T>(
            stream,
            cfg,
            1,
            &xs,
            gate.codes(),
            ga,
            up.codes(),
            ua,
            &mut ys,
            rows as u32,
            n as u32,
            k as u32,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernel_dsl::Target;
    use kernel_runtime::{Bf16, Device};

    /// The dequantized route is Hopper's, from its row count: into a workspace with room for
    /// the weight wherever the call runs; without a workspace, outside captures on an unsealed
    /// device; never into a workspace without room.
    #[test]
    fn many_rows_dequantize_on_hopper_where_the_copy_has_a_place() {
        use crate::gemm::WorkspaceSize;
        let hopper = Device::emulator_for(Target::Sm90a).stream().unwrap();
        let elems = 64 * 128;
        let min = DEQUANTIZED_MIN_ROWS;
        assert!(dequantizes::<Bf16>(&hopper, min, None, elems));
        assert!(!dequantizes::<Bf16>(&hopper, min - 1, None, elems));
        let roomy = GemmWorkspace::with_size(&hopper, WorkspaceSize::dense_weight(elems)).unwrap();
        let tight =
            GemmWorkspace::with_size(&hopper, WorkspaceSize::dense_weight(elems - 1)).unwrap();
        assert!(dequantizes::<Bf16>(&hopper, min, Some(&roomy), elems));
        assert!(!dequantizes::<Bf16>(&hopper, min, Some(&tight), elems));
        let mut inside = None;
        hopper
            .capture(|s| {
                inside = Some([
                    dequantizes::<Bf16>(s, 4096, None, elems),
                    dequantizes::<Bf16>(s, 4096, Some(&roomy), elems),
                ]);
                Ok(())
            })
            .unwrap();
        assert_eq!(inside, Some([false, true]));
        hopper.device().seal();
        assert!(!dequantizes::<Bf16>(&hopper, 4096, None, elems));
        assert!(dequantizes::<Bf16>(&hopper, 4096, Some(&roomy), elems));
        let ampere = Device::emulator_for(Target::Sm80).stream().unwrap();
        assert!(!dequantizes::<Bf16>(&ampere, 4096, None, elems));
        let f32_hopper = Device::emulator_for(Target::Sm90a).stream().unwrap();
        assert!(!dequantizes::<f32>(&f32_hopper, 4096, None, elems));
    }

    #[test]
    fn the_fused_instances_are_the_bf16_ones() {
        assert_eq!(fused_instance(1).kernel().name, "nf4_mma__bf16_1");
        assert_eq!(fused_instance(0).kernel().name, "nf4_mma__bf16_0");
    }
}
