//! Atomics on global and shared memory, and `cp.async` with zero-fill and group waits.

mod common;

use common::*;
use ptx_emulator::{ArgValue, Error, GlobalMemory, LaunchConfig};

const ATOMICS: &str = r#"
.visible .entry atomics(.param .u64 vals, .param .u64 hist, .param .u64 shared_hist, .param .u64 scalars, .param .u32 n)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<24>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<16>;
	.shared .align 4 .b8 bins[64];

	ld.param.u64 	%rd1, [vals];
	ld.param.u64 	%rd2, [hist];
	ld.param.u64 	%rd3, [shared_hist];
	ld.param.u64 	%rd4, [scalars];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mad.lo.s32 	%r5, %r3, %r4, %r2;
	mov.u32 	%r6, bins;
	setp.lt.u32 	%p1, %r2, 16;
	shl.b32 	%r7, %r2, 2;
	add.s32 	%r8, %r6, %r7;
	@%p1 st.shared.u32 	[%r8], 0;
	bar.sync 	0;
	setp.ge.u32 	%p2, %r5, %r1;
	@%p2 bra 	$L__skip;
	mul.wide.u32 	%rd5, %r5, 4;
	add.s64 	%rd6, %rd1, %rd5;
	ld.global.u32 	%r9, [%rd6];
	and.b32 	%r10, %r9, 15;
	mul.wide.u32 	%rd7, %r10, 4;
	add.s64 	%rd8, %rd2, %rd7;
	atom.global.add.u32 	%r11, [%rd8], 1;
	shl.b32 	%r12, %r10, 2;
	add.s32 	%r13, %r6, %r12;
	red.shared.add.u32 	[%r13], 1;
	cvt.rn.f32.u32 	%f1, %r10;
	red.global.add.f32 	[%rd4], %f1;
	add.s32 	%r14, %r5, 1;
	atom.global.cas.b32 	%r15, [%rd4+4], 0, %r14;
	atom.global.max.s32 	%r16, [%rd4+8], %r9;
	atom.global.min.u32 	%r17, [%rd4+12], %r9;
	atom.global.exch.b32 	%r18, [%rd4+16], %r14;
	mov.b32 	%r19, 0x3c003c00;
	atom.global.add.noftz.f16x2 	%r20, [%rd4+20], %r19;
	atom.global.inc.u32 	%r21, [%rd4+24], 9;
$L__skip:
	bar.sync 	0;
	@!%p1 bra 	$L__end;
	ld.shared.u32 	%r22, [%r8];
	mul.wide.u32 	%rd9, %r2, 4;
	mul.wide.u32 	%rd10, %r3, 64;
	add.s64 	%rd11, %rd3, %rd10;
	add.s64 	%rd12, %rd11, %rd9;
	st.global.u32 	[%rd12], %r22;
$L__end:
	ret;
}
"#;

#[test]
fn global_and_shared_atomics_accumulate_every_update() {
    let mut rng = Rng::new(51);
    let (n, block) = (1000usize, 128u32);
    let grid = (n as u32).div_ceil(block);
    let vals: Vec<u32> = rng.u32s(n).into_iter().map(|v| v >> 1).collect();
    let mut mem = GlobalMemory::new();
    let dvals = alloc_u32(&mut mem, &vals);
    let dhist = alloc_u32(&mut mem, &[0; 16]);
    let dshared = poisoned_u32(&mut mem, 16 * grid as usize);
    let dscalars = alloc_u32(&mut mem, &[0, 0, 0, u32::MAX, 0, 0, 0]);
    launch(
        &ptx(ATOMICS),
        "atomics",
        LaunchConfig::linear(grid, block),
        &[
            ArgValue::Ptr(dvals),
            ArgValue::Ptr(dhist),
            ArgValue::Ptr(dshared),
            ArgValue::Ptr(dscalars),
            ArgValue::U32(n as u32),
        ],
        &mut mem,
    )
    .unwrap();
    let mut want = [0u32; 16];
    vals.iter().for_each(|v| want[(v & 15) as usize] += 1);
    assert_eq!(mem.read_u32(dhist, 16).unwrap(), want.to_vec());
    let per_block = mem.read_u32(dshared, 16 * grid as usize).unwrap();
    for b in 0..grid as usize {
        let mut w = [0u32; 16];
        vals[b * block as usize..((b + 1) * block as usize).min(n)]
            .iter()
            .for_each(|v| w[(v & 15) as usize] += 1);
        assert_eq!(&per_block[b * 16..b * 16 + 16], &w, "block {b}");
    }
    let s = mem.read_u32(dscalars, 7).unwrap();
    let sum: f32 = vals.iter().fold(0.0f32, |acc, v| acc + (v & 15) as f32);
    assert_eq!(f32::from_bits(s[0]), sum);
    // Threads run in order, so thread 0 wins the compare-and-swap and thread n-1 exchanges last.
    assert_eq!(s[1], 1);
    assert_eq!(s[2], *vals.iter().max().unwrap());
    assert_eq!(s[3], *vals.iter().min().unwrap());
    assert_eq!(s[4], n as u32);
    // 1000 additions of 1.0 to each f16 half: exact up to 1000 (f16 has integers to 2048).
    let half_1000 = 0x63d0u32;
    assert_eq!(s[5], half_1000 << 16 | half_1000);
    // inc wraps to zero after 9: 1000 increments leave 1000 % 10.
    assert_eq!(s[6], 0);
}

/// Each thread copies 16 bytes of row `tid` into shared memory with `cp.async`; rows at or past
/// `valid` copy `tail` source bytes and zero-fill the rest. `wait` is the wait instruction.
fn copy_source(wait: &str) -> String {
    ptx(&format!(
        r#"
.visible .entry async_copy(.param .u64 src, .param .u64 dst, .param .u32 valid, .param .u32 tail)
{{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<8>;
	.shared .align 16 .b8 stage[1024];

	ld.param.u64 	%rd1, [src];
	ld.param.u64 	%rd2, [dst];
	ld.param.u32 	%r1, [valid];
	ld.param.u32 	%r2, [tail];
	mov.u32 	%r3, %tid.x;
	shl.b32 	%r4, %r3, 4;
	mov.u32 	%r5, stage;
	add.s32 	%r6, %r5, %r4;
	cvt.u64.u32 	%rd3, %r4;
	add.s64 	%rd4, %rd1, %rd3;
	setp.lt.u32 	%p1, %r3, %r1;
	selp.b32 	%r7, 16, %r2, %p1;
	cp.async.cg.shared.global 	[%r6], [%rd4], 16, %r7;
	cp.async.commit_group;
	{wait}
	bar.sync 	0;
	xor.b32 	%r8, %r4, 16;
	add.s32 	%r9, %r5, %r8;
	ld.shared.v4.u32 	{{%r10, %r11, %r12, %r13}}, [%r9];
	add.s64 	%rd5, %rd2, %rd3;
	st.global.v4.u32 	[%rd5], {{%r10, %r11, %r12, %r13}};
	ret;
}}
"#
    ))
}

#[test]
fn cp_async_zero_fills_past_the_source_size_once_waited_for() {
    let mut rng = Rng::new(52);
    let threads = 64usize;
    let src: Vec<u32> = rng.u32s(threads * 4).into_iter().map(|v| v | 1).collect();
    for wait in ["cp.async.wait_group 0;", "cp.async.wait_all;"] {
        let mut mem = GlobalMemory::new();
        let dsrc = alloc_u32(&mut mem, &src);
        let ddst = poisoned_u32(&mut mem, threads * 4);
        launch(
            &copy_source(wait),
            "async_copy",
            LaunchConfig::linear(1, threads as u32),
            &[
                ArgValue::Ptr(dsrc),
                ArgValue::Ptr(ddst),
                ArgValue::U32(50),
                ArgValue::U32(8),
            ],
            &mut mem,
        )
        .unwrap();
        let got = mem.read_u32(ddst, threads * 4).unwrap();
        for t in 0..threads {
            // Thread t reads row t ^ 1.
            let row = t ^ 1;
            let want: Vec<u32> = (0..4)
                .map(|w| {
                    if row < 50 || w < 2 {
                        src[row * 4 + w]
                    } else {
                        0
                    }
                })
                .collect();
            assert_eq!(&got[t * 4..t * 4 + 4], &want[..], "{wait} thread {t}");
        }
    }
}

#[test]
fn reading_a_cp_async_destination_before_waiting_is_an_uninitialized_read() {
    let mut mem = GlobalMemory::new();
    let dsrc = alloc_u32(&mut mem, &[7; 256]);
    let ddst = poisoned_u32(&mut mem, 256);
    let err = launch(
        &copy_source("// no wait"),
        "async_copy",
        LaunchConfig::linear(1, 64),
        &[
            ArgValue::Ptr(dsrc),
            ArgValue::Ptr(ddst),
            ArgValue::U32(64),
            ArgValue::U32(0),
        ],
        &mut mem,
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::UninitializedShared { ref site, .. } if site.instruction.starts_with("ld.shared.v4.u32")),
        "{err}"
    );
}

#[test]
fn cp_async_source_out_of_bounds_is_reported_at_the_copy() {
    let mut mem = GlobalMemory::new();
    let dsrc = alloc_u32(&mut mem, &[7; 64]);
    let ddst = poisoned_u32(&mut mem, 256);
    let err = launch(
        &copy_source("cp.async.wait_all;"),
        "async_copy",
        LaunchConfig::linear(1, 64),
        &[
            ArgValue::Ptr(dsrc),
            ArgValue::Ptr(ddst),
            ArgValue::U32(64),
            ArgValue::U32(0),
        ],
        &mut mem,
    )
    .unwrap_err();
    match err {
        Error::GlobalOutOfBounds { site, address, .. } => {
            assert_eq!(site.thread, [16, 0, 0]);
            assert!(site.instruction.starts_with("cp.async.cg.shared.global"));
            assert_eq!(address, dsrc + 256);
        }
        other => panic!("expected out of bounds, got {other:?}"),
    }
}

#[test]
fn sixteen_bit_compare_and_swap_touches_only_its_half_word() {
    let source = ptx(r#"
.visible .entry cas16(.param .u64 p, .param .u64 old)
{
	.reg .b16 	%rs<4>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [p];
	ld.param.u64 	%rd2, [old];
	mov.u16 	%rs1, 0x1234;
	mov.u16 	%rs2, 0xbeef;
	atom.global.cas.b16 	%rs3, [%rd1+2], %rs1, %rs2;
	st.global.u16 	[%rd2], %rs3;
	atom.global.cas.b16 	%rs3, [%rd1+2], %rs1, %rs1;
	st.global.u16 	[%rd2+2], %rs3;
	ret;
}
"#);
    let mut mem = GlobalMemory::new();
    let p = alloc_u32(&mut mem, &[0x1234_5678]);
    let old = poisoned_u32(&mut mem, 1);
    launch(
        &source,
        "cas16",
        LaunchConfig::linear(1, 1),
        &[ArgValue::Ptr(p), ArgValue::Ptr(old)],
        &mut mem,
    )
    .unwrap();
    assert_eq!(mem.read_u32(p, 1).unwrap(), vec![0xbeef_5678]);
    assert_eq!(mem.read_u32(old, 1).unwrap(), vec![0xbeef_1234]);
}

#[test]
fn generic_pointers_reach_dynamic_shared_memory_and_isspacep_tells_spaces_apart() {
    let source = ptx(r#"
.extern .shared .align 16 .b8 dyn[];
.visible .entry generic(.param .u64 out)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<10>;
	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %tid.x;
	mov.u64 	%rd2, dyn;
	cvta.shared.u64 	%rd3, %rd2;
	mul.wide.u32 	%rd4, %r1, 4;
	add.s64 	%rd5, %rd3, %rd4;
	mul.lo.s32 	%r2, %r1, 3;
	st.u32 	[%rd5], %r2;
	bar.sync 	0;
	xor.b64 	%rd6, %rd4, 4;
	add.s64 	%rd7, %rd3, %rd6;
	ld.u32 	%r3, [%rd7];
	isspacep.shared 	%p1, %rd7;
	isspacep.global 	%p2, %rd1;
	isspacep.global 	%p3, %rd7;
	selp.u32 	%r4, 1, 0, %p1;
	selp.u32 	%r5, 1, 0, %p2;
	selp.u32 	%r6, 1, 0, %p3;
	mov.u32 	%r7, %dynamic_smem_size;
	mul.wide.u32 	%rd8, %r1, 16;
	add.s64 	%rd9, %rd1, %rd8;
	st.global.v4.u32 	[%rd9], {%r3, %r4, %r5, %r7};
	ret;
}
"#);
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 4 * 64);
    let cfg = LaunchConfig {
        dynamic_shared_bytes: 256,
        ..LaunchConfig::linear(1, 64)
    };
    launch(&source, "generic", cfg, &[ArgValue::Ptr(out)], &mut mem).unwrap();
    let got = mem.read_u32(out, 4 * 64).unwrap();
    for t in 0..64u32 {
        assert_eq!(
            &got[t as usize * 4..t as usize * 4 + 4],
            &[(t ^ 1) * 3, 1, 1, 256],
            "thread {t}"
        );
    }
    // Without the dynamic allocation the same stores fall outside shared memory.
    let out = poisoned_u32(&mut mem, 4 * 64);
    let err = launch(
        &source,
        "generic",
        LaunchConfig::linear(1, 64),
        &[ArgValue::Ptr(out)],
        &mut mem,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::SharedOutOfBounds {
                shared_bytes: 0,
                ..
            }
        ),
        "{err}"
    );
}
