//! The tensor-core GEMMs (bf16, f16, TF32) on the emulator against the f64 reference.

mod common_gemm;

use common_gemm::*;
use kernel_runtime::{Bf16, F16};
use kernels::gemm::{Activation, GemmShape, Layout, Math};

#[test]
fn bf16_with_f32_output_matches_reference_at_odd_shapes_in_every_layout() {
    let stream = emulator();
    for layout in Layout::ALL {
        for (i, shape) in shapes(layout, &ODD).iter().enumerate() {
            check::<Bf16, f32>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Fp32,
                F32_OUT_16_IN,
                i as u64,
            );
        }
    }
}

#[test]
fn bf16_cp_async_path_matches_reference_at_aligned_shapes() {
    let stream = emulator();
    for layout in Layout::ALL {
        let dims = [(136, 144, 72), (8, 16, 40)];
        for (i, shape) in shapes(layout, &dims).iter().enumerate() {
            check::<Bf16, f32>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Fp32,
                F32_OUT_16_IN,
                20 + i as u64,
            );
            check::<Bf16, Bf16>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Fp32,
                BF16_OUT,
                30 + i as u64,
            );
        }
    }
}

#[test]
fn bf16_output_is_rounded_from_f32_accumulation() {
    let stream = emulator();
    for layout in Layout::ALL {
        let shape = GemmShape::new(layout, 63, 17, 129);
        check::<Bf16, Bf16>(&stream, &shape, EpiCase::plain(), Math::Fp32, BF16_OUT, 5);
    }
}

#[test]
fn f16_matches_reference_in_every_layout_both_paths() {
    let stream = emulator();
    for layout in Layout::ALL {
        // (136, 144, 72): a whole 128 × 128 tile, its f16 rows stored through shared memory.
        for (i, shape) in shapes(layout, &[(17, 63, 129), (64, 24, 48), (136, 144, 72)])
            .iter()
            .enumerate()
        {
            check::<F16, f32>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Fp32,
                F32_OUT_16_IN,
                60 + i as u64,
            );
            check::<F16, F16>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Fp32,
                F16_OUT,
                70 + i as u64,
            );
        }
    }
}

#[test]
fn tf32_matches_reference_to_tf32_precision_in_every_layout_both_paths() {
    let stream = emulator();
    for layout in Layout::ALL {
        let dims = [(17, 63, 129), (129, 17, 63), (1, 1, 1), (132, 136, 20)];
        for (i, shape) in shapes(layout, &dims).iter().enumerate() {
            check::<f32, f32>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Tf32,
                TF32_TOL,
                80 + i as u64,
            );
        }
    }
}

#[test]
fn tensor_core_epilogues_and_strided_batches_match_reference() {
    let stream = emulator();
    let epi = EpiCase {
        alpha: 0.5,
        beta: 0.0,
        bias: true,
        activation: Activation::GeluTanh,
        residual: true,
    };
    for layout in Layout::ALL {
        let shape = GemmShape::batched(layout, 3, 33, 17, 40);
        check::<Bf16, Bf16>(&stream, &shape, epi, Math::Fp32, BF16_OUT, 90);
        let beta = EpiCase {
            alpha: 1.0,
            beta: 1.0,
            activation: Activation::Silu,
            ..EpiCase::default()
        };
        check::<Bf16, f32>(&stream, &shape, beta, Math::Fp32, F32_OUT_16_IN, 91);
        // A plain product's whole tiles in both batches, their rows stored through shared
        // memory (n, ldc and the batch stride multiples of 8), and the same as pairs (n = 130).
        for (n, seed) in [(136, 92), (130, 93)] {
            let plain = GemmShape::batched(layout, 2, 130, n, 40);
            check::<Bf16, Bf16>(
                &stream,
                &plain,
                EpiCase::plain(),
                Math::Fp32,
                BF16_OUT,
                seed,
            );
        }
    }
}

#[test]
fn tensor_core_runs_are_bit_identical() {
    let stream = emulator();
    let shape = GemmShape::new(Layout::Nt, 129, 63, 72);
    let first = check::<Bf16, Bf16>(&stream, &shape, EpiCase::plain(), Math::Fp32, BF16_OUT, 3);
    let second = check::<Bf16, Bf16>(&stream, &shape, EpiCase::plain(), Math::Fp32, BF16_OUT, 3);
    assert_eq!(first, second);
}

/// An emulated Hopper, where NT problems with 16-bit inputs take the wgmma kernels.
fn hopper() -> kernel_runtime::Stream {
    kernel_runtime::Device::emulator_for(kernel_dsl::Target::Sm90a)
        .stream()
        .expect("emulator stream")
}

#[test]
fn hopper_with_16_bit_inputs_selects_wgmma_and_tf32_mma_sync() {
    let pick = |input, layout| {
        let shape = GemmShape::new(layout, 256, 256, 256);
        let plan =
            kernels::gemm::select(input, input, Math::Fp32, &shape, kernel_dsl::Target::Sm90)
                .expect("plan");
        plan.kernel.kernel().name
    };
    use kernels::FloatType;
    // 16-byte aligned rows: the copy engine feeds wgmma.
    assert!(pick(FloatType::Bf16, Layout::Nt).starts_with("gemm_tma_wgmma__bf16"));
    assert!(pick(FloatType::F16, Layout::Nt).starts_with("gemm_tma_wgmma__f16"));
    assert!(pick(FloatType::Bf16, Layout::Nn).starts_with("gemm_tma_wgmma__bf16"));
    assert!(pick(FloatType::Bf16, Layout::Tn).starts_with("gemm_tma_wgmma__bf16"));
    // Rows the copy engine cannot address (a leading dimension of 257 halves): cp.async.
    let odd = GemmShape::new(Layout::Nt, 256, 256, 257);
    let plan = kernels::gemm::select(
        FloatType::Bf16,
        FloatType::Bf16,
        Math::Fp32,
        &odd,
        kernel_dsl::Target::Sm90,
    )
    .expect("plan");
    assert!(plan
        .kernel
        .kernel()
        .name
        .starts_with("gemm_async_wgmma__bf16"));
    let tf32 = kernels::gemm::select(
        FloatType::F32,
        FloatType::F32,
        Math::Tf32,
        &GemmShape::new(Layout::Nt, 8, 8, 8),
        kernel_dsl::Target::Sm90,
    )
    .expect("plan");
    assert!(tf32
        .kernel
        .kernel()
        .name
        .starts_with("gemm_tma_wgmma__f32_f32"));
    // tf32 `wgmma` reads k-contiguous operands only: NN and TN run it on transposed copies,
    // which a strided batch does not get, so it stays on `mma.sync`.
    let tf32_pick = |shape: GemmShape| {
        let plan = kernels::gemm::select(
            FloatType::F32,
            FloatType::F32,
            Math::Tf32,
            &shape,
            kernel_dsl::Target::Sm90,
        )
        .expect("plan");
        plan.kernel.kernel().name.clone()
    };
    // So does a skinny product, whose copies would cost more than reading it in place.
    for layout in [Layout::Nn, Layout::Tn] {
        let one = tf32_pick(GemmShape::new(layout, 256, 256, 8));
        assert!(one.starts_with("gemm_tma_wgmma__f32_f32"), "{one}");
        let batched = tf32_pick(GemmShape::batched(layout, 2, 256, 256, 8));
        assert!(
            batched.starts_with("gemm_mma__f32_f32_tf32mma"),
            "{batched}"
        );
        let skinny = tf32_pick(GemmShape::new(layout, 4096, 64, 4096));
        assert!(skinny.starts_with("gemm_mma__f32_f32_tf32mma"), "{skinny}");
    }
    let sm80 = kernels::gemm::select(
        FloatType::Bf16,
        FloatType::Bf16,
        Math::Fp32,
        &GemmShape::new(Layout::Nt, 8, 8, 8),
        kernel_dsl::Target::Sm80,
    )
    .expect("plan");
    assert!(sm80
        .kernel
        .kernel()
        .name
        .starts_with("gemm_mma__bf16_bf16_bf16mma"));
}

/// The kernel `gemm` runs for bf16 `shape` on the emulated Hopper.
fn hopper_kernel(shape: &GemmShape) -> String {
    let plan = kernels::gemm::select(
        kernels::FloatType::Bf16,
        kernels::FloatType::Bf16,
        Math::Fp32,
        shape,
        kernel_dsl::Target::Sm90a,
    )
    .expect("plan");
    plan.kernel.kernel().name.clone()
}

#[test]
fn wgmma_matches_reference_at_odd_and_aligned_shapes() {
    let stream = hopper();
    // Odd leading dimensions take the cp.async kernel; aligned ones the TMA kernel, whose
    // (130, 264, 72) has a whole 64 × 256 warpgroup tile stored as pairs.
    let dims = [
        (17, 63, 329),
        (129, 17, 63),
        (1, 1, 1),
        (136, 144, 392),
        (8, 16, 64),
        (130, 264, 72),
        // Two tiles of three slabs for the one emulated SM: the producer's wait is satisfied
        // while the consumers run collectives, and must still be retried.
        (130, 8, 192),
    ];
    for layout in Layout::ALL {
        let odd = hopper_kernel(&GemmShape::new(layout, 17, 63, 329));
        assert!(odd.starts_with("gemm_async_wgmma__bf16"), "{odd}");
        let aligned = hopper_kernel(&GemmShape::new(layout, 136, 144, 392));
        assert!(aligned.starts_with("gemm_tma_wgmma__bf16"), "{aligned}");
    }
    let all: Vec<GemmShape> = Layout::ALL.iter().flat_map(|&l| shapes(l, &dims)).collect();
    for (i, shape) in all.iter().enumerate() {
        let seed = 200 + i as u64;
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

#[test]
fn wgmma_epilogues_and_batches_match_reference() {
    let stream = hopper();
    let epi = EpiCase {
        alpha: 0.5,
        beta: 1.0,
        bias: true,
        activation: Activation::Silu,
        residual: true,
    };
    for layout in Layout::ALL {
        let shape = GemmShape::batched(layout, 2, 65, 130, 72);
        check::<Bf16, f32>(&stream, &shape, epi, Math::Fp32, F32_OUT_16_IN, 300);
        // Aligned strides: the TMA kernel reads each batch through a 3-D tensor map.
        let shape = GemmShape::batched(layout, 2, 72, 136, 64);
        assert!(hopper_kernel(&shape).starts_with("gemm_tma_wgmma__bf16"));
        check::<Bf16, f32>(&stream, &shape, epi, Math::Fp32, F32_OUT_16_IN, 302);
        check::<Bf16, Bf16>(&stream, &shape, EpiCase::plain(), Math::Fp32, BF16_OUT, 303);
    }
    let shape = GemmShape::batched(Layout::Tn, 2, 65, 130, 72);
    let gelu = EpiCase {
        alpha: 1.0,
        bias: true,
        activation: Activation::GeluTanh,
        ..EpiCase::default()
    };
    check::<Bf16, Bf16>(&stream, &shape, gelu, Math::Fp32, BF16_OUT, 301);
    // Every part at once into bf16 and f16, read and stored as column pairs by the TMA kernel
    // (n = 264 and 260 give the first warpgroup a whole 64 × 256 tile, whose loads are
    // batched); then an odd n, whose rows leave pairs unaligned, finished one element at a
    // time. A plain product of the same shapes stores the whole tile's 16-bit rows through
    // shared memory where n is a multiple of 8 (264, with the second batch's rows 16-byte
    // aligned too), as pairs otherwise.
    let every = EpiCase::every();
    for (n, seed) in [(264, 304), (260, 307), (136, 305), (135, 306)] {
        let shape = GemmShape::batched(Layout::Nt, 2, 72, n, 64);
        assert!(hopper_kernel(&shape).starts_with("gemm_tma_wgmma__bf16"));
        check::<Bf16, Bf16>(&stream, &shape, every, Math::Fp32, BF16_OUT, seed);
        check::<F16, F16>(&stream, &shape, EpiCase::plain(), Math::Fp32, F16_OUT, seed);
        check::<F16, F16>(&stream, &shape, every, Math::Fp32, F16_OUT, seed);
        check::<F16, f32>(&stream, &shape, epi, Math::Fp32, F32_OUT_16_IN, seed);
    }
}

#[test]
fn split_k_matches_reference_with_every_epilogue_and_batches() {
    let stream = hopper();
    let epi = EpiCase {
        alpha: 0.5,
        beta: 1.0,
        bias: true,
        activation: Activation::Silu,
        residual: true,
    };
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        let seed = 500 + 10 * i as u64;
        // k = 520: nine slabs in three ranges of three, the last one short.
        let shape = GemmShape::new(layout, 40, 24, 520);
        check_split::<Bf16, f32>(&stream, &shape, EpiCase::plain(), 3, F32_OUT_16_IN, seed);
        check_split::<Bf16, Bf16>(&stream, &shape, epi, 3, BF16_OUT, seed + 1);
        check_split::<F16, F16>(&stream, &shape, EpiCase::plain(), 2, F16_OUT, seed + 2);
        // More ranges than slabs: the empty ones add zeros.
        let short = GemmShape::new(layout, 16, 8, 64);
        check_split::<Bf16, f32>(
            &stream,
            &short,
            EpiCase::plain(),
            3,
            F32_OUT_16_IN,
            seed + 3,
        );
        let batched = GemmShape::batched(layout, 2, 24, 16, 192);
        check_split::<Bf16, f32>(&stream, &batched, epi, 2, F32_OUT_16_IN, seed + 4);
    }
}

#[test]
fn split_k_is_bit_identical_run_to_run_and_refuses_what_it_cannot_split() {
    let stream = hopper();
    let shape = GemmShape::new(Layout::Nt, 24, 16, 384);
    let once = check_split::<Bf16, f32>(&stream, &shape, EpiCase::plain(), 3, F32_OUT_16_IN, 7);
    let again = check_split::<Bf16, f32>(&stream, &shape, EpiCase::plain(), 3, F32_OUT_16_IN, 7);
    assert_eq!(once, again);
    let a = kernel_runtime::Buffer::<Bf16>::zeros(&stream, 24 * 384).unwrap();
    let b = kernel_runtime::Buffer::<Bf16>::zeros(&stream, 16 * 384).unwrap();
    let mut c = kernel_runtime::Buffer::<f32>::zeros(&stream, 24 * 16).unwrap();
    let none = kernels::gemm::Epilogue::default();
    let err = kernels::gemm::gemm_split_k(&stream, &shape, &a, &b, &mut c, &none, 0).unwrap_err();
    assert!(err.to_string().contains("0 ranges"), "{err}");
    // A leading dimension of 385 halves is not 16-byte aligned: no TMA kernel, no split-k.
    let odd = GemmShape::new(Layout::Nt, 24, 16, 385);
    let a = kernel_runtime::Buffer::<Bf16>::zeros(&stream, 24 * 385).unwrap();
    let b = kernel_runtime::Buffer::<Bf16>::zeros(&stream, 16 * 385).unwrap();
    let err = kernels::gemm::gemm_split_k(&stream, &odd, &a, &b, &mut c, &none, 2).unwrap_err();
    assert!(err.to_string().contains("TMA kernel"), "{err}");
}

#[test]
fn a_plan_runs_only_the_problem_it_was_made_for() {
    let stream = hopper();
    // An sm_80 plan on the emulated Hopper: the mma.sync kernel, checked in full.
    let shape = GemmShape::new(Layout::Nn, 33, 17, 40);
    check_on_target::<Bf16, f32>(&stream, &shape, kernel_dsl::Target::Sm80, F32_OUT_16_IN, 9);
    let plan = kernels::gemm::select(
        kernels::FloatType::Bf16,
        kernels::FloatType::F32,
        Math::Fp32,
        &shape,
        kernel_dsl::Target::Sm80,
    )
    .unwrap();
    let other = GemmShape::new(Layout::Nn, 33, 17, 41);
    let a = kernel_runtime::Buffer::<Bf16>::zeros(&stream, 33 * 41).unwrap();
    let b = kernel_runtime::Buffer::<Bf16>::zeros(&stream, 41 * 17).unwrap();
    let mut c = kernel_runtime::Buffer::<f32>::zeros(&stream, 33 * 17).unwrap();
    let none = kernels::gemm::Epilogue::default();
    let err =
        kernels::gemm::gemm_with_plan(&stream, &plan, &other, &a, &b, &mut c, &none).unwrap_err();
    assert!(err.to_string().contains("call select"), "{err}");
    let mut wrong_out = kernel_runtime::Buffer::<Bf16>::zeros(&stream, 33 * 17).unwrap();
    let err = kernels::gemm::gemm_with_plan(&stream, &plan, &shape, &a, &b, &mut wrong_out, &none)
        .unwrap_err();
    assert!(err.to_string().contains("f32 output"), "{err}");
}

/// Runs the sm_80 `mma.sync` plan for `T` → `O` (the `#[kernel]` GEMM) and its builder form
/// on `shape` with `epi`; both must match the reference, and each other bit for bit (the
/// same tiles multiplied in the same order, the same epilogue arithmetic).
fn kernel_and_builder<T: kernels::Float, O: kernels::Float>(
    stream: &kernel_runtime::Stream,
    shape: &GemmShape,
    epi: EpiCase,
    math: Math,
    tol: Tol,
    seed: u64,
) {
    let plan = kernels::gemm::select(T::TYPE, O::TYPE, math, shape, kernel_dsl::Target::Sm80)
        .expect("plan");
    let builder = plan.builder();
    assert!(plan.kernel.kernel().name.starts_with("gemm_mma__"));
    assert!(builder.kernel.kernel().name.starts_with("gemm_mma_"));
    let ours = check_plan::<T, O>(stream, shape, epi, &plan, tol, seed);
    let theirs = check_plan::<T, O>(stream, shape, epi, &builder, tol, seed);
    assert!(ours == theirs, "{shape:?} {epi:?}: the two kernels differ");
}

/// Every `mma.sync` specialization, ported and builder, at shapes off every tile edge (k
/// too), with each epilogue part in turn; even cases take 16-byte copies (`cp.async`), odd
/// ones padded leading dimensions that rule them out.
#[test]
fn kernel_and_builder_mma_agree_with_the_reference_for_every_spec_and_epilogue() {
    let stream = emulator();
    let epis = epilogue_cases();
    let mut case = 0;
    for layout in Layout::ALL {
        for kind in 0..5 {
            let epi = epis[case % epis.len()];
            let mut shape =
                GemmShape::new(layout, [24, 9, 40][case % 3], [16, 40, 8][case % 3], 40);
            if case % 2 == 1 {
                shape.lda += 1;
                shape.ldb += 1;
                shape.ldc += 1;
            }
            let seed = 400 + case as u64;
            match kind {
                0 => kernel_and_builder::<Bf16, f32>(
                    &stream,
                    &shape,
                    epi,
                    Math::Fp32,
                    F32_OUT_16_IN,
                    seed,
                ),
                1 => kernel_and_builder::<Bf16, Bf16>(
                    &stream,
                    &shape,
                    epi,
                    Math::Fp32,
                    BF16_OUT,
                    seed,
                ),
                2 => kernel_and_builder::<F16, f32>(
                    &stream,
                    &shape,
                    epi,
                    Math::Fp32,
                    F32_OUT_16_IN,
                    seed,
                ),
                3 => {
                    kernel_and_builder::<F16, F16>(&stream, &shape, epi, Math::Fp32, F16_OUT, seed)
                }
                _ => {
                    kernel_and_builder::<f32, f32>(&stream, &shape, epi, Math::Tf32, TF32_TOL, seed)
                }
            }
            case += 1;
        }
    }
}

#[test]
fn f32_copy_matches_reference_and_rounds_to_c_in_every_kernel() {
    let every = EpiCase::every();
    let no_beta = EpiCase { beta: 0.0, ..every };
    let hopper = hopper();
    // The TMA kernel: column pairs through the epilogue (n = 264 gives a whole 64 × 256
    // warpgroup tile), a plain product's too; with β (read from the copy) and at an odd n,
    // one element at a time.
    for (n, seed) in [(264, 700), (135, 701)] {
        let shape = GemmShape::batched(Layout::Nt, 2, 72, n, 64);
        assert!(hopper_kernel(&shape).starts_with("gemm_tma_wgmma__bf16"));
        check_copy::<Bf16, Bf16>(&hopper, &shape, every, seed);
        check_copy::<Bf16, Bf16>(&hopper, &shape, no_beta, seed + 10);
        check_copy::<Bf16, Bf16>(&hopper, &shape, EpiCase::plain(), seed + 20);
    }
    let tn = GemmShape::new(Layout::Tn, 72, 136, 64);
    check_copy::<F16, F16>(&hopper, &tn, EpiCase::plain(), 702);
    // Strides the copy engine cannot address: the cp.async `wgmma` kernel.
    let odd = GemmShape::new(Layout::Nt, 17, 63, 329);
    assert!(hopper_kernel(&odd).starts_with("gemm_async_wgmma__bf16"));
    check_copy::<Bf16, Bf16>(&hopper, &odd, every, 703);
    // sm_80: the `mma.sync` kernel.
    let sm80 = emulator();
    let nn = GemmShape::batched(Layout::Nn, 2, 65, 130, 72);
    check_copy::<Bf16, Bf16>(&sm80, &nn, every, 704);
    check_copy::<F16, F16>(&sm80, &nn, EpiCase::plain(), 705);
}

#[test]
fn f32_copy_of_a_split_k_problem_is_written_by_the_reduce() {
    // One 16 × 24 tile with k = 1024 on 132 SMs: `gemm` splits k into four ranges. The copy
    // then holds the bits of the same split into an f32 C, whose reduce reads old C as the
    // copy's reduce reads the old copy.
    let stream = hopper_with_sms(132);
    let shape = GemmShape::new(Layout::Nt, 16, 24, 1024);
    let every = EpiCase::every();
    let copy = check_copy::<Bf16, Bf16>(&stream, &shape, every, 710);
    let split = check_split::<Bf16, f32>(&stream, &shape, every, 4, F32_OUT_16_IN, 710);
    assert_eq!(copy, split);
}

#[test]
fn f32_copy_refuses_an_f32_output_and_a_short_copy_before_writing() {
    use kernel_runtime::Buffer;
    use kernels::gemm::{gemm_with_f32_copy, Epilogue};
    let stream = hopper();
    let shape = GemmShape::new(Layout::Nt, 8, 8, 64);
    let a = Buffer::from_host(&stream, &vec![Bf16::from_f32(1.0); 8 * 64]).expect("a");
    let epi = Epilogue::default();
    let mut f32_out = Buffer::<f32>::zeros(&stream, 64).expect("c");
    let mut copy = Buffer::<f32>::zeros(&stream, 64).expect("copy");
    let err = gemm_with_f32_copy(
        &stream,
        &shape,
        &a,
        &a,
        &mut f32_out,
        &mut copy,
        &epi,
        Math::Fp32,
    )
    .expect_err("an f32 C has no f32 copy");
    assert!(err.to_string().contains("call `gemm`"), "{err}");
    let mut c = Buffer::from_host(&stream, &[Bf16::from_f32(7.0); 64]).expect("c");
    let mut short = Buffer::from_host(&stream, &[7.0f32; 63]).expect("copy");
    let err = gemm_with_f32_copy(
        &stream,
        &shape,
        &a,
        &a,
        &mut c,
        &mut short,
        &epi,
        Math::Fp32,
    )
    .expect_err("a copy shorter than C");
    assert!(err.to_string().contains("copy"), "{err}");
    assert!(c
        .to_host(&stream)
        .expect("c")
        .iter()
        .all(|v| v.to_f32() == 7.0));
    assert!(short
        .to_host(&stream)
        .expect("copy")
        .iter()
        .all(|&v| v == 7.0));
}

/// One bf16 problem with an epilogue, run by `launch` on fresh buffers of the same seeded
/// inputs; the bits of C as it leaves.
fn workspace_run(
    stream: &kernel_runtime::Stream,
    shape: &GemmShape,
    launch: impl FnOnce(
        &kernel_runtime::Buffer<Bf16>,
        &kernel_runtime::Buffer<Bf16>,
        &mut kernel_runtime::Buffer<f32>,
        &kernels::gemm::Epilogue<Bf16>,
    ),
) -> Vec<u32> {
    let mut rng = Rng::new(720);
    let (a, _) = upload::<Bf16>(stream, &rng.vec(shape.m * shape.k));
    let (b, _) = upload::<Bf16>(stream, &rng.vec(shape.n * shape.k));
    let (bias, _) = upload::<Bf16>(stream, &rng.vec(shape.n));
    let (mut c, _) = upload::<f32>(stream, &rng.vec(shape.m * shape.n));
    let epi = kernels::gemm::Epilogue::default()
        .scaled(0.5, 1.0)
        .with_bias(&bias);
    launch(&a, &b, &mut c, &epi);
    bits(stream, &c)
}

#[test]
fn a_workspace_lets_a_captured_gemm_split_k_with_the_bits_of_a_direct_split() {
    use kernels::gemm::{gemm_split_k, gemm_with_workspace, split_k_partials, GemmWorkspace};
    // One 16 × 24 tile with k = 1024 on 132 SMs: `gemm` splits it into four ranges, except in
    // a capture, where it has nowhere to put them.
    let stream = hopper_with_sms(132);
    let shape = GemmShape::new(Layout::Nt, 16, 24, 1024);
    assert_eq!(
        split_k_partials::<Bf16, f32>(&stream, &shape, Math::Fp32).unwrap(),
        4 * 16 * 24
    );
    let split = |n: usize| {
        workspace_run(&stream, &shape, |a, b, c, e| {
            gemm_split_k(&stream, &shape, a, b, c, e, n).unwrap()
        })
    };
    let (four, two, whole) = (split(4), split(2), split(1));
    assert_ne!(four, whole);
    // Captured, with and without a workspace; the graph replayed once.
    let captured = |ws: Option<&mut GemmWorkspace>| {
        workspace_run(&stream, &shape, |a, b, c, e| {
            // Loads the kernels the capture launches, as a warm-up step would.
            if ws.is_some() {
                let mut warm = GemmWorkspace::new(&stream, 4 * 16 * 24).unwrap();
                let mut scratch = kernel_runtime::Buffer::<f32>::zeros(&stream, 16 * 24).unwrap();
                gemm_with_workspace(
                    &stream,
                    &shape,
                    a,
                    b,
                    &mut scratch,
                    e,
                    Math::Fp32,
                    &mut warm,
                )
                .unwrap();
            }
            let mut recorded = Ok(());
            let graph = stream
                .capture(|s| {
                    recorded = match ws {
                        Some(ws) => gemm_with_workspace(s, &shape, a, b, c, e, Math::Fp32, ws),
                        None => kernels::gemm::gemm(s, &shape, a, b, c, e, Math::Fp32),
                    };
                    Ok(())
                })
                .unwrap();
            recorded.unwrap();
            graph.replay().unwrap();
        })
    };
    assert_eq!(
        captured(None),
        whole,
        "no workspace: whole tiles in a capture"
    );
    let mut ws = GemmWorkspace::for_shapes::<Bf16, f32>(&stream, &[shape], Math::Fp32).unwrap();
    assert_eq!(ws.len(), 4 * 16 * 24);
    assert_eq!(captured(Some(&mut ws)), four);
    // A workspace with room for two ranges splits into two; one with room for fewer, not at all.
    let mut small = GemmWorkspace::new(&stream, 3 * 16 * 24 - 1).unwrap();
    assert_eq!(captured(Some(&mut small)), two);
    let mut tiny = GemmWorkspace::new(&stream, 16 * 24 + 5).unwrap();
    assert_eq!(captured(Some(&mut tiny)), whole);
}

#[test]
fn a_workspace_splits_on_a_sealed_device_as_it_does_before_sealing() {
    use kernels::gemm::{gemm_with_workspace, GemmWorkspace};
    let stream = hopper_with_sms(132);
    let shape = GemmShape::new(Layout::Nt, 16, 24, 1024);
    let mut ws = GemmWorkspace::for_shapes::<Bf16, f32>(&stream, &[shape], Math::Fp32).unwrap();
    let mut run = || {
        workspace_run(&stream, &shape, |a, b, c, e| {
            gemm_with_workspace(&stream, &shape, a, b, c, e, Math::Fp32, &mut ws).unwrap()
        })
    };
    let before = run();
    let whole = workspace_run(&stream, &shape, |a, b, c, e| {
        kernels::gemm::gemm_split_k(&stream, &shape, a, b, c, e, 1).unwrap()
    });
    assert_ne!(whole, before, "the workspace run splits");
    stream.device().seal();
    assert_eq!(run(), before);
}

#[test]
fn tf32_on_hopper_runs_the_tma_gemm_and_matches_reference() {
    let stream = hopper();
    let every = EpiCase::every();
    // Two tiles each way, k of two whole 32-deep slabs and a ragged third; then a batch of two
    // with every epilogue part.
    let shape = GemmShape::new(Layout::Nt, 130, 260, 72);
    let plan = kernels::gemm::select(
        kernels::FloatType::F32,
        kernels::FloatType::F32,
        Math::Tf32,
        &shape,
        kernel_dsl::Target::Sm90a,
    )
    .expect("plan");
    assert!(plan
        .kernel
        .kernel()
        .name
        .starts_with("gemm_tma_wgmma__f32_f32"));
    check::<f32, f32>(&stream, &shape, EpiCase::plain(), Math::Tf32, TF32_TOL, 730);
    let batched = GemmShape::batched(Layout::Nt, 2, 40, 36, 132);
    check::<f32, f32>(&stream, &batched, every, Math::Tf32, TF32_TOL, 731);
}

/// A skinny TF32 problem on an emulated Hopper of 132 SMs: one tile a batch and k of about a
/// thousand, ragged in its last 32-deep slab, so `gemm` splits it through the tf32 TMA GEMM's
/// split form and the f32 reduce, then applies the epilogue once.
#[test]
fn tf32_on_hopper_splits_a_skinny_problem_and_matches_reference() {
    use kernels::gemm::split_k_partials;
    let stream = hopper_with_sms(132);
    let shape = GemmShape::new(Layout::Nt, 20, 24, 1000);
    let batched = GemmShape::batched(Layout::Nt, 2, 20, 24, 1000);
    for (shape, epi, seed) in [
        (shape, EpiCase::plain(), 740),
        (batched, EpiCase::every(), 741),
    ] {
        let partials = split_k_partials::<f32, f32>(&stream, &shape, Math::Tf32).unwrap();
        assert!(partials > 0, "{shape:?} splits");
        check::<f32, f32>(&stream, &shape, epi, Math::Tf32, TF32_TOL, seed);
    }
}

/// TF32 NN and TN on Hopper: the MN-major operands are copied k-contiguous and the tf32 TMA
/// GEMM runs NT on the copies. Ragged tiles both ways, k of two whole 32-deep slabs and a
/// ragged third, every epilogue part.
#[test]
fn tf32_nn_and_tn_on_hopper_run_the_tma_gemm_on_transposed_copies_and_match_reference() {
    use kernels::gemm::transposed_operand_elems;
    let stream = hopper();
    for (layout, seed) in [(Layout::Nn, 750), (Layout::Tn, 751)] {
        let shape = GemmShape::new(layout, 260, 264, 72);
        let copies = transposed_operand_elems::<f32, f32>(&stream, &shape, Math::Tf32).unwrap();
        let a_copy = if layout == Layout::Tn { 260 * 72 } else { 0 };
        assert_eq!(copies, [a_copy, 264 * 72], "{layout:?}");
        check::<f32, f32>(
            &stream,
            &shape,
            EpiCase::every(),
            Math::Tf32,
            TF32_TOL,
            seed,
        );
    }
}

/// A TF32 TN problem of four tiles and k = 512 on 132 SMs: transposed copies, then the split
/// form and the f32 reduce.
#[test]
fn tf32_tn_on_hopper_splits_a_problem_of_few_tiles_on_transposed_copies() {
    use kernels::gemm::split_k_partials;
    let stream = hopper_with_sms(132);
    let shape = GemmShape::new(Layout::Tn, 256, 264, 512);
    assert!(split_k_partials::<f32, f32>(&stream, &shape, Math::Tf32).unwrap() > 0);
    check::<f32, f32>(&stream, &shape, EpiCase::every(), Math::Tf32, TF32_TOL, 752);
}

/// The copies need memory. A capture without a workspace runs `mma.sync` on the operands as
/// stored (one launch); a workspace sized by `for_shapes` holds them, so the captured graph
/// transposes B and runs the TMA GEMM (two launches) with the bits of a direct call; one
/// without room for them runs `mma.sync`; and the workspace keeps its copies for the next call.
#[test]
fn a_workspace_holds_the_transposed_copies_of_a_captured_tf32_product() {
    use kernel_runtime::Buffer;
    use kernels::gemm::{gemm, Epilogue, GemmWorkspace};
    let stream = hopper_with_sms(132);
    let shape = GemmShape::new(Layout::Nn, 256, 256, 64);
    let mut rng = Rng::new(753);
    let (a, _) = upload::<f32>(&stream, &rng.vec(shape.m * shape.k));
    let (b, _) = upload::<f32>(&stream, &rng.vec(shape.n * shape.k));
    let none = Epilogue::default();
    let mut c = Buffer::<f32>::zeros(&stream, shape.m * shape.n).unwrap();
    gemm(&stream, &shape, &a, &b, &mut c, &none, Math::Tf32).unwrap();
    let direct = bits(&stream, &c);
    let captured = |ws: Option<&mut GemmWorkspace>| {
        let (launches, got) = captured_tf32(&stream, &shape, &a, &b, ws);
        (launches, got == direct)
    };
    assert_eq!(captured(None).0, 1, "no workspace: mma.sync alone");
    let mut ws = GemmWorkspace::for_shapes::<f32, f32>(&stream, &[shape], Math::Tf32).unwrap();
    assert_eq!(
        captured(Some(&mut ws)),
        (2, true),
        "the transpose, then the TMA GEMM"
    );
    assert_eq!(
        captured(Some(&mut ws)),
        (2, true),
        "the copies stay in the workspace"
    );
    let mut partials_only = GemmWorkspace::new(&stream, ws.len()).unwrap();
    assert_eq!(
        captured(Some(&mut partials_only)).0,
        1,
        "no room for the copies"
    );
}

/// The `mma.sync` GEMM splits a skinny problem by running equal k-ranges as a batch: one
/// tile, k = 1024 on 16 SMs gives four ranges of 256, in every layout, TF32 and bf16, with
/// every epilogue part applied once by the reduce. A k that no count divides into whole
/// 64-element ranges (1000) keeps whole tiles.
#[test]
fn the_mma_gemm_splits_a_skinny_problem_into_equal_ranges_and_matches_reference() {
    use kernels::gemm::split_k_partials;
    let stream = ampere_with_sms(16);
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        let seed = 760 + 10 * i as u64;
        let shape = GemmShape::new(layout, 20, 72, 1024);
        let partials = split_k_partials::<f32, f32>(&stream, &shape, Math::Tf32).unwrap();
        assert_eq!(partials, 4 * 20 * 72, "{layout:?}");
        check::<f32, f32>(
            &stream,
            &shape,
            EpiCase::every(),
            Math::Tf32,
            TF32_TOL,
            seed,
        );
        check::<Bf16, Bf16>(
            &stream,
            &shape,
            EpiCase::every(),
            Math::Fp32,
            BF16_OUT,
            seed + 1,
        );
        check::<Bf16, f32>(
            &stream,
            &shape,
            EpiCase::plain(),
            Math::Fp32,
            F32_OUT_16_IN,
            seed + 2,
        );
        let ragged = GemmShape::new(layout, 20, 72, 1000);
        let partials = split_k_partials::<f32, f32>(&stream, &ragged, Math::Tf32).unwrap();
        assert_eq!(partials, 0, "{layout:?}");
        check::<f32, f32>(
            &stream,
            &ragged,
            EpiCase::plain(),
            Math::Tf32,
            TF32_TOL,
            seed + 3,
        );
    }
}

/// The `mma.sync` split is bit-identical run to run, differs from whole tiles (another sum
/// order), takes a forced count that cuts k into whole ranges and refuses one that does not,
/// naming k and the count.
#[test]
fn the_mma_split_is_bit_identical_run_to_run_and_refuses_ranges_that_are_not_whole() {
    use kernel_runtime::Buffer;
    use kernels::gemm::{gemm_split_k, Epilogue};
    let stream = ampere_with_sms(16);
    let shape = GemmShape::new(Layout::Tn, 24, 16, 768);
    let three = check_split::<Bf16, f32>(&stream, &shape, EpiCase::plain(), 3, F32_OUT_16_IN, 9);
    let again = check_split::<Bf16, f32>(&stream, &shape, EpiCase::plain(), 3, F32_OUT_16_IN, 9);
    let whole = check_split::<Bf16, f32>(&stream, &shape, EpiCase::plain(), 1, F32_OUT_16_IN, 9);
    assert_eq!(three, again);
    assert_ne!(three, whole);
    let a = Buffer::<Bf16>::zeros(&stream, 24 * 768).unwrap();
    let b = Buffer::<Bf16>::zeros(&stream, 16 * 768).unwrap();
    let mut c = Buffer::<f32>::from_host(&stream, &[7.0; 24 * 16]).unwrap();
    let none = Epilogue::default();
    let err = gemm_split_k(&stream, &shape, &a, &b, &mut c, &none, 5).unwrap_err();
    assert!(err.to_string().contains("k = 768, 5 ranges"), "{err}");
    assert!(c.to_host(&stream).unwrap().iter().all(|&x| x == 7.0));
}

/// A TF32 LoRA gradient on Hopper (TN, 16 rows: too skinny to copy its operands for the tf32
/// `wgmma` GEMM) runs on `mma.sync`, split; inside a capture it splits into a workspace with
/// the bits of a direct call, and without one keeps whole tiles.
#[test]
fn a_tf32_lora_gradient_on_hopper_splits_on_mma_sync_inside_a_capture_with_a_workspace() {
    use kernel_runtime::Buffer;
    use kernels::gemm::{gemm, split_k_partials, Epilogue, GemmWorkspace};
    let stream = hopper_with_sms(132);
    let shape = GemmShape::new(Layout::Tn, 16, 200, 1024);
    assert_eq!(
        split_k_partials::<f32, f32>(&stream, &shape, Math::Tf32).unwrap(),
        4 * 16 * 200
    );
    check::<f32, f32>(&stream, &shape, EpiCase::every(), Math::Tf32, TF32_TOL, 790);
    let mut rng = Rng::new(791);
    let (a, _) = upload::<f32>(&stream, &rng.vec(shape.m * shape.k));
    let (b, _) = upload::<f32>(&stream, &rng.vec(shape.n * shape.k));
    let none = Epilogue::default();
    let mut c = Buffer::<f32>::zeros(&stream, shape.m * shape.n).unwrap();
    gemm(&stream, &shape, &a, &b, &mut c, &none, Math::Tf32).unwrap();
    let direct = bits(&stream, &c);
    let captured = |ws: Option<&mut GemmWorkspace>| captured_tf32(&stream, &shape, &a, &b, ws);
    let (launches, whole) = captured(None);
    assert_eq!(launches, 1, "no workspace: whole tiles");
    assert_ne!(whole, direct);
    let mut ws = GemmWorkspace::for_shapes::<f32, f32>(&stream, &[shape], Math::Tf32).unwrap();
    assert_eq!(captured(Some(&mut ws)), (2, direct), "split and reduced");
}

/// A TF32 `gemm` of `shape` (plain epilogue) captured into a graph, through `ws` or without a
/// workspace, replayed once: the graph's launches and the bits of C.
fn captured_tf32(
    stream: &kernel_runtime::Stream,
    shape: &GemmShape,
    a: &kernel_runtime::Buffer<f32>,
    b: &kernel_runtime::Buffer<f32>,
    ws: Option<&mut kernels::gemm::GemmWorkspace>,
) -> (usize, Vec<u32>) {
    use kernels::gemm::{gemm, gemm_with_workspace, Epilogue};
    let none = Epilogue::default();
    let mut c = kernel_runtime::Buffer::<f32>::zeros(stream, shape.m * shape.n).unwrap();
    let mut recorded = Ok(());
    let graph = stream
        .capture(|s| {
            recorded = match ws {
                Some(ws) => gemm_with_workspace(s, shape, a, b, &mut c, &none, Math::Tf32, ws),
                None => gemm(s, shape, a, b, &mut c, &none, Math::Tf32),
            };
            Ok(())
        })
        .unwrap();
    recorded.unwrap();
    graph.replay().unwrap();
    (graph.launches(), bits(stream, &c))
}
