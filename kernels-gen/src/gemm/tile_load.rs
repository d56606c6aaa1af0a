//! Moving one operand's `BK`-deep slab of a CTA tile from global memory into registers and
//! then into shared memory, stored k-major (`[k][mn]`, padded rows) whatever the operand's
//! layout, with 16-byte loads when the flags allow and a bounds-checked scalar path otherwise.
//! Elements outside the matrix load as zero, so partial tiles need no special case later.

use super::matrix::Mat;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{Pred, F32, U32};
use kernel_dsl::op::Cmp;
use kernel_dsl::StateSpace;

/// How the slab is split over the CTA's threads (each moves four consecutive elements).
pub struct TileLoader {
    mat: Mat,
    k_contiguous: bool,
    ld: Value<U32>,
    k: Value<U32>,
    vec_ok: Value<Pred>,
    /// Row (k-contiguous) or first column (mn-contiguous) of this thread's run, in the matrix.
    mn: Value<U32>,
    mn_in: Value<Pred>,
    /// The run's first k within the slab.
    kk: Value<U32>,
    /// k-contiguous: `mn · ld`; mn-contiguous: the extent (for the per-element checks).
    row_off: Value<U32>,
    extent: Value<U32>,
    /// Byte offset of this thread's first shared-memory slot within a buffer.
    smem_rel: Value<U32>,
    pitch_bytes: u32,
}

impl TileLoader {
    /// `tile0`: first row (of `m` or `n`) of this CTA's tile; `extent`: `m` or `n`;
    /// `tile_mn`: rows of the tile (128 here, 4 elements × threads / BK).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        b: &mut KernelBuilder,
        mat: Mat,
        k_contiguous: bool,
        tid: Value<U32>,
        tile0: Value<U32>,
        extent: Value<U32>,
        ld: Value<U32>,
        k: Value<U32>,
        vec_ok: Value<Pred>,
        bk: u32,
        pitch: u32,
        smem_offset: u32,
    ) -> TileLoader {
        let runs_per_k = bk / 4;
        let (mn_local, kk) = if k_contiguous {
            // Threads walk rows; each row's BK elements are runs_per_k runs of four.
            let shift = runs_per_k.trailing_zeros();
            let r = b.shr(tid, shift);
            let mask = b.const_u32(runs_per_k - 1);
            let q = b.and(tid, mask);
            (r, b.shl(q, 2))
        } else {
            // Threads walk k-rows of 32 runs (128 elements).
            let kk = b.shr(tid, 5);
            let mask = b.const_u32(31);
            let q = b.and(tid, mask);
            (b.shl(q, 2), kk)
        };
        let mn = b.add(tile0, mn_local);
        let mn_in = b.setp(Cmp::Lt, mn, extent);
        let row_off = b.mul(mn, ld);
        let pitch_c = b.const_u32(pitch);
        let slot = b.mad(kk, pitch_c, mn_local);
        let four = b.const_u32(4);
        let off = b.const_u32(smem_offset);
        let smem_rel = b.mad(slot, four, off);
        TileLoader {
            mat,
            k_contiguous,
            ld,
            k,
            vec_ok,
            mn,
            mn_in,
            kk,
            row_off,
            extent,
            smem_rel,
            pitch_bytes: pitch * 4,
        }
    }

    /// Four fresh variables for a run, zeroed.
    pub fn vars(&self, b: &mut KernelBuilder) -> [Value<F32>; 4] {
        let zero = b.const_f32(0.0);
        [b.var(zero), b.var(zero), b.var(zero), b.var(zero)]
    }

    /// Loads this thread's run of the slab starting at `k0` into `regs` (zero outside).
    pub fn load(&self, b: &mut KernelBuilder, k0: Value<U32>, regs: [Value<F32>; 4]) {
        let zero = b.const_f32(0.0);
        for r in regs {
            b.assign(r, zero);
        }
        let gk = b.add(k0, self.kk);
        let k_in = b.setp(Cmp::Lt, gk, self.k);
        let first = if self.k_contiguous {
            b.add(self.row_off, gk)
        } else {
            b.mad(gk, self.ld, self.mn)
        };
        b.if_else(
            self.vec_ok,
            |b| {
                // Vector flags guarantee a run is wholly inside or wholly outside.
                b.if_(k_in, |b| {
                    b.if_(self.mn_in, |b| {
                        let addr = self.mat.address(b, first);
                        let v = b.load_v4::<F32>(StateSpace::Global, addr.reg(), 0, true);
                        for (r, x) in regs.iter().zip(v) {
                            b.assign(*r, x);
                        }
                    });
                });
            },
            |b| {
                for (j, r) in regs.iter().enumerate() {
                    let jj = b.const_u32(j as u32);
                    let idx = b.add(first, jj);
                    let inside = if self.k_contiguous {
                        let kj = b.add(gk, jj);
                        let k_ok = b.setp(Cmp::Lt, kj, self.k);
                        (self.mn_in, k_ok)
                    } else {
                        let cj = b.add(self.mn, jj);
                        let c_ok = b.setp(Cmp::Lt, cj, self.extent);
                        (k_in, c_ok)
                    };
                    b.if_(inside.0, |b| {
                        b.if_(inside.1, |b| {
                            let v = self.mat.load(b, idx);
                            b.assign(*r, v);
                        });
                    });
                }
            },
        );
    }

    /// Stores a run to the shared buffer at `buf` (its byte address).
    pub fn store(&self, b: &mut KernelBuilder, buf: Value<U32>, regs: [Value<F32>; 4]) {
        let addr = b.add(buf, self.smem_rel);
        if self.k_contiguous {
            for (j, r) in regs.iter().enumerate() {
                let off = j as i64 * self.pitch_bytes as i64;
                b.store(StateSpace::Shared, addr.reg(), off, *r);
            }
        } else {
            b.store_v4(StateSpace::Shared, addr.reg(), 0, regs);
        }
    }
}
