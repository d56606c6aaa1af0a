//! The split-k reduce in `#[kernel]`: the TMA kernel's split form writes each k-range's raw
//! f32 sums to `partials` (one `m × n` matrix per range and batch, range-major), and this
//! kernel adds the ranges in order, so results are bit-identical run to run, then applies the
//! epilogue ([`finish`]).

use kernel_macros::kernel;

/// Threads per block (the kernel's `block`), one output element each.
pub(crate) const REDUCE_THREADS: u32 = 256;

/// `C = epilogue(Σ_r partials[r])` for batch `block_idx().z`, one thread per output element
/// of the `m × n` matrix (`C` with leading dimension `ldc`, batches `stride_c` apart, as are
/// the residual and, where the flags ask for it, the f32 `copy`); `flags` as
/// `kernels_gen::gemm::epilogue` defines them.
#[kernel(crate = crate::lang, block = 256, instances(
    <bf16, bf16>, <bf16, f32>, <f16, f16>, <f16, f32>, <f32, f32>,
))]
pub fn gemm_splitk_reduce<T: Element, O: Element>(
    partials: &[f32],
    c: &mut [O],
    copy: &mut [f32],
    bias: &[T],
    residual: &[T],
    m: u32,
    n: u32,
    ldc: u32,
    stride_c: u32,
    splits: u32,
    alpha: f32,
    beta: f32,
    flags: u32,
) {
    let i = block_idx().x * 256 + thread_idx().x;
    let mn = m * n;
    if i < mn {
        let batch = block_idx().z;
        let batches = grid_dim().z;
        let mut sum = 0.0f32;
        for r in 0..splits {
            sum += partials[(r * batches + batch) * mn + i];
        }
        let at = batch as u64 * stride_c as u64;
        let c = &mut c[at..];
        let copy = &mut copy[at..];
        let residual = &residual[at..];
        let row = i / n;
        let col = i - row * n;
        finish(
            c,
            copy,
            bias,
            residual,
            row * ldc + col,
            col,
            sum,
            alpha,
            beta,
            epilogue_parts(flags),
        );
    }
}
