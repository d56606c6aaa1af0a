//! Device-function calls (`.func` with `call`), module `.global` and `.const` variables, and
//! per-thread `.local` memory.

mod common;

use common::*;
use ptx_emulator::{ArgValue, Emulator, Error, GlobalMemory, LaunchConfig};

/// `out[i] = scale(x[i], bias[i % 4]) + lookup[i % 4]` where `scale` is a `.func` (called in
/// nvcc's call-sequence style) that itself calls `twice`; `lookup` is a module `.global`
/// table and `bias` a `.const` table; a `.local` array round-trips the value.
const CALLS: &str = r#"
.global .align 4 .b8 lookup[16] = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64};
.const .align 4 .f32 bias[4] = {0f3F000000, 0fBF000000, 0f40000000, 0f00000000};

.func  (.param .b32 twice_ret) twice(
	.param .b32 twice_param_0
)
{
	.reg .f32 	%f<3>;
	ld.param.f32 	%f1, [twice_param_0];
	add.f32 	%f2, %f1, %f1;
	st.param.f32 	[twice_ret+0], %f2;
	ret;
}

.func  (.param .b32 scale_ret) scale(
	.param .b32 scale_param_0,
	.param .b32 scale_param_1
)
{
	.reg .f32 	%f<5>;
	ld.param.f32 	%f1, [scale_param_0];
	ld.param.f32 	%f2, [scale_param_1];
	{
	.param .b32 param0;
	st.param.f32 	[param0+0], %f1;
	.param .b32 retval0;
	call.uni (retval0), twice, (param0);
	ld.param.f32 	%f3, [retval0+0];
	}
	add.f32 	%f4, %f3, %f2;
	st.param.f32 	[scale_ret+0], %f4;
	ret;
}

.visible .entry calls(.param .u64 x, .param .u64 out, .param .u32 n)
{
	.local .align 4 .b8 	depot[16];
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .f32 	%f<8>;
	.reg .b64 	%rd<16>;

	ld.param.u64 	%rd1, [x];
	ld.param.u64 	%rd2, [out];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %tid.x;
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__end;
	mul.wide.u32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.f32 	%f1, [%rd4];
	and.b32 	%r3, %r2, 3;
	mul.wide.u32 	%rd5, %r3, 4;
	mov.u64 	%rd6, bias;
	add.s64 	%rd7, %rd6, %rd5;
	ld.const.f32 	%f2, [%rd7];
	{
	.param .b32 param0;
	st.param.f32 	[param0+0], %f1;
	.param .b32 param1;
	st.param.f32 	[param1+0], %f2;
	.param .b32 retval0;
	call.uni (retval0), 
	scale, 
	(
	param0, 
	param1
	);
	ld.param.f32 	%f3, [retval0+0];
	}
	mov.u64 	%rd8, lookup;
	add.s64 	%rd9, %rd8, %rd5;
	ld.global.f32 	%f4, [%rd9];
	add.f32 	%f5, %f3, %f4;
	mov.u64 	%rd10, depot;
	cvta.local.u64 	%rd11, %rd10;
	add.s64 	%rd12, %rd11, %rd5;
	st.f32 	[%rd12], %f5;
	ld.local.f32 	%f6, [%rd10+0];
	ld.f32 	%f7, [%rd12];
	add.s64 	%rd13, %rd2, %rd3;
	st.global.f32 	[%rd13], %f7;
$L__end:
	ret;
}
"#;

#[test]
fn nested_device_function_calls_pass_parameters_and_return_values() {
    let mut rng = Rng::new(81);
    let n = 100;
    let x = rng.f32s(n, -10.0, 10.0);
    let mut mem = GlobalMemory::new();
    let dx = mem.alloc_f32(&x);
    let dout = poisoned_f32(&mut mem, n);
    launch(
        &ptx(CALLS),
        "calls",
        LaunchConfig::linear(1, 128),
        &[
            ArgValue::Ptr(dx),
            ArgValue::Ptr(dout),
            ArgValue::U32(n as u32),
        ],
        &mut mem,
    )
    .unwrap();
    let bias = [0.5f32, -0.5, 2.0, 0.0];
    let lookup = [1.0f32, 2.0, 3.0, 4.0];
    let got = mem.read_f32(dout, n).unwrap();
    for i in 0..n {
        assert_eq!(got[i], (x[i] + x[i]) + bias[i % 4] + lookup[i % 4], "i={i}");
    }
}

#[test]
fn module_global_variables_persist_across_launches_in_one_memory() {
    let source = ptx(r#"
.global .align 4 .u32 counter;
.visible .entry bump(.param .u64 out)
{
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [out];
	mov.u64 	%rd2, counter;
	atom.global.add.u32 	%r1, [%rd2], 1;
	st.global.u32 	[%rd1], %r1;
	ret;
}
"#);
    let module = Emulator::new().load(&source).unwrap();
    let mut mem = GlobalMemory::new();
    let out = poisoned_u32(&mut mem, 1);
    for expected in 0..3 {
        module
            .launch(
                "bump",
                &LaunchConfig::linear(1, 1),
                &[ArgValue::Ptr(out)],
                &mut mem,
            )
            .unwrap();
        assert_eq!(mem.read_u32(out, 1).unwrap(), vec![expected]);
    }
    // A fresh memory starts from the initializer again.
    let mut other = GlobalMemory::new();
    let out2 = poisoned_u32(&mut other, 1);
    module
        .launch(
            "bump",
            &LaunchConfig::linear(1, 1),
            &[ArgValue::Ptr(out2)],
            &mut other,
        )
        .unwrap();
    assert_eq!(other.read_u32(out2, 1).unwrap(), vec![0]);
}

#[test]
fn nvcc_fixture_with_calls_stops_at_its_read_of_unwritten_dynamic_shared_memory() {
    // The fixture reads `dyn[threadIdx.x]`, which nothing writes: on a GPU it reads garbage.
    let path = format!(
        "{}/../ptx-parser/tests/fixtures/nvcc_saxpy_call_sm90.ptx",
        env!("CARGO_MANIFEST_DIR")
    );
    let module = Emulator::new()
        .load(&std::fs::read_to_string(path).unwrap())
        .unwrap();
    let mut mem = GlobalMemory::new();
    let x = mem.alloc_f32(&[1.0; 256]);
    let y = mem.alloc_f32(&[2.0; 256]);
    let cfg = LaunchConfig {
        dynamic_shared_bytes: 1024,
        ..LaunchConfig::linear(1, 256)
    };
    let err = module
        .launch(
            "saxpy",
            &cfg,
            &[
                ArgValue::F32(3.0),
                ArgValue::Ptr(x),
                ArgValue::Ptr(y),
                ArgValue::U32(256),
            ],
            &mut mem,
        )
        .unwrap_err();
    match err {
        Error::UninitializedShared { site, symbol, .. } => {
            assert_eq!(site.thread, [0, 0, 0]);
            assert_eq!(site.instruction, "ld.shared.f32 %f13, [%r19];");
            assert!(symbol.contains("`dyn`"), "{symbol}");
        }
        other => panic!("expected an uninitialized read, got {other:?}"),
    }
}

#[test]
fn nvcc_fixture_with_local_arrays_half_math_and_atomics_runs_to_completion() {
    let path = format!(
        "{}/../ptx-parser/tests/fixtures/nvcc_shfl_atomics_local_sm90.ptx",
        env!("CARGO_MANIFEST_DIR")
    );
    let module = Emulator::new()
        .load(&std::fs::read_to_string(path).unwrap())
        .unwrap();
    let mut mem = GlobalMemory::new();
    let out = mem.alloc(4 * 8);
    // __half2 pairs of 1.5 and 2.0 for threads 0..=64.
    let halves: Vec<u32> = vec![0x4000_3e00; 65];
    let h = alloc_u32(&mut mem, &halves);
    let clk = mem.alloc(8);
    let cfg = LaunchConfig {
        grid: [2, 2, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
    };
    module
        .launch(
            "misc",
            &cfg,
            &[
                ArgValue::Ptr(out),
                ArgValue::Ptr(h),
                ArgValue::U32(4),
                ArgValue::Ptr(clk),
            ],
            &mut mem,
        )
        .unwrap();
    let values = read_u64(&mem, out, 4);
    for (i, bits) in values.iter().enumerate() {
        let v = f64::from_bits(*bits);
        // d / n + laneid, with d dominated by the warp sum of exp terms times pi: large, finite.
        assert!(v.is_finite() && v > 1.0, "out[{i}] = {v}");
    }
    assert_ne!(read_u64(&mem, clk, 1)[0], 0, "clock64 was stored");
}
