//! NF4 on the emulator: the device quantizer and decoder against the CPU reference bit for
//! bit, the round-trip bound, and the fused products against f64 references at odd shapes
//! (K a multiple of 64 but not of a lane's 128-word stride; N not a multiple of 8).

mod common_tensor;

use common_tensor::*;
use kernel_dsl::Target;
use kernel_runtime::{Bf16, Buffer, Device, EmulatorOptions, Stream};
use kernels::gemm::{split_k_partials, GemmWorkspace, Math};
use kernels::quant::nf4::reference::{matmul_nn, matmul_nt, round_trip_bound, Nf4Host};
use kernels::quant::nf4::{
    dequantized_weight_elems, lora_backward, lora_gemm_shapes, matmul, matmul_gate_up,
    matmul_input_grad, matmul_input_grad_with_workspace, matmul_lora, workspace_size, Lora,
    Nf4Weight, BLOCK,
};
use kernels::Error;
use kernels::Float;

/// A weight with blocks of very different scales, one block all zeros and one with its
/// absmax negative.
fn weight(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut w = Rng::new(seed).vec(rows * cols, -1.0, 1.0);
    for (b, block) in w.chunks_mut(BLOCK).enumerate() {
        let s = [0.02f32, 1.0, 7.5, 0.3][b % 4];
        block.iter_mut().for_each(|v| *v *= s);
    }
    if w.len() >= 3 * BLOCK {
        w[BLOCK..2 * BLOCK].iter_mut().for_each(|v| *v = 0.0);
        w[2 * BLOCK + 5] = -9.0;
    }
    w
}

/// The device weight, quantized on the device from `w` rounded to `T`, and the reference
/// quantization of the same rounded values.
fn quantized<T: Float>(s: &Stream, w: &[f32], rows: usize, cols: usize) -> (Nf4Weight, Nf4Host) {
    let (buf, exact) = upload::<T>(s, w);
    let q = Nf4Weight::quantize(s, &buf, rows, cols).unwrap();
    let host: Vec<f32> = exact.iter().map(|&v| v as f32).collect();
    (q, Nf4Host::quantize(&host, rows, cols))
}

fn quantize_matches_the_reference<T: Float>() {
    let s = emulator();
    for (rows, cols) in [(1, 64), (3, 192), (5, 320)] {
        let w = weight(rows, cols, rows as u64);
        let (q, want) = quantized::<T>(&s, &w, rows, cols);
        assert_eq!(q.to_host(&s).unwrap(), want, "{rows} × {cols}");
    }
}

#[test]
fn device_quantize_of_f32_matches_the_cpu_reference_bit_for_bit() {
    quantize_matches_the_reference::<f32>();
}

#[test]
fn device_quantize_of_bf16_matches_the_cpu_reference_bit_for_bit() {
    quantize_matches_the_reference::<Bf16>();
}

fn dequantize_matches_the_reference<T: Float>(double: bool) {
    let s = emulator();
    let (rows, cols) = (5, 320);
    let w = weight(rows, cols, 11);
    let host = Nf4Host::quantize(&w, rows, cols);
    let host = if double { host.double_quantize() } else { host };
    let q = Nf4Weight::from_host(&s, &host).unwrap();
    assert_eq!(q.is_double_quantized(), double);
    assert_eq!(
        q.to_host(&s).unwrap(),
        host,
        "upload and download keep every byte"
    );
    let mut out = poisoned::<T>(&s, rows * cols);
    q.dequantize(&s, &mut out).unwrap();
    let want: Vec<u32> = host
        .dequantize()
        .iter()
        .map(|&v| T::from_f32(v).to_f32().to_bits())
        .collect();
    assert_eq!(bits(&s, &out), want);
}

#[test]
fn device_dequantize_matches_the_cpu_reference_bit_for_bit() {
    dequantize_matches_the_reference::<f32>(false);
    dequantize_matches_the_reference::<Bf16>(false);
}

#[test]
fn double_quantized_dequantize_matches_the_cpu_reference_bit_for_bit() {
    dequantize_matches_the_reference::<f32>(true);
    dequantize_matches_the_reference::<Bf16>(true);
}

#[test]
fn device_double_quantize_matches_the_reference() {
    let s = emulator();
    let (rows, cols) = (3, 192);
    let w = weight(rows, cols, 4);
    let (q, host) = quantized::<f32>(&s, &w, rows, cols);
    let dq = q.double_quantize(&s).unwrap();
    assert_eq!(dq.to_host(&s).unwrap(), host.double_quantize());
    assert!(matches!(
        dq.double_quantize(&s),
        Err(Error::Unsupported { .. })
    ));
}

#[test]
fn round_trip_error_is_within_half_the_widest_code_gap() {
    let (rows, cols) = (4, 256);
    let w = weight(rows, cols, 9);
    let back = Nf4Host::quantize(&w, rows, cols).dequantize();
    for (b, (wb, qb)) in w.chunks(BLOCK).zip(back.chunks(BLOCK)).enumerate() {
        let a = wb.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        // The bound plus the f32 rounding of `v · (1/a)` and of the decoded product.
        let bound = round_trip_bound(a) + 4.0 * f32::EPSILON * a;
        for (x, y) in wb.iter().zip(qb) {
            assert!(
                (x - y).abs() <= bound,
                "block {b}: {x} → {y}, bound {bound}"
            );
        }
    }
    // The bound is reached: a value at a threshold is half a gap from both neighbours.
    let mut edge = vec![0.5f32; 64];
    edge[0] = -1.0;
    edge[1] = -0.848_096_4;
    let back = Nf4Host::quantize(&edge, 1, 64).dequantize();
    assert!((back[1] - edge[1]).abs() > 0.99 * round_trip_bound(1.0));
}

/// The weight the kernel for `m` rows of `T` multiplies by: more than 16 rows of bf16 go
/// through the tensor cores, which see W rounded to bf16 (as bitsandbytes' dequantization
/// writes it); otherwise the f32 products `code · absmax`.
fn seen_weight<T: Float>(host: &Nf4Host, m: usize) -> Vec<f64> {
    let tensor_cores = T::TYPE == kernels::FloatType::Bf16 && m > 16;
    host.dequantize()
        .iter()
        .map(|&v| {
            if tensor_cores {
                Bf16::from_f32(v).to_f32() as f64
            } else {
                v as f64
            }
        })
        .collect()
}

/// Tolerance for a product accumulated in f32 and stored as `T`.
fn close<T: Float>(got: f64, want: f64, magnitude: f64) -> bool {
    let store = if T::TYPE == kernels::FloatType::Bf16 {
        want.abs() * 2f64.powi(-8)
    } else {
        0.0
    };
    (got - want).abs() <= store + 1e-5 * magnitude + 1e-30
}

fn forward_matches_the_reference<T: Float>(double: bool) {
    let s = emulator();
    let (n, k) = (13, 192);
    let w = weight(n, k, 21);
    let host = Nf4Host::quantize(&w, n, k);
    let host = if double { host.double_quantize() } else { host };
    let q = Nf4Weight::from_host(&s, &host).unwrap();
    for m in [1, 3, 17] {
        let wd = seen_weight::<T>(&host, m);
        let wabs: Vec<f64> = wd.iter().map(|v| v.abs()).collect();
        let (x, xd) = upload::<T>(&s, &Rng::new(m as u64).vec(m * k, -2.0, 2.0));
        let mut y = poisoned::<T>(&s, m * n);
        matmul(&s, &x, &q, &mut y, m).unwrap();
        let want = matmul_nt(&xd, &wd, m, n, k);
        let xabs: Vec<f64> = xd.iter().map(|v| v.abs()).collect();
        let mag = matmul_nt(&xabs, &wabs, m, n, k);
        let got = download(&s, &y);
        for i in 0..m * n {
            assert!(
                close::<T>(got[i], want[i], mag[i]),
                "m = {m}, element {i}: {} vs {}",
                got[i],
                want[i]
            );
        }
    }
}

#[test]
fn forward_matches_the_f64_reference_at_odd_shapes() {
    forward_matches_the_reference::<f32>(false);
    forward_matches_the_reference::<Bf16>(false);
}

#[test]
fn forward_through_double_quantized_scales_matches_the_f64_reference() {
    forward_matches_the_reference::<f32>(true);
}

/// `L(x) = Σ g ⊙ (x·Wᵀ)` in f64; its gradient in `x` is `g·W`.
fn loss(x: &[f64], w: &[f64], g: &[f64], m: usize, n: usize, k: usize) -> f64 {
    matmul_nt(x, w, m, n, k)
        .iter()
        .zip(g)
        .map(|(y, g)| y * g)
        .sum()
}

fn input_grad_matches_finite_differences<T: Float>() {
    let s = emulator();
    let (n, k) = (7, 192);
    let w = weight(n, k, 5);
    let (q, host) = quantized::<f32>(&s, &w, n, k);
    for m in [1, 3, 17] {
        let wd = seen_weight::<T>(&host, m);
        let (dy, g) = upload::<T>(&s, &Rng::new(40 + m as u64).vec(m * n, -1.0, 1.0));
        let mut dx = poisoned::<T>(&s, m * k);
        matmul_input_grad(&s, &dy, &q, &mut dx, m).unwrap();
        let got = download(&s, &dx);
        let want = matmul_nn(&g, &wd, m, n, k);
        let gabs: Vec<f64> = g.iter().map(|v| v.abs()).collect();
        let wabs: Vec<f64> = wd.iter().map(|v| v.abs()).collect();
        let mag = matmul_nn(&gabs, &wabs, m, n, k);
        for i in 0..m * k {
            assert!(close::<T>(got[i], want[i], mag[i]), "m = {m}, element {i}");
        }
        // Central differences of the reference loss at a few inputs.
        let x0 = Rng::new(m as u64).vec(m * k, -1.0, 1.0);
        let x0: Vec<f64> = x0.iter().map(|&v| v as f64).collect();
        for i in [0, k - 1, m * k / 2, m * k - 1] {
            let h = 1e-3;
            let (mut xp, mut xm) = (x0.clone(), x0.clone());
            xp[i] += h;
            xm[i] -= h;
            let fd = (loss(&xp, &wd, &g, m, n, k) - loss(&xm, &wd, &g, m, n, k)) / (2.0 * h);
            assert!(
                close::<T>(got[i], fd, mag[i]),
                "m = {m}, x[{i}]: {} vs finite difference {fd}",
                got[i]
            );
        }
    }
}

#[test]
fn input_grad_matches_finite_differences_of_the_reference() {
    input_grad_matches_finite_differences::<f32>();
    input_grad_matches_finite_differences::<Bf16>();
}

fn lora_matches_the_reference<T: Float>() {
    let s = emulator();
    let (m, n, k, r) = (3, 13, 128, 4);
    let w = weight(n, k, 8);
    let (q, host) = quantized::<f32>(&s, &w, n, k);
    let wd: Vec<f64> = host.dequantize().iter().map(|&v| v as f64).collect();
    let (x, xd) = upload::<T>(&s, &Rng::new(1).vec(m * k, -1.0, 1.0));
    let (a, ad) = upload::<T>(&s, &Rng::new(2).vec(r * k, -0.5, 0.5));
    let (b, bd) = upload::<T>(&s, &Rng::new(3).vec(n * r, -0.5, 0.5));
    let scale = 0.75f32;
    let lora = Lora {
        a: &a,
        b: &b,
        rank: r,
        scale,
    };
    let mut t = poisoned::<T>(&s, m * r);
    let mut y = poisoned::<T>(&s, m * n);
    matmul_lora(&s, &x, &q, &lora, &mut t, &mut y, m, None).unwrap();
    // The reference uses `t` as stored, the rounding the device's second GEMM saw.
    let td = download(&s, &t);
    let want_t = matmul_nt(&xd, &ad, m, r, k);
    for i in 0..m * r {
        assert!(close::<T>(td[i], want_t[i], 2.0 * k as f64), "t[{i}]");
    }
    let base = matmul_nt(&xd, &wd, m, n, k);
    let adapt = matmul_nt(&td, &bd, m, n, r);
    let got = download(&s, &y);
    for i in 0..m * n {
        let want = base[i] + scale as f64 * adapt[i];
        assert!(
            close::<T>(got[i], want, 3.0 * k as f64),
            "y[{i}]: {} vs {want}",
            got[i]
        );
    }

    // The adapter gradients against the f64 formulas.
    let (dy, g) = upload::<T>(&s, &Rng::new(4).vec(m * n, -1.0, 1.0));
    let mut dx = poisoned::<T>(&s, m * k);
    matmul_input_grad(&s, &dy, &q, &mut dx, m).unwrap();
    let (mut u, mut da, mut db) = (
        poisoned::<T>(&s, m * r),
        poisoned::<T>(&s, r * k),
        poisoned::<T>(&s, n * r),
    );
    lora_backward(
        &s, &dy, &x, &t, &lora, &mut u, &mut da, &mut db, &mut dx, m, n, None,
    )
    .unwrap();
    let sd = scale as f64;
    let ud = download(&s, &u);
    for i in 0..m {
        for j in 0..r {
            let want: f64 = (0..n).map(|p| sd * g[i * n + p] * bd[p * r + j]).sum();
            assert!(close::<T>(ud[i * r + j], want, n as f64), "u[{i}, {j}]");
        }
    }
    let dbd = download(&s, &db);
    for p in 0..n {
        for j in 0..r {
            let want: f64 = (0..m).map(|i| sd * g[i * n + p] * td[i * r + j]).sum();
            assert!(
                close::<T>(dbd[p * r + j], want, m as f64 * 4.0),
                "db[{p}, {j}]"
            );
        }
    }
    let dad = download(&s, &da);
    for j in 0..r {
        for c in 0..k {
            let want: f64 = (0..m).map(|i| ud[i * r + j] * xd[i * k + c]).sum();
            assert!(
                close::<T>(dad[j * k + c], want, m as f64 * 4.0),
                "da[{j}, {c}]"
            );
        }
    }
    let dxd = download(&s, &dx);
    let base = matmul_nn(&g, &wd, m, n, k);
    for i in 0..m {
        for c in 0..k {
            let lo: f64 = (0..r).map(|j| ud[i * r + j] * ad[j * k + c]).sum();
            let want = base[i * k + c] + lo;
            assert!(
                close::<T>(dxd[i * k + c], want, 8.0 * n as f64),
                "dx[{i}, {c}]: {} vs {want}",
                dxd[i * k + c]
            );
        }
    }
}

#[test]
fn lora_forward_and_adapter_gradients_match_the_reference() {
    lora_matches_the_reference::<f32>();
}

/// The adapter's products and gradients, recorded in a capture with a workspace and replayed,
/// against direct calls without one: the same split, so the same bits. Outside a workspace a
/// capture keeps whole tiles, so this is what lets a captured QLoRA step split k.
#[test]
fn a_workspace_splits_the_adapter_products_inside_a_capture_with_the_bits_of_direct_calls() {
    // Split-k is the TMA GEMM's, so bf16 on an emulated Hopper of 132 SMs.
    let hopper = EmulatorOptions::new().target(Target::Sm90a).sm_count(132);
    let s = Device::emulator_with(hopper).stream().unwrap();
    let (m, n, k, r) = (1024, 24, 512, 8);
    let w = weight(n, k, 9);
    let (q, _) = quantized::<Bf16>(&s, &w, n, k);
    let (x, _) = upload::<Bf16>(&s, &Rng::new(5).vec(m * k, -1.0, 1.0));
    let (a, _) = upload::<Bf16>(&s, &Rng::new(6).vec(r * k, -0.5, 0.5));
    let (b, _) = upload::<Bf16>(&s, &Rng::new(7).vec(n * r, -0.5, 0.5));
    let (dy, _) = upload::<Bf16>(&s, &Rng::new(8).vec(m * n, -1.0, 1.0));
    let lora = Lora {
        a: &a,
        b: &b,
        rank: r,
        scale: 0.5,
    };
    // x·Aᵀ, t·Bᵀ, dB, u, dA, u·A.
    let shapes = lora_gemm_shapes(m, n, k, r);
    let split = |shape| split_k_partials::<Bf16, Bf16>(&s, shape, Math::Fp32).unwrap() > 0;
    assert!(
        split(&shapes[0]) && split(&shapes[4]),
        "the forward's x·Aᵀ and the backward's dA split k at these shapes"
    );
    // The adapter products' partials, and room for the base weight dequantized to bf16 (1024
    // rows on Hopper take the `wgmma` GEMM through it).
    assert_eq!(dequantized_weight_elems::<Bf16>(&s, m, n, k), n * k);
    let size = workspace_size::<Bf16>(&s, m, n, k, r).unwrap();
    let mut ws = GemmWorkspace::with_size(&s, size).unwrap();

    // [t, y, u, dA, dB, dx], written by a forward and a backward through `ws` or without one.
    let run = |s: &Stream, mut ws: Option<&mut GemmWorkspace>, o: &mut [Buffer<Bf16>; 6]| {
        let [t, y, u, da, db, dx] = o;
        matmul_lora(s, &x, &q, &lora, t, y, m, ws.as_deref_mut())?;
        match ws.as_deref_mut() {
            Some(ws) => matmul_input_grad_with_workspace(s, &dy, &q, dx, m, ws)?,
            None => matmul_input_grad(s, &dy, &q, dx, m)?,
        }
        lora_backward(s, &dy, &x, t, &lora, u, da, db, dx, m, n, ws)
    };
    let fresh = || [m * r, m * n, m * r, r * k, n * r, m * k].map(|len| poisoned::<Bf16>(&s, len));
    let mut direct = fresh();
    run(&s, None, &mut direct).unwrap();
    // Loads the kernels outside the capture, as a step's warm-up does.
    run(&s, Some(&mut ws), &mut fresh()).unwrap();
    let capture = |ws: Option<&mut GemmWorkspace>, out: &mut [Buffer<Bf16>; 6]| {
        let mut recorded = Ok(());
        let graph = s
            .capture(|c| {
                recorded = run(c, ws, out);
                Ok(())
            })
            .unwrap();
        recorded.unwrap();
        graph.replay().unwrap();
        graph.launches()
    };
    let mut replayed = fresh();
    let launches = capture(Some(&mut ws), &mut replayed);
    // Without a workspace the capture keeps whole tiles (each split product is one launch
    // fewer, its reduce) and the fused NF4 kernel (one launch for a dequantization and a GEMM).
    assert!(
        launches >= capture(None, &mut fresh()) + 2,
        "the captured products split"
    );
    for (i, (want, got)) in direct.iter().zip(&replayed).enumerate() {
        let (want, got) = (download(&s, want), download(&s, got));
        assert!(want.iter().all(|v| v.is_finite()), "output {i} written");
        assert!(
            want.iter()
                .zip(&got)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "output {i} of [t, y, u, dA, dB, dx] differs"
        );
    }
}

#[test]
fn bad_shapes_are_errors_before_anything_runs() {
    let s = emulator();
    let w = Buffer::from_host(&s, &vec![1.0f32; 3 * 96]).unwrap();
    let err = Nf4Weight::quantize(&s, &w, 3, 96).err().unwrap();
    assert!(err.to_string().contains("multiple of 64"), "{err}");
    let w = Buffer::from_host(&s, &vec![1.0f32; 2 * 64]).unwrap();
    let q = Nf4Weight::quantize(&s, &w, 2, 64).unwrap();
    let x = Buffer::from_host(&s, &vec![1.0f32; 63]).unwrap();
    let mut y = poisoned::<f32>(&s, 2);
    assert!(matches!(
        matmul(&s, &x, &q, &mut y, 1),
        Err(Error::Length { buffer: "x", .. })
    ));
    assert!(
        download(&s, &y).iter().all(|v| v.is_nan()),
        "nothing written"
    );
    let dy = Buffer::from_host(&s, &[1.0f32; 2]).unwrap();
    let mut dx = poisoned::<f32>(&s, 65);
    assert!(matches!(
        matmul_input_grad(&s, &dy, &q, &mut dx, 1),
        Err(Error::Length { buffer: "dx", .. })
    ));
}

fn gate_up_matches_the_reference<T: Float>() {
    let s = emulator();
    let (n, k) = (11, 192);
    let (g, u) = (weight(n, k, 30), weight(n, k, 31));
    let (qg, hg) = quantized::<f32>(&s, &g, n, k);
    let (qu, hu) = quantized::<f32>(&s, &u, n, k);
    let gd: Vec<f64> = hg.dequantize().iter().map(|&v| v as f64).collect();
    let ud: Vec<f64> = hu.dequantize().iter().map(|&v| v as f64).collect();
    for (m, silu) in [(1, false), (3, false), (16, false), (3, true), (17, true)] {
        let (x, xd) = upload::<T>(&s, &Rng::new(60 + m as u64).vec(m * k, -1.0, 1.0));
        let outputs = if silu { 1 } else { 2 };
        let mut y = poisoned::<T>(&s, outputs * m * n);
        matmul_gate_up(&s, &x, &qg, &qu, &mut y, m, silu).unwrap();
        let got = download(&s, &y);
        let (gy, uy) = (matmul_nt(&xd, &gd, m, n, k), matmul_nt(&xd, &ud, m, n, k));
        let xabs: Vec<f64> = xd.iter().map(|v| v.abs()).collect();
        let gabs: Vec<f64> = gd.iter().map(|v| v.abs()).collect();
        let uabs: Vec<f64> = ud.iter().map(|v| v.abs()).collect();
        let (gm, um) = (
            matmul_nt(&xabs, &gabs, m, n, k),
            matmul_nt(&xabs, &uabs, m, n, k),
        );
        for i in 0..m * n {
            if silu {
                let sg = gy[i] / (1.0 + (-gy[i]).exp());
                let want = sg * uy[i];
                let mag = (gm[i] * uy[i].abs() + um[i] * sg.abs()) * 2.0;
                assert!(close::<T>(got[i], want, mag), "m = {m}, silu, {i}");
            } else {
                assert!(close::<T>(got[i], gy[i], gm[i]), "m = {m}, gate {i}");
                assert!(close::<T>(got[m * n + i], uy[i], um[i]), "m = {m}, up {i}");
            }
        }
    }
}

#[test]
fn fused_gate_up_matches_the_f64_reference() {
    gate_up_matches_the_reference::<f32>();
    gate_up_matches_the_reference::<Bf16>();
}

/// On Hopper, from `DEQUANTIZED_MIN_ROWS` bf16 rows, the forward and the input gradient go
/// through a dequantized bf16 copy of W and the `wgmma` GEMM: the f64 reference's result
/// within bf16 rounding, the bits of dequantizing and calling `gemm` by hand; inside a graph
/// capture (which cannot allocate the copy) they take the fused kernel, with its bits. (Which
/// route runs where is `ops.rs`'s unit test; on the emulator the two routes may agree.)
#[test]
fn many_rows_on_hopper_go_through_a_dequantized_copy_and_the_wgmma_gemm() {
    use kernels::gemm::{gemm, Epilogue, GemmShape, Layout};
    use kernels::quant::nf4::{fused_tensor_core_product, DEQUANTIZED_MIN_ROWS};
    let s = Device::emulator_for(Target::Sm90a).stream().unwrap();
    let (m, n, k) = (DEQUANTIZED_MIN_ROWS, 40, 192);
    let w = weight(n, k, 31);
    let (q, host) = quantized::<f32>(&s, &w, n, k);
    let wd = seen_weight::<Bf16>(&host, m);
    let wabs: Vec<f64> = wd.iter().map(|v| v.abs()).collect();
    let mut dense = Buffer::<Bf16>::zeros(&s, n * k).unwrap();
    q.dequantize(&s, &mut dense).unwrap();
    let none = Epilogue::default();
    for transposed in [false, true] {
        let (x_cols, y_cols) = if transposed { (n, k) } else { (k, n) };
        let (x, xd) = upload::<Bf16>(&s, &Rng::new(32).vec(m * x_cols, -2.0, 2.0));
        let xabs: Vec<f64> = xd.iter().map(|v| v.abs()).collect();
        let mut y = poisoned::<Bf16>(&s, m * y_cols);
        let (want, mag, shape) = if transposed {
            matmul_input_grad(&s, &x, &q, &mut y, m).unwrap();
            (
                matmul_nn(&xd, &wd, m, n, k),
                matmul_nn(&xabs, &wabs, m, n, k),
                GemmShape::new(Layout::Nn, m, k, n),
            )
        } else {
            matmul(&s, &x, &q, &mut y, m).unwrap();
            (
                matmul_nt(&xd, &wd, m, n, k),
                matmul_nt(&xabs, &wabs, m, n, k),
                GemmShape::new(Layout::Nt, m, n, k),
            )
        };
        let got = download(&s, &y);
        for i in 0..m * y_cols {
            assert!(
                close::<Bf16>(got[i], want[i], mag[i]),
                "transposed {transposed}, element {i}: {} vs {}",
                got[i],
                want[i]
            );
        }
        let mut by_hand = poisoned::<Bf16>(&s, m * y_cols);
        gemm(&s, &shape, &x, &dense, &mut by_hand, &none, Math::Fp32).unwrap();
        assert!(
            bits(&s, &y) == bits(&s, &by_hand),
            "transposed {transposed}: not gemm's bits"
        );
        let mut fused = poisoned::<Bf16>(&s, m * y_cols);
        fused_tensor_core_product(&s, &x, &q, &mut fused, m, transposed).unwrap();
        let mut captured = poisoned::<Bf16>(&s, m * y_cols);
        let mut recorded = Ok(());
        let graph = s
            .capture(|c| {
                recorded = if transposed {
                    matmul_input_grad(c, &x, &q, &mut captured, m)
                } else {
                    matmul(c, &x, &q, &mut captured, m)
                };
                Ok(())
            })
            .unwrap();
        recorded.unwrap();
        graph.replay().unwrap();
        assert!(
            bits(&s, &captured) == bits(&s, &fused),
            "transposed {transposed}: not fused"
        );
    }
}
