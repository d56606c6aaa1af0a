//! The Hopper GEMM in `#[kernel]` (sm_90a): bf16 or f16 inputs copied by TMA into a
//! four-stage ring of 128-byte swizzled slabs, `wgmma.mma_async.m64n256k16` into f32
//! accumulators that stay in registers across the k loop, and `gemm/finish.rs`'s epilogue into
//! an f32 or same-type output. f32 inputs run the same pipeline on tf32 `wgmma` (k8, slabs of
//! 32), in the one layout tf32 `wgmma` reads, both operands k-contiguous (NT).
//!
//! Instances: the input `T`, the output `O`, `HALF` (1 for f16 inputs), the layout as `A_K`
//! (A stored `m × k`) and `B_K` (B stored `n × k`): NN `<1, 0>`, NT `<1, 1>`, TN `<0, 0>`, and
//! `SPLIT`. The twelve whole-tile instances (`SPLIT` 0) come first, in the order of
//! `kernels_gen::gemm::wgmma::WGMMA_SPECS`; then the six split-k instances (`SPLIT` 1, f32
//! output), which store raw sums and so carry none of the epilogue's code; then the two
//! SwiGLU instances (`GLU` 1, NT, same-type output): B's 256 rows are 128 rows of the gate
//! weight `b` and the same 128 rows of the up weight `b2`, and the tile's 128 output columns
//! are `silu(gate) · up`, so one pass over A gives both products; last, the tf32 NT instance
//! (`<f32, f32, 0, 1, 1, 0, 0>`) and its split-k form. A k-contiguous operand lands as one
//! box of rows × one slab; the other as 64-wide blocks over 64 k rows, read through transposed
//! (MN-major) descriptors, so no operand is rearranged by threads. The maps are 3-D: the batch
//! is their outer coordinate and the grid's z.
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
//! Blocks are persistent: block `b` takes tiles `b, b + grid, …` (in groups of eight row tiles
//! walked a column at a time, `tile_order.rs`), so one block per SM overlaps a tile's stores with
//! the copies of its next tile. With `splits` above 1
//! (split-k, for problems whose tiles leave SMs idle) work item `i` is tile `i % tiles` over the
//! `i / tiles`-th range of k, and its raw sums go to matrix `range · batches + z` of `c`, the
//! f32 partials that `split_reduce_kernel.rs` adds in order. With `FLAG_STREAM_K` (whole-tile
//! instances, one batch; `stream_k.rs`) the full waves run as whole tiles and block b then
//! runs one contiguous stretch of the last wave's `tiles × slabs` iterations (of them all,
//! where the last wave would give each block fewer than four), cut where tiles end
//! (`work_units.rs`): a part that
//! does not start its tile goes raw to the block's slot of `partials`, a warp counter raised
//! once it is stored, and the block holding the tile's first part adds the later parts in
//! block order before the epilogue. The copy engine zero-fills
//! boxes that overhang the matrices, so ragged m, n and k need bounds checks only when C is
//! written.
//!
//! Where n, ldc and the batch stride are even, each thread stores its outputs as column pairs
//! from two row bases. A plain product (and split-k, and SwiGLU) stores the accumulators as
//! they are, unchecked in whole 64 × 256 warpgroup tiles; a 16-bit output whose n, ldc and
//! batch stride are multiples of 8 goes through shared memory there, each warp's 16 rows a
//! quarter at a time, and out in 16-byte row pieces. Any other epilogue works a quarter
//! of the columns at a time: the quarter's bias pairs, old C and residual pairs are loaded
//! first, through indices clamped into the matrix so no load waits behind a branch, then
//! `finish.rs`'s arithmetic runs and the pairs inside the matrix are stored (with the f32 copy
//! on, unrounded to `copy` as well). Odd pitches, and β with the f32 copy (which reads the old
//! values from the copy), go one element at a time.

use kernel_macros::kernel;

/// Output rows per tile (two consumer warpgroups of 64).
pub const TILE_M: u32 = 128;
/// Output columns per tile (the instruction's N).
pub const TILE_N: u32 = 256;
/// Depth of one slab of 16-bit inputs: 64 elements, one 128-byte swizzled row.
pub const BK: u32 = 64;

/// Depth of one slab of `input` elements: one 128-byte swizzled row (64 16-bit elements, 32
/// f32 read as tf32).
pub const fn slab_depth(input: crate::FloatType) -> u32 {
    128 / input.bytes() as u32
}
/// Width of one box of an MN-contiguous operand: 64 16-bit elements, one swizzled row.
pub const MN_BOX: u32 = 64;
/// The tf32 NT instance's index among the instances (after the 16-bit ones).
pub const TF32_NT_INSTANCE: usize = 20;
/// Threads per block: a producer warpgroup and two consumers.
pub const THREADS: u32 = 384;
/// Dynamic shared memory: 1 KiB of slack to align the stages, then four slabs of A and B.
pub const SHARED_BYTES: u32 = 1024 + 4 * (TILE_M + TILE_N) * BK * 2;

#[kernel(crate = crate::lang, block = 384, needs = sm_90a, instances(
    <bf16, f32, 0, 1, 0, 0, 0>, <bf16, f32, 0, 1, 1, 0, 0>, <bf16, f32, 0, 0, 0, 0, 0>,
    <bf16, bf16, 0, 1, 0, 0, 0>, <bf16, bf16, 0, 1, 1, 0, 0>, <bf16, bf16, 0, 0, 0, 0, 0>,
    <f16, f32, 1, 1, 0, 0, 0>, <f16, f32, 1, 1, 1, 0, 0>, <f16, f32, 1, 0, 0, 0, 0>,
    <f16, f16, 1, 1, 0, 0, 0>, <f16, f16, 1, 1, 1, 0, 0>, <f16, f16, 1, 0, 0, 0, 0>,
    <bf16, f32, 0, 1, 0, 1, 0>, <bf16, f32, 0, 1, 1, 1, 0>, <bf16, f32, 0, 0, 0, 1, 0>,
    <f16, f32, 1, 1, 0, 1, 0>, <f16, f32, 1, 1, 1, 1, 0>, <f16, f32, 1, 0, 0, 1, 0>,
    <bf16, bf16, 0, 1, 1, 0, 1>, <f16, f16, 1, 1, 1, 0, 1>,
    <f32, f32, 0, 1, 1, 0, 0>, <f32, f32, 0, 1, 1, 1, 0>,
))]
pub fn gemm_tma_wgmma<
    T: Element,
    O: Element,
    const HALF: u32,
    const A_K: u32,
    const B_K: u32,
    const SPLIT: u32,
    const GLU: u32,
>(
    a: &TensorMap<T, 3>,
    b: &TensorMap<T, 3>,
    b2: &TensorMap<T, 3>,
    c: &mut [O],
    copy: &mut [f32],
    partials: &mut [f32],
    counters: &mut [u32],
    bias: &[T],
    residual: &[T],
    m: u32,
    n: u32,
    k: u32,
    ldc: u32,
    stride_c: u32,
    alpha: f32,
    beta: f32,
    flags: u32,
    splits: u32,
) {
    // Whole-tile instances run one range whatever `splits` says.
    let splits = if SPLIT == 1 { splits } else { 1 };
    let z = block_idx().z;
    let batches = grid_dim().z;
    let residual = &residual[z as u64 * stride_c as u64..];
    // A slab is one 128-byte swizzled row of k per operand row: 64 16-bit elements or 32 f32
    // (`8 · T::VEC`), so a stage is 48 KiB for every `T`. Elements: 1 KiB of slack, then per
    // stage 128 rows of A and 256 of B.
    let smem = dynamic_shared::<T, { 64 * T::VEC + 4 * 384 * 8 * T::VEC }>();
    let full = shared_array::<u64, 4>();
    let empty = shared_array::<u64, 4>();
    // The 128-byte swizzle repeats every 1024 bytes: stages start on that boundary.
    let at = align_index(smem, 1024);
    let t = thread_idx().x;
    let bk = 8 * T::VEC;
    let slabs = (k + (bk - 1)) / bk;
    // A SwiGLU tile is 128 output columns: 128 rows of each weight fill the 256 of B.
    let tn = if GLU == 1 { 128 } else { 256 };
    let tiles_n = (n + tn - 1) / tn;
    let tiles_m = (m + 127) / 128;
    let tiles = tiles_m * tiles_n;
    // Work item i is tile i % tiles over k-range i / tiles, each range `per` slabs deep.
    let items = tiles * splits;
    let per = (slabs + splits - 1) / splits;
    // Under stream-K (whole-tile instances, one batch) block b runs iterations
    // `stretch_start(b) .. stretch_start(b + 1)` of the `tiles · slabs` after `dp_end`;
    // otherwise it takes work items b, b + grid, … Where the last wave's tiles
    // give every block a few slabs, the full waves before them run as whole tiles (blocks
    // walking k in step share their slabs of A and B in L2) and only the last wave is cut.
    let sk = flags & 1024 != 0;
    let block = block_idx().x;
    let grid = grid_dim().x;
    let work = tiles * slabs;
    let whole_waves = tiles / grid * grid;
    let dp_end = if sk && whole_waves > 0 && (tiles - whole_waves) * slabs >= 4 * grid {
        whole_waves * slabs
    } else {
        0u32
    };
    let rest = work - dp_end;
    // At most `cuts` blocks (flags bits 11–14; 0: the whole grid) share a last-wave tile, so
    // its owner adds fewer parts; the blocks past them stop after their whole tiles.
    let cuts = (flags >> 11) % 16;
    let cut_grid = if dp_end > 0 && cuts > 0 {
        min(grid, (tiles - whole_waves) * cuts)
    } else {
        grid
    };
    let sk_from = stretch_start(block, dp_end, rest, cut_grid);
    let begin = if sk {
        if dp_end > 0 {
            block * slabs
        } else {
            sk_from
        }
    } else {
        block
    };
    let run_end = if sk {
        stretch_start(block + 1, dp_end, rest, cut_grid)
    } else {
        items
    };
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
            let mut cur = begin;
            while cur < run_end {
                let unit = work_unit(cur, sk, tiles, slabs, per, run_end, grid, dp_end, sk_from);
                let origin = tile_at(unit[0], tiles_m, tiles_n);
                let m0 = origin[0] * 128;
                let n0 = origin[1] * tn;
                let end = unit[3];
                let mut s = unit[2];
                while s < end {
                    let stage = q % 4;
                    // From the second round on, the stage's previous slab must be released:
                    // that is the empty barrier's phase q / 4 − 1.
                    if q >= 4 {
                        while !mbarrier_try_wait_parity(empty, stage, (q / 4 + 1) % 2) {}
                    }
                    let st = at + stage * (384 * bk);
                    let k0 = s * bk;
                    mbarrier_arrive_expect_tx(full, stage, 384 * 64 * 2);
                    if A_K == 1 {
                        tma_load(smem, st, a, [k0, m0, z], full, stage);
                    } else {
                        for blk in 0..2 {
                            tma_load(
                                smem,
                                st + blk * (64 * bk),
                                a,
                                [m0 + blk * 64, k0, z],
                                full,
                                stage,
                            );
                        }
                    }
                    let sb = st + 128 * bk;
                    if GLU == 1 {
                        tma_load(smem, sb, b, [k0, n0, z], full, stage);
                        tma_load(smem, sb + 128 * bk, b2, [k0, n0, z], full, stage);
                    } else if B_K == 1 {
                        tma_load(smem, sb, b, [k0, n0, z], full, stage);
                    } else {
                        for blk in 0..4 {
                            let dst = sb + blk * (64 * bk);
                            tma_load(smem, dst, b, [n0 + blk * 64, k0, z], full, stage);
                        }
                    }
                    q += 1;
                    s += 1;
                }
                cur = unit[4];
            }
        }
    } else {
        setmaxnreg_inc(232);
        // This consumer's rows of the A slab: 64 swizzled rows of 128 bytes (k-contiguous), or
        // its 64-wide block (MN-contiguous), 8 KiB either way.
        let rows = (wg - 1) * (64 * bk);
        let lead = t % 128 == 0;
        let parts = epilogue_parts(flags);
        // With even pitches (n, ldc and the batch stride) column pairs are read and stored at
        // once: a pair is inside the matrix where its first column is. Old values from the f32
        // copy are read one element at a time: batched beside the rest, their registers would
        // spill.
        let pairs = flags & 128 != 0 && !(parts[4] && beta != 0.0);
        // Thread t of the warpgroup holds rows 16·warp + g (+8) and column pairs 8j + 2p.
        let warp = (t / 32) % 4;
        let g = (t % 32) / 4;
        let p = t % 4;
        let mut q = 0u32;
        let mut cur = begin;
        while cur < run_end {
            let unit = work_unit(cur, sk, tiles, slabs, per, run_end, grid, dp_end, sk_from);
            let tile = unit[0];
            let range = unit[1];
            let origin = tile_at(tile, tiles_m, tiles_n);
            let m0 = origin[0] * 128 + (wg - 1) * 64;
            let n0 = origin[1] * tn;
            let first = unit[2];
            let end = unit[3];
            let mut acc = [0.0f32; 128];
            let mut s = first;
            while s < end {
                let stage = q % 4;
                let sa = at + stage * (384 * bk) + rows;
                let sb = at + stage * (384 * bk) + 128 * bk;
                while !mbarrier_try_wait_parity(full, stage, (q / 4) % 2) {}
                wgmma_fence();
                for ks in [0, 1, 2, 3] {
                    // k-contiguous: a step (k16, or k8 of tf32) is 32 bytes along the swizzled
                    // row, 8-row groups 1024 bytes apart. MN-contiguous (16-bit inputs only):
                    // a step is 16 k rows (2048 bytes), the 64-wide blocks 8 KiB apart.
                    let da = if A_K == 1 {
                        wgmma_desc(smem, sa + ks * 2 * T::VEC, 16, 1024, 128)
                    } else {
                        wgmma_desc(smem, sa + ks * 1024, 8192, 1024, 128)
                    };
                    let db = if B_K == 1 {
                        wgmma_desc(smem, sb + ks * 2 * T::VEC, 16, 1024, 128)
                    } else {
                        wgmma_desc(smem, sb + ks * 1024, 8192, 1024, 128)
                    };
                    // An operand that is not k-contiguous is read MN-major.
                    if T::VEC == 4 {
                        wgmma_tf32(&mut acc, da, db, true);
                    } else if HALF == 1 {
                        wgmma_f16(&mut acc, da, db, true, 1 - A_K, 1 - B_K);
                    } else {
                        wgmma_bf16(&mut acc, da, db, true, 1 - A_K, 1 - B_K);
                    }
                }
                wgmma_commit_group();
                // The previous slab's products have retired once at most this one is in
                // flight: its stage goes back to the producer.
                wgmma_wait_group(1);
                if s > first && lead {
                    mbarrier_arrive(empty, (q - 1) % 4);
                }
                q += 1;
                s += 1;
            }
            // The tile's last stage goes back before the stores, so the producer fills the
            // next tile's stages meanwhile.
            wgmma_wait_group(0);
            if end > first && lead {
                mbarrier_arrive(empty, (q - 1) % 4);
            }
            // Stream-K: a part of a tile that does not start it goes to this block's slot of
            // `partials` (each thread its accumulators, in thread order) and its warp's counter
            // says so; the block that starts a tile adds the later blocks' parts, in block
            // order, before the epilogue. Each counter goes 0 → 1 → 0 within a launch.
            let mut published = false;
            if SPLIT == 0 && GLU == 0 && sk {
                let lane_slot = (wg - 1) * 16384 + t % 128;
                let counter = (wg - 1) * 4 + warp;
                if first > 0 {
                    published = true;
                    let slot = &mut partials[block * 32768 + lane_slot..];
                    for i in 0..128 {
                        slot[i * 128] = acc[i];
                    }
                    fence_gpu();
                    sync_warp();
                    if t % 32 == 0 {
                        counters.atomic_inc(block * 8 + counter, 1);
                    }
                } else if end < slabs {
                    let tile_end = (tile + 1) * slabs;
                    let mut other = block + 1;
                    let mut from = stretch_start(other, dp_end, rest, cut_grid);
                    while from < tile_end {
                        let to = stretch_start(other + 1, dp_end, rest, cut_grid);
                        // A block with an empty run computed nothing.
                        if to > from {
                            let flag = other * 8 + counter;
                            let mut spins = 0u32;
                            while counters.load_cg(flag) == 0 {
                                spins += 1;
                                if spins > 16 {
                                    nanosleep(64);
                                }
                            }
                            fence_gpu();
                            let slot = &mut partials[other * 32768 + lane_slot..];
                            for i in 0..128 {
                                acc[i] += slot.load_cg(i * 128);
                            }
                            // Every lane has seen the counter before it goes back to zero.
                            sync_warp();
                            if t % 32 == 0 {
                                counters.atomic_inc(flag, 1);
                            }
                        }
                        other += 1;
                        from = to;
                    }
                }
            }
            if !published {
                if GLU == 1 {
                    // Column block j < 16 holds gate columns and j + 16 the up columns beside them,
                    // so the first 64 accumulators become the tile's 128 output columns.
                    for i in 0..64 {
                        acc[i] = gemm_silu(acc[i]) * acc[i + 64];
                    }
                }
                // Range r of batch z is matrix r·batches + z of C (one range without split-k).
                let c = &mut c[(range * batches + z) as u64 * stride_c as u64..];
                // The f32 copy is written by whole-tile instances only (range 0).
                let copy = &mut copy[z as u64 * stride_c as u64..];
                let r0 = m0 + 16 * warp + g;
                let c0 = n0 + 2 * p;
                let top_in = r0 < m;
                let low_in = r0 + 8 < m;
                if pairs {
                    // The thread's two rows as bases, so each pair is a constant offset from one
                    // (the bases of rows past m are formed but never read or stored through).
                    let top = &mut c[r0 * ldc + c0..];
                    let low = &mut c[(r0 + 8) * ldc + c0..];
                    // Split-k partials and SwiGLU outputs are stored as they are, as is a plain
                    // product (α = 1, β = 0, no parts, no f32 copy); the rest go through the
                    // epilogue.
                    if SPLIT == 0 && GLU == 0 && !(flags & 271 == 0 && alpha == 1.0 && beta == 0.0)
                    {
                        // Loads go through rows and columns clamped into the matrix, so they need
                        // no branch and a quarter's loads (bias, old C, residual) are all issued
                        // before its arithmetic waits on any: a tile waits on memory four times
                        // rather than once a pair. What a clamped load reads is never stored.
                        let cb = min(c0, n - 2);
                        let lim = n - 2 - cb;
                        let top_at = min(r0, m - 1) * ldc + cb;
                        let low_at = min(r0 + 8, m - 1) * ldc + cb;
                        // A pair that is stored lies inside the matrix, where the clamped row and
                        // column are its own (n and c0 are even), so the stores go through the
                        // same bases as the loads.
                        let c_top = &mut c[top_at..];
                        let c_low = &mut c[low_at..];
                        // The f32 copy is only stored here: β reads it elsewhere.
                        let copy_top = &mut copy[top_at..];
                        let copy_low = &mut copy[low_at..];
                        let res_top = &residual[top_at..];
                        let res_low = &residual[low_at..];
                        let bias = &bias[cb..];
                        for h in 0..4 {
                            let mut bias_q = [0.0f32; 16];
                            if parts[0] {
                                for j in 0..8 {
                                    // One bias pair serves both rows.
                                    let b = bias.load_vec::<2>(min(8 * (8 * h + j), lim));
                                    bias_q[2 * j] = b[0] as f32;
                                    bias_q[2 * j + 1] = b[1] as f32;
                                }
                            }
                            let mut old = [0.0f32; 32];
                            if beta != 0.0 {
                                for j in 0..8 {
                                    let at = min(8 * (8 * h + j), lim);
                                    let t = c_top.load_vec::<2>(at);
                                    let l = c_low.load_vec::<2>(at);
                                    old[4 * j] = t[0] as f32;
                                    old[4 * j + 1] = t[1] as f32;
                                    old[4 * j + 2] = l[0] as f32;
                                    old[4 * j + 3] = l[1] as f32;
                                }
                            }
                            let mut res = [0.0f32; 32];
                            if parts[1] {
                                for j in 0..8 {
                                    let at = min(8 * (8 * h + j), lim);
                                    let t = res_top.load_vec::<2>(at);
                                    let l = res_low.load_vec::<2>(at);
                                    res[4 * j] = t[0] as f32;
                                    res[4 * j + 1] = t[1] as f32;
                                    res[4 * j + 2] = l[0] as f32;
                                    res[4 * j + 3] = l[1] as f32;
                                }
                            }
                            for j in 0..8 {
                                let at = 8 * (8 * h + j);
                                if c0 + at < n {
                                    let mut v = [0.0f32; 4];
                                    for e in 0..4 {
                                        v[e] = epilogue_value(
                                            acc[32 * h + 4 * j + e],
                                            old[4 * j + e],
                                            bias_q[2 * j + e % 2],
                                            res[4 * j + e],
                                            alpha,
                                            beta,
                                            parts,
                                        );
                                    }
                                    if top_in {
                                        c_top.store_vec::<2>(at, [v[0] as O, v[1] as O]);
                                        if parts[4] {
                                            copy_top.store_vec::<2>(at, [v[0], v[1]]);
                                        }
                                    }
                                    if low_in {
                                        c_low.store_vec::<2>(at, [v[2] as O, v[3] as O]);
                                        if parts[4] {
                                            copy_low.store_vec::<2>(at, [v[2], v[3]]);
                                        }
                                    }
                                }
                            }
                        }
                    } else if O::VEC == 8 && flags & 512 != 0 && m0 + 64 <= m && n0 + tn <= n {
                        // 16-bit outputs of a whole tile, with 16-byte aligned rows: a warp stages
                        // its 16 rows 64 columns at a time in shared memory and stores them as
                        // whole 128-byte row pieces (a pair store fills half of each sector it
                        // touches). A row's 16-byte chunk j sits at chunk j ^ (row % 8), so
                        // neither the pair writes nor the chunk reads conflict on banks.
                        let staged = shared_array::<u32, 4096>();
                        let mine = ((wg - 1) * 4 + warp) * 512;
                        let lane = t % 32;
                        let base = &mut c[(m0 + 16 * warp) * ldc + n0..];
                        for h in 0..(4 - 2 * GLU) {
                            for j in 0..8 {
                                let i = 8 * h + j;
                                let word = mine + g * 32 + (j ^ g) * 4 + p;
                                if HALF == 1 {
                                    staged[word] = pack_f16x2(acc[4 * i + 1], acc[4 * i]);
                                    staged[word + 256] = pack_f16x2(acc[4 * i + 3], acc[4 * i + 2]);
                                } else {
                                    staged[word] = pack_bf16x2(acc[4 * i + 1], acc[4 * i]);
                                    staged[word + 256] =
                                        pack_bf16x2(acc[4 * i + 3], acc[4 * i + 2]);
                                }
                            }
                            sync_warp();
                            for e in 0..4 {
                                let row = lane / 8 + 4 * e;
                                let chunk = lane % 8;
                                let w =
                                    staged.load_vec::<4>(mine + row * 32 + (chunk ^ (row % 8)) * 4);
                                base.store_words::<4>(row * ldc + 64 * h + 8 * chunk, w);
                            }
                            // The next quarter overwrites what the lanes just read.
                            sync_warp();
                        }
                    } else if m0 + 64 <= m && n0 + tn <= n {
                        for i in 0..(32 - 16 * GLU) {
                            top.store_vec::<2>(8 * i, [acc[4 * i] as O, acc[4 * i + 1] as O]);
                            low.store_vec::<2>(8 * i, [acc[4 * i + 2] as O, acc[4 * i + 3] as O]);
                        }
                    } else {
                        for i in 0..(32 - 16 * GLU) {
                            if c0 + 8 * i < n {
                                if top_in {
                                    top.store_vec::<2>(
                                        8 * i,
                                        [acc[4 * i] as O, acc[4 * i + 1] as O],
                                    );
                                }
                                if low_in {
                                    let pair = [acc[4 * i + 2] as O, acc[4 * i + 3] as O];
                                    low.store_vec::<2>(8 * i, pair);
                                }
                            }
                        }
                    }
                } else {
                    for i in 0..(128 - 64 * GLU) {
                        let row = r0 + 8 * ((i / 2) % 2);
                        let col = c0 + 8 * (i / 4) + i % 2;
                        if row < m && col < n {
                            if SPLIT == 1 || GLU == 1 {
                                c[row * ldc + col] = acc[i] as O;
                            } else {
                                finish(
                                    c,
                                    copy,
                                    bias,
                                    residual,
                                    row * ldc + col,
                                    col,
                                    acc[i],
                                    alpha,
                                    beta,
                                    parts,
                                );
                            }
                        }
                    }
                }
            }
            cur = unit[4];
        }
    }
}
