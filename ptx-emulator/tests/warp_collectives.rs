//! Warp-collective instructions: shuffles with widths and clamps, votes, reductions, and a
//! shared-memory block reduction built on them.

mod common;

use common::*;
use ptx_emulator::{ArgValue, Error, GlobalMemory, LaunchConfig};

/// Each thread loads `v = in[tid]` and writes eight collective results to `out[tid*8..]`:
/// shfl.up 1 (width 8), shfl.down 2 (width 8), shfl.bfly 5, shfl.idx 3 (width 8), the `up`
/// predicate, ballot(v odd), redux.add, redux.min.s32.
const COLLECTIVES: &str = r#"
.visible .entry collectives(.param .u64 in, .param .u64 out)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<6>;

	ld.param.u64 	%rd1, [in];
	ld.param.u64 	%rd2, [out];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.u32 	%r2, [%rd4];
	shfl.sync.up.b32 	%r3|%p1, %r2, 1, 0x1800, 0xffffffff;
	shfl.sync.down.b32 	%r4, %r2, 2, 0x181f, 0xffffffff;
	shfl.sync.bfly.b32 	%r5, %r2, 5, 0x1f, 0xffffffff;
	shfl.sync.idx.b32 	%r6, %r2, 3, 0x181f, 0xffffffff;
	selp.u32 	%r7, 1, 0, %p1;
	and.b32 	%r8, %r2, 1;
	setp.ne.u32 	%p2, %r8, 0;
	vote.sync.ballot.b32 	%r9, %p2, 0xffffffff;
	redux.sync.add.u32 	%r10, %r2, 0xffffffff;
	redux.sync.min.s32 	%r11, %r2, 0xffffffff;
	mul.wide.u32 	%rd3, %r1, 32;
	add.s64 	%rd5, %rd2, %rd3;
	st.global.v4.u32 	[%rd5], {%r3, %r4, %r5, %r6};
	st.global.v4.u32 	[%rd5+16], {%r7, %r9, %r10, %r11};
	ret;
}
"#;

#[test]
fn shuffles_votes_and_reductions_follow_ptx_lane_rules() {
    let mut rng = Rng::new(11);
    let n = 64;
    let input = rng.u32s(n);
    let mut mem = GlobalMemory::new();
    let din = alloc_u32(&mut mem, &input);
    let dout = poisoned_u32(&mut mem, n * 8);
    launch(
        &ptx(COLLECTIVES),
        "collectives",
        LaunchConfig::linear(1, n as u32),
        &[ArgValue::Ptr(din), ArgValue::Ptr(dout)],
        &mut mem,
    )
    .unwrap();
    let out = mem.read_u32(dout, n * 8).unwrap();
    for t in 0..n {
        let (w, lane) = (t / 32 * 32, t % 32);
        let v = |l: usize| input[w + l];
        let up = if lane % 8 >= 1 { v(lane - 1) } else { v(lane) };
        let down = if lane % 8 + 2 < 8 {
            v(lane + 2)
        } else {
            v(lane)
        };
        let ballot = (0..32)
            .filter(|&l| v(l) & 1 == 1)
            .fold(0u32, |m, l| m | 1 << l);
        let sum = (0..32).fold(0u32, |s, l| s.wrapping_add(v(l)));
        let min = (0..32).map(|l| v(l) as i32).min().unwrap() as u32;
        let want = [
            up,
            down,
            v(lane ^ 5),
            v((lane & !7) + 3),
            (lane % 8 >= 1) as u32,
            ballot,
            sum,
            min,
        ];
        assert_eq!(&out[t * 8..t * 8 + 8], &want, "thread {t}");
    }
}

const BLOCK_SUM: &str = r#"
.visible .entry block_sum(.param .u64 in, .param .u64 out, .param .u32 n)
{
	.reg .pred 	%p<5>;
	.reg .b32 	%r<16>;
	.reg .f32 	%f<6>;
	.reg .b64 	%rd<8>;
	.shared .align 4 .b8 partial[128];

	ld.param.u64 	%rd1, [in];
	ld.param.u64 	%rd2, [out];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mad.lo.s32 	%r5, %r3, %r4, %r2;
	mov.f32 	%f1, 0f00000000;
	setp.lt.u32 	%p1, %r5, %r1;
	@!%p1 bra 	$L__loaded;
	mul.wide.u32 	%rd3, %r5, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.f32 	%f1, [%rd4];
$L__loaded:
	shfl.sync.bfly.b32 	%f2, %f1, 16, 31, -1;
	add.f32 	%f1, %f1, %f2;
	shfl.sync.bfly.b32 	%f2, %f1, 8, 31, -1;
	add.f32 	%f1, %f1, %f2;
	shfl.sync.bfly.b32 	%f2, %f1, 4, 31, -1;
	add.f32 	%f1, %f1, %f2;
	shfl.sync.bfly.b32 	%f2, %f1, 2, 31, -1;
	add.f32 	%f1, %f1, %f2;
	shfl.sync.bfly.b32 	%f2, %f1, 1, 31, -1;
	add.f32 	%f1, %f1, %f2;
	and.b32 	%r6, %r2, 31;
	shr.u32 	%r7, %r2, 5;
	setp.eq.u32 	%p2, %r6, 0;
	mov.u32 	%r8, partial;
	shl.b32 	%r9, %r7, 2;
	add.s32 	%r10, %r8, %r9;
	@%p2 st.shared.f32 	[%r10], %f1;
	bar.sync 	0;
	setp.ne.u32 	%p3, %r7, 0;
	@%p3 bra 	$L__end;
	add.s32 	%r11, %r4, 31;
	shr.u32 	%r12, %r11, 5;
	mov.f32 	%f3, 0f00000000;
	setp.lt.u32 	%p4, %r6, %r12;
	@!%p4 bra 	$L__w0;
	shl.b32 	%r13, %r6, 2;
	add.s32 	%r14, %r8, %r13;
	ld.shared.f32 	%f3, [%r14];
$L__w0:
	shfl.sync.down.b32 	%f4, %f3, 16, 31, -1;
	add.f32 	%f3, %f3, %f4;
	shfl.sync.down.b32 	%f4, %f3, 8, 31, -1;
	add.f32 	%f3, %f3, %f4;
	shfl.sync.down.b32 	%f4, %f3, 4, 31, -1;
	add.f32 	%f3, %f3, %f4;
	shfl.sync.down.b32 	%f4, %f3, 2, 31, -1;
	add.f32 	%f3, %f3, %f4;
	shfl.sync.down.b32 	%f4, %f3, 1, 31, -1;
	add.f32 	%f3, %f3, %f4;
	@!%p2 bra 	$L__end;
	mul.wide.u32 	%rd5, %r3, 4;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.f32 	[%rd6], %f3;
$L__end:
	ret;
}
"#;

#[test]
fn shared_memory_block_reduction_with_shuffles_matches_cpu_sum() {
    let mut rng = Rng::new(12);
    for &(n, block) in &[(1000usize, 96u32), (4099, 256), (31, 32), (70_001, 1024)] {
        let x = rng.f32s(n, -1.0, 1.0);
        let mut mem = GlobalMemory::new();
        let dx = mem.alloc_f32(&x);
        let blocks = (n as u32).div_ceil(block);
        let dout = poisoned_f32(&mut mem, blocks as usize);
        launch(
            &ptx(BLOCK_SUM),
            "block_sum",
            LaunchConfig::linear(blocks, block),
            &[
                ArgValue::Ptr(dx),
                ArgValue::Ptr(dout),
                ArgValue::U32(n as u32),
            ],
            &mut mem,
        )
        .unwrap();
        let got = mem.read_f32(dout, blocks as usize).unwrap();
        for b in 0..blocks as usize {
            let chunk = &x[b * block as usize..((b + 1) * block as usize).min(n)];
            let want: f64 = chunk.iter().map(|&v| v as f64).sum();
            let scale: f64 = chunk.iter().map(|&v| v.abs() as f64).sum::<f64>().max(1.0);
            assert!(
                (got[b] as f64 - want).abs() <= 1e-5 * scale,
                "n={n} block {b}: {} vs {want}",
                got[b]
            );
        }
    }
}

#[test]
fn shuffle_naming_an_exited_lane_is_a_collective_divergence() {
    let source = ptx(r#"
.visible .entry half_exit()
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	mov.u32 	%r1, %laneid;
	setp.ge.u32 	%p1, %r1, 16;
	@%p1 ret;
	shfl.sync.bfly.b32 	%r2, %r1, 1, 31, 0xffffffff;
	ret;
}
"#);
    let err = launch(
        &source,
        "half_exit",
        LaunchConfig::linear(1, 32),
        &[],
        &mut GlobalMemory::new(),
    )
    .unwrap_err();
    match err {
        Error::CollectiveDivergence { site, detail } => {
            assert_eq!(site.thread, [0, 0, 0]);
            assert!(
                detail.contains("lane 16") && detail.contains("exited"),
                "{detail}"
            );
        }
        other => panic!("expected collective divergence, got {other:?}"),
    }
    // With a member mask of the live half, the same shuffle is fine.
    let fixed = source.replace("0xffffffff", "0x0000ffff");
    launch(
        &fixed,
        "half_exit",
        LaunchConfig::linear(1, 32),
        &[],
        &mut GlobalMemory::new(),
    )
    .unwrap();
}

#[test]
fn divergent_branches_reconverge_for_a_later_shuffle() {
    // Odd and even lanes take different paths, then meet at a full-warp shuffle.
    let source = ptx(r#"
.visible .entry diverge(.param .u64 out)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<4>;
	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %laneid;
	and.b32 	%r2, %r1, 1;
	setp.eq.u32 	%p1, %r2, 0;
	@%p1 bra 	$L__even;
	mul.lo.s32 	%r3, %r1, 100;
	bra.uni 	$L__join;
$L__even:
	add.s32 	%r3, %r1, 7;
$L__join:
	shfl.sync.idx.b32 	%r4, %r3, 0, 31, -1;
	shfl.sync.idx.b32 	%r5, %r3, 1, 31, -1;
	add.s32 	%r4, %r4, %r5;
	mul.wide.u32 	%rd2, %r1, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r4;
	ret;
}
"#);
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 32);
    launch(
        &source,
        "diverge",
        LaunchConfig::linear(1, 32),
        &[ArgValue::Ptr(out)],
        &mut mem,
    )
    .unwrap();
    // Lane 0 holds 0 + 7, lane 1 holds 1 * 100.
    assert_eq!(mem.read_u32(out, 32).unwrap(), vec![107; 32]);
}

#[test]
fn bar_red_counts_and_combines_predicates_across_the_block_and_elect_picks_the_lowest_lane() {
    let source = ptx(r#"
.visible .entry votes(.param .u64 in, .param .u64 out)
{
	.reg .pred 	%p<6>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<6>;
	ld.param.u64 	%rd1, [in];
	ld.param.u64 	%rd2, [out];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.u32 	%r2, [%rd4];
	setp.ne.u32 	%p1, %r2, 0;
	bar.red.popc.u32 	%r3, 0, %p1;
	bar.red.and.pred 	%p2, 0, %p1;
	bar.red.or.pred 	%p3, 0, !%p1;
	selp.u32 	%r4, 1, 0, %p2;
	selp.u32 	%r5, 1, 0, %p3;
	setp.ge.u32 	%p4, %r1, 40;
	@!%p4 bra 	$L__skip;
	elect.sync 	%r6|%p5, 0xffffffff;
	selp.u32 	%r7, 1, 0, %p5;
	bra.uni 	$L__store;
$L__skip:
	mov.u32 	%r6, 99;
	mov.u32 	%r7, 99;
$L__store:
	mul.wide.u32 	%rd3, %r1, 16;
	add.s64 	%rd5, %rd2, %rd3;
	st.global.v4.u32 	[%rd5], {%r3, %r4, %r5, %r7};
	ret;
}
"#);
    let mut rng = Rng::new(13);
    let n = 64;
    let flags: Vec<u32> = (0..n).map(|_| rng.next_u32() % 3).collect();
    let mut mem = GlobalMemory::new();
    let din = alloc_u32(&mut mem, &flags);
    let dout = poisoned_u32(&mut mem, n * 4);
    // Threads 0..40 of warp 1 skip the elect: only lanes 8..31 of warp 1 take part.
    let err = launch(
        &source,
        "votes",
        LaunchConfig::linear(1, n as u32),
        &[ArgValue::Ptr(din), ArgValue::Ptr(dout)],
        &mut mem,
    );
    // elect.sync with a full mask while lanes 0..7 of warp 1 went elsewhere never completes.
    assert!(
        matches!(err, Err(Error::CollectiveDivergence { .. })),
        "{err:?}"
    );
    let fixed = source.replace(
        "elect.sync 	%r6|%p5, 0xffffffff;",
        "elect.sync 	%r6|%p5, 0xffffff00;",
    );
    launch(
        &fixed,
        "votes",
        LaunchConfig::linear(1, n as u32),
        &[ArgValue::Ptr(din), ArgValue::Ptr(dout)],
        &mut mem,
    )
    .unwrap();
    let out = mem.read_u32(dout, n * 4).unwrap();
    let set = flags.iter().filter(|&&f| f != 0).count() as u32;
    for t in 0..n {
        let o = &out[t * 4..t * 4 + 4];
        assert_eq!(o[0], set);
        assert_eq!(o[1], (set == n as u32) as u32);
        assert_eq!(o[2], (set < n as u32) as u32);
        let elected = if t < 40 { 99 } else { (t == 40) as u32 };
        assert_eq!(o[3], elected, "thread {t}");
    }
}

#[test]
fn activemask_names_the_lanes_that_took_the_branch_so_a_shuffle_over_them_works() {
    let source = ptx(r#"
.visible .entry partial(.param .u64 out)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<4>;
	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %laneid;
	setp.ge.u32 	%p1, %r1, 20;
	@%p1 bra 	$L__end;
	activemask.b32 	%r2;
	shfl.sync.idx.b32 	%r3, %r1, 7, 31, %r2;
	mul.wide.u32 	%rd2, %r1, 8;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.v2.u32 	[%rd3], {%r2, %r3};
$L__end:
	ret;
}
"#);
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 64);
    launch(
        &source,
        "partial",
        LaunchConfig::linear(1, 32),
        &[ArgValue::Ptr(out)],
        &mut mem,
    )
    .unwrap();
    let got = mem.read_u32(out, 64).unwrap();
    for lane in 0..32 {
        let want = if lane < 20 {
            [0x000f_ffff, 7]
        } else {
            [POISON_U32, POISON_U32]
        };
        assert_eq!(&got[lane * 2..lane * 2 + 2], &want, "lane {lane}");
    }
}

/// A warp butterfly sum of 1.0 per thread, with the member mask taken from parameter `mask`
/// (the second warp of a 48-thread block uses `mask_tail`).
const PARTIAL_WARP_SUM: &str = r#"
.visible .entry warp_sum(.param .u64 out, .param .u32 mask, .param .u32 mask_tail)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<4>;
	ld.param.u64 	%rd1, [out];
	ld.param.u32 	%r1, [mask];
	ld.param.u32 	%r2, [mask_tail];
	mov.u32 	%r3, %tid.x;
	setp.ge.u32 	%p1, %r3, 32;
	@%p1 mov.u32 	%r1, %r2;
	mov.f32 	%f1, 0f3F800000;
	shfl.sync.bfly.b32 	%f2, %f1, 16, 31, %r1;
	add.f32 	%f1, %f1, %f2;
	shfl.sync.bfly.b32 	%f2, %f1, 8, 31, %r1;
	add.f32 	%f1, %f1, %f2;
	shfl.sync.bfly.b32 	%f2, %f1, 4, 31, %r1;
	add.f32 	%f1, %f1, %f2;
	shfl.sync.bfly.b32 	%f2, %f1, 2, 31, %r1;
	add.f32 	%f1, %f1, %f2;
	shfl.sync.bfly.b32 	%f2, %f1, 1, 31, %r1;
	add.f32 	%f1, %f1, %f2;
	mul.wide.u32 	%rd2, %r3, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.f32 	[%rd3], %f1;
	ret;
}
"#;

#[test]
fn full_mask_shuffle_in_a_partial_warp_names_the_missing_lanes() {
    let mut mem = GlobalMemory::new();
    let out = poisoned_f32(&mut mem, 48);
    let err = launch(
        &ptx(PARTIAL_WARP_SUM),
        "warp_sum",
        LaunchConfig::linear(1, 48),
        &[
            ArgValue::Ptr(out),
            ArgValue::U32(u32::MAX),
            ArgValue::U32(u32::MAX),
        ],
        &mut mem,
    )
    .unwrap_err();
    match &err {
        Error::PartialWarpMask {
            site,
            warp,
            mask,
            lanes,
        } => {
            assert_eq!(site.kernel, "warp_sum");
            assert_eq!((*warp, *mask, *lanes), (1, u32::MAX, 16));
            assert!(site.instruction.contains("shfl.sync.bfly"), "{site}");
            assert_eq!(site.thread, [32, 0, 0]);
        }
        other => panic!("expected a partial-warp mask error, got {other:?}"),
    }
    let text = err.to_string();
    for needle in [
        "warp_sum",
        "warp 1",
        "0xffffffff",
        "0x0000ffff",
        "multiple of 32",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
}

#[test]
fn shuffle_whose_mask_names_only_present_lanes_works_in_a_partial_warp() {
    let mut mem = GlobalMemory::new();
    let out = poisoned_f32(&mut mem, 48);
    // A butterfly over 16 lanes: the step that would cross into lanes 16-31 is left out.
    let sixteen_lanes = PARTIAL_WARP_SUM.replace(
        "shfl.sync.bfly.b32 	%f2, %f1, 16, 31, %r1;\n	add.f32 	%f1, %f1, %f2;\n",
        "",
    );
    assert_ne!(sixteen_lanes, PARTIAL_WARP_SUM);
    launch(
        &ptx(&sixteen_lanes),
        "warp_sum",
        LaunchConfig::linear(1, 48),
        &[
            ArgValue::Ptr(out),
            ArgValue::U32(u32::MAX),
            ArgValue::U32(0xffff),
        ],
        &mut mem,
    )
    .unwrap();
    assert_eq!(mem.read_f32(out, 48).unwrap(), vec![16.0; 48]);
}

#[test]
fn shuffle_reading_a_lane_absent_from_a_partial_warp_is_an_error() {
    let mut mem = GlobalMemory::new();
    let out = poisoned_f32(&mut mem, 48);
    // The second warp names its 16 lanes, but the first butterfly step reads lanes 16-31.
    let err = launch(
        &ptx(PARTIAL_WARP_SUM),
        "warp_sum",
        LaunchConfig::linear(1, 48),
        &[
            ArgValue::Ptr(out),
            ArgValue::U32(u32::MAX),
            ArgValue::U32(0xffff),
        ],
        &mut mem,
    )
    .unwrap_err();
    match &err {
        Error::ShuffleSource {
            site,
            lane,
            from,
            members,
            present,
        } => {
            assert_eq!(site.kernel, "warp_sum");
            assert_eq!(site.thread, [32, 0, 0]);
            assert!(site.instruction.contains("shfl.sync.bfly"), "{site}");
            assert_eq!((*lane, *from, *members, *present), (0, 16, 0xffff, false));
        }
        other => panic!("expected a shuffle-source error, got {other:?}"),
    }
    let text = err.to_string();
    for needle in ["warp_sum", "thread (32, 0, 0)", "lane 16", "partial warp"] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
    // The second warp stopped before its store.
    assert_eq!(mem.read_f32(out, 48).unwrap()[32..], [POISON_F32; 16]);
}

#[test]
fn shuffle_reading_a_lane_outside_its_member_mask_is_an_error() {
    let mut mem = GlobalMemory::new();
    let out = poisoned_f32(&mut mem, 32);
    // A full warp whose shuffles name only lanes 0-15, while the first step reads lanes 16-31.
    let err = launch(
        &ptx(PARTIAL_WARP_SUM),
        "warp_sum",
        LaunchConfig::linear(1, 32),
        &[
            ArgValue::Ptr(out),
            ArgValue::U32(0xffff),
            ArgValue::U32(0xffff),
        ],
        &mut mem,
    )
    .unwrap_err();
    match &err {
        Error::ShuffleSource {
            site,
            lane,
            from,
            present,
            ..
        } => {
            assert_eq!(site.thread, [0, 0, 0]);
            assert_eq!((*lane, *from, *present), (0, 16, true));
        }
        other => panic!("expected a shuffle-source error, got {other:?}"),
    }
    assert!(err.to_string().contains("not in the member mask"), "{err}");
}

#[test]
fn votes_reductions_and_warp_syncs_over_missing_lanes_are_errors() {
    for (name, body) in [
        ("vote", "vote.sync.ballot.b32 	%r2, %p1, 0xffffffff;"),
        ("redux", "redux.sync.add.u32 	%r2, %r1, 0xffffffff;"),
        ("match", "match.any.sync.b32 	%r2, %r1, 0xffffffff;"),
        ("warpsync", "bar.warp.sync 	0xffffffff;"),
    ] {
        let source = ptx(&format!(
            r#"
.visible .entry {name}()
{{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	mov.u32 	%r1, %tid.x;
	setp.ne.u32 	%p1, %r1, 0;
	{body}
	ret;
}}
"#
        ));
        let err = launch(
            &source,
            name,
            LaunchConfig::linear(1, 40),
            &[],
            &mut GlobalMemory::new(),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                Error::PartialWarpMask {
                    warp: 1,
                    lanes: 8,
                    ..
                }
            ),
            "{name}: {err:?}"
        );
        // The same instruction over the lanes present runs.
        let fixed = source.replace("0xffffffff", "0x000000ff");
        launch(
            &fixed,
            name,
            LaunchConfig::linear(1, 8),
            &[],
            &mut GlobalMemory::new(),
        )
        .unwrap();
    }
}
