//! Prints the emulator's speed in thread-instructions per second on one core, for a vector
//! add, a saxpy and a block reduction over about a million threads.
//!
//! Run with `cargo run --release -p ptx-emulator --example throughput`.

use ptx_emulator::{ArgValue, Emulator, GlobalMemory, LaunchConfig};
use std::time::Instant;

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

const VECTOR_ADD: &str = r#"
.visible .entry vadd(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<11>;
	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [b];
	ld.param.u64 	%rd3, [c];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.s32 	%p1, %r5, %r1;
	@%p1 bra 	$L__done;
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	mul.wide.s32 	%rd7, %r5, 4;
	add.s64 	%rd8, %rd4, %rd7;
	add.s64 	%rd9, %rd5, %rd7;
	add.s64 	%rd10, %rd6, %rd7;
	ld.global.nc.f32 	%f1, [%rd8];
	ld.global.nc.f32 	%f2, [%rd9];
	add.f32 	%f3, %f1, %f2;
	st.global.f32 	[%rd10], %f3;
$L__done:
	ret;
}
"#;

const SAXPY: &str = r#"
.visible .entry saxpy(.param .f32 alpha, .param .u64 x, .param .u64 y, .param .u32 n)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<6>;
	ld.param.f32 	%f1, [alpha];
	ld.param.u64 	%rd1, [x];
	ld.param.u64 	%rd2, [y];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	$L__done;
	mul.wide.u32 	%rd3, %r5, 4;
	add.s64 	%rd4, %rd1, %rd3;
	add.s64 	%rd5, %rd2, %rd3;
	ld.global.f32 	%f2, [%rd4];
	ld.global.f32 	%f3, [%rd5];
	fma.rn.f32 	%f4, %f1, %f2, %f3;
	st.global.f32 	[%rd5], %f4;
$L__done:
	ret;
}
"#;

const REDUCE: &str = r#"
.visible .entry reduce(.param .u64 in, .param .u64 out, .param .u32 n)
{
	.reg .pred 	%p<5>;
	.reg .b32 	%r<16>;
	.reg .f32 	%f<6>;
	.reg .b64 	%rd<8>;
	.shared .align 4 .b8 partial[32];
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
	setp.ne.u32 	%p3, %r2, 0;
	@%p3 bra 	$L__end;
	ld.shared.v4.f32 	{%f1, %f2, %f3, %f4}, [partial];
	add.f32 	%f1, %f1, %f2;
	add.f32 	%f1, %f1, %f3;
	add.f32 	%f1, %f1, %f4;
	ld.shared.v4.f32 	{%f2, %f3, %f4, %f5}, [partial+16];
	add.f32 	%f1, %f1, %f2;
	add.f32 	%f1, %f1, %f3;
	add.f32 	%f1, %f1, %f4;
	add.f32 	%f1, %f1, %f5;
	mul.wide.u32 	%rd5, %r3, 4;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.f32 	[%rd6], %f1;
$L__end:
	ret;
}
"#;

fn main() {
    let n: usize = 1 << 20;
    let block = 256u32;
    let grid = (n as u32).div_ceil(block);
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 0.001).collect();
    let emulator = Emulator::new();
    let mut mem = GlobalMemory::new();
    let a = mem.alloc_f32(&x);
    let b = mem.alloc_f32(&x);
    let c = mem.alloc(n * 4);
    let partial = mem.alloc(grid as usize * 4);
    let cfg = LaunchConfig::linear(grid, block);
    let reduce_cfg = LaunchConfig::linear(grid, block);
    let runs: [(&str, &str, Vec<ArgValue>, LaunchConfig); 3] = [
        (
            "vadd",
            VECTOR_ADD,
            vec![
                ArgValue::Ptr(a),
                ArgValue::Ptr(b),
                ArgValue::Ptr(c),
                ArgValue::U32(n as u32),
            ],
            cfg,
        ),
        (
            "saxpy",
            SAXPY,
            vec![
                ArgValue::F32(2.0),
                ArgValue::Ptr(a),
                ArgValue::Ptr(c),
                ArgValue::U32(n as u32),
            ],
            cfg,
        ),
        (
            "reduce",
            REDUCE,
            vec![
                ArgValue::Ptr(a),
                ArgValue::Ptr(partial),
                ArgValue::U32(n as u32),
            ],
            reduce_cfg,
        ),
    ];
    for (name, body, args, cfg) in runs {
        let module = emulator
            .load(&format!("{HEADER}{body}"))
            .expect("benchmark PTX loads");
        // One warm-up launch, then the best of three.
        module
            .launch(name, &cfg, &args, &mut mem)
            .expect("benchmark kernel runs");
        let mut best = f64::MAX;
        let mut count = 0;
        for _ in 0..3 {
            let start = Instant::now();
            let stats = module
                .launch(name, &cfg, &args, &mut mem)
                .expect("benchmark kernel runs");
            best = best.min(start.elapsed().as_secs_f64());
            count = stats.thread_instructions;
        }
        println!(
            "{name:>7}: {n} threads, {count} thread-instructions in {:.1} ms = {:.1} M thread-instructions/s",
            best * 1e3,
            count as f64 / best / 1e6
        );
    }
}
