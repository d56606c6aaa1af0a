//! Mutated kernels never make the emulator panic: every outcome is a result or a typed error.

mod common;

use common::*;
use proptest::prelude::*;
use ptx_emulator::{ArgValue, Emulator, GlobalMemory, LaunchConfig};

const KERNEL: &str = r#"
.visible .entry k(.param .u64 a, .param .u64 b, .param .u32 n)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<12>;
	.reg .f32 	%f<6>;
	.reg .b64 	%rd<8>;
	.shared .align 16 .b8 s[256];

	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [b];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, s;
	shl.b32 	%r4, %r2, 2;
	add.s32 	%r5, %r3, %r4;
	mul.wide.u32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.f32 	%f1, [%rd4];
	st.shared.f32 	[%r5], %f1;
	bar.sync 	0;
	xor.b32 	%r6, %r4, 4;
	add.s32 	%r7, %r3, %r6;
	ld.shared.f32 	%f2, [%r7];
	shfl.sync.bfly.b32 	%f3, %f2, 1, 31, -1;
	setp.lt.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__skip;
	fma.rn.f32 	%f4, %f2, %f3, %f1;
	cvt.rzi.s32.f32 	%r8, %f4;
	div.s32 	%r9, %r8, %r2;
	bfe.u32 	%r10, %r9, %r2, 7;
	cvt.rn.f32.u32 	%f5, %r10;
	add.s64 	%rd5, %rd2, %rd3;
	st.global.f32 	[%rd5], %f5;
$L__skip:
	ret;
}
"#;

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn mutated_kernels_load_and_run_without_panicking(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), prop::sample::select(b"0123456789%rfdpsxu.,;[]{}+-_ \n".to_vec())), 1..4)
    ) {
        let mut text = ptx(KERNEL).into_bytes();
        for (at, byte) in edits {
            let i = at.index(text.len());
            text[i] = byte;
        }
        let text = String::from_utf8_lossy(&text).into_owned();
        if let Ok(module) = Emulator::new().with_step_budget(1_000_000).load(&text) {
            let mut mem = GlobalMemory::new();
            let a = mem.alloc_f32(&[1.5; 64]);
            let b = mem.alloc(256);
            for entry in module.entries() {
                let args = [ArgValue::Ptr(a), ArgValue::Ptr(b), ArgValue::U32(40)];
                let _ = module.launch(&entry, &LaunchConfig::linear(2, 64), &args, &mut mem);
            }
        }
    }
}

#[test]
fn the_unmutated_kernel_runs_so_mutations_start_from_working_code() {
    let module = Emulator::new().load(&ptx(KERNEL)).unwrap();
    let mut mem = GlobalMemory::new();
    let a = mem.alloc_f32(&[1.5; 64]);
    let b = poisoned_f32(&mut mem, 64);
    module
        .launch(
            "k",
            &LaunchConfig::linear(1, 64),
            &[ArgValue::Ptr(a), ArgValue::Ptr(b), ArgValue::U32(40)],
            &mut mem,
        )
        .unwrap();
    let out = mem.read_f32(b, 64).unwrap();
    // Threads below 40 skip the store; the rest compute fma(1.5, 1.5, 1.5) = 3.75 -> 3 / tid -> 0.
    assert!(out[..40].iter().all(|&v| v == POISON_F32));
    assert!(out[40..].iter().all(|&v| v == 0.0));
}
