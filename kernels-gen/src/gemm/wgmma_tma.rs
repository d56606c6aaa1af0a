//! The sm_90a GEMM fed by the bulk tensor copy (TMA): bf16/f16 inputs, f32 accumulation in
//! `wgmma.mma_async.m64n256k16`, every layout.
//!
//! A 128×256 CTA tile and three warpgroups. Warpgroup 0 is the producer: one thread copies
//! each 64-deep k-slab of A and B into a ring of [`STAGES`] shared-memory stages with
//! `cp.async.bulk.tensor`, the bytes completing on the stage's `full` barrier, after waiting
//! on its `empty` barrier for the consumers to release it. Warpgroups 1 and 2 are the
//! consumers: each waits for a stage to fill, multiplies its 64 rows of A by all 256 columns
//! of B, and releases the stage once those `wgmma`s have retired. The producer gives up
//! registers (`setmaxnreg.dec`) so the consumers can hold their 128 accumulators each.
//!
//! Tiles land 128-byte swizzled: k-contiguous operands as rows of 64 k (one box per operand),
//! the others as 64-wide MN blocks over 64 k rows (read through transposed descriptors), so no
//! operand is rearranged by threads. The copy engine fills boxes that overhang the matrix with
//! zeros, so ragged m, n and k need no bounds checks until the epilogue.

use super::layout::Layout;
use super::params::declare;
use super::tma;
use super::wgmma::{mma_async, WgmmaOperands, WGMMA_SPECS};
use super::wgmma_store::{store_accumulators, store_partials};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Dim, Imm, Kernel, Operand};
use kernel_dsl::op::{Cmp, Op};
use kernel_dsl::scalar::{Pred, F32, U32, U64};

/// Output rows per CTA (two consumer warpgroups of 64).
pub const TMA_TILE_M: u32 = 128;
/// Output columns per CTA (the instruction's N).
pub const TMA_TILE_N: u32 = 256;
/// Depth of one k-slab: 64 16-bit elements, one 128-byte swizzle row.
pub const TMA_BK: u32 = 64;
/// Width of one box along M or N for operands stored MN-contiguous (one swizzle row).
pub const MN_BOX: u32 = 64;
pub const TMA_THREADS: u32 = 384;
const STAGES: u32 = 4;
const A_BYTES: u32 = TMA_TILE_M * TMA_BK * 2;
const B_BYTES: u32 = TMA_TILE_N * TMA_BK * 2;
const STAGE_BYTES: u32 = A_BYTES + B_BYTES;
/// The 128-byte swizzle repeats every 1024 bytes; stages start on that boundary.
const SWIZZLE_ATOM: u32 = 1024;
/// Bytes of one 64-wide MN block over a slab's 64 k rows.
const MN_BLOCK_BYTES: u32 = MN_BOX * TMA_BK * 2;
/// Registers per thread after the split: the producer keeps few, the consumers take the rest
/// (128 × 40 + 256 × 232 ≤ 64 Ki).
const PRODUCER_REGS: u32 = 40;
const CONSUMER_REGS: u32 = 232;

/// Dynamic shared memory: the stages, their barriers, and slack to align the first stage.
pub const fn tma_shared_bytes() -> u32 {
    SWIZZLE_ATOM + STAGES * STAGE_BYTES + 2 * STAGES * 8
}

/// One TMA-fed specialization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TmaSpec {
    pub input: FloatType,
    pub output: FloatType,
    pub layout: Layout,
    /// Each CTA multiplies one k-range of a tile and writes its raw f32 sums to a partials
    /// buffer (its `c`, one `m × n` matrix per range and batch), which [`super::split_k`]
    /// reduces and finishes.
    pub split_k: bool,
}

/// The specializations of the cp.async kernel ([`WGMMA_SPECS`]: bf16 and f16 inputs, f32 or
/// same-type output, every layout), then a split-k form of each with f32 output.
pub const TMA_SPECS: [TmaSpec; 18] = tma_specs();

const fn tma_specs() -> [TmaSpec; 18] {
    let mut out = [TmaSpec {
        input: FloatType::Bf16,
        output: FloatType::F32,
        layout: Layout::Nn,
        split_k: false,
    }; 18];
    let (mut i, mut next) = (0, WGMMA_SPECS.len());
    while i < WGMMA_SPECS.len() {
        let w = WGMMA_SPECS[i];
        out[i] = TmaSpec {
            input: w.input,
            output: w.output,
            layout: w.layout,
            split_k: false,
        };
        if matches!(w.output, FloatType::F32) {
            out[next] = TmaSpec {
                split_k: true,
                ..out[i]
            };
            next += 1;
        }
        i += 1;
    }
    assert!(
        next == out.len(),
        "one split form per f32-output specialization"
    );
    out
}

pub fn tma_spec_index(spec: TmaSpec) -> Option<usize> {
    TMA_SPECS.iter().position(|s| *s == spec)
}

/// How one operand's slab sits in shared memory, and how `wgmma` reads it.
#[derive(Clone, Copy)]
struct Operand2d {
    /// Address of the operand's tensor map.
    map: Value<U64>,
    /// k-contiguous: one box of `rows` × 64 k. Otherwise `rows / 64` boxes of 64 k rows.
    k_major: bool,
    /// Rows of the tile along M or N.
    rows: u32,
}

impl Operand2d {
    /// Copies the slab at `k0` (tile origin `mn0`, batch `z`) to `dst`, completing on `bar`.
    fn load(
        self,
        b: &mut KernelBuilder,
        dst: Value<U32>,
        mn0: Value<U32>,
        k0: Value<U32>,
        z: Value<U32>,
        bar: Value<U32>,
    ) {
        if self.k_major {
            tma::tensor_load(b, dst, self.map, &[k0, mn0, z], bar);
            return;
        }
        for blk in 0..self.rows / MN_BOX {
            let dmn = b.const_u32(blk * MN_BOX);
            let mn = b.add(mn0, dmn);
            let off = b.const_u32(blk * MN_BLOCK_BYTES);
            let at = b.add(dst, off);
            tma::tensor_load(b, at, self.map, &[mn, k0, z], bar);
        }
    }

    /// The descriptor of k16 step `ks` of the slab at shared address `base`.
    fn descriptor(self, b: &mut KernelBuilder, base: Value<U32>, ks: u32) -> Value<U64> {
        // K-major: the step is 16 elements (32 bytes) along the swizzled row; 8-row groups
        // are 1024 bytes apart. MN-major: the step is 16 k rows (2 × 1024 bytes); 64-wide MN
        // blocks are a box apart.
        let (step, leading, stride) = if self.k_major {
            (32, 16, SWIZZLE_ATOM)
        } else {
            (2 * SWIZZLE_ATOM, MN_BLOCK_BYTES, SWIZZLE_ATOM)
        };
        let off = b.const_u32(ks * step);
        let addr = b.add(base, off);
        let wide = b.cvt::<U64, U32>(addr);
        let units = b.shr(wide, 4);
        let mask = b.const_int::<U64>(0x3FFF);
        let start = b.and(units, mask);
        let fixed = (1u64 << 62) | (((stride >> 4) as u64) << 32) | (((leading >> 4) as u64) << 16);
        let fixed = b.const_int::<U64>(fixed as i64);
        b.or(start, fixed)
    }
}

pub fn build_wgmma_tma(s: TmaSpec) -> Kernel {
    let name = if s.split_k {
        format!(
            "gemm_wgmma_tma_{}_splitk_{}_128x256",
            s.input.suffix(),
            s.layout.tag()
        )
    } else {
        format!(
            "gemm_wgmma_tma_{}_{}_{}_128x256",
            s.input.suffix(),
            s.output.suffix(),
            s.layout.tag()
        )
    };
    let mut b = KernelBuilder::new(name);
    b.reqntid([TMA_THREADS, 1, 1]);
    b.perf_mut().minnctapersm = Some(1);
    let p = declare(&mut b, s.input, s.output);
    let map_a = b.param_tensor_map("tmap_a");
    let map_b = b.param_tensor_map("tmap_b");
    // Split-k: the f32 `c` parameter is the partials buffer (launched with stride_c 0).
    let partials = s.split_k.then(|| (b.param::<U32>("splits"), p.epilogue.c));
    let op_a = Operand2d {
        map: map_a,
        k_major: s.layout.a_k_contiguous(),
        rows: TMA_TILE_M,
    };
    let op_b = Operand2d {
        map: map_b,
        k_major: s.layout.b_k_contiguous(),
        rows: TMA_TILE_N,
    };

    let smem = b.dynamic_shared::<U32>("stages");
    let raw = b.shared_base(&smem);
    let align_m1 = b.const_u32(SWIZZLE_ATOM - 1);
    let align_mask = b.const_u32(!(SWIZZLE_ATOM - 1));
    let base = b.add(raw, align_m1);
    let base = b.and(base, align_mask);
    let bars = b.const_u32(STAGES * STAGE_BYTES);
    let bars = b.add(base, bars);
    let full = |b: &mut KernelBuilder, stage: Value<U32>| {
        let eight = b.const_u32(8);
        b.mad(stage, eight, bars)
    };
    let empty = |b: &mut KernelBuilder, stage: Value<U32>| {
        let eight = b.const_u32(8);
        let first = b.const_u32(STAGES * 8);
        let at = b.mad(stage, eight, bars);
        b.add(at, first)
    };
    let stage_a = |b: &mut KernelBuilder, stage: Value<U32>| {
        let bytes = b.const_u32(STAGE_BYTES);
        b.mad(stage, bytes, base)
    };

    let tid = b.tid(Dim::X);
    let zero = b.const_u32(0);
    let one = b.const_u32(1);
    let stage_mask = b.const_u32(STAGES - 1);
    let bk_m1 = b.const_u32(TMA_BK - 1);
    let kp = b.add(p.k, bk_m1);
    let slabs = b.shr(kp, TMA_BK.trailing_zeros());
    let z = b.ctaid(Dim::Z);
    // The CTA walks tiles ctaid.x, ctaid.x + nctaid.x, ... (n fastest), so a grid of one CTA
    // per SM overlaps one tile's epilogue with the next tile's copies.
    let cx = b.ctaid(Dim::X);
    let nx = b.nctaid(Dim::X);
    let tn_m1 = b.const_u32(TMA_TILE_N - 1);
    let tiles_n = b.add(p.n, tn_m1);
    let tiles_n = b.shr(tiles_n, TMA_TILE_N.trailing_zeros());
    let tm_m1 = b.const_u32(TMA_TILE_M - 1);
    let tiles_m = b.add(p.m, tm_m1);
    let tiles_m = b.shr(tiles_m, TMA_TILE_M.trailing_zeros());
    let tiles = b.mul(tiles_m, tiles_n);
    // Work item i is tile i % tiles over k-range i / tiles (one range without split-k).
    let items = match partials {
        Some((splits, _)) => b.mul(tiles, splits),
        None => tiles,
    };
    let slabs_per = match partials {
        Some((splits, _)) => {
            let s_m1 = b.sub(splits, one);
            let up = b.add(slabs, s_m1);
            b.div(up, splits)
        }
        None => slabs,
    };
    let k_range = |b: &mut KernelBuilder, item: Value<U32>| {
        let range = b.div(item, tiles);
        let first = b.mul(range, slabs_per);
        let first = b.min(first, slabs);
        let end = b.add(first, slabs_per);
        (first, b.min(end, slabs))
    };
    let origin = |b: &mut KernelBuilder, item: Value<U32>| {
        let tile = b.rem(item, tiles);
        let col = b.rem(tile, tiles_n);
        let row = b.div(tile, tiles_n);
        let tn = b.const_u32(TMA_TILE_N);
        let tm = b.const_u32(TMA_TILE_M);
        (b.mul(row, tm), b.mul(col, tn))
    };

    // Barrier setup by one thread, visible to the copy engine and every thread before use.
    let first = b.setp(Cmp::Eq, tid, zero);
    b.if_(first, |b| {
        for st in 0..STAGES {
            let stage = b.const_u32(st);
            let f = full(b, stage);
            tma::init(b, f, 1);
            let e = empty(b, stage);
            tma::init(b, e, 2);
        }
        b.inst(Op::FenceProxyAsync, vec![], vec![]);
    });
    b.bar_sync();

    let wg = b.shr(tid, 7);
    let producer = b.setp(Cmp::Eq, wg, zero);
    b.if_else(
        producer,
        |b| {
            tma::set_max_registers(b, false, PRODUCER_REGS);
            b.if_(first, |b| {
                // Slabs are counted across tiles: slab t uses stage t % STAGES.
                let t = b.var(zero);
                b.for_range(cx, items, nx, |b, item| {
                    let (tile_m, tile_n) = origin(b, item);
                    let (first_slab, end_slab) = k_range(b, item);
                    b.for_range(first_slab, end_slab, one, |b, slab| {
                        let stage = b.and(t, stage_mask);
                        let round = b.shr(t, STAGES.trailing_zeros());
                        // From the second round on, wait for the consumers to release it.
                        let reuse = b.setp(Cmp::Ne, round, zero);
                        b.if_(reuse, |b| {
                            let prev = b.sub(round, one);
                            let parity = b.and(prev, one);
                            let e = empty(b, stage);
                            tma::wait(b, e, parity);
                        });
                        let f = full(b, stage);
                        tma::arrive_expect_tx(b, f, STAGE_BYTES);
                        let bk = b.const_u32(TMA_BK);
                        let k0 = b.mul(slab, bk);
                        let sa = stage_a(b, stage);
                        let a_bytes = b.const_u32(A_BYTES);
                        let sb = b.add(sa, a_bytes);
                        op_a.load(b, sa, tile_m, k0, z, f);
                        op_b.load(b, sb, tile_n, k0, z, f);
                        let next = b.add(t, one);
                        b.assign(t, next);
                    });
                });
            });
        },
        |b| {
            tma::set_max_registers(b, true, CONSUMER_REGS);
            let zero_f = b.const_f32(0.0);
            let acc: Vec<Value<F32>> = (0..TMA_TILE_N / 2).map(|_| b.var(zero_f)).collect();
            let cw = b.sub(wg, one);
            let always = b.setp(Cmp::Eq, zero, zero);
            let c127 = b.const_u32(127);
            let lane_in_wg = b.and(tid, c127);
            let leader = b.setp(Cmp::Eq, lane_in_wg, zero);
            // Consumer c multiplies rows 64c.. of the A tile: a row offset for k-major A, the
            // c-th MN block otherwise (both 64 × 128 bytes).
            let a_rel = b.const_u32(MN_BLOCK_BYTES);
            let a_rel = b.mul(cw, a_rel);
            let t = b.var(zero);
            // When `when` holds, the warpgroup's leader hands slab t − 1's stage back to the
            // producer.
            let release_previous = |b: &mut KernelBuilder, when: Value<Pred>| {
                b.if_(when, |b| {
                    b.if_(leader, |b| {
                        let prev = b.sub(t, one);
                        let stage = b.and(prev, stage_mask);
                        let e = empty(b, stage);
                        tma::arrive(b, e);
                    });
                });
            };
            b.for_range(cx, items, nx, |b, item| {
                let (tile_m, tile_n) = origin(b, item);
                let (first_slab, end_slab) = k_range(b, item);
                for v in &acc {
                    b.assign(*v, zero_f);
                }
                b.for_range(first_slab, end_slab, one, |b, slab| {
                    let stage = b.and(t, stage_mask);
                    let round = b.shr(t, STAGES.trailing_zeros());
                    let parity = b.and(round, one);
                    let f = full(b, stage);
                    tma::wait(b, f, parity);
                    let sa = stage_a(b, stage);
                    let a_bytes = b.const_u32(A_BYTES);
                    let sb = b.add(sa, a_bytes);
                    let sa = b.add(sa, a_rel);
                    b.inst(Op::WgmmaFence, vec![], vec![]);
                    for ks in 0..TMA_BK / 16 {
                        let da = op_a.descriptor(b, sa, ks);
                        let db = op_b.descriptor(b, sb, ks);
                        let operands = WgmmaOperands {
                            a: da,
                            b: db,
                            a_mn_major: !op_a.k_major,
                            b_mn_major: !op_b.k_major,
                        };
                        mma_async(b, s.input, &acc, operands, always);
                    }
                    b.inst(Op::WgmmaCommit, vec![], vec![]);
                    // The previous slab's products have retired once at most this one is
                    // in flight: its stage goes back to the producer.
                    b.inst(Op::WgmmaWait, vec![], vec![Operand::Imm(Imm::Int(1))]);
                    let started = b.setp(Cmp::Ne, slab, first_slab);
                    release_previous(b, started);
                    let next = b.add(t, one);
                    b.assign(t, next);
                });
                // The tile's last stage goes back before the epilogue, so the producer can
                // fill the next tile's stages meanwhile.
                b.inst(Op::WgmmaWait, vec![], vec![Operand::Imm(Imm::Int(0))]);
                let any = b.setp(Cmp::Lt, first_slab, end_slab);
                release_previous(b, any);
                let c64 = b.const_u32(64);
                let row0 = b.mad(cw, c64, tile_m);
                match partials {
                    None => store_accumulators(b, &p, &acc, tid, row0, tile_n),
                    Some((_, sink)) => {
                        // Range r of batch z is matrix r·batches + z of the partials.
                        let batches = b.nctaid(Dim::Z);
                        let range = b.div(item, tiles);
                        let matrix = b.mad(range, batches, z);
                        let mn = b.mul(p.m, p.n);
                        let base = b.mul(matrix, mn);
                        store_partials(b, &p, sink, base, &acc, tid, row0, tile_n);
                    }
                }
            });
        },
    );
    b.finish()
}
