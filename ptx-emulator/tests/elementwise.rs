//! Element-wise kernels over odd shapes: vector add, saxpy, a Triton-compiled add.

mod common;

use common::*;
use ptx_emulator::{ArgValue, GlobalMemory, LaunchConfig};

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

#[test]
fn vector_add_matches_cpu_when_the_grid_overshoots_the_length() {
    let mut rng = Rng::new(1);
    for &(n, block) in &[(1usize, 32u32), (1000, 128), (4097, 256), (77, 96)] {
        let a = rng.f32s(n, -100.0, 100.0);
        let b = rng.f32s(n, -100.0, 100.0);
        let mut mem = GlobalMemory::new();
        let (da, db) = (mem.alloc_f32(&a), mem.alloc_f32(&b));
        let dc = poisoned_f32(&mut mem, n);
        let grid = (n as u32).div_ceil(block);
        launch(
            &ptx(VECTOR_ADD),
            "vadd",
            LaunchConfig::linear(grid, block),
            &[
                ArgValue::Ptr(da),
                ArgValue::Ptr(db),
                ArgValue::Ptr(dc),
                ArgValue::U32(n as u32),
            ],
            &mut mem,
        )
        .unwrap();
        let c = mem.read_f32(dc, n).unwrap();
        for i in 0..n {
            assert_eq!(c[i].to_bits(), (a[i] + b[i]).to_bits(), "n={n} i={i}");
        }
    }
}

#[test]
fn launches_are_bit_identical_and_count_thread_instructions() {
    let mut rng = Rng::new(2);
    let n = 3001;
    let a = rng.f32s(n, -1.0, 1.0);
    let b = rng.f32s(n, -1.0, 1.0);
    let mut results = Vec::new();
    for _ in 0..2 {
        let mut mem = GlobalMemory::new();
        let (da, db) = (mem.alloc_f32(&a), mem.alloc_f32(&b));
        let dc = poisoned_f32(&mut mem, n);
        let stats = launch(
            &ptx(VECTOR_ADD),
            "vadd",
            LaunchConfig::linear(12, 256),
            &[
                ArgValue::Ptr(da),
                ArgValue::Ptr(db),
                ArgValue::Ptr(dc),
                ArgValue::U32(n as u32),
            ],
            &mut mem,
        )
        .unwrap();
        results.push((stats, mem.read_u32(dc, n).unwrap()));
    }
    assert_eq!(results[0], results[1]);
    // 3001 threads run all 22 instructions (21 + ret); 71 threads branch out after 11.
    assert_eq!(results[0].0.thread_instructions, 3001 * 22 + 71 * 11);
}

const SAXPY_2D: &str = r#"
.visible .entry saxpy2d(.param .f32 alpha, .param .u64 x, .param .u64 y, .param .u32 rows, .param .u32 cols)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<12>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<8>;

	ld.param.f32 	%f1, [alpha];
	ld.param.u64 	%rd1, [x];
	ld.param.u64 	%rd2, [y];
	ld.param.u32 	%r1, [rows];
	ld.param.u32 	%r2, [cols];
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %ctaid.x;
	mov.u32 	%r5, %ntid.x;
	mad.lo.s32 	%r6, %r4, %r5, %r3;
	mov.u32 	%r7, %tid.y;
	mov.u32 	%r8, %ctaid.y;
	mov.u32 	%r9, %ntid.y;
	mad.lo.s32 	%r10, %r8, %r9, %r7;
	setp.ge.u32 	%p1, %r6, %r2;
	setp.ge.or.u32 	%p2, %r10, %r1, %p1;
	@%p2 bra 	$L__end;
	mad.lo.s32 	%r11, %r10, %r2, %r6;
	mul.wide.u32 	%rd3, %r11, 4;
	add.s64 	%rd4, %rd1, %rd3;
	add.s64 	%rd5, %rd2, %rd3;
	ld.global.f32 	%f2, [%rd4];
	ld.global.f32 	%f3, [%rd5];
	fma.rn.f32 	%f4, %f1, %f2, %f3;
	st.global.f32 	[%rd5], %f4;
$L__end:
	ret;
}
"#;

#[test]
fn two_dimensional_saxpy_uses_fused_multiply_add_rounding() {
    let mut rng = Rng::new(3);
    let (rows, cols) = (37usize, 45usize);
    let x = rng.f32s(rows * cols, -3.0, 3.0);
    let y = rng.f32s(rows * cols, -3.0, 3.0);
    let alpha = 1.337f32;
    let mut mem = GlobalMemory::new();
    let (dx, dy) = (mem.alloc_f32(&x), mem.alloc_f32(&y));
    let cfg = LaunchConfig {
        grid: [3, 5, 1],
        block: [16, 8, 1],
        dynamic_shared_bytes: 0,
    };
    launch(
        &ptx(SAXPY_2D),
        "saxpy2d",
        cfg,
        &[
            ArgValue::F32(alpha),
            ArgValue::Ptr(dx),
            ArgValue::Ptr(dy),
            ArgValue::U32(rows as u32),
            ArgValue::U32(cols as u32),
        ],
        &mut mem,
    )
    .unwrap();
    let out = mem.read_f32(dy, rows * cols).unwrap();
    for i in 0..rows * cols {
        assert_eq!(
            out[i].to_bits(),
            alpha.mul_add(x[i], y[i]).to_bits(),
            "i={i}"
        );
    }
}

#[test]
fn triton_compiled_add_kernel_runs_unchanged() {
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ptx-parser/tests/fixtures/triton_add_sm90.ptx"
    ))
    .expect("the parser's Triton fixture exists");
    let mut rng = Rng::new(4);
    let n = 1000;
    let x = rng.f32s(n, -10.0, 10.0);
    let y = rng.f32s(n, -10.0, 10.0);
    let mut mem = GlobalMemory::new();
    let (dx, dy) = (mem.alloc_f32(&x), mem.alloc_f32(&y));
    let out = poisoned_f32(&mut mem, n);
    let scratch = mem.alloc(256);
    // Triton's add: BLOCK_SIZE elements per program, 128 threads.
    let module = ptx_emulator::Emulator::new().load(&source).unwrap();
    let args = [
        ArgValue::Ptr(dx),
        ArgValue::Ptr(dy),
        ArgValue::Ptr(out),
        ArgValue::U32(n as u32),
        ArgValue::Ptr(scratch),
        ArgValue::Ptr(scratch),
    ];
    module
        .launch(
            "add_kernel",
            &LaunchConfig::linear(n.div_ceil(128) as u32, 128),
            &args,
            &mut mem,
        )
        .unwrap();
    let got = mem.read_f32(out, n).unwrap();
    for i in 0..n {
        assert_eq!(got[i], x[i] + y[i], "i={i}");
    }
}
