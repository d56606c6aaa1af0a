use kernel_macros::kernel;

// A shared array has `load_vec` but no guarded form: every element of it is in bounds once
// declared, so the index is clamped or the load placed under an `if` instead.
#[kernel]
pub fn staged(x: &[f32], y: &mut [f32], n: u32) {
    let stage = shared_array::<f32, 128>();
    let t = thread_idx().x;
    stage[t] = x[t];
    sync_threads();
    let v = stage.load_vec_or::<4>(t * 4, t * 4 < n, 0.0);
    y[t] = v[0];
}

fn main() {}
