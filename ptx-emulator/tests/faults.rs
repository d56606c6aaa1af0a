//! What a GPU does not tell you: each fault is a typed error naming the kernel, block, thread,
//! instruction and address.

mod common;

use common::*;
use ptx_emulator::{Access, ArgValue, Emulator, Error, GlobalMemory, LaunchConfig, Nearest};

/// Stores `tid.x` to `out[tid.x + shift]`: with `shift = 1` the last thread writes past the end.
const SHIFTED_STORE: &str = r#"
.visible .entry shifted(.param .u64 out, .param .u32 shift)
{
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [out];
	ld.param.u32 	%r1, [shift];
	mov.u32 	%r2, %tid.x;
	add.s32 	%r3, %r2, %r1;
	mul.wide.u32 	%rd2, %r3, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r2;
	ret;
}
"#;

#[test]
fn out_of_bounds_store_names_thread_address_and_buffer() {
    let mut mem = GlobalMemory::new();
    let _before = mem.alloc(64);
    let out = poisoned_u32(&mut mem, 64);
    let _after = mem.alloc(64);
    let cfg = LaunchConfig {
        grid: [2, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
    };
    let err = launch(
        &ptx(SHIFTED_STORE),
        "shifted",
        cfg,
        &[ArgValue::Ptr(out), ArgValue::U32(1)],
        &mut mem,
    )
    .unwrap_err();
    match &err {
        Error::GlobalOutOfBounds {
            site,
            access,
            address,
            size,
            nearest,
        } => {
            assert_eq!(site.kernel, "shifted");
            assert_eq!(site.block, [0, 0, 0]);
            assert_eq!(site.thread, [63, 0, 0]);
            assert_eq!(site.instruction, "st.global.u32 [%rd3], %r2;");
            assert_eq!(*access, Access::Store);
            assert_eq!(*address, out + 256);
            assert_eq!(*size, 4);
            assert_eq!(
                *nearest,
                Nearest::Buffer {
                    base: out,
                    bytes: 256,
                    offset: 256
                }
            );
        }
        other => panic!("expected an out-of-bounds store, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("thread (63, 0, 0)") && text.contains("shifted"),
        "{text}"
    );
    // Threads before the faulting one did run.
    assert_eq!(mem.read_u32(out + 4, 3).unwrap(), vec![0, 1, 2]);
}

/// [`SHIFTED_STORE`] with the line directives `#[kernel]` writes for it.
const SHIFTED_STORE_WITH_LINES: &str = r#"
.file	1 "src/kernels.rs"

.visible .entry shifted(.param .u64 out, .param .u32 shift)
{
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<4>;

	.loc	1 12 5 // let i = thread_idx().x + shift;
	ld.param.u64 	%rd1, [out];
	ld.param.u32 	%r1, [shift];
	mov.u32 	%r2, %tid.x;
	add.s32 	%r3, %r2, %r1;
	.loc	1 14 9 // out[i] = thread_idx().x;
	mul.wide.u32 	%rd2, %r3, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r2;
	ret;
}
"#;

#[test]
fn out_of_bounds_store_names_the_rust_line_of_its_loc() {
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 64);
    let err = launch(
        &ptx(SHIFTED_STORE_WITH_LINES),
        "shifted",
        LaunchConfig::linear(1, 64),
        &[ArgValue::Ptr(out), ArgValue::U32(1)],
        &mut mem,
    )
    .unwrap_err();
    let Error::GlobalOutOfBounds { site, .. } = &err else {
        panic!("expected an out-of-bounds store, got {err:?}");
    };
    assert_eq!(site.instruction, "st.global.u32 [%rd3], %r2;");
    assert_eq!(
        site.source.as_ref().map(|s| s.as_str()),
        Some("src/kernels.rs:14:9, `out[i] = thread_idx().x;`")
    );
    let text = err.to_string();
    assert!(
        text.contains("at `st.global.u32 [%rd3], %r2;` from src/kernels.rs:14:9"),
        "{text}"
    );
}

#[test]
fn in_bounds_shift_runs_cleanly() {
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 65);
    launch(
        &ptx(SHIFTED_STORE),
        "shifted",
        LaunchConfig::linear(1, 64),
        &[ArgValue::Ptr(out), ArgValue::U32(1)],
        &mut mem,
    )
    .unwrap();
    let got = mem.read_u32(out, 65).unwrap();
    assert_eq!(got[0], POISON_U32);
    assert_eq!(&got[1..], &(0..64).collect::<Vec<u32>>()[..]);
}

const SHARED_READ: &str = r#"
.visible .entry reads_neighbour(.param .u64 out, .param .u32 skip_store)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;
	.shared .align 4 .b8 buf[512];

	ld.param.u64 	%rd1, [out];
	ld.param.u32 	%r1, [skip_store];
	mov.u32 	%r2, %tid.x;
	shl.b32 	%r3, %r2, 2;
	mov.u32 	%r4, buf;
	add.s32 	%r5, %r4, %r3;
	setp.eq.u32 	%p1, %r2, %r1;
	@!%p1 st.shared.u32 	[%r5], %r2;
	bar.sync 	0;
	xor.b32 	%r6, %r3, 4;
	add.s32 	%r7, %r4, %r6;
	ld.shared.u32 	%r6, [%r7];
	mul.wide.u32 	%rd2, %r2, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r6;
	ret;
}
"#;

#[test]
fn reading_shared_memory_nobody_wrote_is_reported_with_its_symbol() {
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 128);
    let err = launch(
        &ptx(SHARED_READ),
        "reads_neighbour",
        LaunchConfig::linear(1, 128),
        &[ArgValue::Ptr(out), ArgValue::U32(6)],
        &mut mem,
    )
    .unwrap_err();
    match &err {
        Error::UninitializedShared {
            site,
            address,
            symbol,
        } => {
            // Thread 7 reads thread 6's slot.
            assert_eq!(site.thread, [7, 0, 0]);
            assert_eq!(*address, 24);
            assert!(
                symbol.contains("`buf`") && symbol.contains("24"),
                "{symbol}"
            );
        }
        other => panic!("expected an uninitialized read, got {other:?}"),
    }
    // With every slot written, the neighbour exchange works.
    let out = poisoned_u32(&mut mem, 128);
    launch(
        &ptx(SHARED_READ),
        "reads_neighbour",
        LaunchConfig::linear(1, 128),
        &[ArgValue::Ptr(out), ArgValue::U32(999)],
        &mut mem,
    )
    .unwrap();
    let got = mem.read_u32(out, 128).unwrap();
    assert!(got.iter().enumerate().all(|(i, &v)| v == (i as u32 ^ 1)));
}

const EARLY_EXIT_BEFORE_BARRIER: &str = r#"
.visible .entry early_exit(.param .u32 n)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<3>;

	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %tid.x;
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 ret;
	bar.sync 	0;
	ret;
}
"#;

#[test]
fn barrier_skipped_by_exited_threads_is_a_divergence_error() {
    let mut mem = GlobalMemory::new();
    let err = launch(
        &ptx(EARLY_EXIT_BEFORE_BARRIER),
        "early_exit",
        LaunchConfig::linear(2, 64),
        &[ArgValue::U32(40)],
        &mut mem,
    )
    .unwrap_err();
    match &err {
        Error::BarrierDivergence {
            kernel,
            block,
            instruction,
            origin,
            waiting,
            expected,
            detail,
        } => {
            assert_eq!(kernel, "early_exit");
            assert_eq!(*origin, None, "hand-written PTX carries no line info");
            assert_eq!(*block, [0, 0, 0]);
            assert_eq!(instruction, "bar.sync 0;");
            assert_eq!((*waiting, *expected), (40, 64));
            assert!(
                detail.contains("24 threads have exited") && detail.contains("(40, 0, 0)"),
                "{detail}"
            );
        }
        other => panic!("expected barrier divergence, got {other:?}"),
    }
    launch(
        &ptx(EARLY_EXIT_BEFORE_BARRIER),
        "early_exit",
        LaunchConfig::linear(2, 64),
        &[ArgValue::U32(64)],
        &mut mem,
    )
    .unwrap();
}

#[test]
fn unsupported_instruction_is_named_at_launch_and_other_kernels_still_run() {
    let source = ptx(r#"
.visible .entry uses_wmma(.param .u64 t)
{
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<2>;
	ld.param.u64 	%rd1, [t];
	wmma.load.a.sync.aligned.row.m16n16k16.bf16 	{%r1, %r2, %r3, %r4}, [%rd1], 16;
	ret;
}
.visible .entry plain()
{
	ret;
}
"#);
    let module = Emulator::new().load(&source).unwrap();
    assert_eq!(
        module.entries(),
        vec!["uses_wmma".to_string(), "plain".to_string()]
    );
    let mut mem = GlobalMemory::new();
    let err = module
        .launch(
            "uses_wmma",
            &LaunchConfig::linear(1, 1),
            &[ArgValue::Ptr(0)],
            &mut mem,
        )
        .unwrap_err();
    match &err {
        Error::Unsupported {
            opcode,
            instruction,
            ..
        } => {
            assert!(opcode.starts_with("wmma"), "{opcode}");
            assert_eq!(
                instruction,
                "wmma.load.a.sync.aligned.row.m16n16k16.bf16 {%r1, %r2, %r3, %r4}, [%rd1], 16;"
            );
        }
        other => panic!("expected unsupported, got {other:?}"),
    }
    module
        .launch("plain", &LaunchConfig::linear(1, 1), &[], &mut mem)
        .unwrap();
}

#[test]
fn wrong_arguments_are_rejected_before_running() {
    let mut mem = GlobalMemory::new();
    let module = Emulator::new().load(&ptx(SHIFTED_STORE)).unwrap();
    let cfg = LaunchConfig::linear(1, 1);
    assert!(matches!(
        module.launch("shifted", &cfg, &[ArgValue::U64(0)], &mut mem),
        Err(Error::ArgumentCount {
            expected: 2,
            given: 1,
            ..
        })
    ));
    assert!(matches!(
        module.launch(
            "shifted",
            &cfg,
            &[ArgValue::U32(0), ArgValue::U32(0)],
            &mut mem
        ),
        Err(Error::ArgumentSize {
            index: 0,
            expected: 8,
            given: 4,
            ..
        })
    ));
    assert!(matches!(
        module.launch("nope", &cfg, &[], &mut mem),
        Err(Error::NoSuchEntry { .. })
    ));
    let bad = LaunchConfig {
        grid: [1, 1, 1],
        block: [2048, 1, 1],
        dynamic_shared_bytes: 0,
    };
    assert!(matches!(
        module.launch(
            "shifted",
            &bad,
            &[ArgValue::Ptr(0), ArgValue::U32(0)],
            &mut mem
        ),
        Err(Error::LaunchShape { .. })
    ));
}

#[test]
fn misaligned_vector_load_is_reported() {
    let source = ptx(r#"
.visible .entry v4(.param .u64 p)
{
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [p];
	ld.global.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd1+4];
	ret;
}
"#);
    let mut mem = GlobalMemory::new();
    let p = mem.alloc_f32(&[1.0; 8]);
    let err = launch(
        &source,
        "v4",
        LaunchConfig::linear(1, 1),
        &[ArgValue::Ptr(p)],
        &mut mem,
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::Misaligned { address, size: 16, .. } if address == p + 4),
        "{err:?}"
    );
}

/// Every thread sums `iters` shuffled values in a loop; `iters = 0xffffffff` is an endless loop
/// for practical purposes.
const SHUFFLE_LOOP: &str = r#"
.visible .entry spin(.param .u64 out, .param .u32 iters)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<4>;
	ld.param.u64 	%rd1, [out];
	ld.param.u32 	%r1, [iters];
	mov.u32 	%r2, 0;
	mov.u32 	%r3, %tid.x;
$L__top:
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__done;
	shfl.sync.bfly.b32 	%r4, %r3, 1, 31, 0xffffffff;
	add.s32 	%r3, %r3, %r4;
	add.s32 	%r2, %r2, 1;
	bra.uni 	$L__top;
$L__done:
	mov.u32 	%r5, %tid.x;
	mul.wide.u32 	%rd2, %r5, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r3;
	ret;
}
"#;

fn spin(budget: u64, grid: u32, iters: u32) -> Result<ptx_emulator::LaunchStats, Error> {
    let module = Emulator::new()
        .with_step_budget(budget)
        .load(&ptx(SHUFFLE_LOOP))
        .unwrap();
    let mut mem = GlobalMemory::new();
    let out = mem.alloc(4 * 256);
    module.launch(
        "spin",
        &LaunchConfig::linear(grid, 256),
        &[ArgValue::Ptr(out), ArgValue::U32(iters)],
        &mut mem,
    )
}

#[test]
fn an_endless_loop_stops_at_the_step_budget_naming_kernel_thread_and_instruction() {
    let err = spin(100_000, 1, u32::MAX).unwrap_err();
    match &err {
        Error::StepBudget { site, budget } => {
            assert_eq!(*budget, 100_000);
            assert_eq!(site.kernel, "spin");
            assert_eq!(site.block, [0, 0, 0]);
            assert!(site.instruction.starts_with("bra"), "{site}");
        }
        other => panic!("expected the step budget, got {other:?}"),
    }
    let text = err.to_string();
    for needle in [
        "spin",
        "thread (",
        "100000",
        "with_step_budget",
        "PTXKIT_EMULATOR_STEP_BUDGET",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
}

#[test]
fn the_step_budget_counts_the_instructions_of_every_thread_in_the_launch() {
    // About 5 instructions an iteration: 4 blocks of 256 threads at 100 iterations run some
    // 500k instructions, though no thread runs more than 600.
    let stats = spin(10_000_000, 4, 100).unwrap();
    assert!(stats.thread_instructions > 400_000, "{stats:?}");
    let err = spin(100_000, 4, 100).unwrap_err();
    assert!(
        matches!(
            err,
            Error::StepBudget {
                budget: 100_000,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn the_shared_memory_initialization_check_can_be_turned_off() {
    let module = Emulator::new()
        .with_shared_init_check(false)
        .load(&ptx(SHARED_READ))
        .unwrap();
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 128);
    module
        .launch(
            "reads_neighbour",
            &LaunchConfig::linear(1, 128),
            &[ArgValue::Ptr(out), ArgValue::U32(6)],
            &mut mem,
        )
        .unwrap();
    let got = mem.read_u32(out, 128).unwrap();
    // Thread 7 read the slot thread 6 skipped: the emulator's shared-memory fill pattern.
    assert_eq!(got[7], 0xcdcd_cdcd);
    assert_eq!(got[8], 9);
}

/// Warp 1 reads what warp 0 stored; `SYNC` is replaced by a barrier or nothing.
const CROSS_WARP: &str = r#"
.visible .entry cross_warp(.param .u64 out)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;
	.shared .align 4 .b8 buf[256];
	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, buf;
	shl.b32 	%r3, %r1, 2;
	add.s32 	%r4, %r2, %r3;
	setp.lt.u32 	%p1, %r1, 32;
	@%p1 st.shared.u32 	[%r4], %r1;
	SYNC
	@%p1 bra 	$L__end;
	ld.shared.u32 	%r5, [%r4+-128];
	mul.wide.u32 	%rd2, %r1, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r5;
$L__end:
	ret;
}
"#;

#[test]
fn race_check_reports_a_read_of_another_warps_store_without_a_barrier() {
    let racy = ptx(&CROSS_WARP.replace("SYNC", "// no barrier"));
    let fixed = ptx(&CROSS_WARP.replace("SYNC", "bar.sync 	0;"));
    let emu = Emulator::new();
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 64);
    let err = emu
        .load(&racy)
        .unwrap()
        .launch(
            "cross_warp",
            &LaunchConfig::linear(1, 64),
            &[ArgValue::Ptr(out)],
            &mut mem,
        )
        .unwrap_err();
    match err {
        Error::SharedRace {
            site,
            access,
            address,
            symbol,
            other,
        } => {
            assert_eq!(site.thread, [32, 0, 0]);
            assert_eq!(access, Access::Load);
            assert_eq!(address, 0);
            assert_eq!(other, [0, 0, 0]);
            assert!(symbol.contains("`buf`"), "{symbol}");
        }
        other => panic!("expected a race, got {other:?}"),
    }
    // Without the check the racy kernel happens to work here; with a barrier it is correct.
    Emulator::new()
        .with_race_check(false)
        .load(&racy)
        .unwrap()
        .launch(
            "cross_warp",
            &LaunchConfig::linear(1, 64),
            &[ArgValue::Ptr(out)],
            &mut mem,
        )
        .unwrap();
    emu.load(&fixed)
        .unwrap()
        .launch(
            "cross_warp",
            &LaunchConfig::linear(1, 64),
            &[ArgValue::Ptr(out)],
            &mut mem,
        )
        .unwrap();
    assert_eq!(
        &mem.read_u32(out, 64).unwrap()[32..],
        &(0..32).collect::<Vec<u32>>()[..]
    );
}
