//! The kernel-dsl sample kernels, emitted by the ptxkit emitter, run on the emulator against
//! CPU references at odd shapes: the path every library kernel's numerics test takes.

mod common;

use common::*;
use kernel_dsl::emit::emit;
use kernel_dsl::{samples, Target};
use ptx_emulator::{ArgValue, Emulator, GlobalMemory, LaunchConfig, Module};

fn load(kernel: &kernel_dsl::ir::Kernel, target: Target) -> Module {
    let ptx = emit(kernel, target).expect("sample emits");
    Emulator::new().load(&ptx).expect("emitted PTX loads")
}

#[test]
fn every_sample_decodes() {
    for sample in samples::all() {
        let module = load(&sample.kernel, sample.min_target);
        if let Err(e) = module.check(&sample.kernel.name) {
            panic!("{}: {e}", sample.kernel.name);
        }
    }
}

#[test]
fn emitted_vector_add_matches_cpu_at_odd_lengths() {
    let module = load(&samples::vector_add(), Target::Sm80);
    let mut rng = Rng::new(71);
    for n in [1usize, 255, 1000, 4099] {
        let a = rng.f32s(n, -50.0, 50.0);
        let b = rng.f32s(n, -50.0, 50.0);
        let mut mem = GlobalMemory::new();
        let (da, db) = (mem.alloc_f32(&a), mem.alloc_f32(&b));
        let dc = poisoned_f32(&mut mem, n);
        let cfg = LaunchConfig::linear((n as u32).div_ceil(128), 128);
        module
            .launch(
                "vector_add",
                &cfg,
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
        assert!((0..n).all(|i| c[i] == a[i] + b[i]), "n={n}");
    }
}

#[test]
fn emitted_grid_stride_saxpy_covers_any_length_with_a_small_grid() {
    let module = load(&samples::saxpy(), Target::Sm80);
    let mut rng = Rng::new(72);
    let n = 5003;
    let x = rng.f32s(n, -2.0, 2.0);
    let y = rng.f32s(n, -2.0, 2.0);
    let mut mem = GlobalMemory::new();
    let (dx, dy) = (mem.alloc_f32(&x), mem.alloc_f32(&y));
    module
        .launch(
            "saxpy",
            &LaunchConfig::linear(3, 96),
            &[
                ArgValue::F32(0.75),
                ArgValue::Ptr(dx),
                ArgValue::Ptr(dy),
                ArgValue::U32(n as u32),
            ],
            &mut mem,
        )
        .unwrap();
    let got = mem.read_f32(dy, n).unwrap();
    assert!((0..n).all(|i| got[i] == 0.75f32.mul_add(x[i], y[i])));
}

#[test]
fn emitted_block_reduce_partials_sum_to_the_cpu_total() {
    let module = load(&samples::block_reduce_sum(), Target::Sm80);
    let mut rng = Rng::new(73);
    let n = 100_003;
    let x = rng.f32s(n, -1.0, 1.0);
    let blocks = 7u32;
    let mut mem = GlobalMemory::new();
    let dx = mem.alloc_f32(&x);
    let dout = poisoned_f32(&mut mem, blocks as usize);
    let cfg = LaunchConfig::linear(blocks, samples::BLOCK_REDUCE_THREADS);
    module
        .launch(
            "block_reduce_sum",
            &cfg,
            &[
                ArgValue::Ptr(dx),
                ArgValue::Ptr(dout),
                ArgValue::U32(n as u32),
            ],
            &mut mem,
        )
        .unwrap();
    let partials = mem.read_f32(dout, blocks as usize).unwrap();
    let total: f64 = partials.iter().map(|&p| p as f64).sum();
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    assert!((total - want).abs() < 1e-3, "{total} vs {want}");
}

#[test]
fn emitted_transpose_handles_ragged_edges() {
    let module = load(&samples::transpose_32x32(), Target::Sm80);
    let mut rng = Rng::new(74);
    let (rows, cols) = (45usize, 70usize);
    let x = rng.f32s(rows * cols, -9.0, 9.0);
    let mut mem = GlobalMemory::new();
    let dx = mem.alloc_f32(&x);
    let dout = poisoned_f32(&mut mem, rows * cols);
    let [bx, by, bz] = samples::TRANSPOSE_BLOCK;
    let cfg = LaunchConfig {
        grid: [(cols as u32).div_ceil(32), (rows as u32).div_ceil(32), 1],
        block: [bx, by, bz],
        dynamic_shared_bytes: 0,
    };
    module
        .launch(
            "transpose_32x32",
            &cfg,
            &[
                ArgValue::Ptr(dx),
                ArgValue::Ptr(dout),
                ArgValue::U32(rows as u32),
                ArgValue::U32(cols as u32),
            ],
            &mut mem,
        )
        .unwrap();
    let out = mem.read_f32(dout, rows * cols).unwrap();
    for r in 0..rows {
        for c in 0..cols {
            assert_eq!(out[c * rows + r], x[r * cols + c], "({r}, {c})");
        }
    }
}

#[test]
fn emitted_bf16_mma_matches_a_cpu_product() {
    let module = load(&samples::mma_bf16_16x8x16(), Target::Sm80);
    let mut rng = Rng::new(75);
    let a: Vec<u16> = (0..256).map(|_| bf16(rng.f32_in(-3.0, 3.0))).collect();
    let bt: Vec<u16> = (0..128).map(|_| bf16(rng.f32_in(-3.0, 3.0))).collect();
    let mut mem = GlobalMemory::new();
    let (da, db) = (alloc_u16(&mut mem, &a), alloc_u16(&mut mem, &bt));
    let dc = poisoned_f32(&mut mem, 128);
    module
        .launch(
            "mma_bf16_16x8x16",
            &LaunchConfig::linear(1, 32),
            &[ArgValue::Ptr(da), ArgValue::Ptr(db), ArgValue::Ptr(dc)],
            &mut mem,
        )
        .unwrap();
    let c = mem.read_f32(dc, 128).unwrap();
    for i in 0..16 {
        for j in 0..8 {
            let want: f64 = (0..16)
                .map(|k| bf16_to_f32(a[i * 16 + k]) as f64 * bf16_to_f32(bt[j * 16 + k]) as f64)
                .sum();
            assert!(
                (c[i * 8 + j] as f64 - want).abs() <= 1e-5 * want.abs().max(1.0),
                "C[{i}][{j}]"
            );
        }
    }
}

#[test]
fn emitted_warpgroup_wgmma_matches_a_cpu_product() {
    let module = load(&samples::wgmma_bf16_64x8x16(), Target::Sm90a);
    let mut rng = Rng::new(76);
    let a: Vec<u16> = (0..64 * 16).map(|_| bf16(rng.f32_in(-3.0, 3.0))).collect();
    let bt: Vec<u16> = (0..8 * 16).map(|_| bf16(rng.f32_in(-3.0, 3.0))).collect();
    let mut mem = GlobalMemory::new();
    let (da, db) = (alloc_u16(&mut mem, &a), alloc_u16(&mut mem, &bt));
    let dc = poisoned_f32(&mut mem, 64 * 8);
    module
        .launch(
            "wgmma_bf16_64x8x16",
            &LaunchConfig::linear(1, 128),
            &[ArgValue::Ptr(da), ArgValue::Ptr(db), ArgValue::Ptr(dc)],
            &mut mem,
        )
        .unwrap();
    let c = mem.read_f32(dc, 64 * 8).unwrap();
    for i in 0..64 {
        for j in 0..8 {
            let want: f64 = (0..16)
                .map(|k| bf16_to_f32(a[i * 16 + k]) as f64 * bf16_to_f32(bt[j * 16 + k]) as f64)
                .sum();
            assert!(
                (c[i * 8 + j] as f64 - want).abs() <= 1e-5 * want.abs().max(1.0),
                "C[{i}][{j}] = {}, want {want}",
                c[i * 8 + j]
            );
        }
    }
}
