//! Thread-block clusters in `#[kernel]` on the emulator: the cluster shape as a launch
//! attribute, the block's rank, the cluster barrier, distributed shared memory and the
//! multicast TMA copy; a grid that is not whole clusters is refused before anything runs; and
//! the PTX they emit, assembled by ptxas where one is found.

mod common;

use kernel_dsl::Target;
use kernel_macros::kernel;
use kernel_runtime::{Buffer, Device, Error, LaunchConfig, TensorMap, TensorSwizzle, TensorTiling};

/// Clusters of two blocks: each thread stores `100 · block + thread` in its block's `slot`,
/// and after the cluster barrier reads its neighbour block's (rank ^ 1) slot; then it writes
/// `1000 · rank + thread` into the neighbour's `inbox` and reads its own after a second
/// barrier. Thread 0 records the rank and the cluster's size.
#[kernel(crate = crate::common::paths, block = 32, cluster = 2, needs = sm_90)]
pub fn swap_with_neighbour(seen: &mut [u32], got: &mut [u32], ids: &mut [u32]) {
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
    if t == 0 {
        ids[2 * b] = rank;
        ids[2 * b + 1] = cluster_nctarank();
    }
}

/// What `swap_with_neighbour` wrote: `seen`, `got` and `ids`.
struct Swapped {
    seen: Vec<u32>,
    got: Vec<u32>,
    ids: Vec<u32>,
}

fn run_swap(blocks: u32) -> Result<Swapped, Error> {
    let stream = Device::emulator_for(Target::Sm90).stream()?;
    let n = 32 * blocks as usize;
    let mut seen = Buffer::from_host(&stream, &vec![u32::MAX; n])?;
    let mut got = Buffer::from_host(&stream, &vec![u32::MAX; n])?;
    let mut ids = Buffer::from_host(&stream, &vec![u32::MAX; 2 * blocks as usize])?;
    let cfg = LaunchConfig::linear(blocks, 32);
    swap_with_neighbour(&stream, cfg, &mut seen, &mut got, &mut ids)?;
    Ok(Swapped {
        seen: seen.to_host(&stream)?,
        got: got.to_host(&stream)?,
        ids: ids.to_host(&stream)?,
    })
}

#[test]
fn each_block_reads_and_writes_its_neighbours_shared_memory() -> Result<(), Error> {
    let Swapped { seen, got, ids } = run_swap(4)?;
    for b in 0..4u32 {
        let rank = b % 2;
        let neighbour = b ^ 1;
        for t in 0..32u32 {
            let i = (32 * b + t) as usize;
            assert_eq!(seen[i], 100 * neighbour + t, "block {b} thread {t}");
            assert_eq!(got[i], 1000 * (rank ^ 1) + t, "block {b} thread {t}");
        }
        assert_eq!(&ids[2 * b as usize..2 * b as usize + 2], &[rank, 2]);
    }
    Ok(())
}

#[test]
fn a_grid_that_is_not_whole_clusters_is_refused_before_anything_runs() {
    let stream = Device::emulator_for(Target::Sm90).stream().unwrap();
    let mut seen = Buffer::from_host(&stream, &[u32::MAX; 96]).unwrap();
    let mut got = Buffer::from_host(&stream, &[u32::MAX; 96]).unwrap();
    let mut ids = Buffer::from_host(&stream, &[u32::MAX; 6]).unwrap();
    let err = swap_with_neighbour(
        &stream,
        LaunchConfig::linear(3, 32),
        &mut seen,
        &mut got,
        &mut ids,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::ClusterGrid {
                grid: [3, 1, 1],
                cluster: [2, 1, 1],
                ..
            }
        ),
        "{err}"
    );
    assert!(seen
        .to_host(&stream)
        .unwrap()
        .iter()
        .all(|&v| v == u32::MAX));
    assert!(ids.to_host(&stream).unwrap().iter().all(|&v| v == u32::MAX));
}

/// A consumer block frees a producer's slot: rank 0 waits on its own mbarrier (one arrival),
/// which only rank 1 completes, from the other block, after writing the slot in rank 0's
/// shared memory; rank 0 then publishes the slot.
#[kernel(crate = crate::common::paths, block = 32, cluster = 2, needs = sm_90)]
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

#[test]
fn a_remote_mbarrier_arrival_releases_the_other_block() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90).stream()?;
    let mut out = Buffer::from_host(&stream, &[u32::MAX; 64])?;
    hand_over(&stream, LaunchConfig::linear(4, 32), &mut out)?;
    let out = out.to_host(&stream)?;
    for cluster in 0..2u32 {
        // Rank 1 of cluster `c` is block `2c + 1`.
        for t in 0..32u32 {
            assert_eq!(out[(32 * cluster + t) as usize], 7 * (2 * cluster + 1) + t);
        }
    }
    let ptx = (HAND_OVER.emit.expect("an emit function"))(Target::Sm90).expect("emits");
    assert!(
        ptx.contains("mbarrier.arrive.release.cluster.shared::cluster.b64"),
        "{ptx}"
    );
    if let Some(ptxas) = kernel_dsl::ptxas::Ptxas::find() {
        ptxas
            .assemble(&ptx)
            .expect("ptxas accepts the hand-over kernel");
    }
    Ok(())
}

/// Rows of the multicast source and the box: 32 f32 wide, two rows a cluster.
const COLS: u64 = 32;
const ROWS: u64 = 8;
const BOX_ROWS: u32 = 2;

/// Clusters of two blocks: rank 0 copies its cluster's two rows of `src` once, multicast to
/// both blocks; each block armed its own mbarrier with the box's bytes, waits on it and writes
/// what landed in its shared memory.
#[kernel(crate = crate::common::paths, block = 64, cluster = [2, 1, 1], needs = sm_90a)]
pub fn multicast_rows(src: &TensorMap<f32, 2>, out: &mut [f32]) {
    // TMA destinations are 128-byte aligned: slack to align the box.
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
    // Every block's mbarrier is armed before any copy can complete on it.
    cluster_sync();
    if t == 0 {
        if rank == 0 {
            tma_load_multicast(smem, at, src, [0, b], bars, 0, 0b11);
        }
    }
    while !mbarrier_try_wait_parity(bars, 0, 0) {}
    out[64 * b + t] = smem[at + t];
    // No block leaves while a copy into it may be in flight.
    cluster_sync();
}

#[test]
fn one_multicast_copy_lands_in_both_blocks_of_the_cluster() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90a).stream()?;
    let data: Vec<f32> = (0..COLS * ROWS).map(|i| i as f32 * 0.5 - 3.0).collect();
    let src = Buffer::from_host(&stream, &data)?;
    let map = TensorMap::tiled(
        src.view(),
        &TensorTiling::matrix(ROWS, COLS, COLS, BOX_ROWS, COLS as u32, TensorSwizzle::None),
    )?;
    let blocks = 4u32;
    let mut out = Buffer::from_host(&stream, &vec![f32::NAN; 64 * blocks as usize])?;
    let cfg = LaunchConfig::linear(blocks, 64).with_dynamic_shared(96 * 4);
    multicast_rows(&stream, cfg, &map, &mut out)?;
    let out = out.to_host(&stream)?;
    for b in 0..blocks as usize {
        // Rank 0 of cluster `b / 2` is block `b & !1`, which names row `b & !1`.
        let first = (b & !1) * COLS as usize;
        assert_eq!(
            &out[64 * b..64 * b + 64],
            &data[first..first + 64],
            "block {b}"
        );
    }
    Ok(())
}

#[test]
fn cluster_kernels_carry_their_shape_and_assemble_for_sm_90a() {
    assert_eq!(SWAP_WITH_NEIGHBOUR.meta.cluster, Some([2, 1, 1]));
    assert_eq!(MULTICAST_ROWS.meta.cluster, Some([2, 1, 1]));
    // This crate builds for sm_80 alone, which has no clusters: no module and no error.
    assert!(SWAP_WITH_NEIGHBOUR.embedded_targets().is_empty());
    let emit = SWAP_WITH_NEIGHBOUR.emit.expect("an emit function");
    assert!(emit(Target::Sm89).is_err());
    let ptx = emit(Target::Sm90).expect("the kernel emits for sm_90");
    for want in [
        ".reqnctapercluster 2, 1, 1",
        "%cluster_ctarank",
        "%cluster_nctarank",
        "barrier.cluster.arrive.aligned",
        "barrier.cluster.wait.aligned",
        "mapa.shared::cluster.u32",
        "ld.shared::cluster.u32",
        "st.shared::cluster.u32",
    ] {
        assert!(ptx.contains(want), "no `{want}` in\n{ptx}");
    }
    let multicast = (MULTICAST_ROWS.emit.expect("an emit function"))(Target::Sm90a)
        .expect("the kernel emits for sm_90a");
    assert!(
        multicast.contains(".multicast::cluster"),
        "no multicast in\n{multicast}"
    );
    let Some(ptxas) = kernel_dsl::ptxas::Ptxas::find() else {
        eprintln!("skipping ptxas: none found (set PTXKIT_PTXAS)");
        return;
    };
    for target in [Target::Sm90, Target::Sm90a] {
        let ptx = emit(target).expect("the kernel emits");
        ptxas
            .assemble(&ptx)
            .expect("ptxas accepts the cluster kernel");
    }
    ptxas
        .assemble(&multicast)
        .expect("ptxas accepts the multicast kernel");
}
