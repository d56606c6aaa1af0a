//! NF4 on the GPU at Llama-3-8B shapes: the device quantizer and decoder bit for bit against
//! the CPU reference, the products (fused, and on Hopper from `DEQUANTIZED_MIN_ROWS` rows
//! through a dequantized copy) against f64 references, and bit-identical reruns.

use crate::common_tensor::*;
use kernel_runtime::Bf16;
use kernels::quant::nf4::reference::Nf4Host;
use kernels::quant::nf4::{matmul, matmul_input_grad, Nf4Weight, DEQUANTIZED_MIN_ROWS};

#[test]
fn gpu_nf4_quantize_and_dequantize_match_the_reference_bit_for_bit() {
    let Some(s) = gpu() else { return };
    let (n, k) = (4096, 4096);
    let w = Rng::new(7).vec(n * k, -0.1, 0.1);
    let (buf, exact) = upload::<Bf16>(&s, &w);
    let q = Nf4Weight::quantize(&s, &buf, n, k).unwrap();
    let host: Vec<f32> = exact.iter().map(|&v| v as f32).collect();
    let want = Nf4Host::quantize(&host, n, k);
    assert!(q.to_host(&s).unwrap() == want, "quantize");
    for dq in [false, true] {
        let (q, want) = if dq {
            (q.double_quantize(&s).unwrap(), want.double_quantize())
        } else {
            (Nf4Weight::from_host(&s, &want).unwrap(), want.clone())
        };
        let mut out = poisoned::<Bf16>(&s, n * k);
        q.dequantize(&s, &mut out).unwrap();
        let wb: Vec<u32> = want
            .dequantize()
            .iter()
            .map(|&v| Bf16::from_f32(v).to_f32().to_bits())
            .collect();
        assert!(bits(&s, &out) == wb, "dequantize (double: {dq})");
    }
}

/// `y` rows `rows` of `x·Wᵀ` in f64, for a sample of output columns.
fn check_rows(x: &[f64], wd: &[f32], got: &[f64], m: usize, n: usize, k: usize, what: &str) {
    for i in 0..m {
        for j in (0..n).step_by(97) {
            let (mut want, mut mag) = (0.0f64, 0.0f64);
            for p in 0..k {
                let t = x[i * k + p] * wd[j * k + p] as f64;
                want += t;
                mag += t.abs();
            }
            let g = got[i * n + j];
            let tol = want.abs() * 2f64.powi(-8) + 1e-5 * mag;
            assert!(
                (g - want).abs() <= tol,
                "{what}: y[{i}, {j}] = {g}, want {want}"
            );
        }
    }
}

#[test]
fn gpu_nf4_products_match_the_reference_and_rerun_bit_identically() {
    let Some(s) = gpu() else { return };
    for (n, k) in [(6144, 4096), (4096, 14336)] {
        let w = Rng::new(n as u64).vec(n * k, -0.1, 0.1);
        let host = Nf4Host::quantize(&w, n, k);
        let q = Nf4Weight::from_host(&s, &host).unwrap();
        // From DEQUANTIZED_MIN_ROWS rows Hopper dequantizes W and runs the bf16 GEMM.
        for m in [1, 16, 37, DEQUANTIZED_MIN_ROWS] {
            // More than 16 rows run on the tensor cores, which see W rounded to bf16.
            let wd: Vec<f32> = host
                .dequantize()
                .iter()
                .map(|&v| {
                    if m > 16 {
                        Bf16::from_f32(v).to_f32()
                    } else {
                        v
                    }
                })
                .collect();
            let (x, xd) = upload::<Bf16>(&s, &Rng::new(m as u64).vec(m * k, -1.0, 1.0));
            let mut y = poisoned::<Bf16>(&s, m * n);
            matmul(&s, &x, &q, &mut y, m).unwrap();
            let first = bits(&s, &y);
            check_rows(&xd, &wd, &download(&s, &y), m, n, k, "forward");
            matmul(&s, &x, &q, &mut y, m).unwrap();
            assert!(bits(&s, &y) == first, "forward rerun, {n} × {k}, m = {m}");

            // dx = dy·W, checked on a sample of columns against f64.
            let (dy, dyd) = upload::<Bf16>(&s, &Rng::new(9 + m as u64).vec(m * n, -1.0, 1.0));
            let mut dx = poisoned::<Bf16>(&s, m * k);
            matmul_input_grad(&s, &dy, &q, &mut dx, m).unwrap();
            let first = bits(&s, &dx);
            let got = download(&s, &dx);
            for i in 0..m {
                for c in (0..k).step_by(89) {
                    let (mut want, mut mag) = (0.0f64, 0.0f64);
                    for j in 0..n {
                        let t = dyd[i * n + j] * wd[j * k + c] as f64;
                        want += t;
                        mag += t.abs();
                    }
                    let g = got[i * k + c];
                    let tol = want.abs() * 2f64.powi(-8) + 1e-5 * mag;
                    assert!((g - want).abs() <= tol, "dx[{i}, {c}] = {g}, want {want}");
                }
            }
            matmul_input_grad(&s, &dy, &q, &mut dx, m).unwrap();
            assert!(
                bits(&s, &dx) == first,
                "input grad rerun, {n} × {k}, m = {m}"
            );
        }
    }
}
