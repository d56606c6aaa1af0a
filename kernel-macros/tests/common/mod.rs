//! The kernel-dsl samples rewritten with `#[kernel]`, shared by the sample tests.
#![allow(dead_code)]

pub mod paths {
    pub use kernel_dsl as dsl;
    #[allow(unused_imports)]
    pub use kernel_macros::__kernel_expand;
    pub use kernel_runtime as runtime;
}

pub mod intrinsics;

pub mod kernels {
    use kernel_macros::{device, kernel};
    #[allow(non_camel_case_types)]
    type f16 = kernel_runtime::F16;
    #[allow(non_camel_case_types)]
    type bf16 = kernel_runtime::Bf16;

    #[kernel(crate = crate::common::paths)]
    pub fn vector_add(a: &[f32], b: &[f32], c: &mut [f32], n: u32) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        if i < n {
            c[i] = a[i] + b[i];
        }
    }

    /// Grid-stride SAXPY: `y = a·x + y`.
    #[kernel(crate = crate::common::paths)]
    pub fn saxpy(a: f32, x: &[f32], y: &mut [f32], n: u32) {
        let start = block_idx().x * block_dim().x + thread_idx().x;
        let stride = block_dim().x * grid_dim().x;
        for i in (start..n).step_by(stride) {
            y[i] = a.mul_add(x[i], y[i]);
        }
    }

    /// Butterfly sum over the warp: every lane ends with the total.
    #[device(crate = crate::common::paths)]
    fn warp_sum(v: f32) -> f32 {
        let mut s = v;
        s += shfl_xor(s, 16);
        s += shfl_xor(s, 8);
        s += shfl_xor(s, 4);
        s += shfl_xor(s, 2);
        s += shfl_xor(s, 1);
        s
    }

    /// One partial sum per block of 256 threads: grid-stride accumulation, a warp shuffle
    /// reduction, then one warp reduces the eight warp sums.
    #[kernel(crate = crate::common::paths, block = 256)]
    pub fn block_reduce_sum(x: &[f32], out: &mut [f32], n: u32) {
        let warp_sums = shared_array::<f32, 8>();
        let mut acc = 0.0;
        let start = block_idx().x * block_dim().x + thread_idx().x;
        let stride = block_dim().x * grid_dim().x;
        for i in (start..n).step_by(stride) {
            acc += x[i];
        }
        acc = warp_sum(acc);
        let tid = thread_idx().x;
        if lane_id() == 0 {
            warp_sums[tid >> 5] = acc;
        }
        sync_threads();
        let mut total = 0.0;
        if tid < 8 {
            total = warp_sums[tid];
        }
        total = warp_sum(total);
        if tid == 0 {
            out[block_idx().x] = total;
        }
    }

    /// `output = inputᵀ` for a `rows × cols` row-major matrix, through a padded 32×33 tile.
    #[kernel(crate = crate::common::paths, block = (32, 8, 1))]
    pub fn transpose_32x32(input: &[f32], output: &mut [f32], rows: u32, cols: u32) {
        let tile = shared_array::<f32, { 32 * 33 }>();
        let tx = thread_idx().x;
        let ty = thread_idx().y;
        let col = block_idx().x * 32 + tx;
        let row0 = block_idx().y * 32;
        for j in (0..32).step_by(8) {
            let row = row0 + ty + j;
            if row < rows && col < cols {
                tile[(ty + j) * 33 + tx] = input[row * cols + col];
            }
        }
        sync_threads();
        let out_col = block_idx().y * 32 + tx;
        let out_row0 = block_idx().x * 32;
        for j in (0..32).step_by(8) {
            let out_row = out_row0 + ty + j;
            if out_row < cols && out_col < rows {
                output[out_row * rows + out_col] = tile[tx * 33 + ty + j];
            }
        }
    }

    /// One warp computes `c = a × btᵀ` for a 16×16 `a` and 8×16 `bt`, both bf16 row-major
    /// and passed as packed pairs (`u32`), with `mma.sync.m16n8k16`.
    #[kernel(crate = crate::common::paths, block = 32)]
    pub fn mma_bf16_16x8x16(a: &[u32], bt: &[u32], c: &mut [f32]) {
        let lane = thread_idx().x;
        let group = lane >> 2;
        let pair = lane & 3;
        let a_frag = [
            a[group * 8 + pair],
            a[(group + 8) * 8 + pair],
            a[group * 8 + pair + 4],
            a[(group + 8) * 8 + pair + 4],
        ];
        let b_frag = [bt[group * 8 + pair], bt[group * 8 + pair + 4]];
        let d = mma_m16n8k16_bf16(a_frag, b_frag, [0.0f32; 4]);
        let lo = group * 8 + pair * 2;
        let hi = (group + 8) * 8 + pair * 2;
        c[lo] = d[0];
        c[lo + 1] = d[1];
        c[hi] = d[2];
        c[hi + 1] = d[3];
    }

    /// Exercises the rest of the language so ptxas checks every form the macro prints.
    #[kernel(crate = crate::common::paths)]
    pub fn coverage_math(
        x: &[f32],
        y: &mut [f32],
        h: &mut [f16],
        counts: &mut [u32],
        n: u32,
        flag: bool,
        k: i32,
    ) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        if i >= n {
            return;
        }
        let v = x[i];
        let mut r = v.exp() + v.exp2() + v.abs().ln() + (v * v + 1.0).log2() + v.abs().sqrt();
        r += rsqrt(v * v + 1.0) + v.sin() + v.cos() + v.floor() + v.ceil() + fma(v, 2.0, 1.0);
        r = r.min(100.0).max(-100.0).mul_add(0.5, -v);
        r = if flag { r } else { -r };
        let q = if k > 0 { (k as f32) * r } else { r / 3.0 };
        let mut bits = i ^ (i << 3) | (i >> 2) & 7;
        bits %= 1000;
        bits = !bits;
        let s = (k % 7) as u32 + bits / 3 - (i as i64 as u64 as u32);
        y[i] = q + s as f32;
        h[i] = (q * 0.25) as f16;
        let lane = lane_id();
        let up = shfl_up(q, 1) + shfl_down(q, 1) + shfl_idx(q, 0);
        let any = vote_any(up > 0.0);
        let all = vote_all(up > 0.0);
        let mask = ballot(any && !all);
        if lane == 0 {
            let old = counts.atomic_add(0, mask & 1);
            counts.atomic_max(1, old);
            counts.atomic_min(2, old);
            counts.atomic_exch(3, lane);
            counts.atomic_cas(4, 0, 1);
            y.atomic_add(i, 1.0);
        }
        let mut w = 0u32;
        while w < 3 {
            w += 1;
            if w == 2 {
                continue;
            }
        }
        loop {
            w += 1;
            if w > 10 {
                break;
            }
        }
        counts[5 + (i & 3)] = w;
    }

    /// Vector loads and stores, bf16 conversions, local arrays, warp reductions, tanh.
    #[kernel(crate = crate::common::paths)]
    pub fn coverage_vectors(
        x: &[f32],
        y: &mut [f32],
        b: &[bf16],
        out: &mut [bf16],
        c: &mut [u32],
        n8: u32,
    ) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        if i < n8 {
            let v = x.load4(i * 4);
            let mut acc = [0.0f32; 4];
            for k in 0..4 {
                acc[k] = v[k].tanh() * 2.0;
            }
            y.store4(i * 4, acc);
            let mut hb = b.load8(i * 8);
            for k in 0..8 {
                hb[k] = (hb[k] as f32 + 1.0) as bf16;
            }
            out.store8(i * 8, hb);
            c[i] = warp_reduce_add(i) + warp_reduce_max(i) + pack_bf16x2(acc[0], acc[1]);
        }
    }

    /// Dynamic shared memory, ldmatrix and cp.async.
    #[kernel(crate = crate::common::paths, block = 32)]
    pub fn coverage_async(x: &[f32], y: &mut [f32], a: &[u32]) {
        let stage = dynamic_shared::<f32>();
        let tile = shared_array::<u32, 256>();
        let t = thread_idx().x;
        cp_async_16(stage, t * 4, x, t * 4);
        cp_async_commit();
        cp_async_wait(0);
        tile[t] = a[t];
        sync_threads();
        let m = ldmatrix_x4(tile, (t & 15) * 8);
        let n = ldmatrix_x2_trans(tile, (t & 7) * 8);
        y[t] = stage[t * 4] + (m[0] + m[3] + n[1]) as f32;
    }
}
