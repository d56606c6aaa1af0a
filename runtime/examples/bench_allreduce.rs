//! All-reduce bus bandwidth through NCCL on every visible GPU (one thread each), for 1 MiB to
//! 1 GiB of f32, in nccl-tests' terms: algorithm bandwidth = bytes / time, bus bandwidth =
//! algorithm bandwidth × 2(n−1)/n. Compare with `scripts/allreduce_torch.py` (torch.distributed
//! on the same machine).
//!
//! ```text
//! cargo build --release -p kernel-runtime --example bench_allreduce
//! target/release/examples/bench_allreduce [max GPUs]
//! ```

use kernel_runtime::{nccl_available, Buffer, Communicator, Device, ReduceOp};
use std::sync::Barrier;
use std::time::{Duration, Instant};

const MIN_BYTES: usize = 1 << 20;
const MAX_BYTES: usize = 1 << 30;
const WARMUP: usize = 5;
const TIMEOUT: Duration = Duration::from_secs(120);

/// Timed iterations for a size: many for small messages, fewer for large.
fn iterations(bytes: usize) -> usize {
    ((1usize << 34) / bytes).clamp(10, 200)
}

fn main() {
    if let Err(e) = nccl_available() {
        eprintln!("{e}");
        std::process::exit(1);
    }
    let limit: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(usize::MAX);
    let devices: Vec<Device> = (0..limit).map_while(|i| Device::cuda(i).ok()).collect();
    if devices.is_empty() {
        eprintln!("no CUDA device found");
        std::process::exit(1);
    }
    let n = devices.len();
    println!(
        "all-reduce (sum, f32, in place) on {n} GPU(s): {}",
        devices[0].props().name
    );
    println!(
        "{:>12} {:>12} {:>6} {:>12} {:>12} {:>12}",
        "bytes", "elements", "iters", "time (us)", "algbw GB/s", "busbw GB/s"
    );
    let comms = Communicator::per_device(&devices).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1);
    });
    let barrier = Barrier::new(n);
    std::thread::scope(|scope| {
        for comm in &comms {
            let barrier = &barrier;
            scope.spawn(move || rank(comm, barrier));
        }
    });
}

fn rank(comm: &Communicator, barrier: &Barrier) {
    let stream = comm.device().stream().expect("stream");
    let mut buf = Buffer::<f32>::zeros(&stream, MAX_BYTES / 4).expect("allocate 1 GiB");
    let n = comm.world() as f64;
    let mut bytes = MIN_BYTES;
    while bytes <= MAX_BYTES {
        let elems = bytes / 4;
        let iters = iterations(bytes);
        let mut run = |count: usize| {
            for _ in 0..count {
                comm.all_reduce_range(&stream, &mut buf, 0..elems, ReduceOp::Sum)
                    .expect("all_reduce");
            }
            comm.wait(&stream, TIMEOUT).expect("wait");
        };
        run(WARMUP);
        barrier.wait();
        let start = Instant::now();
        run(iters);
        let seconds = start.elapsed().as_secs_f64() / iters as f64;
        barrier.wait();
        if comm.rank() == 0 {
            let algbw = bytes as f64 / seconds / 1e9;
            println!(
                "{bytes:>12} {elems:>12} {iters:>6} {:>12.1} {algbw:>12.2} {:>12.2}",
                seconds * 1e6,
                algbw * 2.0 * (n - 1.0) / n
            );
        }
        bytes *= 2;
    }
}
