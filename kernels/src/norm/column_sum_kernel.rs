//! The deterministic column sums of the backward norms' workspace in `#[kernel]`: each block
//! of a backward kernel wrote one row of a `parts × cols` f32 matrix (no atomics), and
//! [`norm_column_sum`] adds the rows of each column in an order that depends only on `parts`,
//! so the γ/β gradients are the same on every run and every device.

use kernel_macros::kernel;

/// `out[c] = Σ_{p < parts} partial[offset + p·cols + c]`, 32 columns a block (`offset` picks
/// one of the LayerNorm workspace's two matrices).
///
/// Thread `(lane, col)` of a block (32 lanes × 32 columns, each load one 128-byte line across
/// a warp) adds parts `lane, lane + 32, …` of its column into eight accumulators, so eight
/// loads are in flight (part `p` goes to accumulator `(p / 32) mod 8`), adds those in order,
/// and the 32 lanes' sums are added in lane order through shared memory.
#[kernel(crate = crate::lang, instances(T in [f32, bf16]), block = 1024)]
pub fn norm_column_sum<T: Element>(
    partial: &[f32],
    out: &mut [T],
    offset: u32,
    parts: u32,
    cols: u32,
) {
    let t = thread_idx().x;
    let tx = t % 32;
    let ty = t / 32;
    let col = block_idx().x * 32 + tx;
    let column = offset + col;
    let inside = col < cols;
    let mut total = 0.0f32;
    if inside {
        let mut acc = [0.0f32; 8];
        let whole = parts / 256 * 256;
        let mut p = ty;
        while p < whole {
            for k in 0..8 {
                acc[k] += partial[(p + k * 32) * cols + column];
            }
            p += 256;
        }
        p = whole + ty;
        while p < parts {
            acc[0] += partial[p * cols + column];
            p += 32;
        }
        total = acc[0];
        for k in 1..8 {
            total += acc[k];
        }
    }
    let lane_sums = shared_array::<f32, 1024>();
    lane_sums[t] = total;
    sync_threads();
    if ty == 0 && inside {
        let mut sum = lane_sums[tx];
        for lane in 1..32 {
            sum += lane_sums[lane * 32 + tx];
        }
        out[col] = sum as T;
    }
}
