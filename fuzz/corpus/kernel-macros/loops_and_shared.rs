pub fn k(x: &[f32], xi: &[i32], y: &mut [f32], yu: &mut [u32], n: u32, s: f32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    let buf = shared_array::<f32, 64>();
    buf[thread_idx().x % 64] = x[i % n] * s;
    sync_threads();
    let mut acc = 0.0;
    for k in (0..n).step_by(7) {
        if k > 30 { break; }
        acc += buf[k % 64];
    }
    let mut c: u32 = 0;
    loop {
        c += 1;
        if c > 3 { break; }
    }
    y[i % n] = if acc > 0.0 { acc.sqrt() } else { (xi[i % n] as f32) * 0.5 };
    yu[i % n] = (c << (i % 40)) / (n - i) % 3;
}
