//! The `#[kernel]` Hopper GEMM (TMA, mbarriers, `wgmma`) on the emulator for sm_90a, at odd
//! shapes: ragged tiles in m and n, k shorter than the pipeline, k over several rounds of its
//! four stages, and several tiles walked by one persistent block.

#[path = "common_tma_wgmma/mod.rs"]
mod common_tma_wgmma;

use kernel_runtime::{Bf16, Buffer, Device, Stream};

fn hopper() -> Stream {
    Device::emulator_for(kernel_dsl::Target::Sm90a)
        .stream()
        .expect("emulator stream")
}

#[test]
fn tma_wgmma_gemm_matches_the_reference_at_ragged_tiles_and_short_k() {
    common_tma_wgmma::check(&hopper(), 70, 130, 40, 1);
}

#[test]
fn tma_wgmma_gemm_matches_the_reference_over_several_rounds_of_its_stages() {
    // 9 slabs: the four-stage ring wraps twice, and the last slab is ragged.
    common_tma_wgmma::check(&hopper(), 64, 128, 8 * 64 + 24, 2);
}

#[test]
fn tma_wgmma_gemm_walks_several_tiles_from_one_persistent_block() {
    // The emulator has one SM, so one block takes all 3 × 3 tiles: the stage ring and its
    // barriers' phases carry from tile to tile, and the last row and column of tiles are ragged.
    common_tma_wgmma::check(&hopper(), 300, 520, 136, 3);
}

#[test]
fn tma_wgmma_gemm_covers_every_tile_of_a_short_last_group_of_rows() {
    // Ten row tiles: a group of eight walked a column at a time, then a group of two.
    common_tma_wgmma::check(&hopper(), 1160, 260, 64, 4);
}

#[test]
fn tma_wgmma_gemm_refuses_buffers_of_the_wrong_length_before_launch() {
    let s = hopper();
    let a = Buffer::from_host(&s, &[Bf16::from_f32(1.0); 4 * 16]).unwrap();
    let b = Buffer::from_host(&s, &[Bf16::from_f32(1.0); 3 * 16]).unwrap();
    let mut c = Buffer::from_host(&s, &[f32::NAN; 4 * 4]).unwrap();
    let e = kernels::gemm::tma_wgmma_bf16_nt(&s, &a, &b, &mut c, 4, 4, 16).unwrap_err();
    assert!(e.to_string().contains("`b` holds 48 elements"), "{e}");
    assert!(c.to_host(&s).unwrap().iter().all(|v| v.is_nan()));
}
