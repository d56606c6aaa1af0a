//! `gemm_swiglu` on the emulator: fused (the TMA GEMM's SwiGLU instances, sm_90a) at ragged
//! tiles, odd widths and several tiles a block; unfused (two GEMMs and the elementwise SwiGLU)
//! on an sm_80 device; and the errors before launch.

#[path = "common_swiglu/mod.rs"]
mod common_swiglu;

use common_swiglu::check;
use kernel_dsl::Target;
use kernel_runtime::{Bf16, Buffer, Device, Stream, F16};

/// One unit in the last place, relative: bf16 keeps 8 significant bits, f16 11.
const BF16_ULP: f64 = 1.0 / 128.0;
const F16_ULP: f64 = 1.0 / 1024.0;

fn on(target: Target) -> Stream {
    Device::emulator_for(target)
        .stream()
        .expect("emulator stream")
}

#[test]
fn fused_swiglu_matches_the_reference_at_ragged_tiles() {
    let s = on(Target::Sm90a);
    // Two column tiles, the second 8 wide; rows ragged in both consumers.
    check::<Bf16>(&s, (70, 136, 72), 1, 0.125, BF16_ULP, false);
    // k over several rounds of the four stages; small steps keep f16 in range.
    check::<F16>(&s, (40, 130, 328), 2, 1.0 / 32.0, F16_ULP, false);
}

#[test]
fn fused_swiglu_walks_several_tiles_and_stores_odd_widths_one_element_at_a_time() {
    let s = on(Target::Sm90a);
    check::<Bf16>(&s, (260, 300, 64), 3, 0.125, BF16_ULP, false);
    // An odd n: rows start 2-byte aligned, so no pair stores.
    check::<Bf16>(&s, (33, 37, 40), 4, 0.125, BF16_ULP, false);
}

#[test]
fn fused_swiglu_is_bit_identical_run_to_run() {
    let s = on(Target::Sm90a);
    let once = check::<Bf16>(&s, (64, 136, 64), 5, 0.125, BF16_ULP, false);
    let again = check::<Bf16>(&s, (64, 136, 64), 5, 0.125, BF16_ULP, false);
    assert_eq!(once, again);
}

#[test]
fn unfused_swiglu_runs_where_the_fused_kernel_does_not() {
    let s = on(Target::Sm80);
    check::<Bf16>(&s, (20, 24, 16), 6, 0.125, BF16_ULP, true);
    check::<f32>(&s, (9, 11, 13), 7, 0.125, 1e-5, false);
    // k not a multiple of 8 leaves rows the copy engine cannot address: unfused on Hopper.
    check::<Bf16>(&on(Target::Sm90a), (12, 20, 12), 8, 0.125, BF16_ULP, true);
}

#[test]
fn swiglu_refuses_bad_shapes_and_unfused_f16_before_launch() {
    let s = on(Target::Sm90a);
    let zeros = |n: usize| Buffer::<Bf16>::zeros(&s, n).expect("alloc");
    let (x, w) = (zeros(4 * 8), zeros(6 * 8));
    let mut out = Buffer::from_host(&s, &[Bf16::from_f32(7.0); 4 * 6]).expect("upload");
    let short = zeros(5 * 8);
    let e = kernels::gemm::gemm_swiglu(&s, &x, &short, &w, &mut out, 4, 6, 8).unwrap_err();
    assert!(e.to_string().contains("w_gate"), "{e}");
    let e = kernels::gemm::gemm_swiglu(&s, &x, &w, &short, &mut out, 4, 6, 8).unwrap_err();
    assert!(e.to_string().contains("w_up"), "{e}");
    let e = kernels::gemm::gemm_swiglu(&s, &zeros(0), &zeros(0), &zeros(0), &mut out, 4, 6, 0)
        .unwrap_err();
    assert!(e.to_string().contains("k = 0"), "{e}");
    // Nothing was written.
    let kept = out.to_host(&s).expect("download");
    assert!(kept.iter().all(|v| v.to_f32() == 7.0));
    // f16 has no unfused form (the elementwise SwiGLU takes f32 and bf16).
    let old = on(Target::Sm80);
    let h = |n: usize| Buffer::<F16>::zeros(&old, n).expect("alloc");
    let mut o = h(4 * 6);
    let e = kernels::gemm::gemm_swiglu(&old, &h(4 * 8), &h(6 * 8), &h(6 * 8), &mut o, 4, 6, 8)
        .unwrap_err();
    assert!(e.to_string().contains("use bf16 or f32"), "{e}");
}
