//! The tensor-core GEMV over Q8_0, Q4_K and Q6_K weights (`gguf::gemv_mma`) on the emulator:
//! products against the f64 product of its bf16 operands at odd shapes, bit-identical
//! reruns, and refusals that leave `y` untouched.

use kernel_runtime::{Bf16, Buffer, Device, Stream};
use kernels::quant::gguf::{
    gemv_mma, gemv_mma_with, reference, GemvMmaPlan, GgufFormat, GgufMatrix, GgufWeights,
};
use kernels::{Error, Float};

/// Weights with a spread of scales and offsets, so sub-blocks get different `a` and `b`.
fn weights(n: usize, k: usize) -> Vec<f32> {
    (0..n * k)
        .map(|i| {
            let sub = (i / 32) % 7;
            let v = ((i * 2654435761usize) >> 7) % 1000;
            (v as f32 / 500.0 - 0.7) * (0.3 + sub as f32 * 0.4)
        })
        .collect()
}

fn activations(m: usize, k: usize) -> Vec<f32> {
    (0..m * k)
        .map(|i| (((i * 40503) % 997) as f32 / 498.5 - 1.0) * (1.0 + (i / k) as f32))
        .collect()
}

/// [`weights`] quantized to `f` and on the device of `s`.
fn device_weights(s: &Stream, f: GgufFormat, n: usize, k: usize) -> GgufWeights {
    GgufMatrix::quantize(f, n, k, &weights(n, k))
        .unwrap()
        .to_device(s)
        .unwrap()
}

/// [`activations`] rounded to bf16.
fn bf16_activations(m: usize, k: usize) -> Vec<Bf16> {
    activations(m, k)
        .iter()
        .map(|&v| Bf16::from_f32(v))
        .collect()
}

fn bf16(v: f32) -> f32 {
    Bf16::from_f32(v).to_f32()
}

/// `gemv_mma` against `x`, rounded to bf16, times the weights' bf16 operand, in f64: the
/// error allowed is f32 accumulation's over `Σ |x·w|`, plus `y`'s own rounding to `T`.
fn check<T: Float>(s: &Stream, f: GgufFormat, m: usize, n: usize, k: usize, tiles: usize) {
    let q = GgufMatrix::quantize(f, n, k, &weights(n, k)).unwrap();
    // Two blocks: each takes every other tile, as on a device of one SM.
    let plan = GemvMmaPlan { tiles, grid: 2 };
    let w = q.bf16_operand();
    let x = activations(m, k);
    let xt: Vec<T> = x.iter().map(|&v| T::from_f32(v)).collect();
    let xb: Vec<f32> = xt.iter().map(|v| bf16(v.to_f32())).collect();
    let want = reference::matmul_nt(&xb, &w, m, n, k);
    let scale = reference::matmul_nt(
        &xb.iter().map(|v| v.abs()).collect::<Vec<_>>(),
        &w.iter().map(|v| v.abs()).collect::<Vec<_>>(),
        m,
        n,
        k,
    );
    let dev = q.to_device(s).unwrap();
    let dx = Buffer::from_host(s, &xt).unwrap();
    let mut y = Buffer::<T>::zeros(s, m * n).unwrap();
    gemv_mma_with(s, &dev, &dx, &mut y, m, plan).unwrap();
    let got = y.to_host(s).unwrap();
    let out_rounding = if T::TYPE == kernels::FloatType::F32 {
        0.0
    } else {
        1.0 / 256.0
    };
    for i in 0..m * n {
        let g = got[i].to_f32() as f64;
        let tol = 1e-5 * scale[i] + out_rounding * want[i].abs();
        assert!(
            (g - want[i]).abs() <= tol,
            "gemv_mma {f} {:?} m={m} n={n} k={k} {plan:?} at ({}, {}): got {g}, want {} (±{tol})",
            T::TYPE,
            i / n,
            i % n,
            want[i]
        );
    }
    gemv_mma_with(s, &dev, &dx, &mut y, m, plan).unwrap();
    let again = y.to_host(s).unwrap();
    assert!(
        got.iter()
            .zip(&again)
            .all(|(a, b)| a.to_f32().to_bits() == b.to_f32().to_bits()),
        "a rerun gave other bits"
    );
}

#[test]
fn gemv_mma_matches_the_f64_product_of_its_bf16_operands_at_odd_shapes() {
    let s = Device::emulator().stream().unwrap();
    // m below, at and past a row group of 8; n not a multiple of a block's rows; k of 1 and
    // 5 blocks (warps with no block).
    for tiles in [1, 2] {
        for (m, n, k) in [(1, 5, 256), (3, 13, 1280), (16, 8, 256), (9, 35, 1280)] {
            check::<f32>(&s, GgufFormat::Q4K, m, n, k, tiles);
        }
        check::<Bf16>(&s, GgufFormat::Q4K, 5, 11, 1280, tiles);
    }
}

#[test]
fn gemv_mma_over_q6_k_matches_the_f64_product_of_its_bf16_operands() {
    let s = Device::emulator().stream().unwrap();
    // Rows of 1 and 5 blocks: 210 and 1050 bytes, so rows and blocks start at every even
    // byte offset modulo 4.
    for (m, n, k) in [(1, 5, 256), (3, 13, 1280), (16, 8, 256), (9, 35, 1280)] {
        check::<f32>(&s, GgufFormat::Q6K, m, n, k, 1);
        check::<Bf16>(&s, GgufFormat::Q6K, m, n, k, 2);
    }
    check::<Bf16>(&s, GgufFormat::Q6K, 5, 11, 1280, 1);
}

#[test]
fn gemv_mma_over_q8_0_matches_the_f64_product_of_its_bf16_operands() {
    let s = Device::emulator().stream().unwrap();
    // Units of eight 34-byte blocks: even blocks' codes start 2 bytes into a word.
    for (m, n, k) in [(1, 5, 256), (3, 13, 1280), (16, 8, 256), (9, 35, 1280)] {
        check::<f32>(&s, GgufFormat::Q8_0, m, n, k, 1);
        check::<Bf16>(&s, GgufFormat::Q8_0, m, n, k, 1);
    }
    check::<Bf16>(&s, GgufFormat::Q8_0, 12, 17, 19 * 256, 1);
}

#[test]
fn gemv_mma_over_many_blocks_of_a_row() {
    let s = Device::emulator().stream().unwrap();
    // 19 blocks: two passes of the eight warps' blocks in flight, the last one ragged.
    check::<Bf16>(&s, GgufFormat::Q4K, 2, 3, 19 * 256, 1);
    check::<Bf16>(&s, GgufFormat::Q4K, 12, 17, 19 * 256, 2);
    check::<f32>(&s, GgufFormat::Q4K, 12, 17, 19 * 256, 2);
    check::<Bf16>(&s, GgufFormat::Q6K, 12, 17, 19 * 256, 2);
}

#[test]
fn gemv_mma_stays_within_bf16_rounding_of_the_exact_product() {
    for f in GgufFormat::ALL {
        within_bf16_rounding(f);
    }
}

fn within_bf16_rounding(f: GgufFormat) {
    let s = Device::emulator().stream().unwrap();
    let (m, n, k) = (4, 6, 512);
    let q = GgufMatrix::quantize(f, n, k, &weights(n, k)).unwrap();
    let x = activations(m, k);
    let exact = reference::matmul_nt(&x, &q.dequantize(), m, n, k);
    let mut y = Buffer::<f32>::zeros(&s, m * n).unwrap();
    let dev = q.to_device(&s).unwrap();
    gemv_mma(&s, &dev, &Buffer::from_host(&s, &x).unwrap(), &mut y, m).unwrap();
    let got = y.to_host(&s).unwrap();
    let scale = reference::matmul_nt(
        &x.iter().map(|v| v.abs()).collect::<Vec<_>>(),
        &q.dequantize().iter().map(|v| v.abs()).collect::<Vec<_>>(),
        m,
        n,
        k,
    );
    for i in 0..m * n {
        // x and each weight rounded to bf16 (2⁻⁹ each), the scale and offset too.
        let tol = 4.0 / 512.0 * scale[i];
        assert!(
            (got[i] as f64 - exact[i]).abs() <= tol,
            "{f} at {i}: got {}, exact {} (±{tol})",
            got[i],
            exact[i]
        );
    }
}

#[test]
fn gemv_mma_refuses_bad_calls_before_writing() {
    let s = Device::emulator().stream().unwrap();
    let (n, k) = (3, 256);
    let q4 = GgufMatrix::quantize(GgufFormat::Q4K, n, k, &weights(n, k))
        .unwrap()
        .to_device(&s)
        .unwrap();
    // Q8_0 rows of 288 weights: whole blocks, not whole units of 256.
    let q8 = GgufMatrix::quantize(GgufFormat::Q8_0, n, 288, &weights(n, 288))
        .unwrap()
        .to_device(&s)
        .unwrap();
    let x = Buffer::from_host(&s, &activations(2, k)).unwrap();
    let mut y = Buffer::from_host(&s, &vec![7.0f32; 2 * n]).unwrap();
    let message = |e: Error| e.to_string();
    let x288 = Buffer::from_host(&s, &activations(2, 288)).unwrap();
    let e = message(gemv_mma(&s, &q8, &x288, &mut y, 2).unwrap_err());
    assert!(
        e.contains("q8_0") && e.contains("256") && e.contains("gguf::gemv"),
        "{e}"
    );
    let x17 = Buffer::from_host(&s, &activations(17, k)).unwrap();
    let mut y17 = Buffer::from_host(&s, &vec![7.0f32; 17 * n]).unwrap();
    let odd = GemvMmaPlan { tiles: 4, grid: 2 };
    let e = message(gemv_mma_with(&s, &q4, &x, &mut y, 2, odd).unwrap_err());
    assert!(e.contains("1 or 2 tiles"), "{e}");
    let q6 = GgufMatrix::quantize(GgufFormat::Q6K, n, k, &weights(n, k))
        .unwrap()
        .to_device(&s)
        .unwrap();
    let two = GemvMmaPlan { tiles: 2, grid: 2 };
    let e = message(gemv_mma_with(&s, &q6, &x, &mut y, 2, two).unwrap_err());
    assert!(e.contains("1 tile") && e.contains("for_weight"), "{e}");
    let none = GemvMmaPlan { tiles: 1, grid: 0 };
    let e = message(gemv_mma_with(&s, &q4, &x, &mut y, 2, none).unwrap_err());
    assert!(e.contains("one block at least"), "{e}");
    let e = message(gemv_mma(&s, &q4, &x17, &mut y17, 17).unwrap_err());
    assert!(e.contains("at most 16") && e.contains("prefill"), "{e}");
    let mut short = Buffer::from_host(&s, &vec![7.0f32; n]).unwrap();
    let e = message(gemv_mma(&s, &q4, &x, &mut short, 2).unwrap_err());
    assert!(e.contains("`y`"), "{e}");
    let short_x = Buffer::from_host(&s, &activations(1, k)).unwrap();
    let e = message(gemv_mma(&s, &q4, &short_x, &mut y, 2).unwrap_err());
    assert!(e.contains("`x`"), "{e}");
    assert!(y17.to_host(&s).unwrap().iter().all(|&v| v == 7.0));
    assert!(y.to_host(&s).unwrap().iter().all(|&v| v == 7.0));
    assert!(short.to_host(&s).unwrap().iter().all(|&v| v == 7.0));
}

#[test]
fn gemv_mma_reads_bf16_activations_into_f32_outputs() {
    // The product reads bf16 whatever x's type: bf16 x into f32 y is f32 x of the same
    // values into f32 y, bit for bit, for every format and both tile plans.
    let s = Device::emulator().stream().unwrap();
    for (f, tiles) in [
        (GgufFormat::Q4K, 1),
        (GgufFormat::Q4K, 2),
        (GgufFormat::Q6K, 1),
        (GgufFormat::Q6K, 2),
        (GgufFormat::Q8_0, 1),
    ] {
        let (m, n, k) = (9, 21, 1280);
        let dev = device_weights(&s, f, n, k);
        let xb = bf16_activations(m, k);
        let xf: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
        let plan = GemvMmaPlan { tiles, grid: 2 };
        let mut want = Buffer::<f32>::zeros(&s, m * n).unwrap();
        let mut got = Buffer::<f32>::zeros(&s, m * n).unwrap();
        // The f32-x plan with two tiles exists for Q4_K only; Q6_K's f32 reference takes one.
        let f32_plan = if f == GgufFormat::Q6K {
            GemvMmaPlan { tiles: 1, grid: 2 }
        } else {
            plan
        };
        gemv_mma_with(
            &s,
            &dev,
            &Buffer::from_host(&s, &xf).unwrap(),
            &mut want,
            m,
            f32_plan,
        )
        .unwrap();
        gemv_mma_with(
            &s,
            &dev,
            &Buffer::from_host(&s, &xb).unwrap(),
            &mut got,
            m,
            plan,
        )
        .unwrap();
        let bits = |b: &Buffer<f32>| -> Vec<u32> {
            b.to_host(&s).unwrap().iter().map(|v| v.to_bits()).collect()
        };
        assert_eq!(bits(&got), bits(&want), "{f} {plan:?}");
    }
    // f32 x into bf16 y is not offered.
    let dev = GgufMatrix::quantize(GgufFormat::Q4K, 2, 256, &weights(2, 256))
        .unwrap()
        .to_device(&s)
        .unwrap();
    let x = Buffer::from_host(&s, &activations(1, 256)).unwrap();
    let mut y = Buffer::<Bf16>::from_host(&s, &[Bf16::from_f32(7.0); 2]).unwrap();
    let e = gemv_mma(&s, &dev, &x, &mut y, 1).unwrap_err().to_string();
    assert!(e.contains("cast x first"), "{e}");
    assert_eq!(y.to_host(&s).unwrap(), vec![Bf16::from_f32(7.0); 2]);
}

#[test]
fn gemv_mma_gives_the_same_bits_whatever_the_grid() {
    // A block's tiles are summed alike whichever block takes them: one block walking every
    // tile, two or three taking every other or third (the next tile's loads in flight
    // across the boundary), and a block a tile.
    let s = Device::emulator().stream().unwrap();
    for (f, tiles, k) in [
        (GgufFormat::Q4K, 1, 1280),
        (GgufFormat::Q4K, 2, 19 * 256),
        (GgufFormat::Q6K, 2, 1280),
        (GgufFormat::Q8_0, 1, 19 * 256),
    ] {
        let (m, n) = (11, 53);
        let dev = device_weights(&s, f, n, k);
        let xb = bf16_activations(m, k);
        let x = Buffer::from_host(&s, &xb).unwrap();
        let run = |grid: usize| {
            let mut y = Buffer::<f32>::zeros(&s, m * n).unwrap();
            let plan = GemvMmaPlan { tiles, grid };
            gemv_mma_with(&s, &dev, &x, &mut y, m, plan).unwrap();
            y.to_host(&s).unwrap()
        };
        let one_each = run(n);
        assert!(one_each.iter().any(|&v| v != 0.0));
        for grid in [1, 2, 3] {
            let got = run(grid);
            assert!(
                got.iter()
                    .zip(&one_each)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{f:?}, {tiles} tiles a warp, {grid} blocks: other bits than a block a tile"
            );
        }
    }
}
