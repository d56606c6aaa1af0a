//! The tensor-core GEMV over stacked weights on the emulator: `gguf::gemv_mma_parts` (one
//! launch, each part's products in its own output) and `gguf::gemv_mma_swiglu` (a gate and an
//! up stacked, `silu(gate)·up` written), against `gemv_mma` over the same stacked weight and
//! the elementwise SwiGLU; `dequantize_rows` of a part; and the refusals.

use kernel_runtime::{Bf16, Buffer, Device, Stream};
use kernels::elementwise::swiglu;
use kernels::quant::gguf::{
    dequantize, dequantize_rows, gemv_mma, gemv_mma_parts, gemv_mma_swiglu, gemv_mma_swiglu_reads,
    gemv_mma_with, reference, GemvMmaPlan, GgufFormat, GgufMatrix,
};
use kernels::{Error, Float};

/// Weights with a spread of scales and offsets, different for each `seed`.
fn weights(n: usize, k: usize, seed: usize) -> Vec<f32> {
    (0..n * k)
        .map(|i| {
            let sub = (i / 32 + seed) % 7;
            let v = (((i + 977 * seed) * 2654435761usize) >> 7) % 1000;
            (v as f32 / 500.0 - 0.7) * (0.3 + sub as f32 * 0.4)
        })
        .collect()
}

/// Activations that bf16 holds exactly, so the f32 and bf16 instances read the same `x`.
fn activations(m: usize, k: usize) -> Vec<f32> {
    (0..m * k)
        .map(|i| {
            let v = (((i * 40503) % 997) as f32 / 498.5 - 1.0) * (1.0 + (i / k) as f32);
            Bf16::from_f32(v).to_f32()
        })
        .collect()
}

fn quantized(f: GgufFormat, n: usize, k: usize, seed: usize) -> GgufMatrix {
    GgufMatrix::quantize(f, n, k, &weights(n, k, seed)).unwrap()
}

fn host<T: Float>(s: &Stream, b: &Buffer<T>) -> Vec<u32> {
    b.to_host(s)
        .unwrap()
        .iter()
        .map(|v| v.to_f32().to_bits())
        .collect()
}

/// `gemv_mma_parts` over `parts` stacked gives, in each output, the columns `gemv_mma` gives
/// for those rows of the stacked weight, bit for bit.
fn parts_match<T: Float>(s: &Stream, f: GgufFormat, m: usize, parts: &[usize], k: usize) {
    let mats: Vec<GgufMatrix> = (0..parts.len())
        .map(|i| quantized(f, parts[i], k, i))
        .collect();
    let stacked = GgufMatrix::stack(&mats.iter().collect::<Vec<_>>()).unwrap();
    let w = stacked.to_device(s).unwrap();
    let xt: Vec<T> = activations(m, k).iter().map(|&v| T::from_f32(v)).collect();
    let x = Buffer::from_host(s, &xt).unwrap();
    let n = stacked.rows();
    let mut whole = Buffer::<T>::zeros(s, m * n).unwrap();
    gemv_mma(s, &w, &x, &mut whole, m).unwrap();
    let whole = host(s, &whole);
    let mut outs: Vec<Buffer<T>> = parts
        .iter()
        .map(|&p| Buffer::from_host(s, &vec![T::from_f32(7.0); m * p]).unwrap())
        .collect();
    let mut refs: Vec<&mut Buffer<T>> = outs.iter_mut().collect();
    gemv_mma_parts(s, &w, parts, &x, &mut refs, m).unwrap();
    let mut first = 0;
    for (i, (out, &p)) in outs.iter().zip(parts).enumerate() {
        let got = host(s, out);
        for r in 0..m {
            for c in 0..p {
                assert_eq!(
                    got[r * p + c],
                    whole[r * n + first + c],
                    "{f} {:?} parts {parts:?} m={m}: output {i} at ({r}, {c})",
                    T::TYPE
                );
            }
        }
        first += p;
    }
}

#[test]
fn gemv_mma_parts_writes_each_part_of_the_stacked_product() {
    let s = Device::emulator().stream().unwrap();
    // Part boundaries inside a warp's tiles (5, 3), parts of one row, and k of 1 and 5 blocks.
    parts_match::<f32>(&s, GgufFormat::Q4K, 1, &[5, 3, 9], 256);
    parts_match::<f32>(&s, GgufFormat::Q4K, 9, &[16, 1, 8], 1280);
    parts_match::<Bf16>(&s, GgufFormat::Q4K, 3, &[13, 4], 256);
    parts_match::<Bf16>(&s, GgufFormat::Q6K, 16, &[2, 7, 7], 1280);
    // One tile a warp: Q8_0, and Q6_K with f32 activations.
    parts_match::<f32>(&s, GgufFormat::Q8_0, 2, &[5, 6, 3], 512);
    parts_match::<f32>(&s, GgufFormat::Q6K, 11, &[9], 256);
}

/// `gemv_mma_swiglu` over a gate and an up stacked: bit for bit the elementwise SwiGLU of
/// the two products that `gemv_mma` (two tiles) gives for the stacked weight, in f32.
fn swiglu_matches(s: &Stream, f: GgufFormat, m: usize, n: usize, k: usize) {
    let (gate, up) = (quantized(f, n, k, 1), quantized(f, n, k, 2));
    let w = GgufMatrix::stack(&[&gate, &up])
        .unwrap()
        .to_device(s)
        .unwrap();
    let x = activations(m, k);
    let dx = Buffer::from_host(s, &x).unwrap();
    let mut both = Buffer::<f32>::zeros(s, m * 2 * n).unwrap();
    gemv_mma_with(s, &w, &dx, &mut both, m, GemvMmaPlan { tiles: 2, grid: 2 }).unwrap();
    let both = both.to_host(s).unwrap();
    let half = |h: usize| -> Vec<f32> {
        (0..m)
            .flat_map(|r| both[r * 2 * n + h * n..r * 2 * n + (h + 1) * n].to_vec())
            .collect()
    };
    let (g, u) = (
        Buffer::from_host(s, &half(0)).unwrap(),
        Buffer::from_host(s, &half(1)).unwrap(),
    );
    let mut want = Buffer::<f32>::zeros(s, m * n).unwrap();
    swiglu(s, &g, &u, &mut want).unwrap();
    let want = want.to_host(s).unwrap();
    let mut out = Buffer::from_host(s, &vec![7.0f32; m * n]).unwrap();
    gemv_mma_swiglu(s, &w, &dx, &mut out, m).unwrap();
    let got = out.to_host(s).unwrap();
    for i in 0..m * n {
        assert_eq!(
            got[i].to_bits(),
            want[i].to_bits(),
            "{f} m={m} n={n} k={k} at ({}, {}): got {}, want {}",
            i / n,
            i % n,
            got[i],
            want[i]
        );
    }
    // The bf16 instance reads the same `x` (bf16 holds it) and rounds the same f32 result.
    if f == GgufFormat::Q4K {
        let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
        let mut ob = Buffer::<Bf16>::zeros(s, m * n).unwrap();
        gemv_mma_swiglu(s, &w, &Buffer::from_host(s, &xb).unwrap(), &mut ob, m).unwrap();
        let ob = ob.to_host(s).unwrap();
        for i in 0..m * n {
            assert_eq!(
                ob[i].to_f32().to_bits(),
                Bf16::from_f32(got[i]).to_f32().to_bits(),
                "bf16 {f} m={m} n={n} at {i}"
            );
        }
    }
}

#[test]
fn gemv_mma_swiglu_is_the_swiglu_of_the_two_products() {
    let s = Device::emulator().stream().unwrap();
    // n not a multiple of a warp's 8 rows; m below and past 8; k of 1, 5 and 19 blocks.
    swiglu_matches(&s, GgufFormat::Q4K, 1, 5, 256);
    swiglu_matches(&s, GgufFormat::Q4K, 9, 13, 1280);
    swiglu_matches(&s, GgufFormat::Q4K, 16, 8, 19 * 256);
}

#[test]
fn gemv_mma_swiglu_over_q6_k_with_bf16_activations_is_near_the_f64_swiglu() {
    let s = Device::emulator().stream().unwrap();
    let (m, n, k) = (3, 11, 1280);
    let (gate, up) = (
        quantized(GgufFormat::Q6K, n, k, 3),
        quantized(GgufFormat::Q6K, n, k, 4),
    );
    let w = GgufMatrix::stack(&[&gate, &up])
        .unwrap()
        .to_device(&s)
        .unwrap();
    let x = activations(m, k);
    let g = reference::matmul_nt(&x, &gate.bf16_operand(), m, n, k);
    let u = reference::matmul_nt(&x, &up.bf16_operand(), m, n, k);
    let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let mut out = Buffer::<Bf16>::zeros(&s, m * n).unwrap();
    gemv_mma_swiglu(&s, &w, &Buffer::from_host(&s, &xb).unwrap(), &mut out, m).unwrap();
    let got = out.to_host(&s).unwrap();
    for i in 0..m * n {
        let want = g[i] / (1.0 + (-g[i]).exp()) * u[i];
        let tol = 1e-4 * (g[i].abs() + 1.0) * (u[i].abs() + 1.0) + want.abs() / 128.0;
        let v = got[i].to_f32() as f64;
        assert!(
            (v - want).abs() <= tol,
            "at {i}: got {v}, want {want} (±{tol})"
        );
    }
}

#[test]
fn dequantize_rows_gives_the_rows_of_a_part() {
    let s = Device::emulator().stream().unwrap();
    for f in GgufFormat::ALL {
        let q = GgufMatrix::stack(&[&quantized(f, 3, 512, 0), &quantized(f, 4, 512, 1)]).unwrap();
        let w = q.to_device(&s).unwrap();
        let mut all = Buffer::<f32>::zeros(&s, 7 * 512).unwrap();
        dequantize(&s, &w, &mut all).unwrap();
        let all = all.to_host(&s).unwrap();
        assert_eq!(all, q.dequantize(), "{f}");
        let mut part = Buffer::<f32>::zeros(&s, 4 * 512).unwrap();
        dequantize_rows(&s, &w, 3..7, &mut part).unwrap();
        assert_eq!(part.to_host(&s).unwrap(), all[3 * 512..].to_vec(), "{f}");
    }
}

#[test]
fn stacked_gemvs_refuse_bad_calls_before_writing() {
    let s = Device::emulator().stream().unwrap();
    let message = |e: Error| e.to_string();
    let k = 256;
    let q4 = |n| quantized(GgufFormat::Q4K, n, k, 0);
    let w = GgufMatrix::stack(&[&q4(3), &q4(2)])
        .unwrap()
        .to_device(&s)
        .unwrap();
    let x = Buffer::from_host(&s, &activations(2, k)).unwrap();
    let mut a = Buffer::from_host(&s, &[7.0f32; 2 * 3]).unwrap();
    let mut b = Buffer::from_host(&s, &[7.0f32; 2 * 2]).unwrap();
    let e = message(gemv_mma_parts(&s, &w, &[3, 3], &x, &mut [&mut a, &mut b], 2).unwrap_err());
    assert!(e.contains("cover 6 rows") && e.contains("has 5"), "{e}");
    let e = message(gemv_mma_parts(&s, &w, &[5], &x, &mut [&mut a, &mut b], 2).unwrap_err());
    assert!(e.contains("1 parts and 2 outputs"), "{e}");
    let e = message(gemv_mma_parts(&s, &w, &[2, 3], &x, &mut [&mut a, &mut b], 2).unwrap_err());
    assert!(e.contains("output 0") && e.contains("2 × 2"), "{e}");
    // Five rows: not a gate and an up of equal height.
    let mut out = Buffer::from_host(&s, &[7.0f32; 2 * 2]).unwrap();
    let e = message(gemv_mma_swiglu(&s, &w, &x, &mut out, 2).unwrap_err());
    assert!(e.contains("5 rows") && e.contains("even"), "{e}");
    // Q8_0 has only the one-tile kernel.
    let q8 = |seed| quantized(GgufFormat::Q8_0, 2, k, seed);
    let w8 = GgufMatrix::stack(&[&q8(0), &q8(1)])
        .unwrap()
        .to_device(&s)
        .unwrap();
    assert!(!gemv_mma_swiglu_reads::<f32>(&s, &w8));
    let e = message(gemv_mma_swiglu(&s, &w8, &x, &mut out, 2).unwrap_err());
    assert!(
        e.contains("two tiles") && e.contains("elementwise::swiglu"),
        "{e}"
    );
    let e = message(dequantize_rows(&s, &w, 4..6, &mut out).unwrap_err());
    assert!(e.contains("4..6") && e.contains("0..5"), "{e}");
    for (buf, len) in [(&a, 6), (&b, 4), (&out, 4)] {
        assert_eq!(buf.to_host(&s).unwrap(), vec![7.0; len], "written on error");
    }
    let stack = GgufMatrix::stack(&[&q4(1), &quantized(GgufFormat::Q6K, 1, k, 0)]);
    assert!(message(stack.unwrap_err()).contains("share the format"));
}
