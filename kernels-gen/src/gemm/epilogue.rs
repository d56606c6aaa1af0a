//! The GEMM epilogue inside a kernel: `C = act(α·acc + β·C + bias[col]) + residual[row, col]`,
//! chosen per launch by a flags parameter whose bits are the constants here.

use super::matrix::Mat;
use crate::codegen::math::{sigmoid, tanh, GELU_K0, GELU_K1};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{Pred, F32, U32};

pub const FLAG_BIAS: u32 = 1;
pub const FLAG_RESIDUAL: u32 = 2;
/// The activation code sits at this bit: 0 none, [`ACT_SILU`], [`ACT_GELU_TANH`].
pub const ACT_SHIFT: u32 = 2;
pub const ACT_SILU: u32 = 1;
pub const ACT_GELU_TANH: u32 = 2;
/// `A` may be read in 16-byte vectors (aligned leading dimension, stride and extent).
pub const FLAG_VEC_A: u32 = 16;
pub const FLAG_VEC_B: u32 = 32;
/// `C = A·B` exactly (α = 1, β = 0, nothing fused) with even `ldc` and batch stride, so two
/// adjacent output elements can be stored as one aligned pair.
pub const FLAG_PLAIN_PAIRS: u32 = 64;
/// Even `n`, `ldc` and batch stride: any epilogue of the `#[kernel]` TMA GEMM may read and store
/// two adjacent output columns (and the bias and residual beside them) as one aligned pair.
pub const FLAG_COLUMN_PAIRS: u32 = 128;
/// The `#[kernel]` GEMMs also write each finished value, before rounding, to an f32 copy of C
/// (same leading dimension and batch stride), and β reads the old value from that copy.
pub const FLAG_F32_COPY: u32 = 256;
/// `n`, `ldc` and the batch stride are multiples of 8: rows of a 16-bit output start 16-byte
/// aligned, so the `#[kernel]` TMA GEMM stores whole tiles in 16-byte row pieces.
pub const FLAG_ROW_CHUNKS: u32 = 512;
/// The `#[kernel]` TMA GEMM's whole-tile instances run stream-K: each block one contiguous
/// run of the problem's k-slabs across tile boundaries, the parts of a tile that other blocks
/// computed added in block order before its epilogue (`partials` and `counters` hold them).
pub const FLAG_STREAM_K: u32 = 1024;
/// Under stream-K, bits 11–14 of the flags hold the most blocks one of the last wave's tiles
/// is cut among (0: as many as the grid gives it).
pub const STREAM_K_CUTS_SHIFT: u32 = 11;

/// The epilogue's inputs inside a kernel, with its uniform predicates computed once.
pub struct EpilogueCode {
    pub c: Mat,
    pub bias: Mat,
    pub residual: Mat,
    alpha: Value<F32>,
    beta: Value<F32>,
    read_c: Value<Pred>,
    has_bias: Value<Pred>,
    has_residual: Value<Pred>,
    silu: Value<Pred>,
    gelu: Value<Pred>,
}

/// `(flags & mask) != 0`.
pub fn flag(b: &mut KernelBuilder, flags: Value<U32>, mask: u32) -> Value<Pred> {
    let m = b.const_u32(mask);
    let bits = b.and(flags, m);
    let zero = b.const_u32(0);
    b.setp(Cmp::Ne, bits, zero)
}

impl EpilogueCode {
    pub fn new(
        b: &mut KernelBuilder,
        c: Mat,
        bias: Mat,
        residual: Mat,
        alpha: Value<F32>,
        beta: Value<F32>,
        flags: Value<U32>,
    ) -> EpilogueCode {
        let zero = b.const_f32(0.0);
        let read_c = b.setp(Cmp::Ne, beta, zero);
        let has_bias = flag(b, flags, FLAG_BIAS);
        let has_residual = flag(b, flags, FLAG_RESIDUAL);
        let act = b.shr(flags, ACT_SHIFT);
        let three = b.const_u32(3);
        let act = b.and(act, three);
        let one = b.const_u32(ACT_SILU);
        let two = b.const_u32(ACT_GELU_TANH);
        let silu = b.setp(Cmp::Eq, act, one);
        let gelu = b.setp(Cmp::Eq, act, two);
        EpilogueCode {
            c,
            bias,
            residual,
            alpha,
            beta,
            read_c,
            has_bias,
            has_residual,
            silu,
            gelu,
        }
    }

    /// Finishes and stores output element `index` (column `col`) from its accumulator.
    pub fn store(
        &self,
        b: &mut KernelBuilder,
        index: Value<U32>,
        col: Value<U32>,
        acc: Value<F32>,
    ) {
        let scaled = b.mul(self.alpha, acc);
        let v = b.var(scaled);
        b.if_(self.read_c, |b| {
            let old = self.c.load(b, index);
            let t = b.fma(self.beta, old, v);
            b.assign(v, t);
        });
        b.if_(self.has_bias, |b| {
            let bias = self.bias.load(b, col);
            let t = b.add(v, bias);
            b.assign(v, t);
        });
        b.if_(self.silu, |b| {
            let s = sigmoid(b, v);
            let t = b.mul(v, s);
            b.assign(v, t);
        });
        b.if_(self.gelu, |b| {
            let t = gelu_tanh(b, v);
            b.assign(v, t);
        });
        b.if_(self.has_residual, |b| {
            let r = self.residual.load(b, index);
            let t = b.add(v, r);
            b.assign(v, t);
        });
        self.c.store(b, index, v);
    }
}

fn gelu_tanh(b: &mut KernelBuilder, x: Value<F32>) -> Value<F32> {
    let k0 = b.const_f32(GELU_K0);
    let k1 = b.const_f32(GELU_K1);
    let half = b.const_f32(0.5);
    let one = b.const_f32(1.0);
    let x2 = b.mul(x, x);
    let x3 = b.mul(x2, x);
    let inner = b.fma(k1, x3, x);
    let arg = b.mul(k0, inner);
    let t = tanh(b, arg);
    let s = b.add(one, t);
    let hx = b.mul(half, x);
    b.mul(hx, s)
}
