//! The fp32 SIMT GEMM on the emulator against the f64 reference.

mod common_gemm;

use common_gemm::*;
use kernel_dsl::Target;
use kernels::gemm::{gemm, select, Activation, Epilogue, GemmShape, Layout, Math};
use kernels::FloatType;

#[test]
fn simt_f32_matches_reference_at_odd_shapes_in_every_layout() {
    let stream = emulator();
    for layout in Layout::ALL {
        for (i, shape) in shapes(layout, &ODD).iter().enumerate() {
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

#[test]
fn simt_f32_vector_path_matches_reference_at_aligned_shapes() {
    let stream = emulator();
    for layout in Layout::ALL {
        for (i, shape) in shapes(layout, &[(132, 136, 20), (4, 8, 12)])
            .iter()
            .enumerate()
        {
            check::<f32, f32>(
                &stream,
                shape,
                EpiCase::plain(),
                Math::Fp32,
                F32_TOL,
                7 + i as u64,
            );
        }
    }
}

#[test]
fn simt_f32_full_size_129_cube_matches_reference() {
    let stream = emulator();
    let shape = GemmShape::new(Layout::Nt, 129, 129, 129);
    check::<f32, f32>(&stream, &shape, EpiCase::plain(), Math::Fp32, F32_TOL, 3);
}

#[test]
fn simt_epilogues_apply_alpha_beta_bias_activation_and_residual() {
    let stream = emulator();
    let cases = [
        EpiCase {
            alpha: 0.5,
            beta: 1.5,
            ..EpiCase::default()
        },
        EpiCase {
            alpha: 1.0,
            bias: true,
            activation: Activation::Silu,
            ..EpiCase::default()
        },
        EpiCase {
            alpha: 1.0,
            bias: true,
            activation: Activation::GeluTanh,
            ..EpiCase::default()
        },
        EpiCase {
            alpha: -2.0,
            residual: true,
            ..EpiCase::default()
        },
        EpiCase {
            alpha: 0.75,
            beta: -1.0,
            bias: true,
            activation: Activation::Silu,
            residual: true,
        },
    ];
    for (i, epi) in cases.into_iter().enumerate() {
        let shape = GemmShape::new(Layout::ALL[i % 3], 17, 63, 33);
        check::<f32, f32>(&stream, &shape, epi, Math::Fp32, F32_TOL, 100 + i as u64);
    }
}

#[test]
fn strided_batches_with_padded_leading_dimensions_leave_padding_untouched() {
    let stream = emulator();
    for layout in Layout::ALL {
        let mut s = GemmShape::batched(layout, 3, 17, 9, 13);
        s.lda += 3;
        s.ldb += 5;
        s.ldc += 2;
        let (ar, _) = layout.a_rows_cols(s.m, s.k);
        let (br, _) = layout.b_rows_cols(s.n, s.k);
        s.stride_a = ar * s.lda + 7;
        s.stride_b = br * s.ldb + 1;
        s.stride_c = s.m * s.ldc + 4;
        check::<f32, f32>(&stream, &s, EpiCase::plain(), Math::Fp32, F32_TOL, 40);
    }
}

#[test]
fn attention_shaped_batches_match_reference() {
    // Scores S = Q·Kᵀ per head (NT) and O = P·V (NN), 4 heads of 33 tokens × 16 dims.
    let stream = emulator();
    let qk = GemmShape::batched(Layout::Nt, 4, 33, 33, 16);
    check::<f32, f32>(
        &stream,
        &qk,
        EpiCase {
            alpha: 0.25,
            ..EpiCase::default()
        },
        Math::Fp32,
        F32_TOL,
        50,
    );
    let pv = GemmShape::batched(Layout::Nn, 4, 33, 16, 33);
    check::<f32, f32>(&stream, &pv, EpiCase::plain(), Math::Fp32, F32_TOL, 51);
}

#[test]
fn two_runs_are_bit_identical() {
    let stream = emulator();
    let shape = GemmShape::new(Layout::Tn, 63, 17, 129);
    let first = check::<f32, f32>(&stream, &shape, EpiCase::plain(), Math::Fp32, F32_TOL, 9);
    let second = check::<f32, f32>(&stream, &shape, EpiCase::plain(), Math::Fp32, F32_TOL, 9);
    assert_eq!(first, second);
}

#[test]
fn a_short_buffer_is_an_error_and_nothing_is_written() {
    let stream = emulator();
    let a = kernel_runtime::Buffer::from_host(&stream, &[1.0f32; 11]).unwrap();
    let b = kernel_runtime::Buffer::from_host(&stream, &[1.0f32; 12]).unwrap();
    let mut c = kernel_runtime::Buffer::from_host(&stream, &[7.0f32; 9]).unwrap();
    let shape = GemmShape::new(Layout::Nn, 3, 3, 4);
    let err = gemm(
        &stream,
        &shape,
        &a,
        &b,
        &mut c,
        &Epilogue::default(),
        Math::Fp32,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("`a` holds 11 elements but 12"),
        "{err}"
    );
    assert_eq!(c.to_host(&stream).unwrap(), vec![7.0; 9]);
    let short_bias = kernel_runtime::Buffer::from_host(&stream, &[1.0f32; 2]).unwrap();
    let a = kernel_runtime::Buffer::from_host(&stream, &[1.0f32; 12]).unwrap();
    let e = Epilogue::default().with_bias(&short_bias);
    let err = gemm(&stream, &shape, &a, &b, &mut c, &e, Math::Fp32).unwrap_err();
    assert!(err.to_string().contains("`bias` holds 2"), "{err}");
    assert_eq!(c.to_host(&stream).unwrap(), vec![7.0; 9]);
}

#[test]
fn k_zero_gives_the_epilogue_of_an_empty_sum() {
    let stream = emulator();
    let shape = GemmShape::new(Layout::Nn, 5, 6, 0);
    let epi = EpiCase {
        alpha: 1.0,
        bias: true,
        ..EpiCase::default()
    };
    check::<f32, f32>(&stream, &shape, epi, Math::Fp32, F32_TOL, 11);
}

/// The SIMT GEMM at shapes that miss every tile edge, in each layout with each epilogue part,
/// with leading dimensions that rule out 16-byte loads on every other case: it matches the
/// reference.
#[test]
fn simt_matches_the_reference_in_every_layout_and_epilogue_at_ragged_shapes() {
    let stream = emulator();
    for layout in Layout::ALL {
        for (i, epi) in epilogue_cases().into_iter().enumerate() {
            let (m, n, k) = [(13, 21, 11), (5, 130, 9), (131, 3, 17)][i % 3];
            let mut shape = GemmShape::batched(layout, 2, m, n, k);
            if i % 2 == 1 {
                // Leading dimensions that rule out 16-byte loads.
                shape.lda += 1;
                shape.ldb += 3;
                shape.ldc += 1;
                let (ar, _) = layout.a_rows_cols(m, k);
                let (br, _) = layout.b_rows_cols(n, k);
                (shape.stride_a, shape.stride_b, shape.stride_c) =
                    (ar * shape.lda, br * shape.ldb, m * shape.ldc);
            }
            let plan = select(
                FloatType::F32,
                FloatType::F32,
                Math::Fp32,
                &shape,
                Target::Sm80,
            )
            .unwrap();
            assert!(plan.kernel.kernel().name.starts_with("gemm_simt__"));
            check_plan::<f32, f32>(&stream, &shape, epi, &plan, F32_TOL, 200 + i as u64);
        }
    }
}
