//! The tensor store (`tma_store`) on the emulator: boxes written from shared memory into a
//! tensor, clipped at its edges, and a load-then-store round trip through 128-byte swizzled
//! shared memory that gives back the tensor it read.

mod common;

use kernel_dsl::Target;
use kernel_macros::kernel;
use kernel_runtime::{Buffer, Device, Error, LaunchConfig, TensorMap, TensorSwizzle, TensorTiling};

/// Rows and columns of one box.
const BOX_ROWS: u32 = 16;
const BOX_COLS: u32 = 32;

/// Block `(bx, by)` fills a box-sized tile with `1000 row + col` of the tensor element each
/// entry lands on, then stores it to the box at column `32 bx`, row `16 by`.
#[kernel(crate = crate::common::paths, block = 128, needs = sm_90)]
pub fn store_boxes(c: &TensorMap<f32, 2>) {
    let tile = shared_array::<f32, { 16 * 32 }>();
    let t = thread_idx().x;
    let col0 = block_idx().x * 32;
    let row0 = block_idx().y * 16;
    let mut i = t;
    while i < 16 * 32 {
        tile[i] = ((row0 + i / 32) * 1000 + col0 + i % 32) as f32;
        i += 128;
    }
    // The copy engine reads the tile through the async proxy.
    fence_proxy_async();
    sync_threads();
    if t == 0 {
        tma_store(c, [col0, row0], tile, 0);
        tma_store_commit();
        tma_store_wait_read(0);
    }
}

/// Copies a 64 × 64 tensor through shared memory: a 128-byte swizzled TMA load, then a store
/// of the same tile through a map with the same swizzle.
#[kernel(crate = crate::common::paths, block = 32, needs = sm_90)]
pub fn round_trip(src: &TensorMap<f32, 2>, dst: &TensorMap<f32, 2>) {
    let smem = dynamic_shared::<f32, { 256 + 64 * 32 }>();
    let bars = shared_array::<u64, 1>();
    let at = align_index(smem, 1024);
    let t = thread_idx().x;
    if t == 0 {
        mbarrier_init(bars, 0, 1);
        fence_proxy_async();
    }
    sync_threads();
    let mut phase = 0u32;
    for half in [0u32, 1] {
        if t == 0 {
            mbarrier_arrive_expect_tx(bars, 0, 64 * 32 * 4);
            tma_load(smem, at, src, [32 * half, 0], bars, 0);
        }
        while !mbarrier_try_wait_parity(bars, 0, phase) {}
        phase ^= 1;
        if t == 0 {
            tma_store(dst, [32 * half, 0], smem, at);
            tma_store_commit();
            // The next load overwrites the tile: its store must have read it.
            tma_store_wait_read(0);
        }
        sync_threads();
    }
    if t == 0 {
        tma_store_wait(0);
    }
}

#[test]
fn stored_boxes_fill_the_tensor_and_nothing_past_its_edges() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90).stream()?;
    // 50 rows of 40 columns, rows 48 elements apart: the last boxes hang past both edges, and
    // columns 40..48 of each row lie outside the tensor.
    let (rows, cols, ld) = (50usize, 40usize, 48usize);
    let c = Buffer::from_host(&stream, &vec![-1.0f32; rows * ld])?;
    let tiling = TensorTiling::matrix(
        rows as u64,
        cols as u64,
        ld as u64,
        BOX_ROWS,
        BOX_COLS,
        TensorSwizzle::None,
    );
    let map = TensorMap::tiled(c.view(), &tiling)?;
    let mut cfg = LaunchConfig::linear(1, 128);
    cfg.grid = [
        cols.div_ceil(BOX_COLS as usize) as u32,
        rows.div_ceil(BOX_ROWS as usize) as u32,
        1,
    ];
    store_boxes(&stream, cfg, &map)?;
    let got = c.to_host(&stream)?;
    for r in 0..rows {
        for j in 0..ld {
            let want = if j < cols {
                (r * 1000 + j) as f32
            } else {
                -1.0
            };
            assert_eq!(got[r * ld + j], want, "c[{r}][{j}]");
        }
    }
    Ok(())
}

#[test]
fn a_swizzled_load_then_store_gives_back_the_tensor() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90).stream()?;
    let x: Vec<f32> = (0..64 * 64).map(|i| i as f32 * 0.5 - 7.0).collect();
    let src = Buffer::from_host(&stream, &x)?;
    let dst = Buffer::from_host(&stream, &vec![f32::NAN; 64 * 64])?;
    let tiling = TensorTiling::matrix(64, 64, 64, 64, 32, TensorSwizzle::B128);
    let (ms, md) = (
        TensorMap::tiled(src.view(), &tiling)?,
        TensorMap::tiled(dst.view(), &tiling)?,
    );
    let cfg = LaunchConfig::linear(1, 32).with_dynamic_shared(1024 + 64 * 32 * 4);
    round_trip(&stream, cfg, &ms, &md)?;
    assert_eq!(dst.to_host(&stream)?, x);
    Ok(())
}

#[test]
fn the_store_emits_the_bulk_group_forms_and_assembles() {
    for k in [&STORE_BOXES, &ROUND_TRIP] {
        let ptx = (k.emit.expect("an emit function"))(Target::Sm90).expect("emits for sm_90");
        for want in [
            "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
            "cp.async.bulk.commit_group",
            "cp.async.bulk.wait_group.read",
        ] {
            assert!(ptx.contains(want), "no `{want}` in\n{ptx}");
        }
        assert!((k.emit.expect("an emit function"))(Target::Sm89).is_err());
        if let Some(ptxas) = kernel_dsl::ptxas::Ptxas::find() {
            let out = ptxas.assemble(&ptx).expect("ptxas accepts the module");
            assert!(!out.log.contains("warning"), "{}", out.log);
        }
    }
}
