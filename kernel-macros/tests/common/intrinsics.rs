//! Kernels that call the intrinsics of `kernel_dsl::intrinsics` added for the op library, shared
//! by the emulator tests (`intrinsics_on_emulator.rs`) and the ptxas check (`ptx_goldens.rs`).

use kernel_macros::kernel;

/// Eight f32 results per element: the fast and the IEEE-rounded forms side by side, free
/// functions and methods.
#[kernel(crate = crate::common::paths)]
pub fn float_intrinsics(x: &[f32], y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        let v = x[i];
        y[i * 8] = ex2_approx_ftz(v);
        y[i * 8 + 1] = v.exp2();
        y[i * 8 + 2] = sqrt_rn(v);
        y[i * 8 + 3] = rcp_rn(v);
        y[i * 8 + 4] = rsqrt(v);
        y[i * 8 + 5] = rsqrt_rn(v);
        y[i * 8 + 6] = v.rsqrt_rn();
        y[i * 8 + 7] = v.ex2_approx_ftz();
    }
}

/// `round_ties_even` as a function and a method, and `f32::NAN` in place of negative inputs,
/// three results per element.
#[kernel(crate = crate::common::paths)]
pub fn rounding_and_nan(x: &[f32], y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        let v = x[i];
        y[i * 3] = round_ties_even(v);
        y[i * 3 + 1] = v.round_ties_even();
        y[i * 3 + 2] = if v < 0.0 { f32::NAN } else { v };
    }
}

/// `x.sqrt()` on an `f64` (`sqrt.rn.f64`), from an f32 input widened in the kernel.
#[kernel(crate = crate::common::paths)]
pub fn sqrt_f64(x: &[f32], y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        // Widened, rooted, and scaled by 2^-20 so the f32 result keeps bits the f32 root loses.
        let r = (x[i] as f64).sqrt();
        y[i * 2] = r as f32;
        y[i * 2 + 1] = ((r - ((r as f32) as f64)) * 1048576.0f64) as f32;
    }
}

/// `brev`, `clz` and `cvt_tf32`, three words per element.
#[kernel(crate = crate::common::paths)]
pub fn bit_intrinsics(x: &[u32], f: &[f32], y: &mut [u32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i * 3] = brev(x[i]);
        y[i * 3 + 1] = clz(x[i]);
        y[i * 3 + 2] = cvt_tf32(f[i]);
    }
}

/// `dp4a_s8`, `dp4a_u8_s8` and `dp4a_u8` of `a[i]`, `b[i]` and `c[i]`, three words per
/// element.
#[kernel(crate = crate::common::paths)]
pub fn byte_dot_products(a: &[u32], b: &[u32], c: &[i32], y: &mut [u32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i * 3] = dp4a_s8(a[i], b[i], c[i]) as u32;
        y[i * 3 + 1] = dp4a_u8_s8(a[i], b[i], c[i]) as u32;
        y[i * 3 + 2] = dp4a_u8(a[i], b[i], c[i] as u32);
    }
}

/// `prmt(a[i], b[i], c[i])` and `fma_bf16x2(a[i], b[i], c[i])`, two words per element.
#[kernel(crate = crate::common::paths)]
pub fn packed_word_ops(a: &[u32], b: &[u32], c: &[u32], y: &mut [u32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i * 2] = prmt(a[i], b[i], c[i]);
        y[i * 2 + 1] = fma_bf16x2(a[i], b[i], c[i]);
    }
}

/// `f16_bits_to_f32` of the low and the high half of `h[i]`, two per element.
#[kernel(crate = crate::common::paths)]
pub fn half_words_to_f32(h: &[u32], y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i * 2] = f16_bits_to_f32(h[i]);
        y[i * 2 + 1] = f16_bits_to_f32(h[i] >> 16);
    }
}

/// Each thread copies 16 bytes of `x` and of `h` into shared memory with `cp_async_16`, then
/// reads them back with `load_vec` (one `ld.shared` each) and writes them out reversed.
#[kernel(crate = crate::common::paths, block = 32)]
pub fn staged_vectors(x: &[f32], h: &[bf16], y: &mut [f32], g: &mut [bf16]) {
    let xs = shared_array::<f32, 128>();
    let hs = shared_array::<bf16, 256>();
    let t = thread_idx().x;
    cp_async_16(xs, t * 4, x, t * 4);
    cp_async_16(hs, t * 8, h, t * 8);
    cp_async_commit();
    cp_async_wait(0);
    let v = xs.load_vec::<4>(t * 4);
    let w = hs.load_vec::<8>(t * 8);
    let mut r = [0.0f32; 4];
    let mut q = [0.0 as bf16; 8];
    for k in 0..4 {
        r[k] = v[3 - k];
    }
    for k in 0..8 {
        q[k] = w[7 - k];
    }
    y.store_vec::<4>(t * 4, r);
    g.store_vec::<8>(t * 8, q);
}

/// Every thread takes a ticket from a counter that wraps after `limit`.
#[kernel(crate = crate::common::paths)]
pub fn tickets(counter: &mut [u32], out: &mut [u32], limit: u32, n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        out[i] = counter.atomic_inc(0, limit);
    }
}

/// Each block sums its 64 elements; the block that finishes last adds the partial sums. The
/// writers publish with `fence_gpu` before taking a ticket; the last block reads the partials
/// through L2 (`load_cg`), since another block wrote them during this kernel. The counter
/// wraps back to 0, ready for the next launch.
#[kernel(crate = crate::common::paths, block = 64)]
pub fn last_block_total(x: &[u32], partial: &mut [u32], counter: &mut [u32], total: &mut [u32]) {
    let t = thread_idx().x;
    let b = block_idx().x;
    let blocks = grid_dim().x;
    if t == 0 {
        let mut s = 0;
        for k in 0..64 {
            s += x[b * 64 + k];
        }
        partial[b] = s;
        fence_gpu();
        let done = counter.atomic_inc(0, blocks - 1);
        if done == blocks - 1 {
            fence_gpu();
            let mut all = 0;
            for k in 0..blocks {
                all += partial.load_cg(k);
            }
            total[0] = all;
        }
    }
}

/// Block `b` waits until block `b + 1` has published, then publishes `out[b + 1] + b + 1`:
/// block 0 waits on the last block. The wait polls the flag through L2 (`load_cg`) and pauses
/// with `nanosleep`, which on the emulator lets the later blocks run.
#[kernel(crate = crate::common::paths, block = 32)]
pub fn chained_blocks(flags: &mut [u32], out: &mut [u32]) {
    let b = block_idx().x;
    if thread_idx().x == 0 {
        let mut below = 0u32;
        if b + 1 < grid_dim().x {
            while flags.load_cg(b + 1) == 0 {
                nanosleep(200);
            }
            fence_gpu();
            below = out.load_cg(b + 1);
        }
        out[b] = below + b + 1;
        fence_gpu();
        flags[b] = 1;
    }
}

/// Copies `x` to `y` with a fence of each scope between the copy and a flag.
#[kernel(crate = crate::common::paths)]
pub fn fenced_copy(x: &[f32], y: &mut [f32], flags: &mut [u32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = x[i];
        fence_cta();
        fence_gpu();
        fence_sys();
        flags[i] = 1;
    }
}

/// One warp computes `d = a × b + c` for a 16×8 `a`, an 8×8 `b` and a 16×8 `c`, all f32
/// row-major, with `mma.sync.m16n8k8` on tf32 operands.
#[kernel(crate = crate::common::paths, block = 32)]
pub fn mma_tf32_16x8x8(a: &[f32], b: &[f32], c: &[f32], d: &mut [f32]) {
    let lane = thread_idx().x;
    let group = lane >> 2;
    let pair = lane & 3;
    let a_frag = [
        cvt_tf32(a[group * 8 + pair]),
        cvt_tf32(a[(group + 8) * 8 + pair]),
        cvt_tf32(a[group * 8 + pair + 4]),
        cvt_tf32(a[(group + 8) * 8 + pair + 4]),
    ];
    let b_frag = [
        cvt_tf32(b[pair * 8 + group]),
        cvt_tf32(b[(pair + 4) * 8 + group]),
    ];
    let lo = group * 8 + pair * 2;
    let hi = (group + 8) * 8 + pair * 2;
    let acc = [c[lo], c[lo + 1], c[hi], c[hi + 1]];
    let r = mma_m16n8k8_tf32(a_frag, b_frag, acc);
    d[lo] = r[0];
    d[lo + 1] = r[1];
    d[hi] = r[2];
    d[hi + 1] = r[3];
}

/// One warp computes `d = a × b + c` for a 16×32 `a` (bytes, row-major), a 32×8 `b` (int8,
/// stored column by column: `bt[n·32 + k]`) and a 16×8 `c` (`i32`, row-major), twice:
/// `a` read as int8 into `ds`, as u8 into `du`.
#[kernel(crate = crate::common::paths, block = 32)]
pub fn mma_int8_16x8x32(a: &[u32], bt: &[u32], c: &[i32], ds: &mut [i32], du: &mut [i32]) {
    let lane = thread_idx().x;
    let group = lane >> 2;
    let quad = lane & 3;
    // Words: a row of `a` is 8, a column of `b` 8.
    let a_frag = [
        a[group * 8 + quad],
        a[(group + 8) * 8 + quad],
        a[group * 8 + quad + 4],
        a[(group + 8) * 8 + quad + 4],
    ];
    let b_frag = [bt[group * 8 + quad], bt[group * 8 + quad + 4]];
    let lo = group * 8 + quad * 2;
    let hi = (group + 8) * 8 + quad * 2;
    let acc = [c[lo], c[lo + 1], c[hi], c[hi + 1]];
    let s = mma_m16n8k32_s8(a_frag, b_frag, acc);
    let u = mma_m16n8k32_u8_s8(a_frag, b_frag, acc);
    ds[lo] = s[0];
    ds[lo + 1] = s[1];
    ds[hi] = s[2];
    ds[hi + 1] = s[3];
    du[lo] = u[0];
    du[lo + 1] = u[1];
    du[hi] = u[2];
    du[hi + 1] = u[3];
}

/// Each thread's view of the three block-wide votes over its flag: how many threads of the
/// block hold it, whether all do, whether any does, three words per thread.
#[kernel(crate = crate::common::paths)]
pub fn block_votes(flags: &[u32], out: &mut [u32]) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    let p = flags[i] != 0;
    let count = sync_threads_count(p);
    let all = sync_threads_and(p);
    let any = sync_threads_or(p);
    out[i * 3] = count;
    out[i * 3 + 1] = if all { 1u32 } else { 0u32 };
    out[i * 3 + 2] = if any { 1u32 } else { 0u32 };
}

/// Blocks take chunks of `block_dim().x` elements from a counter until none is left: thread 0
/// takes the ticket and broadcasts it through shared memory, and `sync_threads_or` ends the
/// loop, which holds barriers, in every thread of the block at once.
#[kernel(crate = crate::common::paths)]
pub fn chunked_work(seen: &mut [u32], counter: &mut [u32], n: u32) {
    let chunk = block_dim().x;
    let chunks = (n + chunk - 1) / chunk;
    let ticket_of = shared_array::<u32, 1>();
    let mut more = true;
    while more {
        if thread_idx().x == 0 {
            ticket_of[0] = counter.atomic_add(0, 1u32);
        }
        sync_threads();
        let ticket = ticket_of[0];
        more = sync_threads_or(ticket < chunks);
        if ticket < chunks {
            let i = ticket * chunk + thread_idx().x;
            if i < n {
                seen[i] += 1;
            }
        }
    }
}

/// `load_words` of every width on a `&[bf16]`: thread `t` reads its 16 bytes as one `[u32; 4]`,
/// the first 8 again as `[u32; 2]` and the next 4 as `[u32; 1]`, and writes the words out.
#[kernel(crate = crate::common::paths)]
pub fn bf16_words(h: &[bf16], w4: &mut [u32], w2: &mut [u32], w1: &mut [u32], n: u32) {
    let t = block_idx().x * block_dim().x + thread_idx().x;
    if t < n {
        w4.store_words::<4>(t * 4, h.load_words::<4>(t * 8));
        let b = h.load_words::<2>(t * 8);
        w2[t * 2] = b[0];
        w2[t * 2 + 1] = b[1];
        w1[t] = h.load_words::<1>(t * 8 + 4)[0];
    }
}

/// Four bf16 per thread widened to f32 from their words: the low half shifted up, the high
/// half masked.
#[kernel(crate = crate::common::paths)]
pub fn widen_bf16_words(h: &[bf16], y: &mut [f32], n: u32) {
    let t = block_idx().x * block_dim().x + thread_idx().x;
    if t < n {
        let w = h.load_words::<2>(t * 4);
        for j in 0..2 {
            y[t * 4 + j * 2] = from_bits(w[j] << 16);
            y[t * 4 + j * 2 + 1] = from_bits(w[j] & 0xffff_0000);
        }
    }
}

/// Two words per thread where they lie below `n` elements, zeros past it.
#[kernel(crate = crate::common::paths)]
pub fn guarded_words(h: &[bf16], out: &mut [u32], n: u32) {
    let t = thread_idx().x;
    let w = h.load_words_or::<2>(t * 4, t * 4 < n);
    out.store_words::<2>(t * 2, w);
}

/// `store_words` of every width into `&mut [bf16]`: `y` gets each pair of `x` swapped, `z` a
/// copy of `x` whose third word is swapped.
#[kernel(crate = crate::common::paths)]
pub fn swap_bf16_pairs(x: &[bf16], y: &mut [bf16], z: &mut [bf16]) {
    let t = block_idx().x * block_dim().x + thread_idx().x;
    let mut w = x.load_words::<4>(t * 8);
    for j in 0..4 {
        w[j] = (w[j] >> 16) | (w[j] << 16);
    }
    y.store_words::<4>(t * 8, w);
    z.store_words::<2>(t * 8, x.load_words::<2>(t * 8));
    z.store_words::<1>(t * 8 + 4, [w[2]]);
    z.store_words::<1>(t * 8 + 6, x.load_words::<1>(t * 8 + 6));
}
