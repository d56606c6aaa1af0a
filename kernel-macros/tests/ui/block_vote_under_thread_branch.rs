use kernel_macros::kernel;

// `sync_threads_count` is a barrier: like `sync_threads`, every thread of the block must
// reach it, so it may not sit under a branch on the thread's index.
#[kernel]
pub fn count_low(x: &[u32], y: &mut [u32]) {
    let t = thread_idx().x;
    sync_threads();
    if t < 16 {
        y[t] = sync_threads_count(x[t] > 0);
    }
}

fn main() {}
