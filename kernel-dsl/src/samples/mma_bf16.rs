use crate::builder::KernelBuilder;
use crate::ir::{Dim, Kernel};
use crate::scalar::{Bf16, B32, F32, U32};
use crate::types::StateSpace;

/// One warp computes `c = a × b` for a 16×16 `a` (row-major bf16), a 16×8 `b` given as its
/// transpose `bt` (8×16 row-major bf16, i.e. `b` column-major) and a 16×8 row-major f32 `c`,
/// with one `mma.sync.aligned.m16n8k16` and fragments loaded straight from global memory in the
/// PTX ISA's layout: lane `l` holds rows `l/4` and `l/4 + 8`, column pairs `2(l%4)` and
/// `2(l%4) + 8`. Launch one block of 32 threads.
pub fn mma_bf16_16x8x16() -> Kernel {
    let mut b = KernelBuilder::new("mma_bf16_16x8x16");
    b.reqntid([32, 1, 1]);
    let a = b.param_slice::<Bf16>("a");
    let bt = b.param_slice::<Bf16>("bt");
    let c = b.param_slice_mut::<F32>("c");

    let lane = b.tid(Dim::X);
    let group = b.shr(lane, 2);
    let three = b.const_u32(3);
    let quad = b.and(lane, three);
    let pair = b.shl(quad, 1);
    let sixteen = b.const_u32(16);
    let eight = b.const_u32(8);
    let group8 = b.add(group, eight);

    // a: element (row, col) is at row*16 + col; each 32-bit word holds columns col, col+1.
    let a_lo = b.mad(group, sixteen, pair);
    let a_hi = b.mad(group8, sixteen, pair);
    let addr = |b: &mut KernelBuilder, idx: crate::builder::Value<U32>| b.element_address(&a, idx);
    let p0 = addr(&mut b, a_lo);
    let p1 = addr(&mut b, a_hi);
    let a0 = b.load::<B32>(StateSpace::Global, p0.reg(), 0, true);
    let a1 = b.load::<B32>(StateSpace::Global, p1.reg(), 0, true);
    let a2 = b.load::<B32>(StateSpace::Global, p0.reg(), 16, true);
    let a3 = b.load::<B32>(StateSpace::Global, p1.reg(), 16, true);

    // b: element (k, n) sits at bt[n*16 + k]; lane holds k = pair, pair+1 (and +8) of n = group.
    let b_idx = b.mad(group, sixteen, pair);
    let pb = b.element_address(&bt, b_idx);
    let b0 = b.load::<B32>(StateSpace::Global, pb.reg(), 0, true);
    let b1 = b.load::<B32>(StateSpace::Global, pb.reg(), 16, true);

    let zero = b.const_f32(0.0);
    let acc = [zero, zero, zero, zero];
    let d = b.mma_m16n8k16_bf16([a0, a1, a2, a3], [b0, b1], acc);

    // c: d0, d1 at row group, columns pair, pair+1; d2, d3 at row group+8.
    let c_lo = b.mad(group, eight, pair);
    let c_hi = b.mad(group8, eight, pair);
    let q0 = b.element_address(&c, c_lo);
    let q1 = b.element_address(&c, c_hi);
    b.store::<F32>(StateSpace::Global, q0.reg(), 0, d[0]);
    b.store::<F32>(StateSpace::Global, q0.reg(), 4, d[1]);
    b.store::<F32>(StateSpace::Global, q1.reg(), 0, d[2]);
    b.store::<F32>(StateSpace::Global, q1.reg(), 4, d[3]);
    b.finish()
}
