//! The `#[kernel]` Hopper GEMM fed by `cp.async` (the path `select` takes on sm_90 where rows
//! are not 16-byte aligned, so the copy engine cannot read them) on the emulator: every
//! layout, input and output type at ragged shapes against the f64 reference, its epilogue,
//! batches and f32 copy, and bit for bit against the builder kernel it replaces.

mod common_gemm;

use common_gemm::*;
use kernel_runtime::{Bf16, Stream, F16};
use kernels::gemm::{select, GemmShape, Layout, Math, Plan};
use kernels::{Float, FloatType};

fn hopper() -> Stream {
    kernel_runtime::Device::emulator_for(kernel_dsl::Target::Sm90a)
        .stream()
        .expect("emulator stream")
}

/// `shape` with A's and B's rows `da` and `db` elements longer (batch strides to match, plus
/// `da` and `db` again so odd padding also misaligns the batches).
fn padded(mut shape: GemmShape, da: usize, db: usize) -> GemmShape {
    let (a_rows, _) = shape.layout.a_rows_cols(shape.m, shape.k);
    let (b_rows, _) = shape.layout.b_rows_cols(shape.n, shape.k);
    shape.lda += da;
    shape.ldb += db;
    shape.stride_a = a_rows * shape.lda + da;
    shape.stride_b = b_rows * shape.ldb + db;
    shape
}

/// The plan `gemm` makes for `T` → `O` on Hopper, asserted to be the `cp.async` kernel.
fn async_plan<T: Float, O: Float>(shape: &GemmShape) -> Plan {
    let plan = select(
        T::TYPE,
        O::TYPE,
        Math::Fp32,
        shape,
        kernel_dsl::Target::Sm90a,
    )
    .unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    let name = &plan.kernel.kernel().name;
    assert!(
        name.starts_with(&format!("gemm_async_wgmma__{}", T::TYPE.suffix())),
        "{shape:?} plans {name}"
    );
    plan
}

/// Checks `T` → `O` at `shape` through `gemm` (asserting it takes the `cp.async` kernel).
fn check_async<T: Float, O: Float>(stream: &Stream, shape: &GemmShape, epi: EpiCase, seed: u64) {
    async_plan::<T, O>(shape);
    let tol = match O::TYPE {
        FloatType::Bf16 => BF16_OUT,
        FloatType::F16 => F16_OUT,
        FloatType::F32 => F32_OUT_16_IN,
    };
    check::<T, O>(stream, shape, epi, Math::Fp32, tol, seed);
}

/// Each of the twelve instances once, m, n and k off tile and slab edges. Odd padding of both
/// operands takes the element-by-element loads; an odd pad of one operand leaves the other's
/// rows 16-byte aligned (its stored width a multiple of 8), so that one goes by `cp.async`
/// (k-contiguous) or the register transpose (mn-contiguous).
#[test]
fn every_spec_matches_the_reference_at_ragged_shapes_with_unaligned_rows() {
    let stream = hopper();
    let cases = [
        ((70, 40, 100), (1, 3)),
        ((40, 129, 72), (0, 1)),
        ((70, 24, 136), (1, 0)),
    ];
    for (l, layout) in Layout::ALL.into_iter().enumerate() {
        for kind in 0..4 {
            let ((m, n, k), (da, db)) = cases[(l + kind) % 3];
            let shape = padded(GemmShape::new(layout, m, n, k), da, db);
            let seed = 800 + (4 * l + kind) as u64;
            let epi = EpiCase::plain();
            match kind {
                0 => check_async::<Bf16, f32>(&stream, &shape, epi, seed),
                1 => check_async::<Bf16, Bf16>(&stream, &shape, epi, seed),
                2 => check_async::<F16, f32>(&stream, &shape, epi, seed),
                _ => check_async::<F16, F16>(&stream, &shape, epi, seed),
            }
        }
    }
}

/// k over several rounds of the four-stage ring (9 slabs, the last ragged), each operand in
/// turn 16-byte aligned.
#[test]
fn k_over_several_rounds_of_the_stages_matches_the_reference() {
    let stream = hopper();
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        for (j, (da, db)) in [(0, 1), (1, 0)].into_iter().enumerate() {
            let shape = padded(GemmShape::new(layout, 24, 16, 8 * 64 + 24), da, db);
            let seed = 820 + (2 * i + j) as u64;
            check_async::<Bf16, f32>(&stream, &shape, EpiCase::plain(), seed);
        }
    }
}

/// Each epilogue part, batches with misaligned strides, and a whole 64 × 128 warpgroup tile
/// stored as column pairs (a plain product, even n and ldc).
#[test]
fn epilogues_batches_and_column_pairs_match_the_reference() {
    let stream = hopper();
    let epis = epilogue_cases();
    for (i, epi) in epis.iter().enumerate() {
        let layout = Layout::ALL[i % 3];
        let shape = padded(GemmShape::batched(layout, 2, 33, 20, 40), 1, 0);
        check_async::<Bf16, Bf16>(&stream, &shape, *epi, 830 + i as u64);
    }
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        let shape = padded(GemmShape::new(layout, 72, 128, 24), 1, 1);
        check_async::<F16, f32>(&stream, &shape, EpiCase::plain(), 840 + i as u64);
    }
}

/// `gemm_with_f32_copy` runs this kernel too (no longer `mma.sync` in its place).
#[test]
fn f32_copy_matches_the_reference_and_rounds_to_c() {
    let stream = hopper();
    let shape = padded(GemmShape::batched(Layout::Nt, 2, 17, 63, 40), 1, 1);
    async_plan::<Bf16, Bf16>(&shape);
    check_copy::<Bf16, Bf16>(&stream, &shape, EpiCase::every(), 850);
    let tn = padded(GemmShape::new(Layout::Tn, 20, 24, 33), 0, 1);
    async_plan::<F16, F16>(&tn);
    check_copy::<F16, F16>(&stream, &tn, EpiCase::plain(), 851);
}

/// Runs the plan and its builder form (`Plan::builder`, the `kernels-gen` kernel) on `shape`
/// with `epi`: both match the reference, and each other bit for bit.
fn kernel_and_builder<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    epi: EpiCase,
    tol: Tol,
    seed: u64,
) {
    let plan = async_plan::<T, O>(shape);
    let builder = plan.builder();
    assert!(builder.kernel.kernel().name.starts_with("gemm_wgmma_"));
    let ours = check_plan::<T, O>(stream, shape, epi, &plan, tol, seed);
    let theirs = check_plan::<T, O>(stream, shape, epi, &builder, tol, seed);
    assert!(ours == theirs, "{shape:?} {epi:?}: the two kernels differ");
}

#[test]
fn kernel_and_builder_agree_bit_for_bit() {
    let stream = hopper();
    let epis = epilogue_cases();
    let pads = [(1, 1), (0, 3), (5, 0)];
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        let shape = padded(GemmShape::new(layout, 40, 24, 72), pads[i].0, pads[i].1);
        let epi = epis[(2 * i + 1) % epis.len()];
        kernel_and_builder::<Bf16, f32>(&stream, &shape, epi, F32_OUT_16_IN, 860 + i as u64);
        kernel_and_builder::<F16, F16>(&stream, &shape, epi, F16_OUT, 870 + i as u64);
    }
    // A plain product over a whole warpgroup tile, stored as pairs by both.
    let shape = padded(GemmShape::new(Layout::Nn, 64, 128, 16), 1, 0);
    kernel_and_builder::<Bf16, Bf16>(&stream, &shape, EpiCase::plain(), BF16_OUT, 880);
}
