//! Staging an mn-contiguous 16-bit operand (stored `k × mn`) into the K-major core-matrix
//! layout `wgmma` reads, transposing in registers: each thread loads, for 8 consecutive k, the
//! 32-bit word holding two neighbouring mn elements, regroups the halves into two 16-byte
//! core-matrix rows (one per mn) and stores them. Warps read 128 contiguous bytes per load;
//! the two rows' store order alternates with the core's mn group so the eight threads of each
//! 16-byte store phase hit eight different bank groups.
//!
//! The loads land in registers one iteration before they are stored, so their latency
//! overlaps a whole slab of `wgmma`. With the vector flag off (odd extents or leading dimensions) each element is loaded on
//! its own, bounds-checked.

use super::async_load::{CORE_GROUP_BYTES, LOAD_THREADS, TILE_MN};
use super::matrix::Mat;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::op::Cmp;
use kernel_dsl::scalar::{Pred, U16, U32};
use kernel_dsl::StateSpace;

/// k per slab (64 × 2 bytes = one 128-byte core-matrix row group along k).
const BK: u32 = 64;
/// Core matrices (8 mn × 8 k) per slab: 16 along mn, 8 along k.
const CORES: u32 = (TILE_MN / 8) * (BK / 8);
/// Each thread covers two mn rows of a core; four threads a core.
const PASSES: u32 = CORES * 4 / LOAD_THREADS;

struct Pass {
    /// First of this thread's two mn (absolute), and its k offset within the slab.
    mn: Value<U32>,
    kg8: Value<U32>,
    /// Shared byte offsets (within a slab) of the two rows, in store order.
    rows: [Value<U32>; 2],
    /// True when the second mn's row is stored first.
    swapped: Value<Pred>,
}

pub struct TransposedLoader {
    /// The loaded words of the next slab, eight per pass, held until [`Self::store`].
    words: Vec<Value<U32>>,
    mat: Mat,
    ld: Value<U32>,
    k: Value<U32>,
    extent: Value<U32>,
    vec_ok: Value<Pred>,
    passes: Vec<Pass>,
}

impl TransposedLoader {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        b: &mut KernelBuilder,
        mat: Mat,
        tid: Value<U32>,
        tile0: Value<U32>,
        extent: Value<U32>,
        ld: Value<U32>,
        k: Value<U32>,
        vec_ok: Value<Pred>,
    ) -> TransposedLoader {
        let c3 = b.const_u32(3);
        let c15 = b.const_u32(15);
        let one = b.const_u32(1);
        let q = b.and(tid, c3);
        let quad = b.shr(tid, 2);
        let group = b.const_u32(CORE_GROUP_BYTES);
        let passes = (0..PASSES)
            .map(|p| {
                let off = b.const_u32(p * LOAD_THREADS / 4);
                let c = b.add(quad, off);
                // A warp's eight cores share k and run along mn: coalesced loads.
                let mg = b.and(c, c15);
                let kg = b.shr(c, 4);
                let mg8 = b.shl(mg, 3);
                let q2 = b.shl(q, 1);
                let mn_local = b.add(mg8, q2);
                let mn = b.add(tile0, mn_local);
                let kg8 = b.shl(kg, 3);
                let kg128 = b.shl(kg, 7);
                let core = b.mad(mg, group, kg128);
                let odd = b.and(mg, one);
                let zero = b.const_u32(0);
                let swapped = b.setp(Cmp::Ne, odd, zero);
                // Rows 2q and 2q+1 of the core, 16 bytes each; odd mn groups store 2q+1 first.
                let r_first = b.add(q2, odd);
                let r_second = b.xor(r_first, one);
                let first = b.shl(r_first, 4);
                let second = b.shl(r_second, 4);
                let rows = [b.add(core, first), b.add(core, second)];
                Pass {
                    mn,
                    kg8,
                    rows,
                    swapped,
                }
            })
            .collect();
        let zero = b.const_u32(0);
        let words = (0..PASSES * 8).map(|_| b.var(zero)).collect();
        TransposedLoader {
            words,
            mat,
            ld,
            k,
            extent,
            vec_ok,
            passes,
        }
    }

    /// Loads the slab at `k0` into registers (held until [`Self::store`]).
    pub fn load(&self, b: &mut KernelBuilder, k0: Value<U32>) {
        for (p, pass) in self.passes.iter().enumerate() {
            let kbase = b.add(k0, pass.kg8);
            for kk in 0..8u32 {
                let kkc = b.const_u32(kk);
                let kabs = b.add(kbase, kkc);
                let w = self.pair(b, kabs, pass.mn);
                b.assign(self.words[p * 8 + kk as usize], w);
            }
        }
    }

    /// Stores the loaded slab, transposed, to the shared slab at `dst`.
    pub fn store(&self, b: &mut KernelBuilder, dst: Value<U32>) {
        let lo_mask = b.const_u32(0xffff);
        let hi_mask = b.const_u32(0xffff_0000);
        for (p, pass) in self.passes.iter().enumerate() {
            let words = &self.words[p * 8..p * 8 + 8];
            // Core-matrix rows: mn (low halves) and mn+1 (high halves), k pairs per word.
            let mut lo = Vec::with_capacity(4);
            let mut hi = Vec::with_capacity(4);
            for w in 0..4 {
                let (a, c) = (words[2 * w], words[2 * w + 1]);
                let al = b.and(a, lo_mask);
                let cs = b.shl(c, 16);
                lo.push(b.or(al, cs));
                let ah = b.shr(a, 16);
                let ch = b.and(c, hi_mask);
                hi.push(b.or(ah, ch));
            }
            for (s, &row) in pass.rows.iter().enumerate() {
                let vals: Vec<Value<U32>> = (0..4)
                    .map(|w| {
                        let (x, y) = if s == 0 {
                            (hi[w], lo[w])
                        } else {
                            (lo[w], hi[w])
                        };
                        b.selp(pass.swapped, x, y)
                    })
                    .collect();
                let addr = b.add(dst, row);
                b.store_v4(
                    StateSpace::Shared,
                    addr.reg(),
                    0,
                    [vals[0], vals[1], vals[2], vals[3]],
                );
            }
        }
    }

    /// The word holding elements (k, mn) and (k, mn+1), zero where outside the matrix.
    fn pair(&self, b: &mut KernelBuilder, k: Value<U32>, mn: Value<U32>) -> Value<U32> {
        let zero = b.const_u32(0);
        let v = b.var(zero);
        let k_in = b.setp(Cmp::Lt, k, self.k);
        let idx = b.mad(k, self.ld, mn);
        b.if_(k_in, |b| {
            b.if_else(
                self.vec_ok,
                |b| {
                    // Vector flags: extents are even, so both elements are in or out.
                    let mn_in = b.setp(Cmp::Lt, mn, self.extent);
                    b.if_(mn_in, |b| {
                        let addr = self.mat.address(b, idx);
                        let w = b.load::<U32>(StateSpace::Global, addr.reg(), 0, true);
                        b.assign(v, w);
                    });
                },
                |b| {
                    for e in 0..2u32 {
                        let ec = b.const_u32(e);
                        let mne = b.add(mn, ec);
                        let inside = b.setp(Cmp::Lt, mne, self.extent);
                        b.if_(inside, |b| {
                            let ie = b.add(idx, ec);
                            let addr = self.mat.address(b, ie);
                            let h = b.load::<U16>(StateSpace::Global, addr.reg(), 0, true);
                            let h = b.cvt::<U32, U16>(h);
                            let h = b.shl(h, 16 * e);
                            let t = b.or(v, h);
                            b.assign(v, t);
                        });
                    }
                },
            );
        });
        v
    }
}
