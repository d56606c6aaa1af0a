//! The int8 route of the GGUF decode GEMV on the emulator at small, odd shapes: activations
//! quantized bit for bit as the CPU reference does (plain and behind RMSNorm), `gemv_q8`
//! against an f64 product of the dequantized weights with the dequantized int8 activations
//! (so only the f32 rounding of the scale products remains), reruns bit-identical, and bad
//! input refused before anything is written.

mod common_rowwise;

use common_rowwise::{bits, download, poisoned, stream, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::quant::gguf::reference::{self, Int8Activations};
use kernels::quant::gguf::{
    gemv_q8, gemv_q8_mma, gemv_q8_mma_with, quantize_activations, quantize_activations_rms_norm,
    GgufFormat, GgufMatrix, GgufWeights, QuantizedActivations,
};
use kernels::Float;
use kernels::{Error, FloatType};

/// Weights like a trained layer's: mostly small, some large.
fn weights(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let u = rng.uniform(-1.0, 1.0);
            u * u * u * 2.0 + rng.uniform(-0.1, 0.1)
        })
        .collect()
}

/// Activations with blocks of very different ranges, one all zeros (a scale of 0).
fn activations(rng: &mut Rng, m: usize, k: usize) -> Vec<f32> {
    let mut x = rng.vec(m * k, -1.0, 1.0);
    for (b, block) in x.chunks_mut(32).enumerate() {
        let scale = [1.0, 0.01, 30.0, 0.0][b % 4];
        for v in block {
            *v *= scale;
        }
    }
    x
}

/// Quantizes into a workspace that first held other values, so a value left unwritten shows.
fn quantized<T: Float>(
    s: &Stream,
    x: &Buffer<T>,
    norm: Option<(&Buffer<T>, f32)>,
    m: usize,
    k: usize,
) -> QuantizedActivations {
    let mut xq = QuantizedActivations::new(s, m, k).unwrap();
    let (stale, _) = upload::<T>(s, &vec![-3.5; m * k]);
    quantize_activations(s, &stale, &mut xq, m).unwrap();
    match norm {
        Some((gamma, eps)) => quantize_activations_rms_norm(s, x, gamma, eps, &mut xq, m),
        None => quantize_activations(s, x, &mut xq, m),
    }
    .unwrap();
    xq
}

fn quantization_at<T: Float>(s: &Stream, m: usize, k: usize) {
    let mut rng = Rng::new((m * 13 + k) as u64);
    let (x, xh) = upload::<T>(s, &activations(&mut rng, m, k));
    let got = quantized(s, &x, None, m, k).to_host(s).unwrap();
    let what = format!("{:?} m={m} k={k}", T::TYPE);
    assert_same(&what, &got, &reference::quantize_activations(&xh, m, k));

    let (gamma, gh) = upload::<T>(s, &rng.vec(k, 0.5, 1.5));
    let got = quantized(s, &x, Some((&gamma, 1e-5)), m, k)
        .to_host(s)
        .unwrap();
    let want = reference::quantize_activations_rms_norm(&xh, &gh, 1e-5, m, k);
    assert_same(&format!("{what} rms_norm"), &got, &want);
}

fn assert_same(what: &str, got: &Int8Activations, want: &Int8Activations) {
    for (i, (g, w)) in got.q.iter().zip(&want.q).enumerate() {
        assert_eq!(g, w, "{what}: q[{i}]");
    }
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got.d), bits(&want.d), "{what}: block scales d");
    assert_eq!(bits(&got.s), bits(&want.s), "{what}: block sums d·Σq");
}

#[test]
fn quantized_activations_match_the_cpu_quantization_bit_for_bit() {
    let s = stream();
    for m in [1, 3] {
        quantization_at::<f32>(&s, m, 768);
        quantization_at::<Bf16>(&s, m, 768);
    }
    // More blocks than a row's eight warps take in one pass, and a sum of squares over more
    // elements than threads.
    quantization_at::<f32>(&s, 2, 2304);
}

/// `y = x̂·Wᵀ` in f64, `x̂ = q·d` the int8 model of the activations, `W` dequantized; and
/// the same over absolute values, the scale of the f32 rounding.
fn int8_product(xq: &Int8Activations, w: &[f32], n: usize) -> (Vec<f64>, Vec<f64>) {
    let (m, k) = (xq.rows, xq.cols);
    let x: Vec<f64> = (0..m * k)
        .map(|i| xq.q[i] as f64 * xq.d[i / 32] as f64)
        .collect();
    let mut y = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for l in 0..k {
                let p = x[i * k + l] * w[j * k + l] as f64;
                y[i * n + j] += p;
                mag[i * n + j] += p.abs();
            }
        }
    }
    (y, mag)
}

/// `|got − want| ≤ 1e-6·Σ|x̂·w|` (a few f32 roundings of the scale products and of the
/// accumulation, about 2⁻²⁴ each; integer sums are exact) plus the output's rounding for bf16.
fn assert_product(what: &str, got: &[f32], want: &[f64], magnitude: &[f64], storage: FloatType) {
    let out_tol = match storage {
        FloatType::F32 => 0.0,
        FloatType::Bf16 => 1.0 / 256.0,
        FloatType::F16 => unreachable!("these ops have no f16 kernels"),
    };
    for (i, ((&g, &w), &mag)) in got.iter().zip(want).zip(magnitude).enumerate() {
        let err = (g as f64 - w).abs();
        let bound = 1e-6 * mag + out_tol * w.abs() + 1e-30;
        assert!(
            err <= bound,
            "{what}: y[{i}] = {g}, expected {w} (error {err:e} > {bound:e})"
        );
    }
}

/// One of the int8 route's products: `gemv_q8` or `gemv_q8_mma`.
type Product<T> =
    fn(&Stream, &GgufWeights, &QuantizedActivations, &mut Buffer<T>, usize) -> Result<(), Error>;

fn gemv_q8_at<T: Float>(s: &Stream, format: GgufFormat, m: usize, n: usize, k: usize) {
    product_at::<T>("gemv_q8", gemv_q8::<T>, s, format, m, n, k);
}

fn gemv_q8_mma_at<T: Float>(s: &Stream, format: GgufFormat, m: usize, n: usize, k: usize) {
    let direct: Product<T> = |s, w, xq, y, m| gemv_q8_mma_with(s, w, xq, y, m, false);
    let staged: Product<T> = |s, w, xq, y, m| gemv_q8_mma_with(s, w, xq, y, m, true);
    let a = product_at::<T>("gemv_q8_mma", direct, s, format, m, n, k);
    let b = product_at::<T>("gemv_q8_mma staged x", staged, s, format, m, n, k);
    assert_eq!(
        a, b,
        "gemv_q8_mma {format} m={m}: staging x changed the bits"
    );
}

fn product_at<T: Float>(
    name: &str,
    product: Product<T>,
    s: &Stream,
    format: GgufFormat,
    m: usize,
    n: usize,
    k: usize,
) -> Vec<u32> {
    let mut rng = Rng::new((m * 31 + n * 7 + k) as u64);
    let q = GgufMatrix::quantize(format, n, k, &weights(&mut rng, n * k)).unwrap();
    let wd = q.dequantize();
    let dev = q.to_device(s).unwrap();
    let (x, _) = upload::<T>(s, &activations(&mut rng, m, k));
    let xq = quantized(s, &x, None, m, k);
    let mut y = poisoned::<T>(s, m * n);
    product(s, &dev, &xq, &mut y, m).unwrap();
    let what = format!("{name} {format} {:?} m={m} n={n} k={k}", T::TYPE);
    let (want, mag) = int8_product(&xq.to_host(s).unwrap(), &wd, n);
    assert_product(&what, &download(s, &y), &want, &mag, T::TYPE);
    let first = bits(s, &y);
    product(s, &dev, &xq, &mut y, m).unwrap();
    assert_eq!(bits(s, &y), first, "{what}: a rerun changed the bits");
    first
}

#[test]
fn gemv_q8_matches_the_f64_product_of_the_int8_model_at_odd_shapes() {
    let s = stream();
    for format in GgufFormat::ALL {
        for m in [1, 3, 16] {
            // 5 rows: a block of 4 warps and a partial one; 768 columns: three K blocks,
            // less than one pass of a warp.
            gemv_q8_at::<f32>(&s, format, m, 5, 768);
        }
        gemv_q8_at::<Bf16>(&s, format, 3, 5, 768);
    }
    // More pieces than a warp's lanes: Q8_0 at 40 blocks a row.
    gemv_q8_at::<f32>(&s, GgufFormat::Q8_0, 3, 5, 1280);
}

#[test]
fn gemv_q8_over_many_passes_of_a_warp() {
    // 36 K blocks: 144 Q4_K pieces and 288 Q6_K chunks a row, more than one pass of a warp
    // with all its loads in flight.
    let s = stream();
    gemv_q8_at::<f32>(&s, GgufFormat::Q4K, 1, 3, 36 * 256);
    gemv_q8_at::<Bf16>(&s, GgufFormat::Q6K, 1, 3, 36 * 256);
}

#[test]
fn gemv_q8_mma_matches_the_f64_product_of_the_int8_model_at_odd_shapes() {
    let s = stream();
    for format in GgufFormat::ALL {
        // 21 rows: a tile of 16 and a partial one; 768 columns: three blocks of 256, fewer
        // than a block's eight warps. m = 9 and 16 take a second product.
        for m in [1, 3, 9, 16] {
            gemv_q8_mma_at::<f32>(&s, format, m, 21, 768);
        }
        gemv_q8_mma_at::<Bf16>(&s, format, 5, 21, 768);
        // Eleven blocks of 256: three of the eight warps take a second.
        gemv_q8_mma_at::<f32>(&s, format, 2, 7, 11 * 256);
    }
}

#[test]
fn gemv_q8_after_the_fused_rms_norm_quantization() {
    let s = stream();
    let (m, n, k) = (3, 5, 512);
    let mut rng = Rng::new(3);
    let q = GgufMatrix::quantize(GgufFormat::Q4K, n, k, &weights(&mut rng, n * k)).unwrap();
    let dev = q.to_device(&s).unwrap();
    let (x, xh) = upload::<Bf16>(&s, &activations(&mut rng, m, k));
    let (gamma, gh) = upload::<Bf16>(&s, &rng.vec(k, 0.5, 1.5));
    let xq = quantized(&s, &x, Some((&gamma, 1e-5)), m, k);
    let mut y = poisoned::<f32>(&s, m * n);
    gemv_q8(&s, &dev, &xq, &mut y, m).unwrap();
    let model = reference::quantize_activations_rms_norm(&xh, &gh, 1e-5, m, k);
    let (want, mag) = int8_product(&model, &q.dequantize(), n);
    assert_product(
        "gemv_q8 after rms_norm",
        &download(&s, &y),
        &want,
        &mag,
        FloatType::F32,
    );
}

#[test]
fn bad_shapes_are_errors_before_anything_is_written() {
    let s = stream();
    let err = QuantizedActivations::new(&s, 1, 100)
        .err()
        .expect("cols 100");
    assert!(err.to_string().contains("multiple of 256"), "{err}");

    let q = GgufMatrix::quantize(GgufFormat::Q6K, 2, 256, &[0.5; 512]).unwrap();
    let dev = q.to_device(&s).unwrap();
    let x = Buffer::from_host(&s, &[1.0f32; 17 * 256]).unwrap();
    let mut xq = QuantizedActivations::new(&s, 17, 256).unwrap();
    quantize_activations(&s, &x, &mut xq, 17).unwrap();
    let before = xq.to_host(&s).unwrap();
    let mut y = Buffer::from_host(&s, &[7.0f32; 17 * 2]).unwrap();

    let err = gemv_q8(&s, &dev, &xq, &mut y, 17).unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("gguf::prefill"), "{err}");
    let err = gemv_q8(&s, &dev, &xq, &mut y, 1).unwrap_err();
    assert!(matches!(err, Error::Length { buffer: "y", .. }), "{err}");
    let err = gemv_q8_mma(&s, &dev, &xq, &mut y, 17).unwrap_err();
    assert!(err.to_string().contains("gguf::prefill"), "{err}");
    let err = gemv_q8_mma(&s, &dev, &xq, &mut y, 1).unwrap_err();
    assert!(matches!(err, Error::Length { buffer: "y", .. }), "{err}");
    let wide = QuantizedActivations::new(&s, 1, 512).unwrap();
    let mut y1 = Buffer::from_host(&s, &[7.0f32; 2]).unwrap();
    let err = gemv_q8(&s, &dev, &wide, &mut y1, 1).unwrap_err();
    assert!(err.to_string().contains("columns"), "{err}");
    assert_eq!(
        y1.to_host(&s).unwrap(),
        vec![7.0f32; 2],
        "y written on error"
    );
    assert_eq!(
        y.to_host(&s).unwrap(),
        vec![7.0f32; 34],
        "y written on error"
    );

    let short = Buffer::from_host(&s, &[1.0f32; 255]).unwrap();
    let err = quantize_activations(&s, &short, &mut xq, 1).unwrap_err();
    assert!(matches!(err, Error::Length { buffer: "x", .. }), "{err}");
    let err = quantize_activations(&s, &x, &mut xq, 18).unwrap_err();
    assert!(
        err.to_string().contains("QuantizedActivations::new"),
        "{err}"
    );
    let gamma = Buffer::from_host(&s, &[1.0f32; 255]).unwrap();
    let err = quantize_activations_rms_norm(&s, &x, &gamma, 1e-5, &mut xq, 17).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "gamma",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        xq.to_host(&s).unwrap(),
        before,
        "activations written on error"
    );
}
