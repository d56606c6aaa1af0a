//! GGUF weights on the emulator at small, odd shapes: dequantization bit for bit against the
//! CPU decoders, quantize → dequantize within each format's error, the GEMV (plain and with
//! RMSNorm in front) and the prefill against f64 references, and bad input refused.

mod common_rowwise;

use common_rowwise::{download, poisoned, stream, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::quant::gguf::reference::{matmul_nt, rms_norm};
use kernels::quant::gguf::{
    dequantize, gemv, gemv_rms_norm, prefill, prefill_workspace_len, GgufFormat, GgufMatrix,
};
use kernels::Float;
use kernels::{Error, FloatType};

/// Byte offsets of a block's f16 fields; random bits there could be NaN or infinity, which
/// real weights never hold.
fn half_fields(format: GgufFormat) -> &'static [usize] {
    match format {
        GgufFormat::Q8_0 => &[0],
        GgufFormat::Q4K => &[0, 2],
        GgufFormat::Q6K => &[208],
    }
}

/// Random bytes for every field, with finite f16 scales of every exponent (subnormals too).
fn random_matrix(format: GgufFormat, rows: usize, cols: usize, rng: &mut Rng) -> GgufMatrix {
    let mut bytes: Vec<u8> = (0..rows * format.row_bytes(cols))
        .map(|_| rng.below(256) as u8)
        .collect();
    for block in bytes.chunks_exact_mut(format.block_bytes()) {
        for &at in half_fields(format) {
            // Exponents 0..=14 keep the weights near 1: finite, with either sign.
            let h = (rng.below(15) << 10 | rng.below(1024) | rng.below(2) << 15) as u16;
            block[at..at + 2].copy_from_slice(&h.to_le_bytes());
        }
    }
    GgufMatrix::from_bytes(format, rows, cols, bytes).expect("whole blocks")
}

fn dequantize_exactly<T: Float>(s: &Stream, format: GgufFormat, rows: usize, cols: usize) {
    let mut rng = Rng::new(7 + cols as u64);
    let q = random_matrix(format, rows, cols, &mut rng);
    let mut out = poisoned::<T>(s, rows * cols);
    dequantize(s, &q.to_device(s).unwrap(), &mut out).unwrap();
    let want: Vec<u32> = q
        .dequantize()
        .iter()
        .map(|&v| T::from_f32(v).to_f32().to_bits())
        .collect();
    let got: Vec<u32> = download(s, &out).iter().map(|v| v.to_bits()).collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{format} → {:?}: weight {i}", T::TYPE);
    }
}

#[test]
fn dequantize_matches_the_cpu_decoders_bit_for_bit() {
    let s = stream();
    for format in GgufFormat::ALL {
        dequantize_exactly::<f32>(&s, format, 3, 768);
        dequantize_exactly::<Bf16>(&s, format, 3, 768);
    }
    // Q8_0 rows of an odd number of blocks: every other block starts mid-word.
    dequantize_exactly::<f32>(&s, GgufFormat::Q8_0, 3, 96);
}

/// Weights like a trained layer's: mostly small, some large.
fn weights(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let u = rng.uniform(-1.0, 1.0);
            u * u * u * 2.0 + rng.uniform(-0.1, 0.1)
        })
        .collect()
}

fn relative_rms_error(x: &[f32], y: &[f32]) -> f64 {
    let e: f64 = x
        .iter()
        .zip(y)
        .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
        .sum();
    let r: f64 = x.iter().map(|&a| (a as f64).powi(2)).sum();
    (e / r).sqrt()
}

#[test]
fn quantize_then_dequantize_stays_within_each_formats_error() {
    let mut rng = Rng::new(11);
    let (rows, cols) = (8, 512);
    let w = weights(&mut rng, rows * cols);
    // Q8_0: each weight within one step `max|x| / 127` of its block.
    let q = GgufMatrix::quantize(GgufFormat::Q8_0, rows, cols, &w).unwrap();
    let y = q.dequantize();
    for (xb, yb) in w.chunks(32).zip(y.chunks(32)) {
        let step = xb.iter().fold(0.0f32, |a, v| a.max(v.abs())) / 127.0;
        for (a, b) in xb.iter().zip(yb) {
            assert!((a - b).abs() <= step, "q8_0: {a} became {b}, step {step}");
        }
    }
    // The K formats: 4 and 6 bits with 6- and 8-bit sub-block scales; a uniform step over a
    // sub-block's range gives a relative RMS error near step/√12, and these bounds sit a
    // little above what the reference quantizers reach on such weights.
    for (format, most) in [(GgufFormat::Q4K, 0.09), (GgufFormat::Q6K, 0.025)] {
        let q = GgufMatrix::quantize(format, rows, cols, &w).unwrap();
        let e = relative_rms_error(&w, &q.dequantize());
        assert!(e < most, "{format}: relative RMS error {e} over {most}");
        // Each weight within its sub-block's range: no code decodes far outside.
        let y = q.dequantize();
        let span = w.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        assert!(
            y.iter().all(|v| v.abs() <= 1.1 * span),
            "{format}: a weight past the range"
        );
    }
}

/// `|got − want| ≤ 2e-5·Σ|x·w|` (f32 accumulation) plus the output's rounding for bf16.
fn assert_product(what: &str, got: &[f32], want: &[f64], magnitude: &[f64], storage: FloatType) {
    let out_tol = match storage {
        FloatType::F32 => 0.0,
        FloatType::Bf16 => 1.0 / 256.0,
        FloatType::F16 => unreachable!("these ops have no f16 kernels"),
    };
    for (i, ((&g, &w), &mag)) in got.iter().zip(want).zip(magnitude).enumerate() {
        let err = (g as f64 - w).abs();
        let bound = 2e-5 * mag + out_tol * w.abs() + 1e-30;
        assert!(
            err <= bound,
            "{what}: y[{i}] = {g}, expected {w} (error {err:e} > {bound:e})"
        );
    }
}

fn abs(v: &[f32]) -> Vec<f32> {
    v.iter().map(|a| a.abs()).collect()
}

fn gemv_at<T: Float>(s: &Stream, format: GgufFormat, m: usize, n: usize, k: usize) {
    let mut rng = Rng::new((m * 31 + n * 7 + k) as u64);
    let q = GgufMatrix::quantize(format, n, k, &weights(&mut rng, n * k)).unwrap();
    let wd = q.dequantize();
    let dev = q.to_device(s).unwrap();
    let (x, xh) = upload::<T>(s, &rng.vec(m * k, -1.0, 1.0));
    let mut y = poisoned::<T>(s, m * n);
    gemv(s, &dev, &x, &mut y, m).unwrap();
    let what = format!("gemv {format} {:?} m={m} n={n} k={k}", T::TYPE);
    let want = matmul_nt(&xh, &wd, m, n, k);
    let mag = matmul_nt(&abs(&xh), &abs(&wd), m, n, k);
    assert_product(&what, &download(s, &y), &want, &mag, T::TYPE);

    // RMSNorm in front: the reference normalizes in f64 first.
    let (gamma, gh) = upload::<T>(s, &rng.vec(k, 0.5, 1.5));
    let eps = 1e-5;
    gemv_rms_norm(s, &dev, &x, &gamma, eps, &mut y, m).unwrap();
    let xn: Vec<f32> = rms_norm(&xh, &gh, eps, m, k)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let want = matmul_nt(&xn, &wd, m, n, k);
    let mag = matmul_nt(&abs(&xn), &abs(&wd), m, n, k);
    assert_product(
        &format!("{what} rms_norm"),
        &download(s, &y),
        &want,
        &mag,
        T::TYPE,
    );
}

#[test]
fn gemv_matches_the_f64_reference_at_odd_shapes() {
    let s = stream();
    for format in GgufFormat::ALL {
        for m in [1, 3, 16] {
            // 5 rows: a block of 4 warps and a partial one; 768 columns: three K blocks,
            // less than one pass of a warp.
            gemv_at::<f32>(&s, format, m, 5, 768);
        }
        gemv_at::<Bf16>(&s, format, 3, 5, 768);
    }
    // More chunks than a warp's lanes: Q8_0 at 40 chunks a row.
    gemv_at::<f32>(&s, GgufFormat::Q8_0, 3, 5, 1280);
}

#[test]
fn gemv_over_many_passes_of_a_warp() {
    // 9 K blocks = 72 chunks a row: two full passes of a warp and a partial one.
    let s = stream();
    gemv_at::<f32>(&s, GgufFormat::Q4K, 1, 3, 9 * 256 * 4);
    gemv_at::<Bf16>(&s, GgufFormat::Q6K, 1, 3, 9 * 256 * 4);
}

#[test]
fn prefill_matches_the_f64_reference() {
    let s = stream();
    let (m, n, k) = (64, 9, 256);
    for format in [GgufFormat::Q4K, GgufFormat::Q8_0] {
        let mut rng = Rng::new(5);
        let q = GgufMatrix::quantize(format, n, k, &weights(&mut rng, n * k)).unwrap();
        let wd = q.dequantize();
        let dev = q.to_device(&s).unwrap();
        let (x, xh) = upload::<f32>(&s, &rng.vec(m * k, -1.0, 1.0));
        let mut ws = Buffer::<f32>::zeros(&s, prefill_workspace_len(&dev)).unwrap();
        let mut y = poisoned::<f32>(&s, m * n);
        prefill(&s, &dev, &x, &mut y, m, &mut ws).unwrap();
        let want = matmul_nt(&xh, &wd, m, n, k);
        let mag = matmul_nt(&abs(&xh), &abs(&wd), m, n, k);
        assert_product(
            &format!("prefill {format}"),
            &download(&s, &y),
            &want,
            &mag,
            FloatType::F32,
        );
    }
}

#[test]
fn bad_shapes_are_errors_before_launch() {
    let s = stream();
    let q = GgufMatrix::quantize(GgufFormat::Q4K, 2, 256, &[0.5; 512]).unwrap();
    let dev = q.to_device(&s).unwrap();
    let x = Buffer::from_host(&s, &[1.0f32; 17 * 256]).unwrap();
    let mut y = Buffer::from_host(&s, &[7.0f32; 17 * 2]).unwrap();
    let err = gemv(&s, &dev, &x, &mut y, 17).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("gguf::prefill"), "{err}");
    let short = Buffer::from_host(&s, &[1.0f32; 255]).unwrap();
    let err = gemv(&s, &dev, &short, &mut y, 1).unwrap_err();
    assert!(matches!(err, Error::Length { buffer: "x", .. }), "{err}");
    assert_eq!(
        y.to_host(&s).unwrap(),
        vec![7.0f32; 34],
        "nothing written on error"
    );
    let err = GgufMatrix::quantize(GgufFormat::Q6K, 1, 100, &[0.0; 100]).unwrap_err();
    assert!(err.to_string().contains("multiple of 256"), "{err}");
    let err = GgufMatrix::from_bytes(GgufFormat::Q8_0, 1, 32, vec![0; 33]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "bytes",
                ..
            }
        ),
        "{err}"
    );
}
