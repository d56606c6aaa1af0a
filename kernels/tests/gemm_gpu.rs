//! The GEMM checks on a real GPU: odd and mid-sized shapes against the full f64 reference,
//! and the benchmark's shapes against sampled reference elements. Each test prints
//! `skipping: no CUDA driver/GPU present` and returns where there is none.

mod common_gemm;
#[path = "common_swiglu/mod.rs"]
mod common_swiglu;

use common_gemm::*;
use kernel_runtime::{Bf16, F16};
use kernels::gemm::{Activation, GemmShape, Layout, Math};
use kernels::FloatType;

const MID: [(usize, usize, usize); 4] = [
    (513, 1031, 257),
    (1000, 24, 4096),
    (8, 4096, 64),
    (255, 129, 17),
];

#[test]
fn gpu_simt_f32_matches_reference_at_odd_and_mid_shapes() {
    let Some(stream) = gpu() else { return };
    for layout in Layout::ALL {
        for (i, shape) in shapes(layout, &ODD)
            .iter()
            .chain(&shapes(layout, &MID))
            .enumerate()
        {
            check::<f32, f32>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Fp32,
                F32_TOL,
                i as u64,
            );
        }
    }
}

/// The SIMT GEMM (what `gemm` runs for f32 with `Math::Fp32`) with each epilogue part: it
/// matches the reference.
#[test]
fn gpu_simt_matches_the_reference_with_every_epilogue() {
    let Some(stream) = gpu() else { return };
    let target = stream.device().target();
    for layout in Layout::ALL {
        for (i, epi) in epilogue_cases().into_iter().enumerate() {
            let (m, n, k) = MID[i % MID.len()];
            let shape = GemmShape::new(layout, m, n, k);
            let plan =
                kernels::gemm::select(FloatType::F32, FloatType::F32, Math::Fp32, &shape, target)
                    .expect("plan");
            let seed = 300 + i as u64;
            check_plan::<f32, f32>(&stream, &shape, epi, &plan, F32_TOL, seed);
        }
    }
}

/// The `mma.sync` GEMMs as planned for sm_80 (Hopper itself plans `wgmma` for 16-bit
/// inputs), `#[kernel]` and builder, every specialization at odd shapes, with each epilogue
/// part in turn (a later test runs the `#[kernel]` ones plain at larger shapes).
#[test]
fn gpu_mma_sync_kernel_and_builder_match_the_reference_for_every_spec() {
    let Some(stream) = gpu() else { return };
    let epis = epilogue_cases();
    let sm80 = kernel_dsl::Target::Sm80;
    let both = |plan: kernels::gemm::Plan| [plan, plan.builder()];
    for layout in Layout::ALL {
        for (i, shape) in shapes(layout, &ODD)
            .iter()
            .chain(&shapes(layout, &[(255, 129, 17)]))
            .enumerate()
        {
            let epi = epis[i % epis.len()];
            let seed = 500 + i as u64;
            let plan = |i: FloatType, o: FloatType, math| {
                kernels::gemm::select(i, o, math, shape, sm80).expect("plan")
            };
            for p in both(plan(FloatType::Bf16, FloatType::F32, Math::Fp32)) {
                check_plan::<Bf16, f32>(&stream, shape, epi, &p, F32_OUT_16_IN, seed);
            }
            for p in both(plan(FloatType::Bf16, FloatType::Bf16, Math::Fp32)) {
                check_plan::<Bf16, Bf16>(&stream, shape, epi, &p, BF16_OUT, seed);
            }
            for p in both(plan(FloatType::F16, FloatType::F32, Math::Fp32)) {
                check_plan::<F16, f32>(&stream, shape, epi, &p, F32_OUT_16_IN, seed);
            }
            for p in both(plan(FloatType::F16, FloatType::F16, Math::Fp32)) {
                check_plan::<F16, F16>(&stream, shape, epi, &p, F16_OUT, seed);
            }
            for p in both(plan(FloatType::F32, FloatType::F32, Math::Tf32)) {
                check_plan::<f32, f32>(&stream, shape, epi, &p, TF32_TOL, seed);
            }
        }
    }
}

#[test]
fn gpu_tensor_cores_match_reference_at_odd_and_mid_shapes() {
    let Some(stream) = gpu() else { return };
    for layout in Layout::ALL {
        for (i, shape) in shapes(layout, &ODD)
            .iter()
            .chain(&shapes(layout, &MID))
            .enumerate()
        {
            let seed = 100 + i as u64;
            check::<Bf16, f32>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Fp32,
                F32_OUT_16_IN,
                seed,
            );
            check::<Bf16, Bf16>(&stream, shape, EpiCase::plain(), Math::Fp32, BF16_OUT, seed);
            check::<F16, F16>(&stream, shape, EpiCase::plain(), Math::Fp32, F16_OUT, seed);
            check::<f32, f32>(&stream, shape, EpiCase::plain(), Math::Tf32, TF32_TOL, seed);
        }
    }
}

/// Rows 16-byte aligned (the copy-engine path on Hopper), sizes off every tile dimension.
const ALIGNED: [(usize, usize, usize); 6] = [
    (8, 8, 8),
    (200, 264, 136),
    (136, 520, 72),
    (384, 256, 1024),
    (1, 8, 4104),
    (129, 8, 8),
];

#[test]
fn gpu_tensor_cores_match_reference_at_aligned_ragged_shapes() {
    let Some(stream) = gpu() else { return };
    let target = stream.device().target();
    for layout in Layout::ALL {
        for (i, shape) in shapes(layout, &ALIGNED).iter().enumerate() {
            let plan =
                kernels::gemm::select(FloatType::Bf16, FloatType::Bf16, Math::Fp32, shape, target)
                    .expect("plan");
            let name = plan.kernel.kernel().name.clone();
            println!("{shape:?}: {name}");
            let seed = 400 + i as u64;
            check::<Bf16, f32>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Fp32,
                F32_OUT_16_IN,
                seed,
            );
            check::<Bf16, Bf16>(&stream, shape, EpiCase::plain(), Math::Fp32, BF16_OUT, seed);
            check::<F16, F16>(&stream, shape, EpiCase::plain(), Math::Fp32, F16_OUT, seed);
        }
    }
}

#[test]
fn gpu_mma_sync_kernels_match_reference_on_any_tensor_core_device() {
    let Some(stream) = gpu() else { return };
    // The sm_80 kernels, which a Hopper device never selects by itself.
    for layout in Layout::ALL {
        for (i, shape) in shapes(layout, &ODD)
            .iter()
            .chain(&shapes(layout, &MID))
            .chain(&shapes(layout, &[(1024, 1024, 1024)]))
            .enumerate()
        {
            let seed = 700 + i as u64;
            let sm80 = kernel_dsl::Target::Sm80;
            check_on_target::<Bf16, f32>(&stream, shape, sm80, F32_OUT_16_IN, seed);
            check_on_target::<Bf16, Bf16>(&stream, shape, sm80, BF16_OUT, seed);
            check_on_target::<F16, F16>(&stream, shape, sm80, F16_OUT, seed);
        }
    }
}

#[test]
fn gpu_split_k_matches_reference_at_lora_shapes() {
    let Some(stream) = gpu() else { return };
    let epi = EpiCase {
        alpha: 0.5,
        beta: 1.0,
        bias: true,
        activation: Activation::Silu,
        residual: true,
    };
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        let seed = 600 + 10 * i as u64;
        // gemm splits these itself (too few tiles for the SMs); gemm_split_k forces a count.
        for &(m, n, k) in &[(4096, 16, 4096), (16, 4096, 4096), (1000, 64, 2056)] {
            let shape = GemmShape::new(layout, m, n, k);
            check::<Bf16, Bf16>(
                &stream,
                &shape,
                EpiCase::plain(),
                Math::Fp32,
                BF16_OUT,
                seed,
            );
            check_split::<Bf16, f32>(&stream, &shape, epi, 5, F32_OUT_16_IN, seed + 1);
        }
        let batched = GemmShape::batched(layout, 3, 256, 32, 1024);
        check_split::<F16, F16>(&stream, &batched, epi, 4, F16_OUT, seed + 2);
    }
}

/// The `mma.sync` kernel's split form (equal k-ranges run as a batch, then the ordered
/// reduce) at a rank-16 adapter's gradients: TF32 TN on Hopper (too skinny for transposed
/// copies) and the sm_80 plan for bf16, NN beside it.
#[test]
fn gpu_mma_split_k_matches_reference_at_lora_shapes() {
    use kernels::gemm::split_k_partials;
    let Some(stream) = gpu() else { return };
    let epi = EpiCase::every();
    for (i, layout) in [Layout::Tn, Layout::Nn].into_iter().enumerate() {
        for (j, &(m, n, k)) in [(4096, 16, 4096), (16, 4096, 4096)].iter().enumerate() {
            let seed = 650 + 10 * i as u64 + 2 * j as u64;
            let shape = GemmShape::new(layout, m, n, k);
            if layout == Layout::Tn && stream.device().target().sm() == 90 {
                let partials = split_k_partials::<f32, f32>(&stream, &shape, Math::Tf32).unwrap();
                assert!(partials > 0, "{shape:?} splits");
            }
            check::<f32, f32>(&stream, &shape, epi, Math::Tf32, TF32_TOL, seed);
            let sm80 = kernel_dsl::Target::Sm80;
            check_on_target::<Bf16, f32>(&stream, &shape, sm80, F32_OUT_16_IN, seed + 1);
        }
    }
}

#[test]
fn gpu_fused_epilogues_and_batches_match_reference() {
    let Some(stream) = gpu() else { return };
    let epi = EpiCase {
        alpha: 0.5,
        beta: 1.0,
        bias: true,
        activation: Activation::Silu,
        residual: true,
    };
    for layout in Layout::ALL {
        let shape = GemmShape::batched(layout, 8, 257, 128, 96);
        check::<f32, f32>(&stream, &shape, epi, Math::Fp32, F32_TOL, 1);
        check::<Bf16, f32>(&stream, &shape, epi, Math::Fp32, F32_OUT_16_IN, 2);
        let gelu = EpiCase {
            alpha: 1.0,
            bias: true,
            activation: Activation::GeluTanh,
            ..EpiCase::default()
        };
        check::<Bf16, Bf16>(&stream, &shape, gelu, Math::Fp32, BF16_OUT, 3);
    }
    // Whole 128 × 256 tiles (on Hopper the TMA kernel's interior epilogue, which batches its
    // loads), with every part at once.
    let every = EpiCase::every();
    for layout in Layout::ALL {
        let shape = GemmShape::batched(layout, 2, 384, 512, 192);
        check::<Bf16, Bf16>(&stream, &shape, every, Math::Fp32, BF16_OUT, 4);
        check::<F16, f32>(&stream, &shape, epi, Math::Fp32, F32_OUT_16_IN, 5);
    }
}

#[test]
fn gpu_f32_copy_matches_reference_and_rounds_to_c() {
    let Some(stream) = gpu() else { return };
    let every = EpiCase::every();
    // Whole 128 × 256 tiles and ragged ones, every layout; then odd pitches (one element at a
    // time on Hopper), and a skinny problem that Hopper splits along k.
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        let seed = 20 + 4 * i as u64;
        check_copy::<Bf16, Bf16>(
            &stream,
            &GemmShape::batched(layout, 2, 384, 512, 192),
            every,
            seed,
        );
        check_copy::<F16, F16>(
            &stream,
            &GemmShape::batched(layout, 2, 257, 130, 96),
            every,
            seed + 1,
        );
        check_copy::<Bf16, Bf16>(
            &stream,
            &GemmShape::new(layout, 255, 129, 17),
            every,
            seed + 2,
        );
    }
    let skinny = GemmShape::new(Layout::Nt, 64, 64, 4096);
    let copy = check_copy::<Bf16, Bf16>(&stream, &skinny, every, 40);
    // Bit-identical on a second run (the split's partials add in a fixed order).
    assert_eq!(copy, check_copy::<Bf16, Bf16>(&stream, &skinny, every, 40));
}

#[test]
fn gpu_benchmark_shapes_match_sampled_reference() {
    let Some(stream) = gpu() else { return };
    let dims = [
        (4096, 4096, 4096),
        (4096, 4864, 896),
        (4096, 896, 4864),
        (4096, 64, 4096),
    ];
    for layout in Layout::ALL {
        for &(m, n, k) in &dims {
            let shape = GemmShape::new(layout, m, n, k);
            check_sampled::<Bf16, Bf16>(&stream, &shape, Math::Fp32, BF16_OUT, 500);
            check_sampled::<f32, f32>(&stream, &shape, Math::Fp32, F32_TOL, 200);
            check_sampled::<f32, f32>(&stream, &shape, Math::Tf32, TF32_TOL, 200);
        }
    }
}

/// The weight-gradient shapes of a 4864 × 896 layer (152 and 133 tiles of 128 × 256, a
/// mostly idle second wave of whole tiles on a 132-SM GPU) run stream-K on Hopper: every
/// output written, sampled elements against f64, in every layout, and a rerun bit-identical.
#[test]
fn gpu_stream_k_shapes_match_sampled_reference_and_rerun_bit_identically() {
    let Some(stream) = gpu() else { return };
    if stream.device().target().sm() == 90 {
        let sms = stream.device().props().sm_count as usize;
        let grad_w = GemmShape::new(Layout::Tn, 4864, 896, 4096);
        let partials = kernels::gemm::split_k_partials::<Bf16, Bf16>(&stream, &grad_w, Math::Fp32);
        assert_eq!(partials.unwrap(), sms * 128 * 256, "stream-K on {sms} SMs");
    }
    for (m, n) in [(4864, 896), (896, 4864)] {
        for layout in Layout::ALL {
            let shape = GemmShape::new(layout, m, n, 4096);
            check_sampled::<Bf16, Bf16>(&stream, &shape, Math::Fp32, BF16_OUT, 500);
            check_sampled::<Bf16, f32>(&stream, &shape, Math::Fp32, F32_OUT_16_IN, 500);
        }
    }
    let shape = GemmShape::new(Layout::Tn, 4864, 896, 4096);
    let run = || {
        let mut rng = Rng::new(77);
        let (a, _) = upload::<Bf16>(&stream, &rng.vec(shape.m * shape.k));
        let (b, _) = upload::<Bf16>(&stream, &rng.vec(shape.n * shape.k));
        let (mut c, _) = upload::<Bf16>(&stream, &vec![0.0; shape.m * shape.n]);
        let plain = kernels::gemm::Epilogue::default();
        kernels::gemm::gemm(&stream, &shape, &a, &b, &mut c, &plain, Math::Fp32).expect("gemm");
        bits(&stream, &c)
    };
    assert_eq!(run(), run());
}

/// Every GEMM kernel the library ships for this device, once each at small shapes off every
/// tile size (and small 16-byte-aligned ones for the copy-engine paths), with an epilogue:
/// the run `compute-sanitizer` checks (`gpu_every_gemm_kernel` as the test filter).
#[test]
fn gpu_every_gemm_kernel_matches_reference_at_small_shapes() {
    let Some(stream) = gpu() else { return };
    let target = stream.device().target();
    let sm80 = kernel_dsl::Target::Sm80;
    let epi = EpiCase {
        alpha: 0.5,
        beta: 1.0,
        bias: true,
        activation: Activation::Silu,
        residual: true,
    };
    let small = [(17, 63, 129), (63, 17, 40), (8, 8, 8), (136, 72, 64)];
    for layout in Layout::ALL {
        for (i, shape) in shapes(layout, &small).iter().enumerate() {
            let seed = 900 + i as u64;
            let plan = |i: FloatType, o: FloatType, math, on| {
                kernels::gemm::select(i, o, math, shape, on).expect("plan")
            };
            let p = plan(FloatType::F32, FloatType::F32, Math::Fp32, target);
            check_plan::<f32, f32>(&stream, shape, epi, &p, F32_TOL, seed);
            for on in [sm80, target] {
                let p = plan(FloatType::Bf16, FloatType::F32, Math::Fp32, on);
                check_plan::<Bf16, f32>(&stream, shape, epi, &p, F32_OUT_16_IN, seed);
                check_plan::<Bf16, f32>(&stream, shape, epi, &p.builder(), F32_OUT_16_IN, seed);
                let p = plan(FloatType::Bf16, FloatType::Bf16, Math::Fp32, on);
                check_plan::<Bf16, Bf16>(&stream, shape, epi, &p, BF16_OUT, seed);
                let p = plan(FloatType::F16, FloatType::F16, Math::Fp32, on);
                check_plan::<F16, F16>(&stream, shape, epi, &p, F16_OUT, seed);
                let p = plan(FloatType::F16, FloatType::F32, Math::Fp32, on);
                check_plan::<F16, f32>(&stream, shape, epi, &p, F32_OUT_16_IN, seed);
                let p = plan(FloatType::F32, FloatType::F32, Math::Tf32, on);
                check_plan::<f32, f32>(&stream, shape, epi, &p, TF32_TOL, seed);
            }
        }
        if target.sm() == 90 {
            let shape = GemmShape::new(layout, 64, 16, 512);
            check_split::<Bf16, f32>(&stream, &shape, epi, 3, F32_OUT_16_IN, 950);
            check_split::<F16, F16>(&stream, &shape, epi, 2, F16_OUT, 951);
        }
    }
}

#[test]
fn gpu_swiglu_matches_reference_and_reruns_bit_identically() {
    let Some(stream) = gpu() else { return };
    // 6 × 17 tiles of 128 × 128 outputs, the last row of tiles 10 rows deep.
    let bf16 = (650, 2176, 256);
    let once = common_swiglu::check::<Bf16>(&stream, bf16, 11, 0.125, 1.0 / 128.0, false);
    let again = common_swiglu::check::<Bf16>(&stream, bf16, 11, 0.125, 1.0 / 128.0, false);
    assert!(once == again, "two runs differ");
    common_swiglu::check::<F16>(
        &stream,
        (300, 520, 1024),
        12,
        1.0 / 64.0,
        1.0 / 1024.0,
        false,
    );
    // An odd width: one element at a time.
    common_swiglu::check::<Bf16>(&stream, (129, 1001, 72), 13, 0.125, 1.0 / 128.0, false);
}
