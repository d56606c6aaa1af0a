//! The fp8 GEMM in `#[kernel]` (sm_90a): `c = scale_a · scale_b · a · bᵀ` for fp8 `a`
//! (`m × k`) and `b` (`n × k`), both k-contiguous, into f32 or bf16 `c`, with f32
//! accumulation. The operands are `u32` words of four values (the first along k in the lowest
//! byte), copied by TMA into a four-stage ring of 128-deep slabs (128 bytes a row, 128-byte
//! swizzled), and multiplied by `wgmma.mma_async.m64n256k32` into accumulators that stay in
//! registers across the k loop.
//!
//! Instances: the output `O` and `AB`, the formats (0: e4m3 · e4m3, 1: e4m3 · e5m2, 2: e5m2 ·
//! e4m3).
//!
//! The block is `tma_wgmma_kernel.rs`'s: a 128×256 tile, three warpgroups, warp-specialized.
//! Warpgroup 0 produces: one thread copies each slab of A and B into stage `q % 4` once its
//! `empty` mbarrier says the consumers are done with it, the bytes completing on its `full`
//! mbarrier. Warpgroups 1 and 2 consume 64 rows each and hand the stage back once their
//! `wgmma`s have retired. Blocks are persistent over the tiles, in the same L2-friendly order.
//! The copy engine zero-fills boxes past the matrices, so only the stores check bounds.

use kernel_macros::kernel;

/// Output rows per tile (two consumer warpgroups of 64).
pub const TILE_M: u32 = 128;
/// Output columns per tile (the instruction's N).
pub const TILE_N: u32 = 256;
/// Depth of one slab in values: 128 fp8, one 128-byte swizzled row (32 words).
pub const BK: u32 = 128;
/// Threads per block: a producer warpgroup and two consumers.
pub const THREADS: u32 = 384;
/// Dynamic shared memory: 1 KiB of slack to align the stages, then four slabs of A and B.
pub const SHARED_BYTES: u32 = 1024 + 4 * (TILE_M + TILE_N) * BK;

#[kernel(crate = crate::lang, block = 384, needs = sm_90a, instances(
    <f32, 0>, <bf16, 0>, <f32, 1>, <bf16, 1>, <f32, 2>, <bf16, 2>,
))]
pub fn gemm_fp8_wgmma<O: Element, const AB: u32>(
    a: &TensorMap<u32, 3>,
    b: &TensorMap<u32, 3>,
    c: &mut [O],
    scales: &[f32],
    m: u32,
    n: u32,
    k: u32,
    ldc: u32,
    stride_c: u32,
) {
    let z = block_idx().z;
    // Words: 256 of slack (1 KiB), then per stage 128 rows of A and 256 of B, 32 words each.
    let smem = dynamic_shared::<u32, { 256 + 4 * 384 * 32 }>();
    let full = shared_array::<u64, 4>();
    let empty = shared_array::<u64, 4>();
    let at = align_index(smem, 1024);
    let t = thread_idx().x;
    let slabs = (k + 127) / 128;
    let tiles_n = (n + 255) / 256;
    let tiles_m = (m + 127) / 128;
    let tiles = tiles_m * tiles_n;
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
                let origin = tile_at(tile, tiles_m, tiles_n);
                let m0 = origin[0] * 128;
                let n0 = origin[1] * 256;
                for s in 0..slabs {
                    let stage = q % 4;
                    // From the second round on, the stage's previous slab must be released:
                    // that is the empty barrier's phase q / 4 − 1.
                    if q >= 4 {
                        while !mbarrier_try_wait_parity(empty, stage, (q / 4 + 1) % 2) {}
                    }
                    let st = at + stage * (384 * 32);
                    mbarrier_arrive_expect_tx(full, stage, 384 * 128);
                    tma_load(smem, st, a, [s * 32, m0, z], full, stage);
                    tma_load(smem, st + 128 * 32, b, [s * 32, n0, z], full, stage);
                    q += 1;
                }
                tile += grid_dim().x;
            }
        }
    } else {
        setmaxnreg_inc(232);
        let rows = (wg - 1) * (64 * 32);
        let lead = t % 128 == 0;
        let scale = scales[0] * scales[1];
        // Column pairs are stored at once where every row starts on a pair.
        let pairs = ldc % 2 == 0 && stride_c % 2 == 0;
        // Thread t of the warpgroup holds rows 16·warp + g (+8) and column pairs 8j + 2p.
        let warp = (t / 32) % 4;
        let g = (t % 32) / 4;
        let p = t % 4;
        let c = &mut c[z as u64 * stride_c as u64..];
        let mut q = 0u32;
        let mut tile = block_idx().x;
        while tile < tiles {
            let origin = tile_at(tile, tiles_m, tiles_n);
            let m0 = origin[0] * 128 + (wg - 1) * 64;
            let n0 = origin[1] * 256;
            let mut acc = [0.0f32; 128];
            for s in 0..slabs {
                let stage = q % 4;
                let sa = at + stage * (384 * 32) + rows;
                let sb = at + stage * (384 * 32) + 128 * 32;
                while !mbarrier_try_wait_parity(full, stage, (q / 4) % 2) {}
                wgmma_fence();
                for ks in [0, 1, 2, 3] {
                    // A k32 step is 32 bytes (8 words) along the swizzled row; 8-row groups
                    // are 1024 bytes apart.
                    let da = wgmma_desc(smem, sa + ks * 8, 16, 1024, 128);
                    let db = wgmma_desc(smem, sb + ks * 8, 16, 1024, 128);
                    if AB == 0 {
                        wgmma_e4m3_e4m3(&mut acc, da, db, true);
                    } else if AB == 1 {
                        wgmma_e4m3_e5m2(&mut acc, da, db, true);
                    } else {
                        wgmma_e5m2_e4m3(&mut acc, da, db, true);
                    }
                }
                wgmma_commit_group();
                // The previous slab's products have retired once at most this one is in
                // flight: its stage goes back to the producer.
                wgmma_wait_group(1);
                if s > 0 && lead {
                    mbarrier_arrive(empty, (q - 1) % 4);
                }
                q += 1;
            }
            // The tile's last stage goes back before the stores, so the producer fills the
            // next tile's stages meanwhile.
            wgmma_wait_group(0);
            if slabs > 0 && lead {
                mbarrier_arrive(empty, (q - 1) % 4);
            }
            let r0 = m0 + 16 * warp + g;
            let c0 = n0 + 2 * p;
            let top_in = r0 < m;
            let low_in = r0 + 8 < m;
            if pairs && n0 + 256 <= n {
                let top = &mut c[min(r0, m - 1) * ldc + c0..];
                let low = &mut c[min(r0 + 8, m - 1) * ldc + c0..];
                for i in 0..32 {
                    if top_in {
                        let v = [acc[4 * i] * scale, acc[4 * i + 1] * scale];
                        top.store_vec::<2>(8 * i, [v[0] as O, v[1] as O]);
                    }
                    if low_in {
                        let v = [acc[4 * i + 2] * scale, acc[4 * i + 3] * scale];
                        low.store_vec::<2>(8 * i, [v[0] as O, v[1] as O]);
                    }
                }
            } else {
                for i in 0..128 {
                    let row = r0 + 8 * ((i / 2) % 2);
                    let col = c0 + 8 * (i / 4) + i % 2;
                    if row < m && col < n {
                        c[row * ldc + col] = (acc[i] * scale) as O;
                    }
                }
            }
            tile += grid_dim().x;
        }
    }
}
