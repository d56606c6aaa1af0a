//! Warp-specialized Hopper pipelines: a producer warp feeds a ring of shared-memory stages with
//! `cp.async.bulk.tensor`, guarded by `full`/`empty` mbarriers, while consumer warpgroups use
//! the stages: first summing tiles, then a bf16 GEMM through swizzled `wgmma` descriptors,
//! as CUTLASS-style kernels do.

mod common;

use common::*;
use ptx_emulator::{ArgValue, Error, GlobalMemory, LaunchConfig, TensorMap, TensorSwizzle};

/// Columns and rows of the summed matrix; each k-tile is `SUM_TILE_ROWS` of its rows.
const SUM_COLS: usize = 32;
const SUM_ROWS: usize = 96;
const SUM_TILE_ROWS: usize = 16;

/// 160 threads: warps 0-3 (one warpgroup) consume, warp 4 produces. One elected producer lane
/// waits for a free stage (`empty`, starting at parity 1 so the first round passes), arms
/// `full` with the tile's bytes and issues the copy; each consumer waits on `full`, adds its
/// four floats of the tile and releases the stage on `empty`. After the six k-tiles the
/// consumers publish their sums in shared memory, meet at named barrier 1 (the producer warp
/// has left) and thread 0 adds them all. `SYNC` is that barrier, so a test can remove it.
fn sum_kernel(sync: &str) -> String {
    let k_tiles = SUM_ROWS / SUM_TILE_ROWS;
    let stage_bytes = SUM_COLS * SUM_TILE_ROWS * 4;
    ptx(&format!(
        r#"
.visible .entry sum(.param .u64 out, .param .align 64 .b8 tmap[128])
{{
	.reg .pred 	%p<6>;
	.reg .b32 	%r<40>;
	.reg .f32 	%f<12>;
	.reg .b64 	%rd<8>;
	.shared .align 1024 .b8 ring[{ring}];
	.shared .align 8 .b64 full[2];
	.shared .align 8 .b64 empty[2];
	.shared .align 4 .f32 partial[128];

	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, ring;
	mov.u32 	%r3, full;
	mov.u32 	%r4, empty;
	setp.eq.u32 	%p1, %r1, 0;
	@!%p1 bra 	$L__initialised;
	mbarrier.init.shared::cta.b64 	[full], 1;
	mbarrier.init.shared::cta.b64 	[full+8], 1;
	mbarrier.init.shared::cta.b64 	[empty], 128;
	mbarrier.init.shared::cta.b64 	[empty+8], 128;
$L__initialised:
	bar.sync 	0;
	setp.lt.u32 	%p2, %r1, 128;
	@%p2 bra 	$L__consumer;

	// Producer warp: one elected lane issues every copy, the others leave.
	setmaxnreg.dec.sync.aligned.u32 	40;
	elect.sync 	_|%p3, 0xffffffff;
	@!%p3 bra 	$L__exit;
	mov.u32 	%r10, 0;
$L__produce:
	and.b32 	%r11, %r10, 1;
	shr.u32 	%r12, %r10, 1;
	and.b32 	%r12, %r12, 1;
	xor.b32 	%r12, %r12, 1;
	shl.b32 	%r13, %r11, 3;
	add.s32 	%r14, %r4, %r13;
$L__wait_empty:
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [%r14], %r12;
	@!%p4 bra 	$L__wait_empty;
	add.s32 	%r15, %r3, %r13;
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r15], {stage_bytes};
	mad.lo.s32 	%r16, %r11, {stage_bytes}, %r2;
	mul.lo.s32 	%r17, %r10, {SUM_TILE_ROWS};
	mov.u32 	%r18, 0;
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes 	[%r16], [tmap, {{%r18, %r17}}], [%r15];
	add.s32 	%r10, %r10, 1;
	setp.lt.u32 	%p5, %r10, {k_tiles};
	@%p5 bra 	$L__produce;
	bra.uni 	$L__exit;

$L__consumer:
	setmaxnreg.inc.sync.aligned.u32 	232;
	mov.f32 	%f10, 0f00000000;
	mov.u32 	%r20, 0;
	shl.b32 	%r21, %r1, 4;
$L__consume:
	and.b32 	%r22, %r20, 1;
	shr.u32 	%r23, %r20, 1;
	and.b32 	%r23, %r23, 1;
	shl.b32 	%r24, %r22, 3;
	add.s32 	%r25, %r3, %r24;
$L__wait_full:
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [%r25], %r23;
	@!%p4 bra 	$L__wait_full;
	mad.lo.s32 	%r26, %r22, {stage_bytes}, %r2;
	add.s32 	%r27, %r26, %r21;
	ld.shared.v4.f32 	{{%f1, %f2, %f3, %f4}}, [%r27];
	add.f32 	%f5, %f1, %f2;
	add.f32 	%f5, %f5, %f3;
	add.f32 	%f5, %f5, %f4;
	add.f32 	%f10, %f10, %f5;
	add.s32 	%r28, %r4, %r24;
	mbarrier.arrive.shared::cta.b64 	_, [%r28];
	add.s32 	%r20, %r20, 1;
	setp.lt.u32 	%p5, %r20, {k_tiles};
	@%p5 bra 	$L__consume;

	// Epilogue: consumers only, synchronised by named barrier 1.
	mov.u32 	%r30, partial;
	shl.b32 	%r31, %r1, 2;
	add.s32 	%r32, %r30, %r31;
	st.shared.f32 	[%r32], %f10;
	mul.wide.u32 	%rd2, %r1, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.f32 	[%rd3], %f10;
	{sync}
	@!%p1 bra 	$L__exit;
	mov.f32 	%f11, 0f00000000;
	mov.u32 	%r33, 0;
$L__total:
	shl.b32 	%r34, %r33, 2;
	add.s32 	%r35, %r30, %r34;
	ld.shared.f32 	%f6, [%r35];
	add.f32 	%f11, %f11, %f6;
	add.s32 	%r33, %r33, 1;
	setp.lt.u32 	%p5, %r33, 128;
	@%p5 bra 	$L__total;
	st.global.f32 	[%rd1+512], %f11;
$L__exit:
	ret;
}}
"#,
        ring = 2 * stage_bytes,
    ))
}

/// The summed matrix's map: 32 f32 columns by 96 rows, copied in 16-row tiles.
fn sum_map(address: u64) -> TensorMap {
    TensorMap {
        elem_bytes: 4,
        rank: 2,
        address,
        dims: [SUM_COLS as u64, SUM_ROWS as u64, 1, 1, 1],
        strides: [4, SUM_COLS as u64 * 4, 0, 0, 0],
        boxes: [SUM_COLS as u32, SUM_TILE_ROWS as u32, 1, 1, 1],
        swizzle: TensorSwizzle::None,
    }
}

fn run_sum(sync: &str) -> Result<(Vec<f32>, Vec<f32>), Error> {
    let mut rng = Rng::new(31);
    let data = rng.f32s(SUM_COLS * SUM_ROWS, -1.0, 1.0);
    let mut mem = GlobalMemory::new();
    let src = mem.alloc_f32(&data);
    let out = poisoned_f32(&mut mem, 129);
    let args = [ArgValue::Ptr(out), ArgValue::from(sum_map(src))];
    launch(
        &sum_kernel(sync),
        "sum",
        LaunchConfig::linear(1, 160),
        &args,
        &mut mem,
    )?;
    Ok((data, mem.read_f32(out, 129)?))
}

#[test]
fn a_producer_warp_feeds_a_consumer_warpgroup_through_a_two_stage_ring() {
    let (data, got) = run_sum("bar.sync 	1, 128;").unwrap();
    // The kernel's own order of f32 additions, so the result matches bit for bit.
    let tile = SUM_COLS * SUM_TILE_ROWS;
    let mut sums = vec![0f32; 128];
    for (t, sum) in sums.iter_mut().enumerate() {
        for k in 0..SUM_ROWS / SUM_TILE_ROWS {
            let v = &data[k * tile + 4 * t..k * tile + 4 * t + 4];
            *sum += ((v[0] + v[1]) + v[2]) + v[3];
        }
    }
    let total = sums.iter().fold(0f32, |a, &s| a + s);
    assert_eq!(got[..128], sums[..]);
    assert_eq!(got[128], total);
}

/// Without named barrier 1, thread 0 runs ahead of the other consumers (threads run one at a
/// time) and reads a partial sum nobody has written yet.
#[test]
fn without_the_named_barrier_thread_0_reads_sums_not_yet_written() {
    match run_sum("") {
        Err(Error::UninitializedShared { site, symbol, .. }) => {
            assert_eq!(site.thread, [0, 0, 0]);
            assert!(
                site.instruction.starts_with("ld.shared.f32"),
                "{}",
                site.instruction
            );
            assert!(symbol.contains("`partial` at byte offset 4"), "{symbol}");
        }
        other => panic!("expected a read of unwritten shared memory, got {other:?}"),
    }
}

// ---- GEMM ----

const M: usize = 128;
const N: usize = 32;
const K: usize = 256;
/// K per stage: 64 bf16 are one 128-byte swizzled row.
const BK: usize = 64;

/// C (128x32 f32) = A (128x256 bf16, row-major) * B, with B given as Bt (32x256, row-major):
/// both operands K-major, loaded by TMA with a 128-byte swizzle, read by `wgmma` through
/// 128-byte-swizzled descriptors. 288 threads: warpgroups 0 and 1 each own 64 rows of C,
/// warp 8 produces. Each stage holds A's 128x64 tile (16 KiB) then Bt's 32x64 tile (4 KiB);
/// both copies complete on the stage's `full` barrier. The epilogue stages C through shared
/// memory between the consumers' named barrier 1 and coalesced stores.
fn gemm_kernel() -> String {
    let a_bytes = M * BK * 2;
    let stage = a_bytes + N * BK * 2;
    let k_tiles = K / BK;
    // Start address (>> 4) in bits 0..13, leading byte offset 16 (unused when swizzled),
    // stride byte offset 1024 between 8-row groups, 128-byte swizzle in bits 62..63.
    let desc = 0x4000_0040_0001_0000u64;
    let mut mma = String::new();
    for j in 0..BK / 16 {
        mma += &format!(
            "\twgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 \t{{%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8, %f9, %f10, %f11, %f12, %f13, %f14, %f15, %f16}}, %rd{a}, %rd{b}, %p6, 1, 1, 0, 0;\n",
            a = 20 + j,
            b = 30 + j
        );
        if j + 1 < BK / 16 {
            // The next 16 columns of K start 32 bytes further along the swizzled rows.
            mma += &format!("\tadd.s64 \t%rd{}, %rd{}, 2;\n", 21 + j, 20 + j);
            mma += &format!("\tadd.s64 \t%rd{}, %rd{}, 2;\n", 31 + j, 30 + j);
        }
    }
    ptx(&format!(
        r#"
.visible .entry gemm(.param .align 64 .b8 tma_a[128], .param .align 64 .b8 tma_b[128], .param .u64 c)
{{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<60>;
	.reg .f32 	%f<20>;
	.reg .b64 	%rd<40>;
	.shared .align 1024 .b8 ring[{ring}];
	.shared .align 1024 .b8 ctile[{ctile}];
	.shared .align 8 .b64 full[2];
	.shared .align 8 .b64 empty[2];

	ld.param.u64 	%rd1, [c];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, ring;
	mov.u32 	%r3, full;
	mov.u32 	%r4, empty;
	setp.eq.u32 	%p1, %r1, 0;
	@!%p1 bra 	$L__initialised;
	mbarrier.init.shared::cta.b64 	[full], 1;
	mbarrier.init.shared::cta.b64 	[full+8], 1;
	mbarrier.init.shared::cta.b64 	[empty], 256;
	mbarrier.init.shared::cta.b64 	[empty+8], 256;
$L__initialised:
	bar.sync 	0;
	setp.lt.u32 	%p2, %r1, 256;
	@%p2 bra 	$L__consumer;

	setmaxnreg.dec.sync.aligned.u32 	40;
	elect.sync 	_|%p3, 0xffffffff;
	@!%p3 bra 	$L__exit;
	mov.u32 	%r10, 0;
$L__produce:
	and.b32 	%r11, %r10, 1;
	shr.u32 	%r12, %r10, 1;
	and.b32 	%r12, %r12, 1;
	xor.b32 	%r12, %r12, 1;
	shl.b32 	%r13, %r11, 3;
	add.s32 	%r14, %r4, %r13;
$L__wait_empty:
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [%r14], %r12;
	@!%p4 bra 	$L__wait_empty;
	add.s32 	%r15, %r3, %r13;
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r15], {stage};
	mad.lo.s32 	%r16, %r11, {stage}, %r2;
	add.s32 	%r17, %r16, {a_bytes};
	mul.lo.s32 	%r18, %r10, {BK};
	mov.u32 	%r19, 0;
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes 	[%r16], [tma_a, {{%r18, %r19}}], [%r15];
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes 	[%r17], [tma_b, {{%r18, %r19}}], [%r15];
	add.s32 	%r10, %r10, 1;
	setp.lt.u32 	%p5, %r10, {k_tiles};
	@%p5 bra 	$L__produce;
	bra.uni 	$L__exit;

$L__consumer:
	setmaxnreg.inc.sync.aligned.u32 	232;
	setp.eq.u32 	%p6, 1, 1;
	mov.f32 	%f1, 0f00000000;
	mov.f32 	%f2, %f1;
	mov.f32 	%f3, %f1;
	mov.f32 	%f4, %f1;
	mov.f32 	%f5, %f1;
	mov.f32 	%f6, %f1;
	mov.f32 	%f7, %f1;
	mov.f32 	%f8, %f1;
	mov.f32 	%f9, %f1;
	mov.f32 	%f10, %f1;
	mov.f32 	%f11, %f1;
	mov.f32 	%f12, %f1;
	mov.f32 	%f13, %f1;
	mov.f32 	%f14, %f1;
	mov.f32 	%f15, %f1;
	mov.f32 	%f16, %f1;
	// This warpgroup's 64 rows of A start 64 * 128 bytes into the stage.
	shr.u32 	%r5, %r1, 7;
	shl.b32 	%r6, %r5, 13;
	mov.u32 	%r20, 0;
$L__consume:
	and.b32 	%r22, %r20, 1;
	shr.u32 	%r23, %r20, 1;
	and.b32 	%r23, %r23, 1;
	shl.b32 	%r24, %r22, 3;
	add.s32 	%r25, %r3, %r24;
$L__wait_full:
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [%r25], %r23;
	@!%p4 bra 	$L__wait_full;
	mad.lo.s32 	%r26, %r22, {stage}, %r2;
	add.s32 	%r27, %r26, %r6;
	add.s32 	%r28, %r26, {a_bytes};
	cvt.u64.u32 	%rd2, %r27;
	shr.u64 	%rd2, %rd2, 4;
	or.b64 	%rd20, %rd2, {desc:#x};
	cvt.u64.u32 	%rd3, %r28;
	shr.u64 	%rd3, %rd3, 4;
	or.b64 	%rd30, %rd3, {desc:#x};
	wgmma.fence.sync.aligned;
{mma}	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 	0;
	add.s32 	%r29, %r4, %r24;
	mbarrier.arrive.shared::cta.b64 	_, [%r29];
	add.s32 	%r20, %r20, 1;
	setp.lt.u32 	%p5, %r20, {k_tiles};
	@%p5 bra 	$L__consume;

	// Epilogue: fragment (row 16 * warp + lane / 4 (+8), column 8 * j + 2 * (lane % 4))
	// to the shared C tile, then 64 contiguous bytes per thread to global memory.
	shr.u32 	%r40, %r1, 5;
	and.b32 	%r41, %r1, 31;
	shr.u32 	%r42, %r41, 2;
	and.b32 	%r43, %r41, 3;
	shl.b32 	%r44, %r40, 4;
	add.s32 	%r44, %r44, %r42;
	shl.b32 	%r45, %r44, 7;
	shl.b32 	%r46, %r43, 3;
	add.s32 	%r47, %r45, %r46;
	mov.u32 	%r48, ctile;
	add.s32 	%r47, %r47, %r48;
	st.shared.v2.f32 	[%r47], {{%f1, %f2}};
	st.shared.v2.f32 	[%r47+1024], {{%f3, %f4}};
	st.shared.v2.f32 	[%r47+32], {{%f5, %f6}};
	st.shared.v2.f32 	[%r47+1056], {{%f7, %f8}};
	st.shared.v2.f32 	[%r47+64], {{%f9, %f10}};
	st.shared.v2.f32 	[%r47+1088], {{%f11, %f12}};
	st.shared.v2.f32 	[%r47+96], {{%f13, %f14}};
	st.shared.v2.f32 	[%r47+1120], {{%f15, %f16}};
	bar.sync 	1, 256;
	shl.b32 	%r50, %r1, 6;
	add.s32 	%r51, %r48, %r50;
	cvt.u64.u32 	%rd4, %r50;
	add.s64 	%rd5, %rd1, %rd4;
	ld.shared.v4.f32 	{{%f1, %f2, %f3, %f4}}, [%r51];
	st.global.v4.f32 	[%rd5], {{%f1, %f2, %f3, %f4}};
	ld.shared.v4.f32 	{{%f1, %f2, %f3, %f4}}, [%r51+16];
	st.global.v4.f32 	[%rd5+16], {{%f1, %f2, %f3, %f4}};
	ld.shared.v4.f32 	{{%f1, %f2, %f3, %f4}}, [%r51+32];
	st.global.v4.f32 	[%rd5+32], {{%f1, %f2, %f3, %f4}};
	ld.shared.v4.f32 	{{%f1, %f2, %f3, %f4}}, [%r51+48];
	st.global.v4.f32 	[%rd5+48], {{%f1, %f2, %f3, %f4}};
$L__exit:
	ret;
}}
"#,
        ring = 2 * stage,
        ctile = M * N * 4,
    ))
}

/// A K-major bf16 operand of `rows` x K, loaded in 64-column (128-byte) swizzled boxes.
fn operand_map(address: u64, rows: usize) -> TensorMap {
    TensorMap {
        elem_bytes: 2,
        rank: 2,
        address,
        dims: [K as u64, rows as u64, 1, 1, 1],
        strides: [2, K as u64 * 2, 0, 0, 0],
        boxes: [BK as u32, rows as u32, 1, 1, 1],
        swizzle: TensorSwizzle::B128,
    }
}

#[test]
fn a_warp_specialized_tma_wgmma_gemm_matches_the_cpu_product() {
    let mut rng = Rng::new(47);
    // Multiples of 1/4 in [-2, 2]: products and sums are exact in f32, so the result is too.
    let mut quarter = || (rng.next_u32() % 17) as f32 / 4.0 - 2.0;
    let a: Vec<f32> = (0..M * K).map(|_| quarter()).collect();
    let bt: Vec<f32> = (0..N * K).map(|_| quarter()).collect();
    let to_bf16 = |v: &[f32]| v.iter().map(|&x| bf16(x)).collect::<Vec<_>>();
    let mut mem = GlobalMemory::new();
    let da = alloc_u16(&mut mem, &to_bf16(&a));
    let db = alloc_u16(&mut mem, &to_bf16(&bt));
    let dc = poisoned_f32(&mut mem, M * N);
    let args = [
        ArgValue::from(operand_map(da, M)),
        ArgValue::from(operand_map(db, N)),
        ArgValue::Ptr(dc),
    ];
    launch(
        &gemm_kernel(),
        "gemm",
        LaunchConfig::linear(1, 288),
        &args,
        &mut mem,
    )
    .unwrap();
    let c = mem.read_f32(dc, M * N).unwrap();
    for i in 0..M {
        for j in 0..N {
            let want: f32 = (0..K).map(|k| a[i * K + k] * bt[j * K + k]).sum();
            assert_eq!(c[i * N + j], want, "C[{i}][{j}]");
        }
    }
}
