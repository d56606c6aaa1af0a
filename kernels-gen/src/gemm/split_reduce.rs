//! The split-k reduce: the TMA kernel's split form writes each k-range's raw f32 sums to a
//! partials buffer, and this kernel adds the ranges in a fixed order (so results are
//! bit-identical run to run) and applies the epilogue.

use super::dtype::Dtype;
use super::matrix::mat_param;
use super::params::declare;
use crate::codegen::tensor::Format;
use kernel_dsl::builder::KernelBuilder;
use kernel_dsl::dtype::U32;
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::Cmp;

pub const REDUCE_THREADS: u32 = 256;

/// One reduce specialization: the inputs' type (bias, residual) and the output's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReduceSpec {
    pub input: Dtype,
    pub output: Dtype,
}

pub const REDUCE_SPECS: [ReduceSpec; 4] = [
    ReduceSpec {
        input: Dtype::Bf16,
        output: Dtype::Bf16,
    },
    ReduceSpec {
        input: Dtype::Bf16,
        output: Dtype::F32,
    },
    ReduceSpec {
        input: Dtype::F16,
        output: Dtype::F16,
    },
    ReduceSpec {
        input: Dtype::F16,
        output: Dtype::F32,
    },
];

/// `C = epilogue(Σ_r partials[r])`: one thread per output element of batch `ctaid.z`, the
/// ranges added in order. Parameters: the GEMM's own, then `splits` and `partials`.
pub fn build_reduce(s: ReduceSpec) -> Kernel {
    let name = format!(
        "gemm_splitk_reduce_{}_{}",
        s.input.suffix(),
        s.output.suffix()
    );
    let mut b = KernelBuilder::new(name);
    b.reqntid([REDUCE_THREADS, 1, 1]);
    let p = declare(&mut b, s.input.format(), s.output.format());
    let splits = b.param::<U32>("splits");
    let partials = mat_param(&mut b, "partials", Format::F32, false).whole();
    let i = b.global_index(Dim::X);
    let mn = b.mul(p.m, p.n);
    let inside = b.setp(Cmp::Lt, i, mn);
    b.if_(inside, |b| {
        let z = b.ctaid(Dim::Z);
        let batches = b.nctaid(Dim::Z);
        let zero_f = b.const_f32(0.0);
        let sum = b.var(zero_f);
        let zero = b.const_u32(0);
        let one = b.const_u32(1);
        b.for_range(zero, splits, one, |b, r| {
            let matrix = b.mad(r, batches, z);
            let at = b.mad(matrix, mn, i);
            let v = partials.load(b, at);
            let t = b.add(sum, v);
            b.assign(sum, t);
        });
        let row = b.div(i, p.n);
        let col = b.rem(i, p.n);
        let idx = b.mad(row, p.ldc, col);
        p.epilogue.store(b, idx, col, sum);
    });
    b.finish()
}
