//! The fp32 SIMT GEMM: a 128×128 CTA tile, 256 threads each accumulating an 8×8 block in
//! registers, BK = 8 slabs double-buffered in shared memory (one barrier per slab: the next
//! slab is fetched into registers before the current one is consumed and stored after).
//!
//! Each thread owns rows `4·ty + {0..3}` and `64 + 4·ty + {0..3}` of the tile and the same
//! pattern of columns with `tx`, so its operands come from shared memory as two 16-byte loads
//! per operand and k step.

use super::epilogue::{flag, FLAG_VEC_A, FLAG_VEC_B};
use super::layout::Layout;
use super::params::declare;
use super::tile_load::TileLoader;
use crate::codegen::tensor::Format;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::F32;
use kernel_dsl::ir::{Dim, Kernel};
use kernel_dsl::op::{Cmp, Op, Rounding};
use kernel_dsl::{ScalarType, StateSpace};

/// Threads per CTA.
pub const SIMT_THREADS: u32 = 256;
/// Rows and columns of C per CTA.
pub const SIMT_TILE: u32 = 128;
const BK: u32 = 8;
/// Floats per shared row: 4 of padding keep the transposing stores of k-contiguous operands
/// free of bank conflicts while rows stay 16-byte aligned.
const PITCH: u32 = SIMT_TILE + 4;
const OPERAND_BYTES: u32 = BK * PITCH * 4;
const BUFFER_BYTES: u32 = 2 * OPERAND_BYTES;

/// Entry name of the SIMT kernel for `layout`.
pub fn simt_name(layout: Layout) -> String {
    format!("gemm_simt_f32_{}_128x128x8", layout.tag())
}

/// `acc += a · b` in place (`fma.rn.f32 acc, a, b, acc`).
pub fn fma_into(b: &mut KernelBuilder, acc: Value<F32>, x: Value<F32>, y: Value<F32>) {
    b.inst(
        Op::Fma {
            ty: ScalarType::F32,
            rnd: Rounding::Rn,
            ftz: false,
            sat: false,
        },
        vec![acc.reg().into()],
        vec![x.reg().into(), y.reg().into(), acc.reg().into()],
    );
}

pub fn build_simt(layout: Layout) -> Kernel {
    let mut b = KernelBuilder::new(simt_name(layout));
    b.reqntid([SIMT_THREADS, 1, 1]);
    let p = declare(&mut b, Format::F32, Format::F32);
    let smem = b.shared_array::<F32>("tiles", 2 * BUFFER_BYTES / 4);
    let tid = b.tid(Dim::X);
    let tile = b.const_u32(SIMT_TILE);
    let cx = b.ctaid(Dim::X);
    let cy = b.ctaid(Dim::Y);
    let tile_n = b.mul(cx, tile);
    let tile_m = b.mul(cy, tile);
    let vec_a = flag(&mut b, p.flags, FLAG_VEC_A);
    let vec_b = flag(&mut b, p.flags, FLAG_VEC_B);
    let la = TileLoader::new(
        &mut b,
        p.a,
        layout.a_k_contiguous(),
        tid,
        tile_m,
        p.m,
        p.lda,
        p.k,
        vec_a,
        BK,
        PITCH,
        0,
    );
    let lb = TileLoader::new(
        &mut b,
        p.b,
        layout.b_k_contiguous(),
        tid,
        tile_n,
        p.n,
        p.ldb,
        p.k,
        vec_b,
        BK,
        PITCH,
        OPERAND_BYTES,
    );
    let base = b.shared_base(&smem);
    let zero = b.const_f32(0.0);
    let acc: Vec<Value<F32>> = (0..64).map(|_| b.var(zero)).collect();

    let seven = b.const_u32(BK - 1);
    let kp = b.add(p.k, seven);
    let slabs = b.shr(kp, BK.trailing_zeros());
    let ra = la.vars(&mut b);
    let rb = lb.vars(&mut b);
    let k0 = b.const_u32(0);
    la.load(&mut b, k0, ra);
    lb.load(&mut b, k0, rb);
    la.store(&mut b, base, ra);
    lb.store(&mut b, base, rb);
    b.bar_sync();

    let c16 = b.const_u32(16);
    let four = b.const_u32(4);
    let fifteen = b.const_u32(15);
    let ty = b.shr(tid, 4);
    let tx = b.and(tid, fifteen);
    let a_rel = b.mul(ty, c16);
    let b_rel0 = b.mul(tx, c16);
    let opb = b.const_u32(OPERAND_BYTES);
    let b_rel = b.add(b_rel0, opb);
    let one = b.const_u32(1);
    let buf_bytes = b.const_u32(BUFFER_BYTES);
    let bk = b.const_u32(BK);
    b.for_range(k0, slabs, one, |b, t| {
        let parity = b.and(t, one);
        let cur_off = b.mul(parity, buf_bytes);
        let nxt_off = b.sub(buf_bytes, cur_off);
        let cur = b.add(base, cur_off);
        let nxt = b.add(base, nxt_off);
        let t1 = b.add(t, one);
        let has_next = b.setp(Cmp::Lt, t1, slabs);
        b.if_(has_next, |b| {
            let kn = b.mul(t1, bk);
            la.load(b, kn, ra);
            lb.load(b, kn, rb);
        });
        let pa = b.add(cur, a_rel);
        let pb = b.add(cur, b_rel);
        for kk in 0..BK as i64 {
            let row = kk * (PITCH as i64) * 4;
            let a_lo = b.load_v4::<F32>(StateSpace::Shared, pa.reg(), row, false);
            let a_hi = b.load_v4::<F32>(StateSpace::Shared, pa.reg(), row + 256, false);
            let b_lo = b.load_v4::<F32>(StateSpace::Shared, pb.reg(), row, false);
            let b_hi = b.load_v4::<F32>(StateSpace::Shared, pb.reg(), row + 256, false);
            let av: Vec<Value<F32>> = a_lo.into_iter().chain(a_hi).collect();
            let bv: Vec<Value<F32>> = b_lo.into_iter().chain(b_hi).collect();
            for (i, &x) in av.iter().enumerate() {
                for (j, &y) in bv.iter().enumerate() {
                    fma_into(b, acc[i * 8 + j], x, y);
                }
            }
        }
        b.if_(has_next, |b| {
            la.store(b, nxt, ra);
            lb.store(b, nxt, rb);
        });
        b.bar_sync();
    });

    // Epilogue: each accumulator to its element, bounds-checked.
    let sixty_four = b.const_u32(64);
    let ty4 = b.mul(ty, four);
    let tx4 = b.mul(tx, four);
    let row_lo = b.add(tile_m, ty4);
    let row_hi = b.add(row_lo, sixty_four);
    let col_lo = b.add(tile_n, tx4);
    let col_hi = b.add(col_lo, sixty_four);
    for i in 0..8u32 {
        let base_row = if i < 4 { row_lo } else { row_hi };
        let di = b.const_u32(i % 4);
        let row = b.add(base_row, di);
        let row_in = b.setp(Cmp::Lt, row, p.m);
        b.if_(row_in, |b| {
            let row_off = b.mul(row, p.ldc);
            for j in 0..8u32 {
                let base_col = if j < 4 { col_lo } else { col_hi };
                let dj = b.const_u32(j % 4);
                let col = b.add(base_col, dj);
                let col_in = b.setp(Cmp::Lt, col, p.n);
                b.if_(col_in, |b| {
                    let idx = b.add(row_off, col);
                    p.epilogue.store(b, idx, col, acc[(i * 8 + j) as usize]);
                });
            }
        });
    }
    b.finish()
}
