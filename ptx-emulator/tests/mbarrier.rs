//! `mbarrier` producer/consumer synchronisation: waiting threads give way until the phase
//! completes; a phase that can never complete is reported instead of spinning forever.

mod common;

use common::*;
use ptx_emulator::{ArgValue, Error, GlobalMemory, LaunchConfig};

/// Warp 0 consumes, warp 1 produces: each producer lane copies 16 bytes with `cp.async` into
/// `stage` and arrives through `cp.async.mbarrier.arrive.noinc`, plus one plain arrive on a
/// second barrier; consumers spin on `try_wait.parity` and then read a neighbour's row.
fn source(expected: u32) -> String {
    ptx(&format!(
        r#"
.visible .entry pipeline(.param .u64 src, .param .u64 dst)
{{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<10>;
	.shared .align 8 .b64 full;
	.shared .align 8 .b64 done;
	.shared .align 16 .b8 stage[512];

	ld.param.u64 	%rd1, [src];
	ld.param.u64 	%rd2, [dst];
	mov.u32 	%r1, %tid.x;
	and.b32 	%r2, %r1, 31;
	shl.b32 	%r3, %r2, 4;
	mov.u32 	%r4, stage;
	add.s32 	%r5, %r4, %r3;
	setp.eq.u32 	%p1, %r1, 0;
	@%p1 mbarrier.init.shared.b64 	[full], {expected};
	@%p1 mbarrier.init.shared.b64 	[done], 32;
	bar.sync 	0;
	setp.lt.u32 	%p2, %r1, 32;
	@%p2 bra 	$L__consumer;
	cvt.u64.u32 	%rd3, %r3;
	add.s64 	%rd4, %rd1, %rd3;
	cp.async.ca.shared.global 	[%r5], [%rd4], 16;
	cp.async.mbarrier.arrive.noinc.shared.b64 	[full];
	mbarrier.arrive.shared.b64 	%rd5, [done];
	bra.uni 	$L__end;
$L__consumer:
	mbarrier.try_wait.parity.shared.b64 	%p3, [full], 0;
	@!%p3 bra 	$L__consumer;
	xor.b32 	%r6, %r3, 16;
	add.s32 	%r7, %r4, %r6;
	ld.shared.v4.u32 	{{%r8, %r9, %r10, %r11}}, [%r7];
	cvt.u64.u32 	%rd6, %r3;
	add.s64 	%rd7, %rd2, %rd6;
	st.global.v4.u32 	[%rd7], {{%r8, %r9, %r10, %r11}};
$L__wait_done:
	mbarrier.test_wait.parity.shared.b64 	%p3, [done], 0;
	@!%p3 bra 	$L__wait_done;
$L__end:
	ret;
}}
"#
    ))
}

#[test]
fn consumers_spinning_on_an_mbarrier_see_the_producers_data() {
    let mut rng = Rng::new(101);
    let src = rng.u32s(128);
    let mut mem = GlobalMemory::new();
    let dsrc = alloc_u32(&mut mem, &src);
    let ddst = poisoned_u32(&mut mem, 128);
    launch(
        &source(32),
        "pipeline",
        LaunchConfig::linear(1, 64),
        &[ArgValue::Ptr(dsrc), ArgValue::Ptr(ddst)],
        &mut mem,
    )
    .unwrap();
    let got = mem.read_u32(ddst, 128).unwrap();
    for lane in 0..32 {
        let row = lane ^ 1;
        assert_eq!(
            &got[lane * 4..lane * 4 + 4],
            &src[row * 4..row * 4 + 4],
            "lane {lane}"
        );
    }
}

#[test]
fn a_phase_expecting_more_arrivals_than_come_is_a_spin_deadlock() {
    let mut mem = GlobalMemory::new();
    let dsrc = alloc_u32(&mut mem, &[1; 128]);
    let ddst = poisoned_u32(&mut mem, 128);
    let err = launch(
        &source(33),
        "pipeline",
        LaunchConfig::linear(1, 64),
        &[ArgValue::Ptr(dsrc), ArgValue::Ptr(ddst)],
        &mut mem,
    )
    .unwrap_err();
    match err {
        Error::SpinDeadlock {
            site,
            waiting,
            detail,
        } => {
            assert_eq!(waiting, 32);
            assert_eq!(site.thread, [0, 0, 0]);
            assert!(
                site.instruction.starts_with("mbarrier.try_wait.parity"),
                "{}",
                site.instruction
            );
            assert!(detail.contains("32 threads have exited"), "{detail}");
        }
        other => panic!("expected a spin deadlock, got {other:?}"),
    }
}

#[test]
fn bulk_copies_complete_their_mbarrier_transactions_and_store_back() {
    let source = ptx(r#"
.visible .entry bulk(.param .u64 src, .param .u64 dst, .param .u64 back)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<10>;
	.shared .align 8 .b64 bar;
	.shared .align 128 .b8 stage[512];

	ld.param.u64 	%rd1, [src];
	ld.param.u64 	%rd2, [dst];
	ld.param.u64 	%rd3, [back];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, stage;
	setp.eq.u32 	%p1, %r1, 0;
	@%p1 mbarrier.init.shared.b64 	[bar], 1;
	bar.sync 	0;
	@!%p1 bra 	$L__wait;
	mbarrier.arrive.expect_tx.shared.b64 	_, [bar], 512;
	cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[%r2], [%rd1], 512, [bar];
$L__wait:
	mbarrier.try_wait.parity.shared.b64 	%p2, [bar], 0;
	@!%p2 bra 	$L__wait;
	shl.b32 	%r3, %r1, 2;
	xor.b32 	%r4, %r3, 4;
	add.s32 	%r5, %r2, %r4;
	ld.shared.u32 	%r6, [%r5];
	mul.wide.u32 	%rd4, %r1, 4;
	add.s64 	%rd5, %rd2, %rd4;
	st.global.u32 	[%rd5], %r6;
	bar.sync 	0;
	@%p1 cp.async.bulk.global.shared::cta.bulk_group 	[%rd3], [%r2], 512;
	cp.async.bulk.commit_group;
	cp.async.bulk.wait_group 	0;
	ret;
}
"#);
    let mut rng = Rng::new(102);
    let src = rng.u32s(128);
    let mut mem = GlobalMemory::new();
    let dsrc = alloc_u32(&mut mem, &src);
    let ddst = poisoned_u32(&mut mem, 128);
    let dback = poisoned_u32(&mut mem, 128);
    launch(
        &source,
        "bulk",
        LaunchConfig::linear(1, 128),
        &[
            ArgValue::Ptr(dsrc),
            ArgValue::Ptr(ddst),
            ArgValue::Ptr(dback),
        ],
        &mut mem,
    )
    .unwrap();
    let got = mem.read_u32(ddst, 128).unwrap();
    assert!((0..128).all(|t| got[t] == src[t ^ 1]));
    assert_eq!(mem.read_u32(dback, 128).unwrap(), src);
}
