//! The sm_90a GEMM for `C = A·Bᵀ` (layout NT, both operands k-contiguous) with bf16/f16
//! inputs: `wgmma.mma_async.m64n128k16` reading both operands from shared memory through
//! matrix descriptors, f32 accumulation in registers.
//!
//! A 128×128 CTA tile, two warpgroups of 64×128 each. Slabs of 64 k (128 bytes per row) are
//! staged by `cp.async` (or the bounds-checked scalar path) into the unswizzled K-major
//! core-matrix layout, four stages deep; each slab is four `wgmma` k16 steps per warpgroup,
//! left in flight while the next slab's copies are issued and its barrier passed.

use super::async_load::{SlabLayout, SlabLoader, CORE_GROUP_BYTES, LOAD_THREADS, TILE_MN};
use super::epilogue::{flag, FLAG_VEC_A, FLAG_VEC_B};
use super::layout::Layout;
use super::matrix::Mat;
use super::params::declare;
use super::transpose_load::TransposedLoader;
use super::wgmma_store::store_accumulators;
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Dim, Imm, Kernel, Operand};
use kernel_dsl::op::{Cmp, Op};
use kernel_dsl::scalar::{Pred, F32, U32, U64};

pub const WGMMA_THREADS: u32 = LOAD_THREADS;
/// Slabs in shared memory: one being multiplied, one whose wgmma may still be in flight, and
/// two landing (a power of two).
const STAGES: u32 = 4;
const SLAB: SlabLayout = SlabLayout {
    k_contiguous: true,
    elem_bytes: 2,
    core_matrices: true,
};
/// Byte distance between K-adjacent core matrices (the descriptor's leading byte offset).
const LEADING_BYTES: u64 = 128;
/// Accumulator columns per warpgroup (the instruction's N).
const WG_N: u32 = 128;

/// One wgmma specialization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WgmmaSpec {
    pub input: FloatType,
    pub output: FloatType,
    pub layout: Layout,
}

const fn spec(input: FloatType, output: FloatType, layout: Layout) -> WgmmaSpec {
    WgmmaSpec {
        input,
        output,
        layout,
    }
}

/// bf16 and f16 inputs, f32 or same-type output, every layout.
pub const WGMMA_SPECS: [WgmmaSpec; 12] = [
    spec(FloatType::Bf16, FloatType::F32, Layout::Nn),
    spec(FloatType::Bf16, FloatType::F32, Layout::Nt),
    spec(FloatType::Bf16, FloatType::F32, Layout::Tn),
    spec(FloatType::Bf16, FloatType::Bf16, Layout::Nn),
    spec(FloatType::Bf16, FloatType::Bf16, Layout::Nt),
    spec(FloatType::Bf16, FloatType::Bf16, Layout::Tn),
    spec(FloatType::F16, FloatType::F32, Layout::Nn),
    spec(FloatType::F16, FloatType::F32, Layout::Nt),
    spec(FloatType::F16, FloatType::F32, Layout::Tn),
    spec(FloatType::F16, FloatType::F16, Layout::Nn),
    spec(FloatType::F16, FloatType::F16, Layout::Nt),
    spec(FloatType::F16, FloatType::F16, Layout::Tn),
];

pub fn wgmma_spec_index(spec: WgmmaSpec) -> Option<usize> {
    WGMMA_SPECS.iter().position(|s| *s == spec)
}

/// Dynamic shared memory of every wgmma specialization.
pub const fn wgmma_shared_bytes() -> u32 {
    STAGES * 2 * SLAB.bytes()
}

/// The constant fields of a descriptor: no swizzle, leading and stride byte offsets in 16-byte
/// units.
const DESC_BITS: u64 = ((CORE_GROUP_BYTES as u64 >> 4) << 32) | ((LEADING_BYTES >> 4) << 16);

/// The descriptor of the core-matrix block starting at shared address `addr`.
fn descriptor(b: &mut KernelBuilder, addr: Value<U32>) -> Value<U64> {
    let wide = b.cvt::<U64, U32>(addr);
    let units = b.shr(wide, 4);
    let mask = b.const_int::<U64>(0x3FFF);
    let start = b.and(units, mask);
    let fixed = b.const_int::<U64>(DESC_BITS as i64);
    b.or(start, fixed)
}

pub fn build_wgmma(s: WgmmaSpec) -> Kernel {
    let name = format!(
        "gemm_wgmma_{}_{}_{}_128x128",
        s.input.suffix(),
        s.output.suffix(),
        s.layout.tag()
    );
    let mut b = KernelBuilder::new(name);
    b.reqntid([WGMMA_THREADS, 1, 1]);
    let p = declare(&mut b, s.input, s.output);
    let smem = b.dynamic_shared::<U32>("stages");
    let tid = b.tid(Dim::X);
    let tile = b.const_u32(TILE_MN);
    let cx = b.ctaid(Dim::X);
    let cy = b.ctaid(Dim::Y);
    let tile_n = b.mul(cx, tile);
    let tile_m = b.mul(cy, tile);
    let vec_a = flag(&mut b, p.flags, FLAG_VEC_A);
    let vec_b = flag(&mut b, p.flags, FLAG_VEC_B);
    let la = Loader::new(
        &mut b,
        s.layout.a_k_contiguous(),
        p.a,
        tid,
        tile_m,
        p.m,
        p.lda,
        p.k,
        vec_a,
    );
    let lb = Loader::new(
        &mut b,
        s.layout.b_k_contiguous(),
        p.b,
        tid,
        tile_n,
        p.n,
        p.ldb,
        p.k,
        vec_b,
    );
    let base = b.shared_base(&smem);
    let slab_bytes = b.const_u32(SLAB.bytes());
    let stage_bytes = b.const_u32(2 * SLAB.bytes());
    let zero_f = b.const_f32(0.0);
    let acc: Vec<Value<F32>> = (0..WG_N / 2).map(|_| b.var(zero_f)).collect();

    let bk = SLAB.bk();
    let bk_c = b.const_u32(bk);
    let bk_m1 = b.const_u32(bk - 1);
    let kp = b.add(p.k, bk_m1);
    let slabs = b.shr(kp, bk.trailing_zeros());
    let zero = b.const_u32(0);
    let one = b.const_u32(1);

    // Prologue: slabs 0 .. STAGES-3 in flight, one commit group each.
    for st in 0..STAGES - 2 {
        let slab = b.const_u32(st);
        let live = b.setp(Cmp::Lt, slab, slabs);
        b.if_(live, |b| {
            let k0 = b.mul(slab, bk_c);
            let off = b.const_u32(st * 2 * SLAB.bytes());
            let dst_a = b.add(base, off);
            let dst_b = b.add(dst_a, slab_bytes);
            la.prefetch(b, k0);
            lb.prefetch(b, k0);
            la.fill(b, dst_a, k0);
            lb.fill(b, dst_b, k0);
        });
        b.cp_async_commit();
    }
    let first = b.const_u32(STAGES - 2);
    let live = b.setp(Cmp::Lt, first, slabs);
    b.if_(live, |b| {
        let k0 = b.mul(first, bk_c);
        la.prefetch(b, k0);
        lb.prefetch(b, k0);
    });

    // Warpgroup g multiplies rows 64g.. of the A slab.
    let wg = b.shr(tid, 7);
    let wg_bytes = b.const_u32(8 * CORE_GROUP_BYTES);
    let a_rel = b.mul(wg, wg_bytes);
    let always = b.setp(Cmp::Eq, zero, zero);
    let ahead = b.const_u32(STAGES - 2);
    let stage_mask = b.const_u32(STAGES - 1);
    b.for_range(zero, slabs, one, |b, t| {
        // Slab t has landed (this thread's copies) and is visible to the async proxy; after
        // the barrier every thread's copies have, and every thread has retired the wgmma of
        // slab t-2, whose stage is refilled next.
        b.cp_async_wait(STAGES - 3);
        b.inst(Op::FenceProxyAsync, vec![], vec![]);
        b.bar_sync();
        let rd = b.and(t, stage_mask);
        let off = b.mul(rd, stage_bytes);
        let sa = b.add(base, off);
        let sb = b.add(sa, slab_bytes);
        let sa = b.add(sa, a_rel);
        let da = descriptor(b, sa);
        let db = descriptor(b, sb);
        b.inst(Op::WgmmaFence, vec![], vec![]);
        for ks in 0..(bk / 16) as i64 {
            // Each k16 step is the next two core matrices along K (256 bytes, 16 units).
            let step = b.const_int::<U64>(ks * 16);
            let da_k = b.add(da, step);
            let db_k = b.add(db, step);
            let operands = WgmmaOperands {
                a: da_k,
                b: db_k,
                a_mn_major: false,
                b_mn_major: false,
            };
            mma_async(b, s.input, &acc, operands, always);
        }
        b.inst(Op::WgmmaCommit, vec![], vec![]);
        // The next slab's copies overlap this slab's wgmma.
        let next = b.add(t, ahead);
        let live = b.setp(Cmp::Lt, next, slabs);
        b.if_(live, |b| {
            let wr = b.and(next, stage_mask);
            let k0 = b.mul(next, bk_c);
            let off = b.mul(wr, stage_bytes);
            let dst_a = b.add(base, off);
            let dst_b = b.add(dst_a, slab_bytes);
            la.fill(b, dst_a, k0);
            lb.fill(b, dst_b, k0);
        });
        let after = b.add(next, one);
        let live = b.setp(Cmp::Lt, after, slabs);
        b.if_(live, |b| {
            let k0 = b.mul(after, bk_c);
            la.prefetch(b, k0);
            lb.prefetch(b, k0);
        });
        b.cp_async_commit();

        // Keep this slab's group in flight while the next one is prepared.
        b.inst(Op::WgmmaWait, vec![], vec![Operand::Imm(Imm::Int(1))]);
    });
    b.inst(Op::WgmmaWait, vec![], vec![Operand::Imm(Imm::Int(0))]);
    b.cp_async_wait(0);

    let c64 = b.const_u32(64);
    let row0 = b.mad(wg, c64, tile_m);
    store_accumulators(&mut b, &p, &acc, tid, row0, tile_n);
    b.finish()
}

/// How one operand reaches the core-matrix layout: by `cp.async` when it is k-contiguous,
/// transposed through registers otherwise.
enum Loader {
    Async(SlabLoader),
    Transposed(TransposedLoader),
}

impl Loader {
    #[allow(clippy::too_many_arguments)]
    fn new(
        b: &mut KernelBuilder,
        k_contiguous: bool,
        mat: Mat,
        tid: Value<U32>,
        tile0: Value<U32>,
        extent: Value<U32>,
        ld: Value<U32>,
        k: Value<U32>,
        vec_ok: Value<Pred>,
    ) -> Loader {
        if k_contiguous {
            Loader::Async(SlabLoader::new(
                b, mat, SLAB, tid, tile0, extent, ld, k, vec_ok,
            ))
        } else {
            Loader::Transposed(TransposedLoader::new(
                b, mat, tid, tile0, extent, ld, k, vec_ok,
            ))
        }
    }

    /// Starts reading the slab at `k0` into registers (transposed operands only).
    fn prefetch(&self, b: &mut KernelBuilder, k0: Value<U32>) {
        if let Loader::Transposed(l) = self {
            l.load(b, k0);
        }
    }

    /// Fills the shared slab at `dst` with the slab at `k0`: `cp.async` copies, or the
    /// registers of the last [`Loader::prefetch`] (which must have been of `k0`).
    fn fill(&self, b: &mut KernelBuilder, dst: Value<U32>, k0: Value<U32>) {
        match self {
            Loader::Async(l) => l.issue(b, dst, k0),
            Loader::Transposed(l) => l.store(b, dst),
        }
    }
}

/// The shared-memory operands of one `wgmma` k16 step: their descriptors and whether each is
/// stored MN-major (read transposed).
pub struct WgmmaOperands {
    pub a: Value<U64>,
    pub b: Value<U64>,
    pub a_mn_major: bool,
    pub b_mn_major: bool,
}

/// `acc += A·B` for one k16 step over a warpgroup: `wgmma.mma_async.m64nNk16` with N twice the
/// accumulator count, `accumulate` false to overwrite instead.
pub fn mma_async(
    b: &mut KernelBuilder,
    input: FloatType,
    acc: &[Value<F32>],
    operands: WgmmaOperands,
    accumulate: Value<Pred>,
) {
    let flag = |on: bool| Operand::Imm(Imm::Int(on as i64));
    b.inst(
        Op::Wgmma {
            n: acc.len() as u32 * 2,
            a: input.wgmma_input(),
            b: input.wgmma_input(),
        },
        vec![Operand::Vector(
            acc.iter().map(|v| Operand::Reg(v.reg())).collect(),
        )],
        vec![
            operands.a.reg().into(),
            operands.b.reg().into(),
            accumulate.reg().into(),
            flag(true),
            flag(true),
            flag(operands.a_mn_major),
            flag(operands.b_mn_major),
        ],
    );
}
