use crate::builder::KernelBuilder;
use crate::ir::{Dim, Imm, Kernel, Operand};
use crate::op::{Cmp, Op};
use crate::scalar::{Bf16, B32, F32, U32, U64};
use crate::types::{ScalarType, StateSpace};

/// Bytes between 8×8 core matrices along K (the descriptor's leading byte offset).
const LEADING_BYTES: u64 = 128;
/// Bytes between core matrices along M or N (the descriptor's stride byte offset).
const STRIDE_BYTES: u64 = 256;

/// One warpgroup (128 threads) computes `c = a × b` with a single
/// `wgmma.mma_async.m64n8k16.f32.bf16.bf16`: `a` is 64×16 row-major bf16, `b` is given as its
/// transpose `bt` (8×16 row-major bf16), `c` is 64×8 row-major f32. Both operands are staged in
/// shared memory in the unswizzled K-major layout of 8-row × 16-byte core matrices that the
/// matrix descriptors describe. sm_90a only. Launch one block of 128 threads.
pub fn wgmma_bf16_64x8x16() -> Kernel {
    let mut b = KernelBuilder::new("wgmma_bf16_64x8x16");
    b.reqntid([128, 1, 1]);
    let a = b.param_slice::<Bf16>("a");
    let bt = b.param_slice::<Bf16>("bt");
    let c = b.param_slice_mut::<F32>("c");
    let sa = b.shared_array::<Bf16>("a_tile", 64 * 16);
    let sb = b.shared_array::<Bf16>("b_tile", 8 * 16);

    let tid = b.tid(Dim::X);
    let one = b.const_u32(1);
    let seven = b.const_u32(7);
    let sixteen = b.const_u32(16);

    // Thread t moves the t-th 16-byte chunk of `a`: row t/2, K half t%2.
    let row = b.shr(tid, 1);
    let khalf = b.and(tid, one);
    let src = b.mul_wide_u32(tid, sixteen);
    let ga = b.add(a.base(), src);
    let chunk = b.load_v4::<B32>(StateSpace::Global, ga.reg(), 0, true);
    let core_row = b.shr(row, 3);
    let two = b.const_u32(2);
    let core = b.mad(core_row, two, khalf);
    let in_core = b.and(row, seven);
    let core_bytes = b.const_u32(LEADING_BYTES as u32);
    let off = b.mul(core, core_bytes);
    let off = b.mad(in_core, sixteen, off);
    let a_base = b.shared_base(&sa);
    let dst = b.add(a_base, off);
    b.store_v4(StateSpace::Shared, dst.reg(), 0, chunk);

    // The first 16 threads move `bt`: row n = t/2, K half t%2.
    let b_chunks = b.const_u32(16);
    let moves_b = b.setp(Cmp::Lt, tid, b_chunks);
    let b_base = b.shared_base(&sb);
    b.if_(moves_b, |b| {
        let gb = b.add(bt.base(), src);
        let chunk = b.load_v4::<B32>(StateSpace::Global, gb.reg(), 0, true);
        let off = b.mul(khalf, core_bytes);
        let off = b.mad(row, sixteen, off);
        let dst = b.add(b_base, off);
        b.store_v4(StateSpace::Shared, dst.reg(), 0, chunk);
    });
    // The tensor cores read shared memory through the async proxy.
    b.inst(Op::FenceProxyAsync, vec![], vec![]);
    b.bar_sync();

    let desc_a = descriptor(&mut b, a_base);
    let desc_b = descriptor(&mut b, b_base);
    let acc: Vec<_> = (0..4).map(|_| b.reg(ScalarType::F32)).collect();
    let zero = b.const_u32(0);
    let overwrite = b.setp(Cmp::Ne, zero, zero);
    b.inst(Op::WgmmaFence, vec![], vec![]);
    b.inst(
        Op::Wgmma {
            n: 8,
            a: crate::op::WgmmaInput::Bf16,
            b: crate::op::WgmmaInput::Bf16,
        },
        vec![Operand::Vector(
            acc.iter().map(|r| Operand::Reg(*r)).collect(),
        )],
        vec![
            desc_a.reg().into(),
            desc_b.reg().into(),
            overwrite.reg().into(),
            Operand::Imm(Imm::Int(1)),
            Operand::Imm(Imm::Int(1)),
            Operand::Imm(Imm::Int(0)),
            Operand::Imm(Imm::Int(0)),
        ],
    );
    b.inst(Op::WgmmaCommit, vec![], vec![]);
    b.inst(Op::WgmmaWait, vec![], vec![Operand::Imm(Imm::Int(0))]);

    // Warp w holds rows 16w..16w+15 in the m16n8 accumulator layout.
    let warp = b.shr(tid, 5);
    let thirty_one = b.const_u32(31);
    let lane = b.and(tid, thirty_one);
    let group = b.shr(lane, 2);
    let three = b.const_u32(3);
    let quad = b.and(lane, three);
    let col = b.shl(quad, 1);
    let eight = b.const_u32(8);
    let r0 = b.mad(warp, sixteen, group);
    let r1 = b.add(r0, eight);
    let i0 = b.mad(r0, eight, col);
    let i1 = b.mad(r1, eight, col);
    let p0 = b.element_address(&c, i0);
    let p1 = b.element_address(&c, i1);
    let d: Vec<crate::builder::Value<F32>> = acc
        .iter()
        .map(|r| crate::builder::Value::from_reg(*r).expect("accumulators are f32"))
        .collect();
    b.store(StateSpace::Global, p0.reg(), 0, d[0]);
    b.store(StateSpace::Global, p0.reg(), 4, d[1]);
    b.store(StateSpace::Global, p1.reg(), 0, d[2]);
    b.store(StateSpace::Global, p1.reg(), 4, d[3]);
    b.finish()
}

/// A shared-memory matrix descriptor without swizzling: start address, leading and stride byte
/// offsets, each in units of 16 bytes.
fn descriptor(
    b: &mut KernelBuilder,
    shared: crate::builder::Value<U32>,
) -> crate::builder::Value<U64> {
    let addr = b.cvt::<U64, U32>(shared);
    let units = b.shr(addr, 4);
    let mask = b.const_int::<U64>(0x3FFF);
    let start = b.and(units, mask);
    let fixed =
        b.const_int::<U64>((((STRIDE_BYTES >> 4) << 32) | ((LEADING_BYTES >> 4) << 16)) as i64);
    b.or(start, fixed)
}
