//! Filling one pipeline stage of a tensor-core GEMM: an operand's 128 × BK slab (64 bytes of
//! k per row, whatever the element size; 128 bytes in the wgmma layout) moved in 16-byte
//! chunks. With the
//! vector flag set, chunks go by `cp.async` (zero-filled past the matrix edge, since the flags
//! guarantee a chunk is wholly in or out); otherwise each element is loaded with its own
//! bounds check and stored to shared memory synchronously. Shared rows are padded so
//! `ldmatrix` and the fragment loads hit distinct banks.

use super::matrix::Mat;
use crate::codegen::bf16::imm;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{AddrBase, Operand};
use kernel_dsl::op::{CacheOp, Cmp, Op};
use kernel_dsl::scalar::{Pred, U16, U32};
use kernel_dsl::StateSpace;

/// Rows (of m or n) of a CTA tile.
pub const TILE_MN: u32 = 128;
/// Bytes of k per slab row (padded layouts).
pub const SLAB_K_BYTES: u32 = 64;
/// Bytes of k per slab row in the wgmma core-matrix layout.
pub const CORE_SLAB_K_BYTES: u32 = 128;
pub const LOAD_THREADS: u32 = 256;
/// Bytes between consecutive 8-row groups of core matrices.
pub const CORE_GROUP_BYTES: u32 = 8 * 128;

/// The shared layout of one operand's slab.
#[derive(Clone, Copy, Debug)]
pub struct SlabLayout {
    pub k_contiguous: bool,
    pub elem_bytes: u32,
    /// The unswizzled K-major layout `wgmma` descriptors read: 8-row × 16-byte core matrices
    /// of 128 contiguous bytes, K-adjacent ones 128 bytes apart, 8-row groups
    /// [`CORE_GROUP_BYTES`] apart (k-contiguous operands only).
    pub core_matrices: bool,
}

impl SlabLayout {
    const fn k_bytes(self) -> u32 {
        if self.core_matrices {
            CORE_SLAB_K_BYTES
        } else {
            SLAB_K_BYTES
        }
    }

    /// k elements per slab.
    pub const fn bk(self) -> u32 {
        self.k_bytes() / self.elem_bytes
    }

    /// Bytes between shared rows (rows are mn for k-contiguous operands, k otherwise).
    pub const fn pitch(self) -> u32 {
        if self.k_contiguous {
            SLAB_K_BYTES + 16
        } else if self.elem_bytes == 4 {
            TILE_MN * 4 + 32
        } else {
            TILE_MN * self.elem_bytes + 16
        }
    }

    /// Bytes of one slab in shared memory.
    pub const fn bytes(self) -> u32 {
        if self.core_matrices {
            return TILE_MN * CORE_SLAB_K_BYTES;
        }
        let rows = if self.k_contiguous {
            TILE_MN
        } else {
            self.bk()
        };
        rows * self.pitch()
    }

    const fn chunks_per_row(self) -> u32 {
        if self.k_contiguous {
            self.k_bytes() / 16
        } else {
            TILE_MN * self.elem_bytes / 16
        }
    }

    /// Chunks (16 bytes) each thread moves per operand and stage.
    const fn chunks_per_thread(self) -> u32 {
        let rows = if self.k_contiguous {
            TILE_MN
        } else {
            self.bk()
        };
        rows * self.chunks_per_row() / LOAD_THREADS
    }
}

/// A chunk at one slab: its first element's global index, its mn and k, its shared address.
type ChunkAt = (Value<U32>, Value<U32>, Value<U32>, Value<U32>);

/// One chunk a thread moves: where it sits in the slab and in shared memory.
struct Chunk {
    /// Row within the slab (mn for k-contiguous, k otherwise).
    row: Value<U32>,
    /// First element of the chunk along the row.
    col: Value<U32>,
    smem_rel: Value<U32>,
}

pub struct SlabLoader {
    mat: Mat,
    layout: SlabLayout,
    ld: Value<U32>,
    k: Value<U32>,
    tile0: Value<U32>,
    extent: Value<U32>,
    vec_ok: Value<Pred>,
    chunks: Vec<Chunk>,
}

impl SlabLoader {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        b: &mut KernelBuilder,
        mat: Mat,
        layout: SlabLayout,
        tid: Value<U32>,
        tile0: Value<U32>,
        extent: Value<U32>,
        ld: Value<U32>,
        k: Value<U32>,
        vec_ok: Value<Pred>,
    ) -> SlabLoader {
        let cpr = layout.chunks_per_row();
        let per_chunk = 16 / layout.elem_bytes;
        let chunks = (0..layout.chunks_per_thread())
            .map(|i| {
                let off = b.const_u32(i * LOAD_THREADS);
                let c = b.add(tid, off);
                if layout.core_matrices {
                    // Eight neighbouring threads take the eight rows of one core matrix (one
                    // 16-byte chunk each, distinct bank groups); a warp covers 64 contiguous
                    // bytes of each of those rows.
                    let seven = b.const_u32(7);
                    let in_core = b.and(c, seven);
                    let q = b.shr(c, 3);
                    let q = b.and(q, seven);
                    let group = b.shr(c, 6);
                    let g8 = b.shl(group, 3);
                    let row = b.add(g8, in_core);
                    let col = b.shl(q, per_chunk.trailing_zeros());
                    let gb = b.const_u32(CORE_GROUP_BYTES);
                    let r16 = b.shl(in_core, 4);
                    let q128 = b.shl(q, 7);
                    let off = b.add(q128, r16);
                    let smem_rel = b.mad(group, gb, off);
                    return Chunk { row, col, smem_rel };
                }
                let row = b.shr(c, cpr.trailing_zeros());
                let mask = b.const_u32(cpr - 1);
                let q = b.and(c, mask);
                let col = b.shl(q, per_chunk.trailing_zeros());
                let pitch = b.const_u32(layout.pitch());
                let q16 = b.shl(q, 4);
                let smem_rel = b.mad(row, pitch, q16);
                Chunk { row, col, smem_rel }
            })
            .collect();
        SlabLoader {
            mat,
            layout,
            ld,
            k,
            tile0,
            extent,
            vec_ok,
            chunks,
        }
    }

    /// Starts (or does) the loads of the slab at `k0` into the shared slab at `dst`.
    pub fn issue(&self, b: &mut KernelBuilder, dst: Value<U32>, k0: Value<U32>) {
        let per_chunk = 16 / self.layout.elem_bytes;
        // Per chunk: global element index of its first element, its (mn, k) coordinates.
        let coords: Vec<ChunkAt> = self
            .chunks
            .iter()
            .map(|c| {
                let (mn, kk) = if self.layout.k_contiguous {
                    (b.add(self.tile0, c.row), b.add(k0, c.col))
                } else {
                    (b.add(self.tile0, c.col), b.add(k0, c.row))
                };
                let first = if self.layout.k_contiguous {
                    b.mad(mn, self.ld, kk)
                } else {
                    b.mad(kk, self.ld, mn)
                };
                let sm = b.add(dst, c.smem_rel);
                (first, mn, kk, sm)
            })
            .collect();
        b.if_else(
            self.vec_ok,
            |b| {
                for &(first, mn, kk, sm) in &coords {
                    let mn_in = b.setp(Cmp::Lt, mn, self.extent);
                    let k_in = b.setp(Cmp::Lt, kk, self.k);
                    let sixteen = b.const_u32(16);
                    let zero = b.const_u32(0);
                    let part = b.selp(k_in, sixteen, zero);
                    let bytes = b.selp(mn_in, part, zero);
                    // Out-of-range chunks read nothing; point them at the matrix base.
                    let idx = b.selp(mn_in, first, zero);
                    let idx = b.selp(k_in, idx, zero);
                    let src = self.mat.address(b, idx);
                    b.inst(
                        Op::CpAsync {
                            cache: CacheOp::Cg,
                            bytes: 16,
                            zero_fill: true,
                        },
                        vec![],
                        vec![
                            Operand::Addr {
                                base: AddrBase::Reg(sm.reg()),
                                offset: 0,
                            },
                            Operand::Addr {
                                base: AddrBase::Reg(src.reg()),
                                offset: 0,
                            },
                            imm(16),
                            bytes.reg().into(),
                        ],
                    );
                }
            },
            |b| {
                for &(first, mn, kk, sm) in &coords {
                    for e in 0..per_chunk {
                        let ec = b.const_u32(e);
                        let (m_e, k_e) = if self.layout.k_contiguous {
                            (mn, b.add(kk, ec))
                        } else {
                            (b.add(mn, ec), kk)
                        };
                        let mn_in = b.setp(Cmp::Lt, m_e, self.extent);
                        let k_in = b.setp(Cmp::Lt, k_e, self.k);
                        let idx = b.add(first, ec);
                        let off = (e * self.layout.elem_bytes) as i64;
                        self.copy_element(b, idx, mn_in, k_in, sm, off);
                    }
                }
            },
        );
    }

    /// One element global → shared, zero where out of range.
    fn copy_element(
        &self,
        b: &mut KernelBuilder,
        idx: Value<U32>,
        mn_in: Value<Pred>,
        k_in: Value<Pred>,
        sm: Value<U32>,
        off: i64,
    ) {
        if self.layout.elem_bytes == 4 {
            let zero = b.const_u32(0);
            let v = b.var(zero);
            b.if_(mn_in, |b| {
                b.if_(k_in, |b| {
                    let addr = self.mat.address(b, idx);
                    let x = b.load::<U32>(StateSpace::Global, addr.reg(), 0, true);
                    b.assign(v, x);
                });
            });
            b.store(StateSpace::Shared, sm.reg(), off, v);
        } else {
            let zero = b.const_int::<U16>(0);
            let v = b.var(zero);
            b.if_(mn_in, |b| {
                b.if_(k_in, |b| {
                    let addr = self.mat.address(b, idx);
                    let x = b.load::<U16>(StateSpace::Global, addr.reg(), 0, true);
                    b.assign(v, x);
                });
            });
            b.store(StateSpace::Shared, sm.reg(), off, v);
        }
    }
}
