//! Thread-block clusters: a kernel with `.reqnctapercluster` runs its CTAs a cluster at a time,
//! all resident together, so `barrier.cluster` can wait for every thread of the cluster,
//! `mapa` + `ld/st.shared::cluster` reach another CTA's shared memory, an mbarrier arrive can
//! land in another CTA, and a multicast bulk tensor copy fills every CTA of a mask.

mod common;

use common::*;
use ptx_emulator::{ArgValue, Error, GlobalMemory, LaunchConfig, TensorMap, TensorSwizzle};

/// Clusters of two CTAs of 32 threads. Each thread stores `100 * ctaid + tid` in its CTA's
/// `slot`, the cluster meets at `barrier.cluster`, and each thread reads its neighbour CTA's
/// (rank ^ 1) slot through `mapa`. Thread 0 also records the rank, the cluster size and the
/// cluster id. `ARRIVE` is the arrival, so a test can take it away from one thread.
fn neighbour_kernel(arrive: &str) -> String {
    ptx(&format!(
        r#"
.visible .entry neighbour(.param .u64 out, .param .u64 ids)
.reqnctapercluster 2, 1, 1
{{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<8>;
	.shared .align 4 .b8 slot[128];

	ld.param.u64 	%rd1, [out];
	ld.param.u64 	%rd2, [ids];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %cluster_ctarank;
	mov.u32 	%r4, %cluster_nctarank;
	mov.u32 	%r5, %clusterid.x;
	mul.lo.u32 	%r6, %r2, 100;
	add.u32 	%r6, %r6, %r1;
	mov.u32 	%r7, slot;
	shl.b32 	%r8, %r1, 2;
	add.u32 	%r9, %r7, %r8;
	st.shared.u32 	[%r9], %r6;
	{arrive}
	barrier.cluster.wait.aligned;
	xor.b32 	%r10, %r3, 1;
	mapa.shared::cluster.u32 	%r11, %r9, %r10;
	ld.shared::cluster.u32 	%r12, [%r11];
	shl.b32 	%r13, %r2, 5;
	add.u32 	%r13, %r13, %r1;
	mul.wide.u32 	%rd3, %r13, 4;
	add.s64 	%rd4, %rd1, %rd3;
	st.global.u32 	[%rd4], %r12;
	// No CTA leaves while its neighbour may still read its slot.
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	$L__end;
	mul.wide.u32 	%rd5, %r2, 12;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.u32 	[%rd6], %r3;
	st.global.u32 	[%rd6+4], %r4;
	st.global.u32 	[%rd6+8], %r5;
$L__end:
	ret;
}}
"#
    ))
}

const ARRIVE: &str = "barrier.cluster.arrive.aligned;";

fn run_neighbour(kernel: &str, blocks: u32) -> Result<(Vec<u32>, Vec<u32>), Error> {
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 32 * blocks as usize);
    let ids = poisoned_u32(&mut mem, 3 * blocks as usize);
    launch(
        kernel,
        "neighbour",
        LaunchConfig::linear(blocks, 32),
        &[ArgValue::Ptr(out), ArgValue::Ptr(ids)],
        &mut mem,
    )?;
    Ok((
        mem.read_u32(out, 32 * blocks as usize)?,
        mem.read_u32(ids, 3 * blocks as usize)?,
    ))
}

#[test]
fn each_cta_reads_its_neighbours_shared_memory_after_the_cluster_barrier() {
    let (out, ids) = run_neighbour(&neighbour_kernel(ARRIVE), 6).unwrap();
    for c in 0..6u32 {
        for t in 0..32u32 {
            assert_eq!(
                out[(32 * c + t) as usize],
                100 * (c ^ 1) + t,
                "cta {c} thread {t}"
            );
        }
        assert_eq!(&ids[3 * c as usize..3 * c as usize + 3], &[c % 2, 2, c / 2]);
    }
}

#[test]
fn a_thread_that_never_arrives_at_the_cluster_barrier_is_a_deadlock() {
    let skip = format!("setp.eq.u32 %p2, %r1, 5;\n\t@!%p2 {ARRIVE}");
    match run_neighbour(&neighbour_kernel(&skip), 2) {
        Err(Error::SpinDeadlock { site, .. }) => {
            assert!(
                site.instruction.starts_with("barrier.cluster.wait"),
                "{}",
                site.instruction
            );
        }
        other => panic!("expected a deadlock at the cluster barrier, got {other:?}"),
    }
}

#[test]
fn a_grid_that_is_not_whole_clusters_is_refused() {
    match run_neighbour(&neighbour_kernel(ARRIVE), 3) {
        Err(Error::LaunchShape { detail, .. }) => {
            assert!(detail.contains("[2, 1, 1]"), "{detail}");
        }
        other => panic!("expected a launch-shape error, got {other:?}"),
    }
}

/// Thread 0 of each CTA maps its `slot` to `RANK` and reads it; rank 1 leaves right after
/// arriving at the cluster barrier, so rank 0 reads memory that is gone.
fn remote_read_kernel(rank: &str) -> String {
    ptx(&format!(
        r#"
.visible .entry remote(.param .u64 out)
.reqnctapercluster 2, 1, 1
{{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<4>;
	.shared .align 4 .b8 slot[16];

	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %cluster_ctarank;
	mov.u32 	%r2, slot;
	st.shared.u32 	[%r2], %r1;
	barrier.cluster.arrive.aligned;
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	$L__end;
	barrier.cluster.wait.aligned;
	mapa.shared::cluster.u32 	%r3, %r2, {rank};
	ld.shared::cluster.u32 	%r4, [%r3];
	st.global.u32 	[%rd1], %r4;
$L__end:
	ret;
}}
"#
    ))
}

fn run_remote(rank: &str) -> Result<u32, Error> {
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 1);
    launch(
        &remote_read_kernel(rank),
        "remote",
        LaunchConfig::linear(2, 1),
        &[ArgValue::Ptr(out)],
        &mut mem,
    )?;
    Ok(mem.read_u32(out, 1)?[0])
}

#[test]
fn reading_the_shared_memory_of_a_cta_that_has_exited_faults() {
    // Its own slot, through the cluster window, is still there.
    assert_eq!(run_remote("0").unwrap(), 0);
    match run_remote("1") {
        Err(Error::Cluster { detail, site }) => {
            assert!(
                detail.contains("CTA 1 of the cluster has exited"),
                "{detail}"
            );
            assert!(site.instruction.starts_with("ld.shared::cluster"));
        }
        other => panic!("expected a cluster fault, got {other:?}"),
    }
}

#[test]
fn mapa_to_a_rank_outside_the_cluster_faults() {
    match run_remote("2") {
        Err(Error::Cluster { detail, .. }) => {
            assert!(
                detail.contains("rank 2") && detail.contains("2 CTAs"),
                "{detail}"
            );
        }
        other => panic!("expected a cluster fault, got {other:?}"),
    }
}

/// Rank 1 frees a slot of rank 0: rank 0 waits on its own mbarrier (one arrival expected),
/// which only rank 1's remote `mbarrier.arrive.release.cluster` completes; rank 0 then
/// publishes what rank 1 stored in rank 0's shared memory before arriving.
fn remote_arrive_kernel() -> String {
    ptx(r#"
.visible .entry handoff(.param .u64 out)
.reqnctapercluster 2, 1, 1
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<4>;
	.shared .align 8 .b64 bar[1];
	.shared .align 4 .b8 box[4];

	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %cluster_ctarank;
	mov.u32 	%r2, bar;
	mov.u32 	%r3, box;
	mbarrier.init.shared::cta.b64 	[%r2], 1;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	setp.ne.u32 	%p1, %r1, 1;
	@%p1 bra 	$L__consumer;
	mapa.shared::cluster.u32 	%r4, %r3, 0;
	st.shared::cluster.u32 	[%r4], 4242;
	mapa.shared::cluster.u32 	%r5, %r2, 0;
	mbarrier.arrive.release.cluster.shared::cluster.b64 	_, [%r5];
	bra.uni 	$L__end;
$L__consumer:
	mbarrier.try_wait.parity.shared::cta.b64 	%p2, [%r2], 0;
	@!%p2 bra 	$L__consumer;
	ld.shared.u32 	%r6, [%r3];
	st.global.u32 	[%rd1], %r6;
$L__end:
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
}
"#)
}

#[test]
fn an_mbarrier_arrive_from_another_cta_completes_the_phase() {
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 1);
    launch(
        &remote_arrive_kernel(),
        "handoff",
        LaunchConfig::linear(2, 1),
        &[ArgValue::Ptr(out)],
        &mut mem,
    )
    .unwrap();
    assert_eq!(mem.read_u32(out, 1).unwrap(), [4242]);
}

const COLS: usize = 32;
const ROWS: usize = 4;
const BOX_ROWS: usize = 2;

/// Rank 0 multicasts one 32x2 box of f32 to the CTAs of `MASK`; every CTA armed its own
/// mbarrier with the box's bytes, waits on it and writes what landed in its `tile`.
fn multicast_kernel(mask: u32) -> String {
    let bytes = COLS * BOX_ROWS * 4;
    ptx(&format!(
        r#"
.visible .entry multicast(.param .u64 out, .param .align 64 .b8 tmap[128])
.reqnctapercluster 4, 1, 1
{{
	.reg .pred 	%p<4>;
	.reg .b16 	%rs<2>;
	.reg .b32 	%r<16>;
	.reg .f32 	%f<2>;
	.reg .b64 	%rd<4>;
	.shared .align 128 .b8 tile[{bytes}];
	.shared .align 8 .b64 bar[1];

	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %cluster_ctarank;
	mov.u32 	%r3, tile;
	mov.u32 	%r4, bar;
	setp.eq.u32 	%p1, %r1, 0;
	@!%p1 bra 	$L__armed;
	mbarrier.init.shared::cta.b64 	[%r4], 1;
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r4], {bytes};
$L__armed:
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	setp.eq.u32 	%p2, %r2, 0;
	and.pred 	%p2, %p2, %p1;
	@!%p2 bra 	$L__wait;
	mov.u32 	%r5, 0;
	mov.u32 	%r6, {first_row};
	mov.b16 	%rs1, {mask};
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster 	[%r3], [tmap, {{%r5, %r6}}], [%r4], %rs1;
$L__wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p3, [%r4], 0;
	@!%p3 bra 	$L__wait;
	shl.b32 	%r7, %r1, 2;
	add.u32 	%r8, %r3, %r7;
	ld.shared.f32 	%f1, [%r8];
	mad.lo.u32 	%r9, %r2, {per_cta}, %r1;
	mul.wide.u32 	%rd2, %r9, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.f32 	[%rd3], %f1;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
}}
"#,
        first_row = BOX_ROWS,
        per_cta = COLS * BOX_ROWS,
    ))
}

fn run_multicast(mask: u32) -> Result<(Vec<f32>, Vec<f32>), Error> {
    let data = Rng::new(7).f32s(COLS * ROWS, -1.0, 1.0);
    let mut mem = GlobalMemory::new();
    let src = mem.alloc_f32(&data);
    let out = poisoned_f32(&mut mem, 4 * COLS * BOX_ROWS);
    let map = TensorMap {
        elem_bytes: 4,
        rank: 2,
        address: src,
        dims: [COLS as u64, ROWS as u64, 1, 1, 1],
        strides: [4, COLS as u64 * 4, 0, 0, 0],
        boxes: [COLS as u32, BOX_ROWS as u32, 1, 1, 1],
        swizzle: TensorSwizzle::None,
    };
    launch(
        &multicast_kernel(mask),
        "multicast",
        LaunchConfig::linear(4, (COLS * BOX_ROWS) as u32),
        &[ArgValue::Ptr(out), ArgValue::from(map)],
        &mut mem,
    )?;
    Ok((data, mem.read_f32(out, 4 * COLS * BOX_ROWS)?))
}

#[test]
fn one_multicast_copy_fills_every_cta_of_the_mask() {
    let (data, out) = run_multicast(0b1111).unwrap();
    let boxed = &data[COLS * BOX_ROWS..2 * COLS * BOX_ROWS];
    for rank in 0..4 {
        let got = &out[rank * COLS * BOX_ROWS..(rank + 1) * COLS * BOX_ROWS];
        assert_eq!(got, boxed, "rank {rank}");
    }
}

#[test]
fn a_cta_left_out_of_the_mask_waits_forever() {
    // Ranks 1 and 3 are not in the mask: their mbarriers never see the bytes.
    // Rank 0 reports: it waits at the closing cluster barrier for ranks 1 and 3.
    match run_multicast(0b0101) {
        Err(Error::SpinDeadlock { site, detail, .. }) => {
            assert_eq!(site.block, [0, 0, 0]);
            assert!(
                site.instruction.starts_with("barrier.cluster.wait"),
                "{}",
                site.instruction
            );
            assert!(detail.contains("3 other blocks are stalled"), "{detail}");
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn a_mask_naming_ranks_beyond_the_cluster_faults() {
    match run_multicast(0b1_0011) {
        Err(Error::Cluster { detail, .. }) => {
            assert!(detail.contains("0x0013"), "{detail}");
        }
        other => panic!("expected a cluster fault, got {other:?}"),
    }
}
