//! The tensor-core GEMM (sm_80+): bf16/f16 inputs through `ldmatrix` and
//! `mma.sync.m16n8k16`, f32 inputs as TF32 through `mma.sync.m16n8k8`, f32 accumulation.
//!
//! A 128×128 CTA tile, 8 warps as 2 (m) × 4 (n), each warp a 64×32 block of 4 × 4 mma tiles.
//! Slabs of 64 bytes of k (32 bf16/f16 or 16 f32 elements) flow through a four-stage
//! `cp.async` pipeline into padded dynamic shared memory (up to 80 KiB): three slabs are in
//! flight while one is multiplied, with one barrier per slab.

use super::async_load::{SlabLayout, SlabLoader, LOAD_THREADS, TILE_MN};
use super::epilogue::{flag, FLAG_VEC_A, FLAG_VEC_B};
use super::layout::Layout;
use super::params::declare;
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{AddrBase, Dim, Kernel, Operand};
use kernel_dsl::op::{Cmp, MatrixCount, MmaShape, Op};
use kernel_dsl::scalar::{B32, F32, U32};
use kernel_dsl::{ScalarType, StateSpace};

pub const MMA_THREADS: u32 = LOAD_THREADS;
pub const MMA_TILE_M: u32 = TILE_MN;
pub const MMA_TILE_N: u32 = TILE_MN;
const WARP_M: u32 = 64;
const WARP_N: u32 = 32;
const WARPS_N: u32 = 4;
/// Pipeline depth: slabs in shared memory at once (a power of two).
const STAGES: u32 = 4;

/// Dynamic shared memory of a specialization: `STAGES` slabs of A and B.
pub fn mma_shared_bytes(s: MmaSpec) -> u32 {
    let eb = s.input.bytes() as u32;
    let a = SlabLayout {
        k_contiguous: s.layout.a_k_contiguous(),
        elem_bytes: eb,
        core_matrices: false,
    };
    let b = SlabLayout {
        k_contiguous: s.layout.b_k_contiguous(),
        elem_bytes: eb,
        core_matrices: false,
    };
    STAGES * (a.bytes() + b.bytes())
}

/// One tensor-core specialization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MmaSpec {
    pub input: FloatType,
    pub output: FloatType,
    pub layout: Layout,
}

const fn spec(input: FloatType, output: FloatType, layout: Layout) -> MmaSpec {
    MmaSpec {
        input,
        output,
        layout,
    }
}

/// Every shipped tensor-core specialization: bf16 and f16 inputs with f32 or same-type output,
/// and TF32 (f32 in, f32 out), each in the three layouts.
pub const MMA_SPECS: [MmaSpec; 15] = [
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
    spec(FloatType::F32, FloatType::F32, Layout::Nn),
    spec(FloatType::F32, FloatType::F32, Layout::Nt),
    spec(FloatType::F32, FloatType::F32, Layout::Tn),
];

pub fn mma_spec_index(spec: MmaSpec) -> Option<usize> {
    MMA_SPECS.iter().position(|s| *s == spec)
}

fn mma_name(s: MmaSpec) -> String {
    let math = if s.input == FloatType::F32 {
        "tf32"
    } else {
        s.input.suffix()
    };
    format!(
        "gemm_mma_{math}_{}_{}_128x128",
        s.output.suffix(),
        s.layout.tag()
    )
}

/// Raw `[reg + offset]` operand.
fn at(addr: Value<U32>, offset: u32) -> Operand {
    Operand::Addr {
        base: AddrBase::Reg(addr.reg()),
        offset: offset as i64,
    }
}

fn fresh_b32(b: &mut KernelBuilder) -> Value<B32> {
    crate::codegen::fresh::<B32>(b)
}

fn ldmatrix_x4(
    b: &mut KernelBuilder,
    addr: Value<U32>,
    offset: u32,
    trans: bool,
) -> [Value<B32>; 4] {
    let d = [fresh_b32(b), fresh_b32(b), fresh_b32(b), fresh_b32(b)];
    b.inst(
        Op::Ldmatrix {
            count: MatrixCount::X4,
            trans,
        },
        vec![Operand::Vector(d.iter().map(|v| v.reg().into()).collect())],
        vec![at(addr, offset)],
    );
    d
}

fn ld_shared_b32(b: &mut KernelBuilder, addr: Value<U32>, offset: u32) -> Value<B32> {
    b.load::<B32>(StateSpace::Shared, addr.reg(), offset as i64, false)
}

/// `acc += a·b` in place on one m16n8 accumulator tile.
fn mma_into(
    b: &mut KernelBuilder,
    input: FloatType,
    acc: &[Value<F32>],
    a: &[Value<B32>],
    bf: &[Value<B32>],
) {
    let (shape, ty) = match input {
        FloatType::Bf16 => (MmaShape::M16n8k16, ScalarType::Bf16),
        FloatType::F16 => (MmaShape::M16n8k16, ScalarType::F16),
        FloatType::F32 => (MmaShape::M16n8k8, ScalarType::Tf32),
    };
    let vec_of = |regs: Vec<kernel_dsl::ir::Reg>| {
        Operand::Vector(regs.into_iter().map(Operand::Reg).collect())
    };
    let accs: Vec<_> = acc.iter().map(|v| v.reg()).collect();
    b.inst(
        Op::Mma {
            shape,
            d: ScalarType::F32,
            a: ty,
            b: ty,
            c: ScalarType::F32,
        },
        vec![vec_of(accs.clone())],
        vec![
            vec_of(a.iter().map(|v| v.reg()).collect()),
            vec_of(bf.iter().map(|v| v.reg()).collect()),
            vec_of(accs),
        ],
    );
}

pub fn build_mma(s: MmaSpec) -> Kernel {
    let mut b = KernelBuilder::new(mma_name(s));
    b.reqntid([MMA_THREADS, 1, 1]);
    let p = declare(&mut b, s.input, s.output);
    let eb = s.input.bytes() as u32;
    let la_layout = SlabLayout {
        k_contiguous: s.layout.a_k_contiguous(),
        elem_bytes: eb,
        core_matrices: false,
    };
    let lb_layout = SlabLayout {
        k_contiguous: s.layout.b_k_contiguous(),
        elem_bytes: eb,
        core_matrices: false,
    };
    let a_bytes = la_layout.bytes();
    let stage_bytes = a_bytes + lb_layout.bytes();
    let smem = b.dynamic_shared::<U32>("stages");
    let tid = b.tid(Dim::X);
    let tile = b.const_u32(TILE_MN);
    let cx = b.ctaid(Dim::X);
    let cy = b.ctaid(Dim::Y);
    let tile_n = b.mul(cx, tile);
    let tile_m = b.mul(cy, tile);
    let vec_a = flag(&mut b, p.flags, FLAG_VEC_A);
    let vec_b = flag(&mut b, p.flags, FLAG_VEC_B);
    let la = SlabLoader::new(&mut b, p.a, la_layout, tid, tile_m, p.m, p.lda, p.k, vec_a);
    let lb = SlabLoader::new(&mut b, p.b, lb_layout, tid, tile_n, p.n, p.ldb, p.k, vec_b);
    let base = b.shared_base(&smem);
    let a_off = b.const_u32(a_bytes);
    let zero_f = b.const_f32(0.0);
    // acc[(mi·4 + ni)·4 + r]
    let acc: Vec<Value<F32>> = (0..64).map(|_| b.var(zero_f)).collect();

    let bk = la_layout.bk();
    let bk_c = b.const_u32(bk);
    let bk_m1 = b.const_u32(bk - 1);
    let kp = b.add(p.k, bk_m1);
    let slabs = b.shr(kp, bk.trailing_zeros());

    // Lane geometry.
    let lane = b.lane_id();
    let warp = b.shr(tid, 5);
    let wn_mask = b.const_u32(WARPS_N - 1);
    let wn = b.and(warp, wn_mask);
    let wm = b.shr(warp, WARPS_N.trailing_zeros());
    let c_wm = b.const_u32(WARP_M);
    let c_wn = b.const_u32(WARP_N);
    let warp_m0 = b.mul(wm, c_wm);
    let warp_n0 = b.mul(wn, c_wn);
    let (a_lane, b_lane) =
        ldmatrix_lane_bases(&mut b, lane, warp_m0, warp_n0, la_layout, lb_layout);
    // TF32 fragments of mn-contiguous operands are loaded element by element (`ldmatrix`
    // transposes 16-bit elements only); k-contiguous ones use `ldmatrix` like 16-bit inputs.
    let (a_lane, b_lane) = if s.input == FloatType::F32 {
        let (a_sc, b_sc) = tf32_lane_bases(&mut b, lane, warp_m0, warp_n0, la_layout, lb_layout);
        (
            if la_layout.k_contiguous { a_lane } else { a_sc },
            if lb_layout.k_contiguous { b_lane } else { b_sc },
        )
    } else {
        (a_lane, b_lane)
    };

    let zero = b.const_u32(0);
    let one = b.const_u32(1);
    let stage_c = b.const_u32(stage_bytes);
    let stage_mask = b.const_u32(STAGES - 1);
    // Prologue: slabs 0 .. STAGES-2 in flight, one commit group each (empty past the end).
    for st in 0..STAGES - 1 {
        let slab = b.const_u32(st);
        let live = b.setp(Cmp::Lt, slab, slabs);
        b.if_(live, |b| {
            let k0 = b.mul(slab, bk_c);
            let off = b.const_u32(st * stage_bytes);
            let dst_a = b.add(base, off);
            let dst_b = b.add(dst_a, a_off);
            la.issue(b, dst_a, k0);
            lb.issue(b, dst_b, k0);
        });
        b.cp_async_commit();
    }
    let ahead = b.const_u32(STAGES - 1);
    b.for_range(zero, slabs, one, |b, t| {
        // Slab t has landed for this thread, then (barrier) for every thread; the barrier
        // also means every warp is done with slab t-1, whose stage is refilled next.
        b.cp_async_wait(STAGES - 2);
        b.bar_sync();
        let next = b.add(t, ahead);
        let live = b.setp(Cmp::Lt, next, slabs);
        b.if_(live, |b| {
            let k0 = b.mul(next, bk_c);
            let st = b.and(next, stage_mask);
            let off = b.mul(st, stage_c);
            let dst_a = b.add(base, off);
            let dst_b = b.add(dst_a, a_off);
            la.issue(b, dst_a, k0);
            lb.issue(b, dst_b, k0);
        });
        b.cp_async_commit();
        let st = b.and(t, stage_mask);
        let cur = b.mul(st, stage_c);
        let sa = b.add(base, cur);
        let sb = b.add(sa, a_off);
        let pa = b.add(sa, a_lane);
        let pb = b.add(sb, b_lane);
        if s.input == FloatType::F32 {
            tf32_slab(b, pa, pb, la_layout, lb_layout, &acc);
        } else {
            ldmatrix_slab(b, s.input, pa, pb, la_layout, lb_layout, &acc);
        }
    });
    b.cp_async_wait(0);

    // Epilogue: accumulator r of tile (mi, ni) is row g (+8 for r ≥ 2), column 2t (+1 for odd r).
    let c2 = b.const_u32(2);
    let c3 = b.const_u32(3);
    let g = b.shr(lane, 2);
    let t4 = b.and(lane, c3);
    let t2 = b.mul(t4, c2);
    let row0 = b.add(tile_m, warp_m0);
    let row0 = b.add(row0, g);
    let col0 = b.add(tile_n, warp_n0);
    let col0 = b.add(col0, t2);
    for mi in 0..4u32 {
        for half in 0..2u32 {
            let dr = b.const_u32(mi * 16 + half * 8);
            let row = b.add(row0, dr);
            let row_in = b.setp(Cmp::Lt, row, p.m);
            b.if_(row_in, |b| {
                let row_off = b.mul(row, p.ldc);
                for ni in 0..4u32 {
                    for odd in 0..2u32 {
                        let dc = b.const_u32(ni * 8 + odd);
                        let col = b.add(col0, dc);
                        let col_in = b.setp(Cmp::Lt, col, p.n);
                        let v = acc[((mi * 4 + ni) * 4 + half * 2 + odd) as usize];
                        b.if_(col_in, |b| {
                            let idx = b.add(row_off, col);
                            p.epilogue.store(b, idx, col, v);
                        });
                    }
                }
            });
        }
    }
    b.finish()
}

/// Byte offsets of this lane's `ldmatrix` row address within the A and B slabs (for
/// mma tile (0, 0) and k step 0).
fn ldmatrix_lane_bases(
    b: &mut KernelBuilder,
    lane: Value<U32>,
    warp_m0: Value<U32>,
    warp_n0: Value<U32>,
    la: SlabLayout,
    lb: SlabLayout,
) -> (Value<U32>, Value<U32>) {
    let c7 = b.const_u32(7);
    let c15 = b.const_u32(15);
    let two = b.const_u32(2);
    let i = b.shr(lane, 3);
    let r = b.and(lane, c7);
    let c1 = b.const_u32(1);
    let i_lo = b.and(i, c1);
    let i_hi = b.shr(i, 1);
    let pa = b.const_u32(la.pitch());
    let pb = b.const_u32(lb.pitch());
    let a = if la.k_contiguous {
        // Matrices (rows 0-7 | 8-15) × (k 0-7 | 8-15): lanes 0-15 rows, lanes 16-31 k + 8.
        let row = b.and(lane, c15);
        let row = b.add(warp_m0, row);
        let k_half = b.shr(lane, 4);
        let k_bytes = b.shl(k_half, 4);
        b.mad(row, pa, k_bytes)
    } else {
        // Transposed: address rows are k = r + 8·(i/2), m offset 8·(i%2).
        let k = b.shl(i_hi, 3);
        let k = b.add(k, r);
        let m = b.shl(i_lo, 3);
        let m = b.add(warp_m0, m);
        let m_bytes = b.mul(m, two);
        b.mad(k, pa, m_bytes)
    };
    let bb = if lb.k_contiguous {
        // Rows n = r + 8·(i/2), k offset 8·(i%2): registers (0,1) n block 0, (2,3) block 1.
        let n = b.shl(i_hi, 3);
        let n = b.add(n, r);
        let n = b.add(warp_n0, n);
        let k_bytes = b.shl(i_lo, 4);
        b.mad(n, pb, k_bytes)
    } else {
        // Transposed: address rows k = r + 8·(i%2), n offset 8·(i/2).
        let k = b.shl(i_lo, 3);
        let k = b.add(k, r);
        let n = b.shl(i_hi, 3);
        let n = b.add(warp_n0, n);
        let n_bytes = b.mul(n, two);
        b.mad(k, pb, n_bytes)
    };
    (a, bb)
}

/// One 64-byte slab of bf16/f16: two k16 steps of 4 × 4 `mma.m16n8k16`.
fn ldmatrix_slab(
    b: &mut KernelBuilder,
    input: FloatType,
    pa: Value<U32>,
    pb: Value<U32>,
    la: SlabLayout,
    lb: SlabLayout,
    acc: &[Value<F32>],
) {
    for ks in 0..2u32 {
        let a_frags: Vec<[Value<B32>; 4]> = (0..4u32)
            .map(|mi| {
                let off = if la.k_contiguous {
                    mi * 16 * la.pitch() + ks * 32
                } else {
                    ks * 16 * la.pitch() + mi * 32
                };
                ldmatrix_x4(b, pa, off, !la.k_contiguous)
            })
            .collect();
        let b_frags: Vec<[Value<B32>; 2]> = (0..2u32)
            .flat_map(|nj| {
                let off = if lb.k_contiguous {
                    nj * 16 * lb.pitch() + ks * 32
                } else {
                    ks * 16 * lb.pitch() + nj * 32
                };
                let r = ldmatrix_x4(b, pb, off, !lb.k_contiguous);
                [[r[0], r[1]], [r[2], r[3]]]
            })
            .collect();
        for (mi, af) in a_frags.iter().enumerate() {
            for (ni, bf) in b_frags.iter().enumerate() {
                let t = (mi * 4 + ni) * 4;
                mma_into(b, input, &acc[t..t + 4], af, bf);
            }
        }
    }
}

/// Byte offsets of this lane's first A and B fragment elements for TF32 (lane = 4g + t):
/// A element (g, t) and B element (k t, n g) of mma tile (0, 0), k step 0.
fn tf32_lane_bases(
    b: &mut KernelBuilder,
    lane: Value<U32>,
    warp_m0: Value<U32>,
    warp_n0: Value<U32>,
    la: SlabLayout,
    lb: SlabLayout,
) -> (Value<U32>, Value<U32>) {
    let c3 = b.const_u32(3);
    let four = b.const_u32(4);
    let g = b.shr(lane, 2);
    let t = b.and(lane, c3);
    let pa = b.const_u32(la.pitch());
    let pb = b.const_u32(lb.pitch());
    let m = b.add(warp_m0, g);
    let n = b.add(warp_n0, g);
    let t_bytes = b.mul(t, four);
    let a = if la.k_contiguous {
        b.mad(m, pa, t_bytes)
    } else {
        let m_bytes = b.mul(m, four);
        b.mad(t, pa, m_bytes)
    };
    let bb = if lb.k_contiguous {
        b.mad(n, pb, t_bytes)
    } else {
        let n_bytes = b.mul(n, four);
        b.mad(t, pb, n_bytes)
    };
    (a, bb)
}

/// One 64-byte slab of f32: two k8 steps of 4 × 4 `mma.m16n8k8.tf32`, fragments of
/// k-contiguous operands by `ldmatrix`, of mn-contiguous ones element by element (the tensor
/// core reads the top 19 bits of each f32).
fn tf32_slab(
    b: &mut KernelBuilder,
    pa: Value<U32>,
    pb: Value<U32>,
    la: SlabLayout,
    lb: SlabLayout,
    acc: &[Value<F32>],
) {
    for ks in 0..2u32 {
        let a_frags: Vec<Vec<Value<B32>>> = (0..4u32)
            .map(|mi| {
                if la.k_contiguous {
                    // Matrices (rows 0-7 | 8-15) × (k 0-3 | 4-7) are a0..a3 as 32-bit pairs.
                    return ldmatrix_x4(b, pa, mi * 16 * la.pitch() + ks * 32, false).to_vec();
                }
                (0..4u32)
                    .map(|r| {
                        let m = mi * 16 + 8 * (r & 1);
                        let k = ks * 8 + 4 * (r >> 1);
                        let off = if la.k_contiguous {
                            m * la.pitch() + k * 4
                        } else {
                            k * la.pitch() + m * 4
                        };
                        ld_shared_b32(b, pa, off)
                    })
                    .collect()
            })
            .collect();
        if lb.k_contiguous {
            let b_frags: Vec<[Value<B32>; 2]> = (0..2u32)
                .flat_map(|nj| {
                    let r = ldmatrix_x4(b, pb, nj * 16 * lb.pitch() + ks * 32, false);
                    [[r[0], r[1]], [r[2], r[3]]]
                })
                .collect();
            for (mi, af) in a_frags.iter().enumerate() {
                for (ni, bf) in b_frags.iter().enumerate() {
                    let t = (mi * 4 + ni) * 4;
                    mma_into(b, FloatType::F32, &acc[t..t + 4], af, bf);
                }
            }
            continue;
        }
        let b_frags: Vec<Vec<Value<B32>>> = (0..4u32)
            .map(|ni| {
                (0..2u32)
                    .map(|r| {
                        let n = ni * 8;
                        let k = ks * 8 + 4 * r;
                        let off = if lb.k_contiguous {
                            n * lb.pitch() + k * 4
                        } else {
                            k * lb.pitch() + n * 4
                        };
                        ld_shared_b32(b, pb, off)
                    })
                    .collect()
            })
            .collect();
        for (mi, af) in a_frags.iter().enumerate() {
            for (ni, bf) in b_frags.iter().enumerate() {
                let t = (mi * 4 + ni) * 4;
                mma_into(b, FloatType::F32, &acc[t..t + 4], af, bf);
            }
        }
    }
}
