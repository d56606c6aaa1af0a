//! The Hopper GEMM in `#[kernel]` (sm_90a): bf16 inputs copied by TMA into a four-stage ring
//! of 128-byte swizzled slabs, `wgmma.mma_async.m64n128k16` into an f32 accumulator that stays
//! in registers across the k loop, f32 output. NT layout: A stored `m × k`, B stored `n × k`.
//!
//! One warpgroup per block and a 64×128 tile. Thread 0 issues the copies: slab `s` lands in
//! stage `s % STAGES`, its bytes completing on that stage's mbarrier. Each slab is four k16
//! `wgmma`s; once at most one group is in flight the previous slab's stage is free, and after a
//! barrier thread 0 refills it with the slab `STAGES - 1` ahead. The copy engine zero-fills
//! boxes that overhang the matrices, so ragged m, n and k need bounds checks only when C is
//! written.

use kernel_macros::kernel;

/// Output rows per block (one warpgroup's `wgmma` M).
pub const TILE_M: u32 = 64;
/// Output columns per block (the instruction's N).
pub const TILE_N: u32 = 128;
/// Depth of one slab: 64 bf16, one 128-byte swizzled row.
pub const BK: u32 = 64;
/// Threads per block: one warpgroup.
pub const THREADS: u32 = 128;
/// Dynamic shared memory: 1 KiB of slack to align the stages, then four slabs of A and B.
pub const SHARED_BYTES: u32 = 1024 + 4 * (TILE_M + TILE_N) * BK * 2;

#[kernel(crate = crate::lang, block = 128, needs = sm_90a)]
pub fn gemm_tma_wgmma_bf16_nt(
    a: &TensorMap<bf16, 2>,
    b: &TensorMap<bf16, 2>,
    c: &mut [f32],
    m: u32,
    n: u32,
    k: u32,
) {
    // Elements: 512 of slack (1 KiB), then per stage 64 rows of A and 128 of B, 64 k each.
    let smem = dynamic_shared::<bf16, { 512 + 4 * 192 * 64 }>();
    let full = shared_array::<u64, 4>();
    // The 128-byte swizzle repeats every 1024 bytes: stages start on that boundary.
    let at = align_index(smem, 1024);
    let t = thread_idx().x;
    let m0 = block_idx().y * 64;
    let n0 = block_idx().x * 128;
    let slabs = (k + 63) / 64;
    if t == 0 {
        for s in 0..4 {
            mbarrier_init(full, s, 1);
        }
        fence_proxy_async();
        for s in 0..3 {
            if s < slabs {
                let st = at + s * (192 * 64);
                mbarrier_arrive_expect_tx(full, s, 192 * 64 * 2);
                tma_load(smem, st, a, [s * 64, m0], full, s);
                tma_load(smem, st + 64 * 64, b, [s * 64, n0], full, s);
            }
        }
    }
    sync_threads();
    let mut acc = [0.0f32; 64];
    let mut s = 0u32;
    while s < slabs {
        let stage = s % 4;
        let st = at + stage * (192 * 64);
        while !mbarrier_try_wait_parity(full, stage, (s / 4) % 2) {}
        wgmma_fence();
        for ks in [0, 1, 2, 3] {
            // One k16 step is 32 bytes along the swizzled row; 8-row groups are 1024 apart.
            let da = wgmma_desc(smem, st + ks * 16, 16, 1024, 128);
            let db = wgmma_desc(smem, st + 64 * 64 + ks * 16, 16, 1024, 128);
            wgmma_bf16(&mut acc, da, db, true, false, false);
        }
        wgmma_commit_group();
        // Slab s - 1 has retired in every warp once all pass the barrier: its stage, the
        // one slab s + 3 uses, is free.
        wgmma_wait_group(1);
        sync_threads();
        if t == 0 && s + 3 < slabs {
            let next = s + 3;
            let ns = next % 4;
            let nst = at + ns * (192 * 64);
            mbarrier_arrive_expect_tx(full, ns, 192 * 64 * 2);
            tma_load(smem, nst, a, [next * 64, m0], full, ns);
            tma_load(smem, nst + 64 * 64, b, [next * 64, n0], full, ns);
        }
        s += 1;
    }
    wgmma_wait_group(0);
    // Thread t of the warpgroup holds rows 16·warp + g (+8) and column pairs 8j + 2q.
    let warp = t / 32;
    let g = (t % 32) / 4;
    let q = t % 4;
    for i in 0..64 {
        let row = m0 + 16 * warp + g + 8 * ((i / 2) % 2);
        let col = n0 + 8 * (i / 4) + 2 * q + i % 2;
        if row < m && col < n {
            c[row as u64 * n as u64 + col as u64] = acc[i];
        }
    }
}
