//! The Hopper GEMM in `#[kernel]` (sm_90a): bf16 inputs copied by TMA into a four-stage ring
//! of 128-byte swizzled slabs, `wgmma.mma_async.m64n256k16` into f32 accumulators that stay in
//! registers across the k loop, f32 output. NT layout: A stored `m × k`, B stored `n × k`.
//!
//! A 128×256 tile and three warpgroups, warp-specialized. Warpgroup 0 is the producer: it gives
//! up registers (`setmaxnreg_dec`) and one thread copies each 64-deep slab of A and B into
//! stage `q % 4` (`q` counts slabs across the block's tiles), the bytes completing on the
//! stage's `full` mbarrier, after waiting on its `empty` mbarrier for the consumers to hand it
//! back. Warpgroups 1 and 2 are the consumers: each takes the registers the producer gave up,
//! waits for a stage to fill, multiplies its 64 rows of A by all 256 columns of B, and once
//! those `wgmma`s have retired its first thread releases the stage. So the tensor cores never
//! wait on a block barrier, and the copies of the next slabs run while a slab is multiplied.
//!
//! Blocks are persistent: block `b` takes tiles `b, b + grid, …` (n fastest), so one block per
//! SM overlaps a tile's stores with the copies of its next tile. The copy engine zero-fills
//! boxes that overhang the matrices, so ragged m, n and k need bounds checks only when C is
//! written.

use kernel_macros::kernel;

/// Output rows per tile (two consumer warpgroups of 64).
pub const TILE_M: u32 = 128;
/// Output columns per tile (the instruction's N).
pub const TILE_N: u32 = 256;
/// Depth of one slab: 64 bf16, one 128-byte swizzled row.
pub const BK: u32 = 64;
/// Threads per block: a producer warpgroup and two consumers.
pub const THREADS: u32 = 384;
/// Dynamic shared memory: 1 KiB of slack to align the stages, then four slabs of A and B.
pub const SHARED_BYTES: u32 = 1024 + 4 * (TILE_M + TILE_N) * BK * 2;

#[kernel(crate = crate::lang, block = 384, needs = sm_90a)]
pub fn gemm_tma_wgmma_bf16_nt(
    a: &TensorMap<bf16, 2>,
    b: &TensorMap<bf16, 2>,
    c: &mut [f32],
    m: u32,
    n: u32,
    k: u32,
) {
    // Elements: 512 of slack (1 KiB), then per stage 128 rows of A and 256 of B, 64 k each.
    let smem = dynamic_shared::<bf16, { 512 + 4 * 384 * 64 }>();
    let full = shared_array::<u64, 4>();
    let empty = shared_array::<u64, 4>();
    // The 128-byte swizzle repeats every 1024 bytes: stages start on that boundary.
    let at = align_index(smem, 1024);
    let t = thread_idx().x;
    let slabs = (k + 63) / 64;
    let tiles_n = (n + 255) / 256;
    let tiles = (m + 127) / 128 * tiles_n;
    if t == 0 {
        for s in 0..4 {
            mbarrier_init(full, s, 1);
            // One arrival per consumer warpgroup.
            mbarrier_init(empty, s, 2);
        }
        fence_proxy_async();
    }
    sync_threads();
    let wg = warpgroup_idx();
    if wg == 0 {
        setmaxnreg_dec(40);
        if t == 0 {
            let mut q = 0u32;
            let mut tile = block_idx().x;
            while tile < tiles {
                let m0 = tile / tiles_n * 128;
                let n0 = tile % tiles_n * 256;
                let mut s = 0u32;
                while s < slabs {
                    let stage = q % 4;
                    // From the second round on, the stage's previous slab must be released:
                    // that is the empty barrier's phase q / 4 − 1.
                    if q >= 4 {
                        while !mbarrier_try_wait_parity(empty, stage, (q / 4 + 1) % 2) {}
                    }
                    let st = at + stage * (384 * 64);
                    mbarrier_arrive_expect_tx(full, stage, 384 * 64 * 2);
                    tma_load(smem, st, a, [s * 64, m0], full, stage);
                    tma_load(smem, st + 128 * 64, b, [s * 64, n0], full, stage);
                    q += 1;
                    s += 1;
                }
                tile += grid_dim().x;
            }
        }
    } else {
        setmaxnreg_inc(232);
        // This consumer's rows of the A slab: 64 swizzled rows of 128 bytes.
        let rows = (wg - 1) * (64 * 64);
        let lead = t % 128 == 0;
        // Thread t of the warpgroup holds rows 16·warp + g (+8) and column pairs 8j + 2p.
        let warp = (t / 32) % 4;
        let g = (t % 32) / 4;
        let p = t % 4;
        let mut q = 0u32;
        let mut tile = block_idx().x;
        while tile < tiles {
            let m0 = tile / tiles_n * 128 + (wg - 1) * 64;
            let n0 = tile % tiles_n * 256;
            let mut acc = [0.0f32; 128];
            let mut s = 0u32;
            while s < slabs {
                let stage = q % 4;
                let st = at + stage * (384 * 64);
                while !mbarrier_try_wait_parity(full, stage, (q / 4) % 2) {}
                wgmma_fence();
                for ks in [0, 1, 2, 3] {
                    // One k16 step is 32 bytes along the swizzled row; 8-row groups are 1024
                    // bytes apart.
                    let da = wgmma_desc(smem, st + rows + ks * 16, 16, 1024, 128);
                    let db = wgmma_desc(smem, st + 128 * 64 + ks * 16, 16, 1024, 128);
                    wgmma_bf16(&mut acc, da, db, true, false, false);
                }
                wgmma_commit_group();
                // The previous slab's products have retired once at most this one is in
                // flight: its stage goes back to the producer.
                wgmma_wait_group(1);
                if s > 0 && lead {
                    mbarrier_arrive(empty, (q - 1) % 4);
                }
                q += 1;
                s += 1;
            }
            // The tile's last stage goes back before the stores, so the producer fills the
            // next tile's stages meanwhile.
            wgmma_wait_group(0);
            if slabs > 0 && lead {
                mbarrier_arrive(empty, (q - 1) % 4);
            }
            let r0 = m0 + 16 * warp + g;
            let c0 = n0 + 2 * p;
            if m0 + 64 <= m && n0 + 256 <= n && n % 2 == 0 {
                // Whole tile, even pitch: each column pair is one 8-byte store.
                for j in 0..64 {
                    let row = r0 + 8 * (j % 2);
                    let col = c0 + 8 * (j / 2);
                    let out = &mut c[row as u64 * n as u64..];
                    out.store_vec::<2>(col, [acc[2 * j], acc[2 * j + 1]]);
                }
            } else {
                for i in 0..128 {
                    let row = r0 + 8 * ((i / 2) % 2);
                    let col = c0 + 8 * (i / 4) + i % 2;
                    if row < m && col < n {
                        c[row as u64 * n as u64 + col as u64] = acc[i];
                    }
                }
            }
            tile += grid_dim().x;
        }
    }
}
