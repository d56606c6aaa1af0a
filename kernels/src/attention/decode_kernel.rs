//! Paged decode attention in `#[kernel]` (sm_80+): one block of eight warps per (split, kv
//! head and tile of query rows, sequence), so that each key and value byte is read once for all
//! the query rows that share its kv head.
//!
//! Each lane owns one 16-byte chunk of a token's head row (`D / 8` lanes per token, so a warp
//! takes `256 / D` tokens a step and the block `2048 / D`). An eight-stage `cp.async` pipeline
//! stages the keys and values of each step in shared memory; every lane reads back only the
//! chunks it copied itself, so waiting on its own groups is enough and the loop has no barrier.
//! The block-table entries of a lane's tokens are loaded one chunk of four steps before their
//! copies are issued, so the table read never stalls address generation, whatever the page
//! size.
//!
//! The loop takes four steps at a time. Scores are per-lane partial dots of the four tokens,
//! finished by a reduce-scatter of `shfl_xor`s within each token's lanes (half the
//! shuffles of four separate reductions), in the base-2 domain (the query is scaled by
//! `scale · log2 e`), with an online softmax per lane group that rescales once per four
//! tokens; the mask is applied only in the chunks that reach a row's limit, and the rescale only
//! where some lane's maximum moved. At the end the lane groups merge through shuffles, the warps
//! through the pipeline's shared memory in a fixed order (every row at once, behind one
//! barrier), and the block writes its normalized output and log-sum-exp (base 2) to the
//! workspace, or straight to `o` when there is one split.

use kernel_macros::{device, kernel};

/// The cache row holding position `pos` of the sequence whose table row starts at
/// `table_row`: its block's entry times `block_size` plus its slot, or `u32::MAX` where there is
/// nothing to read (`pos` at or past `end`, or an entry outside the cache's `num_blocks`).
/// Pages of a power-of-two size shift instead of dividing.
#[device(crate = crate::lang)]
fn page_row(
    block_table: &[u32],
    table_row: u32,
    pos: u32,
    end: u32,
    block_size: u32,
    page_shift: u32,
    num_blocks: u32,
) -> u32 {
    let mut page = 0u32;
    if page_shift < 32 {
        page = pos >> page_shift;
    } else {
        page = pos / block_size;
    }
    let e = block_table.load_vec_or::<1>(table_row + page, pos < end, u32::MAX);
    if e[0] < num_blocks {
        e[0] * block_size + pos - page * block_size
    } else {
        u32::MAX
    }
}

/// Starts the copies of this lane's key and value chunks of cache row `row` (from `k_lane`
/// and `v_lane`, the caches from this lane's chunk of the first row) into words `dst ..` and
/// `dst + 1024 ..` of the pipeline; zero-fills them where `row` is `u32::MAX`.
#[device(crate = crate::lang)]
fn issue_step<T>(words: &mut [u32], k_lane: &[T], v_lane: &[T], dst: u32, row: u32, width: u32) {
    let ok = row != u32::MAX;
    let at = if ok { row } else { 0u32 } as u64 * width as u64;
    cp_async_16_or(words, dst, &k_lane[at..], 0, ok);
    cp_async_16_or(words, dst + 1024, &v_lane[at..], 0, ok);
}

/// `o` (or this split's part of `workspace`) for the query rows `R · block_idx().y / kv_heads
/// ..` of kv head `block_idx().y % kv_heads`, sequence `block_idx().z`, over share
/// `block_idx().x` of the `grid_dim().x` equal shares (in whole steps) of its length. Query
/// row `rr` of a kv head is query token `rr / group`, head `kv · group + rr % group`. Dynamic
/// shared memory: 64 KiB (eight stages of 256 key and 256 value chunks, then the warps'
/// merge of `R · 8 · D` floats).
// Two blocks an SM where the registers allow it, so that one block's wait for its next chunk
// overlaps the other's arithmetic.
#[kernel(
    crate = crate::lang,
    block = 256,
    min_blocks = if R == 4 { 2 } else { 0 },
    instances(T in [bf16, f16], D in [64, 128, 256], R in [4, 8])
)]
pub fn paged_decode<T: Element, const D: u32, const R: u32>(
    q: &[T],
    k_cache: &[T],
    v_cache: &[T],
    block_table: &[u32],
    seq_lens: &[u32],
    workspace: &mut [f32],
    o: &mut [T],
    q_heads: u32,
    kv_heads: u32,
    new: u32,
    max_len: u32,
    block_size: u32,
    page_shift: u32,
    num_blocks: u32,
    blocks_per_seq: u32,
    scale_log2: f32,
) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let words = dynamic_shared::<u32>();
    let elems = dynamic_shared::<T>();
    let tid = thread_idx().x;
    let lane = lane_id();
    let warp = tid >> 5;
    let split = block_idx().x;
    let splits = grid_dim().x;
    let kv = block_idx().y % kv_heads;
    let tile = block_idx().y / kv_heads;
    let s = block_idx().z;
    let seqs = grid_dim().z;
    let group = q_heads / kv_heads;
    let width = kv_heads * D;
    // `D / 8` lanes per token: the chunk this lane owns, and the token it takes in a step.
    let lanes = D / 8;
    let chunk = lane & (lanes - 1);
    let step_tokens = 2048 / D;
    let my_token = warp * (32 / lanes) + lane / lanes;
    let head_at = kv * D + chunk * 8;

    // A sequence shorter than its new tokens attends nothing (its rows come out zero).
    let len_in = min(seq_lens[s], max_len);
    let len = if len_in < new { 0u32 } else { len_in };
    // Each split takes an equal share of the sequence's steps (of its length, not of
    // `max_len`: a graph captured for long contexts replays at short ones).
    let all_steps = (len + step_tokens - 1) / step_tokens;
    let per = (all_steps + splits - 1) / splits;
    let first = split * per * step_tokens;
    let end = min(first + per * step_tokens, len);
    let steps = if end > first {
        (end - first + step_tokens - 1) / step_tokens
    } else {
        0u32
    };

    // This lane's chunk of each query row, scaled into the base-2 domain, and the positions
    // each row attends within this split: `first .. limit[r]`.
    let mut qv = [0.0f32; 8 * R];
    let mut limit = [0u32; R];
    for r in 0..R {
        let rr = tile * R + r;
        let ok = rr < group * new;
        let i = rr / group;
        let h = kv * group + rr % group;
        let at = ((s * new + i) * q_heads + h) * D + chunk * 8;
        let v = q.load_vec_or::<8>(at, ok, 0.0 as T);
        for e in 0..8 {
            qv[r * 8 + e] = (v[e] as f32) * scale_log2;
        }
        let attends = if len == 0 { 0u32 } else { len - new + i + 1 };
        // A row past the block's rows writes nothing: it may attend the whole split.
        limit[r] = if ok { min(attends, end) } else { end };
    }
    // Chunks wholly below every row's limit need no mask: all but a split's last one or two.
    let mut unmasked = end;
    for r in 0..R {
        unmasked = min(unmasked, limit[r]);
    }

    // Running maximum (a finite floor, so that a fully masked row stays NaN-free), sum and
    // output of each row over this lane group's tokens.
    let mut m = [-1.0e30f32; R];
    let mut l = [0.0f32; R];
    let mut acc = [0.0f32; 8 * R];

    // A chunk is four steps: a lane group scores its four tokens for every row, takes one
    // maximum and rescales its running sum and output once, then adds the values. The table
    // entries of a chunk are loaded one chunk before its copies are issued.
    let table_row = s * blocks_per_seq;
    let lane_pos = first + my_token;
    let k_lane = &k_cache[head_at as u64..];
    let v_lane = &v_cache[head_at as u64..];
    // Stage `t` of this lane's chunks: words `t · 2048 + tid · 4` (keys), `+ 1024` (values).
    let lane_words = tid * 4;
    let mut row = [0u32; 4];
    for c in 0..4u32 {
        let pos = lane_pos + c * step_tokens;
        row[c] = page_row(
            block_table,
            table_row,
            pos,
            end,
            block_size,
            page_shift,
            num_blocks,
        );
    }
    for c in 0..4u32 {
        issue_step(words, k_lane, v_lane, lane_words + c * 2048, row[c], width);
        cp_async_commit();
    }
    for c in 0..4u32 {
        let pos = lane_pos + (4 + c) * step_tokens;
        row[c] = page_row(
            block_table,
            table_row,
            pos,
            end,
            block_size,
            page_shift,
            num_blocks,
        );
    }

    // Which quarter of a token's lanes this lane is in: it finishes that token's score.
    let top = D / 16;
    let next = D / 32;
    let hi = (lane & top) != 0;
    let mid = (lane & next) != 0;
    let chunks = (steps + 3) / 4;
    let mut u = 0u32;
    while u < chunks {
        // Refill the stages the previous chunk read with the next chunk, then fetch the table
        // entries of the chunk after it. Chunk `u` sits in stages `4 · (u & 1) ..`.
        let base = u * 4;
        let read_words = lane_words + (u & 1) * 8192;
        let write_words = lane_words + ((u + 1) & 1) * 8192;
        for c in 0..4u32 {
            issue_step(words, k_lane, v_lane, write_words + c * 2048, row[c], width);
            cp_async_commit();
        }
        for c in 0..4u32 {
            let pos = lane_pos + (base + 8 + c) * step_tokens;
            row[c] = page_row(
                block_table,
                table_row,
                pos,
                end,
                block_size,
                page_shift,
                num_blocks,
            );
        }
        cp_async_wait(4);

        // Partial dots of this lane's chunk with each row, for the chunk's four tokens.
        let mut part = [0.0f32; 4 * R];
        for c in 0..4u32 {
            let kx = elems.load_vec::<8>((read_words + c * 2048) * 2);
            let mut kf = [0.0f32; 8];
            for e in 0..8 {
                kf[e] = kx[e] as f32;
            }
            for r in 0..R {
                let mut d = 0.0f32;
                for e in 0..8 {
                    d = fma(qv[r * 8 + e], kf[e], d);
                }
                part[r * 4 + c] = d;
            }
        }

        let pos = lane_pos + base * step_tokens;
        let masked = first + (base + 4) * step_tokens > unmasked;
        // Every row's scores first, then the mask, the maxima and the rescale each once for
        // all rows: branches between rows would keep the scheduler from interleaving them.
        let mut sc = [0.0f32; 4 * R];
        for r in 0..R {
            // Reduce-scatter: each exchange halves the values a lane carries, so a lane ends
            // with the whole score of token `2·hi + mid`; shuffles back give it all four.
            let d0 = part[r * 4];
            let d1 = part[r * 4 + 1];
            let d2 = part[r * 4 + 2];
            let d3 = part[r * 4 + 3];
            let a0 = if hi { d2 } else { d0 } + shfl_xor(if hi { d0 } else { d2 }, top);
            let a1 = if hi { d3 } else { d1 } + shfl_xor(if hi { d1 } else { d3 }, top);
            let mut v = if mid { a1 } else { a0 } + shfl_xor(if mid { a0 } else { a1 }, next);
            if D >= 256 {
                v += shfl_xor(v, 4);
            }
            if D >= 128 {
                v += shfl_xor(v, 2);
            }
            v += shfl_xor(v, 1);
            let w = shfl_xor(v, next);
            let e0 = if mid { w } else { v };
            let e1 = if mid { v } else { w };
            let f0 = shfl_xor(e0, top);
            let f1 = shfl_xor(e1, top);
            sc[r * 4] = if hi { f0 } else { e0 };
            sc[r * 4 + 1] = if hi { f1 } else { e1 };
            sc[r * 4 + 2] = if hi { e0 } else { f0 };
            sc[r * 4 + 3] = if hi { e1 } else { f1 };
        }
        if masked {
            for r in 0..R {
                for c in 0..4u32 {
                    sc[r * 4 + c] = if pos + c * step_tokens < limit[r] {
                        sc[r * 4 + c]
                    } else {
                        f32::NEG_INFINITY
                    };
                }
            }
        }
        let mut prob = [0.0f32; 4 * R];
        let mut corr = [1.0f32; R];
        let mut moved = false;
        for r in 0..R {
            let mut mx = m[r];
            for c in 0..4u32 {
                mx = max(mx, sc[r * 4 + c]);
            }
            moved = moved || mx > m[r];
            corr[r] = ex2_approx_ftz(m[r] - mx);
            let mut sum = 0.0f32;
            for c in 0..4u32 {
                let p = ex2_approx_ftz(sc[r * 4 + c] - mx);
                prob[r * 4 + c] = p;
                sum += p;
            }
            l[r] = fma(l[r], corr[r], sum);
            m[r] = mx;
        }
        // Where no lane's maximum moved, every `corr` is exactly 1: skipping the rescale
        // changes no bits.
        if vote_any(moved) {
            for r in 0..R {
                for e in 0..8 {
                    acc[r * 8 + e] *= corr[r];
                }
            }
        }
        for c in 0..4u32 {
            let vx = elems.load_vec::<8>((read_words + c * 2048 + 1024) * 2);
            let mut vf = [0.0f32; 8];
            for e in 0..8 {
                vf[e] = vx[e] as f32;
            }
            for r in 0..R {
                for e in 0..8 {
                    acc[r * 8 + e] = fma(prob[r * 4 + c], vf[e], acc[r * 8 + e]);
                }
            }
        }
        u += 1;
    }
    cp_async_wait(0);

    // Lane groups of a warp (same chunk, other tokens) merge by shuffles.
    for x in [16, 8] {
        if x >= lanes {
            for r in 0..R {
                let mo = shfl_xor(m[r], x);
                let lo = shfl_xor(l[r], x);
                let mx = max(m[r], mo);
                let a = ex2_approx_ftz(m[r] - mx);
                let b = ex2_approx_ftz(mo - mx);
                l[r] = l[r] * a + lo * b;
                for e in 0..8 {
                    let other = shfl_xor(acc[r * 8 + e], x);
                    acc[r * 8 + e] = acc[r * 8 + e] * a + other * b;
                }
                m[r] = mx;
            }
        }
    }

    // Warps merge through shared memory in warp order, every row at once, in the pipeline's
    // stages (free once every warp has passed the barrier: each has waited for its copies).
    // `R · 8 · D` floats: at most the pipeline's 64 KiB.
    let sh_acc = dynamic_shared::<f32>();
    let sh_m = shared_array::<f32, 64>();
    let sh_l = shared_array::<f32, 64>();
    sync_threads();
    for r in 0..R {
        if lane < lanes {
            for e in 0..8 {
                sh_acc[(r * 8 + warp) * D + chunk * 8 + e] = acc[r * 8 + e];
            }
        }
        if lane == 0 {
            sh_m[r * 8 + warp] = m[r];
            sh_l[r * 8 + warp] = l[r];
        }
    }
    sync_threads();
    let rows = seqs * new * q_heads;
    // Each thread finishes `R · D / 256` (row, column) outputs.
    for i in 0..R * D / 256 {
        let at = i * 256 + tid;
        let r = at / D;
        let col = at % D;
        let rr = tile * R + r;
        if rr < group * new {
            let mut mx = sh_m[r * 8];
            for w in 1..8u32 {
                mx = max(mx, sh_m[r * 8 + w]);
            }
            let mut lt = 0.0f32;
            let mut ot = 0.0f32;
            for w in 0..8u32 {
                let f = ex2_approx_ftz(sh_m[r * 8 + w] - mx);
                lt = fma(sh_l[r * 8 + w], f, lt);
                ot = fma(sh_acc[(r * 8 + w) * D + col], f, ot);
            }
            let out = if lt > 0.0 { ot / lt } else { 0.0f32 };
            let row = (s * new + rr / group) * q_heads + kv * group + rr % group;
            if splits == 1 {
                o[row * D + col] = out as T;
            } else {
                workspace[(split * rows + row) * D + col] = out;
                if col == 0 {
                    let lse = if lt > 0.0 {
                        mx + log2(lt)
                    } else {
                        f32::NEG_INFINITY
                    };
                    workspace[splits * rows * D + split * rows + row] = lse;
                }
            }
        }
    }
}

/// Merges the splits' partial outputs into `o` (`rows × dim`), in split order: each split's
/// output weighted by `2^(lse − max lse)`. Rows no split attended come out zero.
#[kernel(crate = crate::lang, block = 256, instances(T in [bf16, f16]))]
pub fn paged_decode_combine<T: Element>(
    workspace: &[f32],
    o: &mut [T],
    rows: u32,
    dim: u32,
    splits: u32,
) {
    // Before any memory access: where the launch lets this kernel start while the one
    // before it finishes (sm_90+), it waits here until that one is done.
    griddep_wait();
    let i = block_idx().x * 256 + thread_idx().x;
    let n = rows * dim;
    if i < n {
        let row = i / dim;
        let lse_at = splits * n + row;
        let mut mx = f32::NEG_INFINITY;
        for k in 0..splits {
            mx = max(mx, workspace[lse_at + k * rows]);
        }
        let mut lt = 0.0f32;
        let mut ot = 0.0f32;
        if mx > f32::NEG_INFINITY {
            for k in 0..splits {
                let f = ex2_approx_ftz(workspace[lse_at + k * rows] - mx);
                lt += f;
                ot = fma(f, workspace[k * n + i], ot);
            }
        }
        let out = if lt > 0.0 { ot / lt } else { 0.0f32 };
        o[i] = out as T;
    }
}
