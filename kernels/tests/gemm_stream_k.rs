//! Stream-K in the Hopper TMA GEMM on the emulator: problems whose whole tiles would leave
//! most of a last wave's SMs idle run as contiguous runs of k-slabs per block, and the parts
//! of a tile that later blocks compute are added before its epilogue. Checked against the f64
//! reference in every layout and epilogue, with tiles cut between two and three blocks, run
//! to run, through a reused workspace and inside a graph capture.

mod common_gemm;

use common_gemm::*;
use kernel_runtime::{Bf16, Buffer, Stream, F16};
use kernels::gemm::{
    gemm, gemm_split_k, gemm_with_workspace, GemmShape, GemmWorkspace, Layout, Math,
};

/// The f32 partials a workspace needs for `shape`: a tile's worth per block where `gemm`
/// runs it stream-K, none where it keeps whole tiles.
fn stream_k_partials<T: kernels::Float, O: kernels::Float>(s: &Stream, shape: &GemmShape) -> usize {
    GemmWorkspace::for_shapes::<T, O>(s, &[*shape], Math::Fp32)
        .expect("workspace")
        .len()
}

#[test]
fn stream_k_matches_reference_in_every_layout_and_epilogue() {
    // Four tiles (ragged in m and n) of four slabs (the last one short) on three SMs: the
    // runs are 5, 5 and 6 iterations long, so tiles 1 and 2 are each cut between two blocks.
    let stream = hopper_with_sms(3);
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        let seed = 900 + 10 * i as u64;
        let shape = GemmShape::new(layout, 248, 296, 200);
        assert_eq!(
            stream_k_partials::<Bf16, Bf16>(&stream, &shape),
            3 * 128 * 256
        );
        check::<Bf16, Bf16>(
            &stream,
            &shape,
            EpiCase::every(),
            Math::Fp32,
            BF16_OUT,
            seed,
        );
        check::<Bf16, f32>(
            &stream,
            &shape,
            EpiCase::plain(),
            Math::Fp32,
            F32_OUT_16_IN,
            seed + 1,
        );
        check::<F16, F16>(
            &stream,
            &shape,
            EpiCase::plain(),
            Math::Fp32,
            F16_OUT,
            seed + 2,
        );
    }
}

#[test]
fn stream_k_runs_the_full_waves_as_whole_tiles_and_cuts_only_the_last() {
    // Four tiles of twelve slabs on three SMs: the last wave's one tile gives each block four
    // slabs, so tiles 0–2 run whole (in step) and tile 3 is cut among all three blocks: its
    // first block waits for the parts of two later ones, each of which runs only inside it.
    let stream = hopper_with_sms(3);
    for (i, layout) in Layout::ALL.into_iter().enumerate() {
        let shape = GemmShape::new(layout, 248, 296, 768);
        assert_eq!(
            stream_k_partials::<Bf16, Bf16>(&stream, &shape),
            3 * 128 * 256
        );
        let seed = 970 + i as u64;
        check::<Bf16, Bf16>(
            &stream,
            &shape,
            EpiCase::every(),
            Math::Fp32,
            BF16_OUT,
            seed,
        );
    }
}

#[test]
fn last_wave_tiles_are_cut_among_at_most_the_blocks_the_grid_gives_them() {
    // Seven tiles of ten slabs on five SMs: tiles 0–4 run whole, and the last wave's two
    // tiles are cut two ways each among blocks 0–3 (five slabs a block); block 4 stops after
    // its whole tile, and each tile's owner adds one part.
    let stream = hopper_with_sms(5);
    let layout = Layout::ALL[1];
    let shape = GemmShape::new(layout, 850, 200, 640);
    assert_eq!(
        stream_k_partials::<Bf16, Bf16>(&stream, &shape),
        5 * 128 * 256
    );
    check::<Bf16, Bf16>(&stream, &shape, EpiCase::every(), Math::Fp32, BF16_OUT, 990);
}

/// Seeded bf16 operands for `shape` and the bits `launch` leaves in an f32 C.
fn run_bits(
    stream: &Stream,
    shape: &GemmShape,
    launch: impl FnOnce(&Buffer<Bf16>, &Buffer<Bf16>, &mut Buffer<f32>),
) -> Vec<u32> {
    let mut rng = Rng::new(960);
    let (a, _) = upload::<Bf16>(stream, &rng.vec(shape.m * shape.k));
    let (b, _) = upload::<Bf16>(stream, &rng.vec(shape.n * shape.k));
    let mut c = Buffer::<f32>::zeros(stream, shape.m * shape.n).expect("c");
    launch(&a, &b, &mut c);
    bits(stream, &c)
}

#[test]
fn stream_k_is_bit_identical_through_its_own_room_a_reused_workspace_and_a_capture() {
    let stream = hopper_with_sms(3);
    let shape = GemmShape::new(Layout::Tn, 248, 296, 200);
    let plain = kernels::gemm::Epilogue::default();
    let direct = || {
        run_bits(&stream, &shape, |a, b, c| {
            gemm(&stream, &shape, a, b, c, &plain, Math::Fp32).unwrap()
        })
    };
    let first = direct();
    assert_eq!(direct(), first);
    let whole = run_bits(&stream, &shape, |a, b, c| {
        gemm_split_k(&stream, &shape, a, b, c, &plain, 1).unwrap()
    });
    assert_ne!(
        whole, first,
        "the parts add in another order than whole tiles do"
    );
    // The workspace's counters return to zero after each call, so it serves the next.
    let mut ws = GemmWorkspace::for_shapes::<Bf16, f32>(&stream, &[shape], Math::Fp32).unwrap();
    for _ in 0..2 {
        let through = run_bits(&stream, &shape, |a, b, c| {
            gemm_with_workspace(&stream, &shape, a, b, c, &plain, Math::Fp32, &mut ws).unwrap()
        });
        assert_eq!(through, first);
    }
    // Captured: stream-K with the workspace, whole tiles without one (nowhere to put parts).
    let captured = |ws: Option<&mut GemmWorkspace>| {
        run_bits(&stream, &shape, |a, b, c| {
            let mut recorded = Ok(());
            let graph = stream
                .capture(|s| {
                    recorded = match ws {
                        Some(ws) => gemm_with_workspace(s, &shape, a, b, c, &plain, Math::Fp32, ws),
                        None => gemm(s, &shape, a, b, c, &plain, Math::Fp32),
                    };
                    Ok(())
                })
                .unwrap();
            recorded.unwrap();
            graph.replay().unwrap();
        })
    };
    assert_eq!(captured(Some(&mut ws)), first);
    assert_eq!(captured(None), whole);
    // A workspace without room for the parts keeps whole tiles.
    let mut small = GemmWorkspace::new(&stream, 3 * 128 * 256).unwrap();
    let through_small = run_bits(&stream, &shape, |a, b, c| {
        gemm_with_workspace(&stream, &shape, a, b, c, &plain, Math::Fp32, &mut small).unwrap()
    });
    assert_eq!(through_small, whole);
}

#[test]
fn problems_that_fill_their_waves_keep_whole_tiles() {
    let stream = hopper_with_sms(4);
    // Four tiles on four SMs: one full wave.
    let full = GemmShape::new(Layout::Nt, 256, 512, 256);
    assert_eq!(stream_k_partials::<Bf16, Bf16>(&stream, &full), 0);
    // Three tiles on four SMs: one partial wave, which cut tiles would not run faster.
    let partial = GemmShape::new(Layout::Nt, 384, 96, 320);
    assert_eq!(stream_k_partials::<Bf16, Bf16>(&stream, &partial), 0);
    // A batch of two: stream-K runs one batch only.
    let batched = GemmShape::batched(Layout::Nt, 2, 248, 296, 200);
    assert_eq!(stream_k_partials::<Bf16, Bf16>(&stream, &batched), 0);
}
