//! A block that spin-waits, with `nanosleep`, on a flag another block of the grid sets: the
//! emulator keeps the waiting block resident and runs the others until the flag is set, and
//! reports a wait nothing can satisfy as a deadlock instead of spinning through its budget.

mod common;

use common::*;
use ptx_emulator::{ArgValue, Emulator, Error, GlobalMemory, LaunchConfig};

/// Block `b` waits until block `b + 1` has published, then publishes `out[b + 1] + b + 1`:
/// block 0 waits on the last block, which is admitted last. Every thread polls; thread 0
/// publishes after a `bar.sync`, so the waiters share their CTA with a barrier.
fn chain() -> String {
    ptx(r#"
.visible .entry chain(.param .u64 flags, .param .u64 out)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<9>;

	ld.param.u64 	%rd1, [flags];
	ld.param.u64 	%rd2, [out];
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %nctaid.x;
	mov.u32 	%r3, %tid.x;
	add.u32 	%r4, %r1, 1;
	mov.u32 	%r5, 0;
	setp.ge.u32 	%p1, %r4, %r2;
	@%p1 bra 	$L__publish;
	mul.wide.u32 	%rd3, %r4, 4;
	add.s64 	%rd4, %rd1, %rd3;
	add.s64 	%rd5, %rd2, %rd3;
$L__spin:
	ld.global.cg.u32 	%r6, [%rd4];
	setp.ne.u32 	%p2, %r6, 0;
	@%p2 bra 	$L__ready;
	nanosleep.u32 	100;
	bra.uni 	$L__spin;
$L__ready:
	fence.acq_rel.gpu;
	ld.global.cg.u32 	%r5, [%rd5];
$L__publish:
	bar.sync 	0;
	setp.ne.u32 	%p2, %r3, 0;
	@%p2 bra 	$L__end;
	add.u32 	%r7, %r5, %r4;
	mul.wide.u32 	%rd6, %r1, 4;
	add.s64 	%rd7, %rd2, %rd6;
	st.global.u32 	[%rd7], %r7;
	fence.acq_rel.gpu;
	add.s64 	%rd8, %rd1, %rd6;
	st.global.u32 	[%rd8], 1;
$L__end:
	ret;
}
"#)
}

fn run_chain(blocks: u32) -> Result<Vec<u32>, Error> {
    let mut mem = GlobalMemory::new();
    let flags = alloc_u32(&mut mem, &vec![0; blocks as usize]);
    let out = poisoned_u32(&mut mem, blocks as usize);
    launch(
        &chain(),
        "chain",
        LaunchConfig::linear(blocks, 32),
        &[ArgValue::Ptr(flags), ArgValue::Ptr(out)],
        &mut mem,
    )?;
    mem.read_u32(out, blocks as usize)
}

/// `out[b]`: the sum of `k + 1` over the blocks `k >= b`.
fn chain_sums(blocks: u32) -> Vec<u32> {
    (0..blocks).map(|b| (b + 1..=blocks).sum()).collect()
}

#[test]
fn each_block_waits_for_the_next_one_and_the_first_for_the_last() {
    assert_eq!(run_chain(4).unwrap(), [10, 9, 7, 4]);
    assert_eq!(run_chain(4).unwrap(), chain_sums(4));
}

#[test]
fn a_chain_as_long_as_the_resident_blocks_completes_and_a_longer_one_deadlocks() {
    assert_eq!(run_chain(32).unwrap(), chain_sums(32));
    // Blocks 0 to 31 all wait, so block 32, which would release them, never starts: a GPU
    // that holds 32 blocks would hang the same way.
    match run_chain(33) {
        Err(Error::SpinDeadlock { site, detail, .. }) => {
            assert_eq!(site.block, [0, 0, 0]);
            assert!(site.instruction.starts_with("nanosleep"), "{site}");
            assert!(
                detail.contains("31 other blocks are stalled too and 1 never started"),
                "{detail}"
            );
        }
        other => panic!("expected a spin deadlock, got {other:?}"),
    }
}

/// Thread 0 of each block takes a ticket of its group of three blocks with `atom.global.inc`,
/// waits until all three tickets are out, then writes `1000 × tickets seen + its ticket`.
fn tickets() -> String {
    ptx(r#"
.visible .entry tickets(.param .u64 counters, .param .u64 out)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [counters];
	ld.param.u64 	%rd2, [out];
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %tid.x;
	setp.ne.u32 	%p1, %r2, 0;
	@%p1 bra 	$L__end;
	div.u32 	%r3, %r1, 3;
	mul.wide.u32 	%rd3, %r3, 4;
	add.s64 	%rd4, %rd1, %rd3;
	atom.global.inc.u32 	%r4, [%rd4], 1000;
$L__wait:
	ld.global.cg.u32 	%r5, [%rd4];
	setp.ge.u32 	%p2, %r5, 3;
	@%p2 bra 	$L__go;
	nanosleep.u32 	%r2;
	bra.uni 	$L__wait;
$L__go:
	mad.lo.u32 	%r6, %r5, 1000, %r4;
	mul.wide.u32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.u32 	[%rd6], %r6;
$L__end:
	ret;
}
"#)
}

#[test]
fn each_block_waits_until_its_group_of_three_has_taken_tickets() {
    let mut mem = GlobalMemory::new();
    let counters = alloc_u32(&mut mem, &[0, 0, 0]);
    let out = poisoned_u32(&mut mem, 9);
    launch(
        &tickets(),
        "tickets",
        LaunchConfig::linear(9, 64),
        &[ArgValue::Ptr(counters), ArgValue::Ptr(out)],
        &mut mem,
    )
    .unwrap();
    // Blocks take their group's tickets in launch order, and each saw all three out.
    assert_eq!(
        mem.read_u32(out, 9).unwrap(),
        [3000, 3001, 3002, 3000, 3001, 3002, 3000, 3001, 3002]
    );
    assert_eq!(mem.read_u32(counters, 3).unwrap(), [3, 3, 3]);
}

/// Block 0 waits on a flag no block sets; block 1 stores and exits.
fn forsaken() -> String {
    ptx(r#"
.visible .entry forsaken(.param .u64 flag, .param .u64 out)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [flag];
	ld.param.u64 	%rd2, [out];
	mov.u32 	%r1, %ctaid.x;
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	$L__other;
$L__spin:
	ld.global.cg.u32 	%r2, [%rd1];
	setp.eq.u32 	%p2, %r2, 0;
	@!%p2 bra 	$L__end;
	nanosleep.u32 	1000;
	bra.uni 	$L__spin;
$L__other:
	st.global.u32 	[%rd2], %r1;
$L__end:
	ret;
}
"#)
}

#[test]
fn a_wait_on_a_flag_nobody_sets_is_a_deadlock_found_at_once() {
    let mut mem = GlobalMemory::new();
    let flag = alloc_u32(&mut mem, &[0]);
    let out = poisoned_u32(&mut mem, 1);
    // A budget a few spins would not exhaust: the deadlock is found when nothing moves, not by
    // running out of steps.
    let module = Emulator::new()
        .with_step_budget(100_000)
        .load(&forsaken())
        .unwrap();
    let err = module
        .launch(
            "forsaken",
            &LaunchConfig::linear(2, 32),
            &[ArgValue::Ptr(flag), ArgValue::Ptr(out)],
            &mut mem,
        )
        .unwrap_err();
    let text = err.to_string();
    match err {
        Error::SpinDeadlock {
            site,
            waiting,
            detail,
        } => {
            assert_eq!(site.block, [0, 0, 0]);
            assert_eq!(waiting, 32);
            assert!(site.instruction.starts_with("nanosleep.u32"), "{site}");
            assert!(detail.contains("0 threads have exited"), "{detail}");
        }
        other => panic!("expected a spin deadlock, got {other}"),
    }
    assert!(text.contains("deadlock"), "{text}");
    // Block 1 ran meanwhile.
    assert_eq!(mem.read_u32(out, 1).unwrap(), [1]);
}

/// A `nanosleep` that is not in a loop: with nothing stored yet, the thread still goes on.
#[test]
fn a_nanosleep_outside_a_loop_only_pauses() {
    let source = ptx(r#"
.visible .entry pause(.param .u64 out)
{
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %tid.x;
	nanosleep.u32 	%r1;
	mul.wide.u32 	%rd2, %r1, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r1;
	ret;
}
"#);
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 64);
    launch(
        &source,
        "pause",
        LaunchConfig::linear(1, 64),
        &[ArgValue::Ptr(out)],
        &mut mem,
    )
    .unwrap();
    assert_eq!(
        mem.read_u32(out, 64).unwrap(),
        (0..64).collect::<Vec<u32>>()
    );
}
