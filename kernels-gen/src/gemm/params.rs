//! The parameter list every GEMM kernel shares, declared in one place so the host side
//! ([`super::launch`]) fills it in the same order.

use super::epilogue::EpilogueCode;
use super::matrix::{mat_param, Mat};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::Dim;
use kernel_dsl::scalar::{F32, U32};

/// The kernel-side view of one launch: this CTA's matrices and the problem sizes.
pub struct GemmParams {
    pub a: Mat,
    pub b: Mat,
    pub m: Value<U32>,
    pub n: Value<U32>,
    pub k: Value<U32>,
    pub lda: Value<U32>,
    pub ldb: Value<U32>,
    pub ldc: Value<U32>,
    pub flags: Value<U32>,
    pub epilogue: EpilogueCode,
}

/// Declares `a, b, c, bias, residual, m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c,
/// alpha, beta, flags` and applies this CTA's batch (`ctaid.z`) offsets.
pub fn declare(b: &mut KernelBuilder, input: FloatType, output: FloatType) -> GemmParams {
    let a = mat_param(b, "a", input, false);
    let bm = mat_param(b, "b", input, false);
    let c = mat_param(b, "c", output, true);
    let bias = mat_param(b, "bias", input, false);
    let residual = mat_param(b, "residual", input, false);
    let m = b.param::<U32>("m");
    let n = b.param::<U32>("n");
    let k = b.param::<U32>("k");
    let lda = b.param::<U32>("lda");
    let ldb = b.param::<U32>("ldb");
    let ldc = b.param::<U32>("ldc");
    let stride_a = b.param::<U32>("stride_a");
    let stride_b = b.param::<U32>("stride_b");
    let stride_c = b.param::<U32>("stride_c");
    let alpha = b.param::<F32>("alpha");
    let beta = b.param::<F32>("beta");
    let flags = b.param::<U32>("flags");
    let batch = b.ctaid(Dim::Z);
    let a = a.batch(b, batch, stride_a);
    let bm = bm.batch(b, batch, stride_b);
    let c = c.batch(b, batch, stride_c);
    let residual = residual.batch(b, batch, stride_c);
    let epilogue = EpilogueCode::new(b, c, bias.whole(), residual, alpha, beta, flags);
    GemmParams {
        a,
        b: bm,
        m,
        n,
        k,
        lda,
        ldb,
        ldc,
        flags,
        epilogue,
    }
}
