use kernel_macros::kernel;

// `sync_threads_or` combines a `bool` over the block; a count must be compared first.
#[kernel]
pub fn any_left(left: &[u32], out: &mut [u32]) {
    let t = thread_idx().x;
    if sync_threads_or(left[t]) {
        out[t] = 1;
    }
}

fn main() {}
