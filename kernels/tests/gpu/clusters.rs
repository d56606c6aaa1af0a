//! Thread-block clusters on an sm_90 GPU: the kernels of `kernel-macros`'
//! `clusters_on_emulator.rs` (distributed shared memory both ways, a remote mbarrier arrival,
//! one multicast TMA copy into both blocks of each cluster), launched for real.

use crate::common_tensor::gpu;
use kernel_macros::kernel;
use kernel_runtime::{Buffer, LaunchConfig, Stream, TensorMap, TensorSwizzle, TensorTiling};

pub mod paths {
    pub use kernel_dsl as dsl;
    #[allow(unused_imports)]
    pub use kernel_macros::__kernel_expand;
    pub use kernel_runtime as runtime;
}

/// Clusters of two blocks: each thread reads its neighbour block's slot after the cluster
/// barrier, and writes into the neighbour's inbox.
#[kernel(crate = crate::clusters::paths, block = 32, cluster = 2, needs = sm_90)]
pub fn swap_with_neighbour(seen: &mut [u32], got: &mut [u32]) {
    let slot = shared_array::<u32, 32>();
    let inbox = shared_array::<u32, 32>();
    let t = thread_idx().x;
    let b = block_idx().x;
    let rank = cluster_ctarank();
    slot[t] = 100 * b + t;
    cluster_sync();
    seen[32 * b + t] = dsmem_load(slot, t, rank ^ 1);
    dsmem_store(inbox, t, rank ^ 1, 1000 * rank + t);
    cluster_sync();
    got[32 * b + t] = inbox[t];
}

/// Rank 1 writes into rank 0's slot, then arrives on rank 0's mbarrier; rank 0 waits and
/// publishes the slot.
#[kernel(crate = crate::clusters::paths, block = 32, cluster = 2, needs = sm_90)]
pub fn hand_over(out: &mut [u32]) {
    let bars = shared_array::<u64, 1>();
    let slot = shared_array::<u32, 32>();
    let t = thread_idx().x;
    let b = block_idx().x;
    let rank = cluster_ctarank();
    if t == 0 {
        mbarrier_init(bars, 0, 1);
    }
    cluster_sync();
    if rank == 1 {
        dsmem_store(slot, t, 0, 7 * b + t);
        sync_threads();
        if t == 0 {
            mbarrier_arrive_cluster(bars, 0, 0);
        }
    } else {
        while !mbarrier_try_wait_parity(bars, 0, 0) {}
        out[32 * (b / 2) + t] = slot[t];
    }
    cluster_sync();
}

/// Rank 0 copies its cluster's two rows once, multicast to both blocks.
#[kernel(crate = crate::clusters::paths, block = 64, cluster = [2, 1, 1], needs = sm_90a)]
pub fn multicast_rows(src: &TensorMap<f32, 2>, out: &mut [f32]) {
    let smem = dynamic_shared::<f32, { 32 + 64 }>();
    let bars = shared_array::<u64, 1>();
    let at = align_index(smem, 128);
    let t = thread_idx().x;
    let b = block_idx().x;
    let rank = cluster_ctarank();
    if t == 0 {
        mbarrier_init(bars, 0, 1);
        mbarrier_arrive_expect_tx(bars, 0, 2 * 32 * 4);
        fence_proxy_async();
    }
    cluster_sync();
    if t == 0 {
        if rank == 0 {
            tma_load_multicast(smem, at, src, [0, b], bars, 0, 0b11);
        }
    }
    while !mbarrier_try_wait_parity(bars, 0, 0) {}
    out[64 * b + t] = smem[at + t];
    cluster_sync();
}

fn hopper() -> Option<Stream> {
    let s = gpu()?;
    if s.device().target().sm() < 90 {
        println!("skipping: clusters need sm_90");
        return None;
    }
    Some(s)
}

#[test]
fn gpu_cluster_blocks_read_and_write_each_others_shared_memory() {
    let Some(s) = hopper() else { return };
    // More clusters than SMs hold at once.
    let blocks = 2 * 1024u32;
    let n = 32 * blocks as usize;
    let mut seen = Buffer::from_host(&s, &vec![u32::MAX; n]).unwrap();
    let mut got = Buffer::from_host(&s, &vec![u32::MAX; n]).unwrap();
    swap_with_neighbour(&s, LaunchConfig::linear(blocks, 32), &mut seen, &mut got).unwrap();
    let (seen, got) = (seen.to_host(&s).unwrap(), got.to_host(&s).unwrap());
    for b in 0..blocks {
        for t in 0..32u32 {
            let i = (32 * b + t) as usize;
            assert_eq!(seen[i], 100 * (b ^ 1) + t, "block {b} thread {t}");
            assert_eq!(got[i], 1000 * ((b % 2) ^ 1) + t, "block {b} thread {t}");
        }
    }
}

#[test]
fn gpu_a_remote_mbarrier_arrival_releases_the_other_block() {
    let Some(s) = hopper() else { return };
    let clusters = 512u32;
    let mut out = Buffer::from_host(&s, &vec![u32::MAX; 32 * clusters as usize]).unwrap();
    hand_over(&s, LaunchConfig::linear(2 * clusters, 32), &mut out).unwrap();
    let out = out.to_host(&s).unwrap();
    for c in 0..clusters {
        for t in 0..32u32 {
            assert_eq!(
                out[(32 * c + t) as usize],
                7 * (2 * c + 1) + t,
                "cluster {c}"
            );
        }
    }
}

#[test]
fn gpu_one_multicast_copy_lands_in_both_blocks_of_each_cluster() {
    let Some(s) = hopper() else { return };
    let (cols, rows) = (32u64, 512u64);
    let data: Vec<f32> = (0..cols * rows).map(|i| i as f32 * 0.5 - 3.0).collect();
    let src = Buffer::from_host(&s, &data).unwrap();
    let tiling = TensorTiling::matrix(rows, cols, cols, 2, cols as u32, TensorSwizzle::None);
    let map = TensorMap::tiled(src.view(), &tiling).unwrap();
    let blocks = rows as u32;
    let mut out = Buffer::from_host(&s, &vec![f32::NAN; 64 * blocks as usize]).unwrap();
    let cfg = LaunchConfig::linear(blocks, 64).with_dynamic_shared(96 * 4);
    multicast_rows(&s, cfg, &map, &mut out).unwrap();
    let out = out.to_host(&s).unwrap();
    for b in 0..blocks as usize {
        let first = (b & !1) * cols as usize;
        assert_eq!(
            &out[64 * b..64 * b + 64],
            &data[first..first + 64],
            "block {b}"
        );
    }
}
