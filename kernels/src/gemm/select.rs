//! Picking the kernel for a problem: from the storage types, the requested math, the layout,
//! the shape and the device's target, one specialization from [`super::KERNELS`] and its
//! launch shape.

use super::async_wgmma_kernel;
use super::layout::GemmShape;
use super::simt_kernel::{SIMT_THREADS, SIMT_TILE};
use super::tma_wgmma_kernel::{SHARED_BYTES, TF32_NT_INSTANCE, THREADS, TILE_M, TILE_N};
use super::{ASYNC_WGMMA, MMA, MMA_BUILDER, SIMT, TMA_WGMMA, WGMMA};
use crate::FloatType;
use crate::{Error, OpKernel};
use kernel_dsl::Target;
use kernel_runtime::LaunchConfig;
use kernels_gen::gemm::tensor_core::{
    mma_shared_bytes, mma_spec_index, MmaSpec, MMA_THREADS, MMA_TILE_M, MMA_TILE_N,
};
use kernels_gen::gemm::wgmma::{wgmma_spec_index, WgmmaSpec};
use kernels_gen::gemm::Layout;

/// How f32 products are computed. 16-bit inputs always use tensor cores.
///
/// ```
/// use kernels::gemm::Math;
/// assert_eq!(Math::default(), Math::Fp32);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Math {
    /// f32 inputs: exact f32 fused multiply-adds on the SIMT cores.
    #[default]
    Fp32,
    /// f32 inputs rounded to TF32 (10-bit mantissa) on tensor cores, f32 accumulation
    /// (sm_80+). About 1e-3 relative error.
    Tf32,
}

/// The kernel chosen for a problem and how to launch it.
#[derive(Clone, Copy)]
pub struct Plan {
    /// The specialization (its IR names it: `kernel.kernel().name`).
    pub kernel: &'static OpKernel,
    /// Grid (x over `n`, y over `m`, z over batches), block and dynamic shared memory.
    pub config: LaunchConfig,
    /// Elements per 16-byte vector of the inputs (the vector-load flags use it).
    pub(crate) vector_elems: usize,
    /// The kernel reads A and B through tensor maps (two extra parameters).
    pub(crate) tensor_maps: bool,
    /// What the plan was made for, so [`super::gemm_with_plan`] can refuse another problem.
    pub(crate) problem: (FloatType, FloatType, GemmShape),
    /// How the kernel is launched.
    pub(crate) launch: Launch,
}

/// How a plan's kernel is launched: through the typed launcher of a `#[kernel]` GEMM, or
/// with the shared parameter list of the builder-written ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Launch {
    /// `simt_kernel::gemm_simt` for this layout.
    Simt(Layout),
    /// `mma_kernel::gemm_mma` for this entry of `MMA_SPECS`.
    Mma(usize),
    /// `tma_wgmma_kernel::gemm_tma_wgmma`, whole tiles or split along k.
    Tma,
    /// The tf32 TMA GEMM (NT) on k-contiguous copies of this layout's MN-major operands
    /// (`transposed_operands.rs`).
    TmaTransposed(Layout),
    /// `async_wgmma_kernel::gemm_async_wgmma` for this entry of `WGMMA_SPECS`.
    AsyncWgmma(usize),
    /// `gemm_args`, positionally.
    Builder,
}

impl Plan {
    /// The same plan with the builder-written kernel its `#[kernel]` kernel replaces (the
    /// `mma.sync` GEMMs and Hopper's `cp.async`-fed `wgmma` GEMMs), kept only until the two
    /// have been measured side by side (`bench_gemm`); plans of other kernels come back
    /// unchanged.
    #[doc(hidden)]
    pub fn builder(self) -> Plan {
        match self.launch {
            Launch::Mma(index) => Plan {
                kernel: &MMA_BUILDER[index],
                launch: Launch::Builder,
                ..self
            },
            Launch::AsyncWgmma(index) => Plan {
                kernel: &WGMMA[index],
                launch: Launch::Builder,
                ..self
            },
            Launch::Simt(_) | Launch::Tma | Launch::TmaTransposed(_) | Launch::Builder => self,
        }
    }
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("kernel", &self.kernel.kernel().name)
            .field("config", &self.config)
            .finish()
    }
}

/// Chooses the specialization for `shape` with inputs `input`, output `output` and `math` on
/// `target`.
///
/// ```
/// use kernels::gemm::{select, GemmShape, Layout, Math};
/// use kernels::FloatType;
/// use kernel_dsl::Target;
/// let plan = select(FloatType::Bf16, FloatType::F32, Math::Fp32, &GemmShape::new(Layout::Nt, 300, 200, 64), Target::Sm80)?;
/// assert_eq!(plan.config.grid, [2, 3, 1]);
/// # Ok::<(), kernels::Error>(())
/// ```
pub fn select(
    input: FloatType,
    output: FloatType,
    math: Math,
    shape: &GemmShape,
    target: Target,
) -> Result<Plan, Error> {
    if math == Math::Tf32 && input != FloatType::F32 {
        return Err(unsupported(format!(
            "Math::Tf32 rounds f32 inputs to TF32, but the inputs are {}, which use tensor cores at their own precision; pass Math::Fp32 (the default)",
            input.suffix()
        )));
    }
    let tensor_cores = input != FloatType::F32 || math == Math::Tf32;
    if !tensor_cores {
        if output != FloatType::F32 {
            return Err(unsupported(format!(
                "f32 inputs with Math::Fp32 write f32 outputs, not {}; use an f32 output buffer",
                output.suffix()
            )));
        }
        let index = layout_index(shape.layout);
        return Ok(Plan {
            kernel: &SIMT[index],
            config: grid(shape, SIMT_TILE, SIMT_TILE, SIMT_THREADS),
            vector_elems: 4,
            tensor_maps: false,
            problem: (input, output, *shape),
            launch: Launch::Simt(shape.layout),
        });
    }
    if target.sm() < 80 {
        return Err(unsupported(format!(
            "{} inputs{} need tensor cores of sm_80 or newer, but the device is {}; use f32 inputs with Math::Fp32",
            input.suffix(),
            if math == Math::Tf32 { " with Math::Tf32" } else { "" },
            target.name()
        )));
    }
    // The `wgmma` GEMMs' instances are in `WGMMA_SPECS` order.
    let spec = WgmmaSpec {
        input,
        output,
        layout: shape.layout,
    };
    if target.sm() == 90 {
        // Hopper with 16-byte aligned rows: wgmma fed by the copy engine (the runtime loads
        // the sm_90a variant on an sm_90 device). tf32 `wgmma` reads k-contiguous operands
        // only, so f32 has the one NT instance, which NN and TN reach through transposed
        // copies of their MN-major operands (whose rows are k long, whatever the stored
        // ones are).
        let fits = tma_fits(shape, input);
        let chosen = match input {
            FloatType::F32 if output != FloatType::F32 => None,
            FloatType::F32 if shape.layout == Layout::Nt => {
                fits.then_some((TF32_NT_INSTANCE, Launch::Tma))
            }
            FloatType::F32 => transposable(shape)
                .then_some((TF32_NT_INSTANCE, Launch::TmaTransposed(shape.layout))),
            _ if fits => wgmma_spec_index(spec).map(|index| (index, Launch::Tma)),
            _ => None,
        };
        if let Some((index, launch)) = chosen {
            return Ok(Plan {
                kernel: &TMA_WGMMA[index],
                config: tile_walk(shape).with_dynamic_shared(SHARED_BYTES),
                vector_elems: 16 / input.bytes(),
                tensor_maps: true,
                problem: (input, output, *shape),
                launch,
            });
        }
    }
    if target.sm() == 90 {
        // Hopper, other strides: wgmma fed by cp.async.
        if let Some(index) = wgmma_spec_index(spec) {
            return Ok(Plan {
                kernel: &ASYNC_WGMMA[index],
                config: grid(
                    shape,
                    async_wgmma_kernel::TILE,
                    async_wgmma_kernel::TILE,
                    async_wgmma_kernel::THREADS,
                )
                .with_dynamic_shared(async_wgmma_kernel::SHARED_BYTES),
                vector_elems: 16 / input.bytes(),
                tensor_maps: false,
                problem: (input, output, *shape),
                launch: Launch::AsyncWgmma(index),
            });
        }
    }
    let spec = MmaSpec {
        input,
        output,
        layout: shape.layout,
    };
    let index = mma_spec_index(spec).ok_or_else(|| {
        unsupported(format!(
            "{} inputs with a {} output are not a shipped specialization; use an output of {} or f32",
            input.suffix(),
            output.suffix(),
            input.suffix()
        ))
    })?;
    Ok(Plan {
        kernel: &MMA[index],
        config: grid(shape, MMA_TILE_M, MMA_TILE_N, MMA_THREADS)
            .with_dynamic_shared(mma_shared_bytes(spec)),
        vector_elems: 16 / input.bytes(),
        tensor_maps: false,
        problem: (input, output, *shape),
        launch: Launch::Mma(index),
    })
}

/// The copy engine reads rows (and batch strides) that start 16-byte aligned: leading
/// dimensions and strides that are multiples of 8 16-bit elements, or of 4 f32.
fn tma_fits(shape: &GemmShape, input: FloatType) -> bool {
    let aligned = |x: usize| x.is_multiple_of(16 / input.bytes());
    aligned(shape.lda)
        && aligned(shape.ldb)
        && (shape.batch <= 1 || (aligned(shape.stride_a) && aligned(shape.stride_b)))
}

/// The fewest rows and columns of C for which TF32 NN and TN copy their operands: a skinny
/// product (a LoRA adapter's gradient) would spend longer copying a large operand than
/// `mma.sync` spends reading it in place.
const TRANSPOSED_MIN_MN: usize = 2 * TILE_M as usize;

/// Whether an NN or TN problem's MN-major operands are worth copying k-contiguous, and can be
/// by one 2-D transpose each: C at least [`TRANSPOSED_MIN_MN`] both ways, one product, dense
/// rows, copies that keep a 32-bit index, and k a whole number of 16-byte vectors (the
/// copies' rows, which the copy engine reads).
fn transposable(shape: &GemmShape) -> bool {
    let (_, a_cols) = shape.layout.a_rows_cols(shape.m, shape.k);
    let (_, b_cols) = shape.layout.b_rows_cols(shape.n, shape.k);
    let small = |rows: usize| rows.checked_mul(shape.k).is_some_and(|n| n < 1 << 31);
    shape.m.min(shape.n) >= TRANSPOSED_MIN_MN
        && shape.batch <= 1
        && shape.k.is_multiple_of(4)
        && shape.lda == a_cols
        && shape.ldb == b_cols
        && small(shape.m)
        && small(shape.n)
}

fn unsupported(detail: String) -> Error {
    Error::Unsupported { op: "gemm", detail }
}

pub(crate) const fn layout_index(layout: Layout) -> usize {
    match layout {
        Layout::Nn => 0,
        Layout::Nt => 1,
        Layout::Tn => 2,
    }
}

/// One CTA per output tile along x (the kernel walks tiles `ctaid.x`, `ctaid.x + nctaid.x`,
/// …, so [`gemm`](super::gemm) may launch fewer: one per SM), batches along z.
fn tile_walk(shape: &GemmShape) -> LaunchConfig {
    let tiles = grid(shape, TILE_M, TILE_N, THREADS);
    LaunchConfig {
        grid: [tiles.grid[0] * tiles.grid[1], 1, tiles.grid[2]],
        ..tiles
    }
}

fn grid(shape: &GemmShape, tile_m: u32, tile_n: u32, threads: u32) -> LaunchConfig {
    let gx = (shape.n as u32).div_ceil(tile_n).max(1);
    let gy = (shape.m as u32).div_ceil(tile_m).max(1);
    LaunchConfig {
        grid: [gx, gy, shape.batch.max(1) as u32],
        block: [threads, 1, 1],
        dynamic_shared_bytes: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Plan::builder` launches the builder's `cp.async` `wgmma` kernel with the plan's grid,
    /// block and shared memory: the two kernels must agree on them.
    #[test]
    fn the_async_wgmma_kernel_launches_as_its_builder_form_does() {
        use kernels_gen::gemm::wgmma::{wgmma_shared_bytes, WGMMA_THREADS};
        assert_eq!(async_wgmma_kernel::THREADS, WGMMA_THREADS);
        assert_eq!(async_wgmma_kernel::TILE, MMA_TILE_M);
        assert_eq!(async_wgmma_kernel::TILE, MMA_TILE_N);
        assert_eq!(async_wgmma_kernel::SHARED_BYTES, wgmma_shared_bytes());
    }

    /// TF32 is a rounding of f32 inputs; asking for it with 16-bit inputs is a mistake the
    /// caller hears about rather than a flag silently dropped.
    #[test]
    fn tf32_math_with_16_bit_inputs_is_refused() {
        let shape = GemmShape::new(Layout::Nn, 16, 16, 16);
        for input in [FloatType::Bf16, FloatType::F16] {
            let err = select(input, FloatType::F32, Math::Tf32, &shape, Target::Sm90).unwrap_err();
            assert!(err.to_string().contains("pass Math::Fp32"), "{err}");
            assert!(select(input, FloatType::F32, Math::Fp32, &shape, Target::Sm90).is_ok());
        }
        assert!(select(
            FloatType::F32,
            FloatType::F32,
            Math::Tf32,
            &shape,
            Target::Sm90
        )
        .is_ok());
    }
}
