//! Kernels as a user writes them.

use ptxkit::prelude::*;

/// `y = a·x + y`.
#[kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = a * x[i] + y[i];
    }
}

/// Logistic sigmoid times its input.
#[device]
fn silu(v: f32) -> f32 {
    v / (1.0 + (-v).exp())
}

/// `y = silu(x)` for f32 or bf16 storage, in blocks of `BLOCK` threads.
#[kernel(instances(<f32, 256>, <bf16, 128>), block = BLOCK)]
pub fn silu_rows<T: Element, const BLOCK: u32>(x: &[T], y: &mut [T], n: u32) {
    let i = block_idx().x * BLOCK + thread_idx().x;
    if i < n {
        y[i] = silu(x[i] as f32) as T;
    }
}
