//! GGUF weights on the GPU at Llama-3-8B's shapes: dequantization bit for bit against the CPU
//! decoders, the GEMV (plain and with RMSNorm in front) against the f64 reference of the
//! dequantized weights, bit-identical reruns, and the prefill.

use crate::common_rowwise::{download, gpu_stream, poisoned, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::quant::gguf::reference::{matmul_nt, rms_norm};
use kernels::quant::gguf::{
    dequantize, gemv, gemv_mma, gemv_rms_norm, prefill, prefill_workspace_len, GgufFormat,
    GgufMatrix,
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

fn check(what: &str, got: &[f32], want: &[f64], mag: &[f64], storage: FloatType) {
    let out_tol = if storage == FloatType::Bf16 {
        1.0 / 256.0
    } else {
        0.0
    };
    for (i, ((&g, &w), &m)) in got.iter().zip(want).zip(mag).enumerate() {
        let err = (g as f64 - w).abs();
        let bound = 2e-5 * m + out_tol * w.abs() + 1e-30;
        assert!(
            err <= bound,
            "{what}: y[{i}] = {g}, expected {w} (error {err:e} > {bound:e})"
        );
    }
}

fn abs(v: &[f32]) -> Vec<f32> {
    v.iter().map(|a| a.abs()).collect()
}

fn at_shape<T: Float>(s: &Stream, format: GgufFormat, n: usize, k: usize, ms: &[usize]) {
    let mut rng = Rng::new((n + k) as u64 + format.block_bytes() as u64);
    let q = random_matrix(format, n, k, &mut rng);
    let wd = q.dequantize();
    let dev = q.to_device(s).unwrap();

    let mut out = poisoned::<T>(s, n * k);
    dequantize(s, &dev, &mut out).unwrap();
    let got = bits(s, &out);
    for (i, (&g, &w)) in got.iter().zip(&wd).enumerate() {
        let want = T::from_f32(w).to_f32().to_bits();
        assert_eq!(g, want, "dequantize {format} {:?} weight {i}", T::TYPE);
    }

    let (gamma, gh) = upload::<T>(s, &rng.vec(k, 0.5, 1.5));
    for &m in ms {
        let what = format!("{format} {:?} {n}x{k} m={m}", T::TYPE);
        let (x, xh) = upload::<T>(s, &rng.vec(m * k, -1.0, 1.0));
        let mut y = poisoned::<T>(s, m * n);
        gemv(s, &dev, &x, &mut y, m).unwrap();
        let want = matmul_nt(&xh, &wd, m, n, k);
        let mag = matmul_nt(&abs(&xh), &abs(&wd), m, n, k);
        check(
            &format!("gemv {what}"),
            &download(s, &y),
            &want,
            &mag,
            T::TYPE,
        );
        let first = bits(s, &y);
        gemv(s, &dev, &x, &mut y, m).unwrap();
        assert_eq!(
            bits(s, &y),
            first,
            "gemv {what}: two runs are bit-identical"
        );

        gemv_rms_norm(s, &dev, &x, &gamma, 1e-5, &mut y, m).unwrap();
        let xn: Vec<f32> = rms_norm(&xh, &gh, 1e-5, m, k)
            .iter()
            .map(|&v| v as f32)
            .collect();
        let want = matmul_nt(&xn, &wd, m, n, k);
        let mag = matmul_nt(&abs(&xn), &abs(&wd), m, n, k);
        check(
            &format!("gemv_rms_norm {what}"),
            &download(s, &y),
            &want,
            &mag,
            T::TYPE,
        );
        let first = bits(s, &y);
        gemv_rms_norm(s, &dev, &x, &gamma, 1e-5, &mut y, m).unwrap();
        assert_eq!(
            bits(s, &y),
            first,
            "gemv_rms_norm {what}: two runs are bit-identical"
        );
    }
}

#[test]
fn gguf_gemv_and_dequantize_match_references_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    for format in GgufFormat::ALL {
        at_shape::<Bf16>(&s, format, 4096, 4096, &[1, 3, 16]);
        at_shape::<f32>(&s, format, 4096, 4096, &[1, 16]);
        at_shape::<Bf16>(&s, format, 4096, 14336, &[1]);
    }
}

/// `gemv_mma` against the f64 product of its bf16 operands (x rounded to bf16, the weights
/// as `GgufMatrix::bf16_operand` forms them), and reruns bit for bit.
fn gemv_mma_at<T: Float>(s: &Stream, f: GgufFormat, n: usize, k: usize, m: usize) {
    let mut rng = Rng::new((n + 3 * k + m) as u64);
    let q = random_matrix(f, n, k, &mut rng);
    let wb = q.bf16_operand();
    let dev = q.to_device(s).unwrap();
    let (x, xh) = upload::<T>(s, &rng.vec(m * k, -1.0, 1.0));
    let xb: Vec<f32> = xh.iter().map(|&v| Bf16::from_f32(v).to_f32()).collect();
    let mut y = poisoned::<T>(s, m * n);
    gemv_mma(s, &dev, &x, &mut y, m).unwrap();
    let want = matmul_nt(&xb, &wb, m, n, k);
    let mag = matmul_nt(&abs(&xb), &abs(&wb), m, n, k);
    let what = format!("gemv_mma {f} {:?} {n}x{k} m={m}", T::TYPE);
    check(&what, &download(s, &y), &want, &mag, T::TYPE);
    let first = bits(s, &y);
    gemv_mma(s, &dev, &x, &mut y, m).unwrap();
    assert_eq!(bits(s, &y), first, "{what}: two runs are bit-identical");
}

#[test]
fn gguf_gemv_mma_matches_its_bf16_operands_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    for f in GgufFormat::ALL {
        gemv_mma_at::<Bf16>(&s, f, 4096, 4096, 16);
        gemv_mma_at::<Bf16>(&s, f, 4096, 4096, 2);
        gemv_mma_at::<f32>(&s, f, 6144, 4096, 16);
        gemv_mma_at::<Bf16>(&s, f, 4100, 14336, 9);
    }
    // 5 blocks a row: rows start at both even offsets modulo 4.
    gemv_mma_at::<Bf16>(&s, GgufFormat::Q6K, 1000, 1280, 16);
}

#[test]
fn gguf_prefill_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    let (m, n, k) = (512, 1024, 4096);
    for format in GgufFormat::ALL {
        let mut rng = Rng::new(3);
        let q = random_matrix(format, n, k, &mut rng);
        let wd = q.dequantize();
        let dev = q.to_device(&s).unwrap();
        let (x, xh) = upload::<Bf16>(&s, &rng.vec(m * k, -1.0, 1.0));
        let mut ws = Buffer::<Bf16>::zeros(&s, prefill_workspace_len(&dev)).unwrap();
        let mut y = poisoned::<Bf16>(&s, m * n);
        prefill(&s, &dev, &x, &mut y, m, &mut ws).unwrap();
        // The GEMM reads the weights rounded to bf16.
        let wb: Vec<f32> = wd.iter().map(|&v| Bf16::from_f32(v).to_f32()).collect();
        let want = matmul_nt(&xh, &wb, m, n, k);
        let mag = matmul_nt(&abs(&xh), &abs(&wb), m, n, k);
        check(
            &format!("prefill {format}"),
            &download(&s, &y),
            &want,
            &mag,
            FloatType::Bf16,
        );
        let first = bits(&s, &y);
        prefill(&s, &dev, &x, &mut y, m, &mut ws).unwrap();
        assert_eq!(
            bits(&s, &y),
            first,
            "prefill {format}: two runs are bit-identical"
        );
    }
}
