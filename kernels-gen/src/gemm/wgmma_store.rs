//! Storing a warpgroup's `wgmma` accumulators through the epilogue.

use super::epilogue::{flag, FLAG_PLAIN_PAIRS};
use super::params::GemmParams;
use crate::codegen::{bf16, half};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{F32, U32};
use kernel_dsl::StateSpace;

/// Stores the `m64nN` f32 accumulator fragment `acc` (N = `acc.len() * 2`) of the warpgroup
/// whose first output row is `row0` and first column `col0`. Warp w of the warpgroup holds
/// rows 16w + {lane/4, lane/4 + 8}; register 4j + r is column 8j + 2(lane%4) + r%2, the
/// second row for r ≥ 2. Elements outside `m × n` are skipped.
pub fn store_accumulators(
    b: &mut KernelBuilder,
    p: &GemmParams,
    acc: &[Value<F32>],
    tid: Value<U32>,
    row0: Value<U32>,
    col0: Value<U32>,
) {
    let tile_row0 = row0;
    let tile_col0 = col0;
    let (row0, col0) = fragment_origin(b, tid, row0, col0);
    // A plain product over a whole tile with even pitches: each thread's two adjacent
    // columns are stored as one pair, at immediate offsets from one address per row.
    let plain = flag(b, p.flags, FLAG_PLAIN_PAIRS);
    let rows = b.const_u32(64);
    let row_end = b.add(tile_row0, rows);
    let cols = b.const_u32(acc.len() as u32 * 2);
    let col_end = b.add(tile_col0, cols);
    let rows_in = b.setp(Cmp::Le, row_end, p.m);
    let cols_in = b.setp(Cmp::Le, col_end, p.n);
    let zero = b.const_u32(0);
    let no = b.setp(Cmp::Ne, zero, zero);
    let yes = b.setp(Cmp::Eq, zero, zero);
    let fast = b.var(no);
    b.if_(plain, |b| {
        b.if_(rows_in, |b| b.if_(cols_in, |b| b.assign(fast, yes)));
    });
    b.if_else(
        fast,
        |b| store_pairs(b, p, acc, row0, col0),
        |b| store_checked(b, p, acc, row0, col0),
    );
}

/// This thread's first row and column of the warpgroup tile at (`row0`, `col0`).
fn fragment_origin(
    b: &mut KernelBuilder,
    tid: Value<U32>,
    row0: Value<U32>,
    col0: Value<U32>,
) -> (Value<U32>, Value<U32>) {
    let lane = b.lane_id();
    let c2 = b.const_u32(2);
    let c3 = b.const_u32(3);
    let c16 = b.const_u32(16);
    let warp = b.shr(tid, 5);
    let w = b.and(warp, c3);
    let g = b.shr(lane, 2);
    let t4 = b.and(lane, c3);
    let t2 = b.mul(t4, c2);
    let row0 = b.mad(w, c16, row0);
    let row0 = b.add(row0, g);
    (row0, b.add(col0, t2))
}

/// Every element of the fragment in bounds; two adjacent columns per store.
fn store_pairs(
    b: &mut KernelBuilder,
    p: &GemmParams,
    acc: &[Value<F32>],
    row0: Value<U32>,
    col0: Value<U32>,
) {
    let c = p.epilogue.c;
    let bytes = c.format.bytes() as i64;
    for half in 0..2u32 {
        let dr = b.const_u32(half * 8);
        let row = b.add(row0, dr);
        let first = b.mad(row, p.ldc, col0);
        let addr = c.address(b, first);
        for j in 0..acc.len() / 4 {
            let lo = acc[4 * j + 2 * half as usize];
            let hi = acc[4 * j + 2 * half as usize + 1];
            let offset = j as i64 * 8 * bytes;
            match c.format {
                FloatType::F32 => {
                    b.store(StateSpace::Global, addr.reg(), offset, lo);
                    b.store(StateSpace::Global, addr.reg(), offset + 4, hi);
                }
                FloatType::Bf16 => {
                    let word = bf16::pack2(b, lo, hi);
                    b.store(StateSpace::Global, addr.reg(), offset, word);
                }
                FloatType::F16 => {
                    let word = half::pack2(b, lo, hi);
                    b.store(StateSpace::Global, addr.reg(), offset, word);
                }
            }
        }
    }
}

/// Element by element through the epilogue, skipping those outside `m × n`.
fn store_checked(
    b: &mut KernelBuilder,
    p: &GemmParams,
    acc: &[Value<F32>],
    row0: Value<U32>,
    col0: Value<U32>,
) {
    let zero = b.const_u32(0);
    for_each_in_bounds(b, p, acc, (row0, col0), (p.ldc, zero), |b, idx, col, v| {
        p.epilogue.store(b, idx, col, v)
    });
}

/// Calls `store(idx, col, value)` for each fragment element inside `m × n`, `idx` being
/// `base + row·pitch + col` for `(pitch, base)` = `layout`; `origin` is this thread's first
/// row and column.
fn for_each_in_bounds(
    b: &mut KernelBuilder,
    p: &GemmParams,
    acc: &[Value<F32>],
    origin: (Value<U32>, Value<U32>),
    layout: (Value<U32>, Value<U32>),
    store: impl Fn(&mut KernelBuilder, Value<U32>, Value<U32>, Value<F32>),
) {
    let (row0, col0) = origin;
    let (pitch, base) = layout;
    for half in 0..2u32 {
        let dr = b.const_u32(half * 8);
        let row = b.add(row0, dr);
        let row_in = b.setp(Cmp::Lt, row, p.m);
        b.if_(row_in, |b| {
            let row_off = b.mad(row, pitch, base);
            for j in 0..acc.len() as u32 / 4 {
                for odd in 0..2u32 {
                    let dc = b.const_u32(j * 8 + odd);
                    let col = b.add(col0, dc);
                    let col_in = b.setp(Cmp::Lt, col, p.n);
                    let v = acc[(4 * j + 2 * half + odd) as usize];
                    b.if_(col_in, |b| {
                        let idx = b.add(row_off, col);
                        store(b, idx, col, v);
                    });
                }
            }
        });
    }
}
