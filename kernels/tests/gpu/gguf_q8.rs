//! The int8 route of the GGUF decode GEMV on the GPU at Llama-3-8B's shapes: the activations'
//! quantization bit for bit against the CPU reference (plain and behind RMSNorm), `gemv_q8`
//! and `gemv_q8_mma` against the f64 product of the dequantized weights with
//! the int8 model of `x`, and bit-identical reruns.

use crate::common_rowwise::{download, gpu_stream, poisoned, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::quant::gguf::reference::{self, Int8Activations};
use kernels::quant::gguf::{
    gemv_q8, gemv_q8_mma, gemv_q8_mma_with, quantize_activations, quantize_activations_rms_norm,
    GgufFormat, GgufMatrix, QuantizedActivations,
};
use kernels::Float;
use kernels::FloatType;

/// Random blocks whose f16 scales are finite and near 2⁻⁶.
fn random_matrix(format: GgufFormat, rows: usize, cols: usize, rng: &mut Rng) -> GgufMatrix {
    let mut bytes: Vec<u8> = (0..rows * format.row_bytes(cols))
        .map(|_| rng.below(256) as u8)
        .collect();
    let halves: &[usize] = match format {
        GgufFormat::Q8_0 => &[0],
        GgufFormat::Q4K => &[0, 2],
        GgufFormat::Q6K => &[208],
    };
    for block in bytes.chunks_exact_mut(format.block_bytes()) {
        for &at in halves {
            let h = ((7 + rng.below(4)) << 10 | rng.below(1024)) as u16;
            block[at..at + 2].copy_from_slice(&h.to_le_bytes());
        }
    }
    GgufMatrix::from_bytes(format, rows, cols, bytes).expect("whole blocks")
}

fn bits<T: Float>(s: &Stream, b: &Buffer<T>) -> Vec<u32> {
    download(s, b).iter().map(|v| v.to_bits()).collect()
}

fn assert_same(what: &str, got: &Int8Activations, want: &Int8Activations) {
    assert!(got.q == want.q, "{what}: int8 values differ");
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert!(bits(&got.d) == bits(&want.d), "{what}: block scales differ");
    assert!(bits(&got.s) == bits(&want.s), "{what}: block sums differ");
}

/// `y = x̂·Wᵀ` in f64 with `x̂ = q·d`, and the same over absolute values.
fn int8_product(xq: &Int8Activations, w: &[f32], n: usize) -> (Vec<f64>, Vec<f64>) {
    let (m, k) = (xq.rows, xq.cols);
    let x: Vec<f64> = (0..m * k)
        .map(|i| xq.q[i] as f64 * xq.d[i / 32] as f64)
        .collect();
    let mut y = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut sum, mut abs) = (0.0, 0.0);
            for (a, &b) in x[i * k..i * k + k].iter().zip(&w[j * k..j * k + k]) {
                let p = a * b as f64;
                sum += p;
                abs += p.abs();
            }
            y[i * n + j] = sum;
            mag[i * n + j] = abs;
        }
    }
    (y, mag)
}

/// `|got − want| ≤ 2e-6·Σ|x̂·w|`: the f32 roundings of the scale products and of about
/// `k / 1024 + 5` accumulations, each near 2⁻²⁴; integer sums are exact.
fn check(what: &str, got: &[f32], want: &[f64], mag: &[f64], storage: FloatType) {
    let out_tol = if storage == FloatType::Bf16 {
        1.0 / 256.0
    } else {
        0.0
    };
    for (i, ((&g, &w), &m)) in got.iter().zip(want).zip(mag).enumerate() {
        let err = (g as f64 - w).abs();
        let bound = 2e-6 * m + out_tol * w.abs() + 1e-30;
        assert!(
            err <= bound,
            "{what}: y[{i}] = {g}, expected {w} (error {err:e} > {bound:e})"
        );
    }
}

fn at_shape<T: Float>(s: &Stream, format: GgufFormat, n: usize, k: usize, ms: &[usize]) {
    let mut rng = Rng::new((n + k) as u64 + format.block_bytes() as u64);
    let q = random_matrix(format, n, k, &mut rng);
    let wd = q.dequantize();
    let dev = q.to_device(s).unwrap();
    let (gamma, gh) = upload::<T>(s, &rng.vec(k, 0.5, 1.5));
    for &m in ms {
        let what = format!("{format} {:?} {n}x{k} m={m}", T::TYPE);
        let (x, xh) = upload::<T>(s, &rng.vec(m * k, -1.0, 1.0));
        let mut xq = QuantizedActivations::new(s, m, k).unwrap();
        for norm in [false, true] {
            let want = if norm {
                quantize_activations_rms_norm(s, &x, &gamma, 1e-5, &mut xq, m).unwrap();
                reference::quantize_activations_rms_norm(&xh, &gh, 1e-5, m, k)
            } else {
                quantize_activations(s, &x, &mut xq, m).unwrap();
                reference::quantize_activations(&xh, m, k)
            };
            let what = format!("{what} rms_norm={norm}");
            assert_same(&what, &xq.to_host(s).unwrap(), &want);
            let mut y = poisoned::<T>(s, m * n);
            gemv_q8(s, &dev, &xq, &mut y, m).unwrap();
            let (want, mag) = int8_product(&want, &wd, n);
            check(
                &format!("gemv_q8 {what}"),
                &download(s, &y),
                &want,
                &mag,
                T::TYPE,
            );
            let first = bits(s, &y);
            gemv_q8(s, &dev, &xq, &mut y, m).unwrap();
            assert_eq!(
                bits(s, &y),
                first,
                "gemv_q8 {what}: two runs are bit-identical"
            );
            // Each form against the model, rerun bit-identical; returns its bits.
            let form = |staged_x: bool| {
                let op = format!("gemv_q8_mma_with(staged_x = {staged_x}) {what}");
                let mut y = poisoned::<T>(s, m * n);
                gemv_q8_mma_with(s, &dev, &xq, &mut y, m, staged_x).unwrap();
                check(&op, &download(s, &y), &want, &mag, T::TYPE);
                let first = bits(s, &y);
                gemv_q8_mma_with(s, &dev, &xq, &mut y, m, staged_x).unwrap();
                assert_eq!(bits(s, &y), first, "{op}: two runs are bit-identical");
                first
            };
            let direct = form(false);
            assert!(
                form(true) == direct,
                "gemv_q8_mma {what}: the staged form gives the direct form's bits"
            );
            let mut y = poisoned::<T>(s, m * n);
            gemv_q8_mma(s, &dev, &xq, &mut y, m).unwrap();
            assert!(
                bits(s, &y) == direct,
                "gemv_q8_mma {what}: the same bits as either form"
            );
        }
    }
}

#[test]
fn gguf_gemv_q8_matches_the_int8_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    for format in GgufFormat::ALL {
        at_shape::<Bf16>(&s, format, 4096, 4096, &[1, 3, 8, 9, 16]);
        at_shape::<f32>(&s, format, 4096, 4096, &[1, 16]);
        at_shape::<Bf16>(&s, format, 4096, 14336, &[1]);
    }
}

/// Small shapes (partial row tiles, a few blocks a warp) for compute-sanitizer, whose
/// racecheck would not finish the real ones.
#[test]
fn gguf_gemv_q8_at_small_shapes_matches_the_int8_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    for format in GgufFormat::ALL {
        at_shape::<Bf16>(&s, format, 40, 11 * 256, &[1, 8, 9, 16]);
    }
}
