//! The GPU suite of the elementwise, norm, cast, optimizer and clipping ops: the emulator
//! suites' checks at real shapes on CUDA device 0. Each test prints
//! `skipping: no CUDA driver/GPU present` and returns where there is none.

mod common_k1;

use common_k1::*;
use kernel_runtime::{Bf16, Buffer, Stream, F16};
use kernels::cast::{cast, Element};
use kernels::clip;
use kernels::elementwise::{self as ew, reference as ew_ref};
use kernels::norm::{self, reference};
use kernels::optim::{reference as opt_ref, AdamW, AdamWConfig, AdamWState};

/// Real shapes plus odd ones: aligned wide rows, odd widths, narrow (warp) rows, rows wider
/// than the registers hold.
const SHAPES: [(usize, usize); 5] = [(1024, 4096), (3, 4097), (515, 128), (33, 16400), (2, 1)];

fn grad_tol<T: Element>() -> Tol {
    match T::STORAGE {
        kernels::Storage::F32 => Tol {
            atol: 1e-4,
            rtol: 1e-4,
        },
        kernels::Storage::Bf16 => Tol {
            atol: 3e-2,
            rtol: 1.5e-2,
        },
    }
}

fn norms_forward<T: Element>(s: &Stream) {
    for (rows, cols) in SHAPES {
        let mut rng = Rng::new((rows * cols) as u64);
        let n = rows * cols;
        let (x, xh) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
        let (r, rh) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
        let (g, gh) = upload::<T>(s, &rng.vec(cols, 0.5, 1.5));
        let (be, bh) = upload::<T>(s, &rng.vec(cols, -0.5, 0.5));
        let what = format!("{rows}x{cols} {:?}", T::STORAGE);

        let mut y = poisoned::<T>(s, n);
        norm::rms_norm(s, &x, &g, &mut y, rows, cols, 1e-5).unwrap();
        let want = reference::rms_norm(&xh, &gh, rows, cols, 1e-5);
        assert_close(
            &format!("rms_norm {what}"),
            &download(s, &y),
            &want,
            tol_for::<T>(),
        );

        let mut sum = poisoned::<T>(s, n);
        norm::add_rms_norm(s, &x, &r, &g, &mut sum, &mut y, rows, cols, 1e-5).unwrap();
        let sw: Vec<f64> = xh
            .iter()
            .zip(&rh)
            .map(|(a, b)| T::from_f32((a + b) as f32).to_f32() as f64)
            .collect();
        let want = reference::rms_norm(&sw, &gh, rows, cols, 1e-5);
        assert_close(
            &format!("add_rms_norm {what}"),
            &download(s, &y),
            &want,
            tol_for::<T>(),
        );

        norm::layer_norm(s, &x, &g, &be, &mut y, rows, cols, 1e-5).unwrap();
        let want = reference::layer_norm(&xh, &gh, &bh, rows, cols, 1e-5);
        assert_close(
            &format!("layer_norm {what}"),
            &download(s, &y),
            &want,
            grad_tol::<T>(),
        );
    }
}

#[test]
fn gpu_norms_forward_match_reference_at_real_shapes() {
    let Some(s) = gpu() else { return };
    norms_forward::<f32>(&s);
    norms_forward::<Bf16>(&s);
}

fn norms_backward<T: Element>(s: &Stream) {
    for (rows, cols) in SHAPES {
        let mut rng = Rng::new((rows + cols) as u64);
        let n = rows * cols;
        let (x, xh) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
        let (g, gh) = upload::<T>(s, &rng.vec(cols, 0.5, 1.5));
        let (dy, dyh) = upload::<T>(s, &rng.vec(n, -1.0, 1.0));
        let what = format!("{rows}x{cols} {:?}", T::STORAGE);
        let mut ws = poisoned::<f32>(s, norm::layer_norm_backward_workspace(rows, cols));
        let (mut dx, mut dg, mut db) = (
            poisoned::<T>(s, n),
            poisoned::<T>(s, cols),
            poisoned::<T>(s, cols),
        );
        norm::rms_norm_backward(s, &x, &g, &dy, &mut dx, &mut dg, &mut ws, rows, cols, 1e-5)
            .unwrap();
        let first = (bits(s, &dx), bits(s, &dg));
        let (wdx, wdg) = reference::rms_norm_backward(&xh, &gh, &dyh, rows, cols, 1e-5);
        assert_close(
            &format!("rms dx {what}"),
            &download(s, &dx),
            &wdx,
            grad_tol::<T>(),
        );
        assert_close(
            &format!("rms dgamma {what}"),
            &download(s, &dg),
            &wdg,
            grad_tol::<T>(),
        );
        norm::rms_norm_backward(s, &x, &g, &dy, &mut dx, &mut dg, &mut ws, rows, cols, 1e-5)
            .unwrap();
        assert_eq!(
            first,
            (bits(s, &dx), bits(s, &dg)),
            "rms backward rerun {what}"
        );

        norm::layer_norm_backward(
            s, &x, &g, &dy, &mut dx, &mut dg, &mut db, &mut ws, rows, cols, 1e-5,
        )
        .unwrap();
        let (wdx, wdg, wdb) = reference::layer_norm_backward(&xh, &gh, &dyh, rows, cols, 1e-5);
        assert_close(
            &format!("ln dx {what}"),
            &download(s, &dx),
            &wdx,
            grad_tol::<T>(),
        );
        assert_close(
            &format!("ln dgamma {what}"),
            &download(s, &dg),
            &wdg,
            grad_tol::<T>(),
        );
        assert_close(
            &format!("ln dbeta {what}"),
            &download(s, &db),
            &wdb,
            grad_tol::<T>(),
        );
    }
}

#[test]
fn gpu_norm_backward_matches_reference_and_is_bit_identical() {
    let Some(s) = gpu() else { return };
    norms_backward::<f32>(&s);
    norms_backward::<Bf16>(&s);
}

fn elementwise<T: Element>(s: &Stream) {
    for n in [1, 4097, (1 << 22) + 3] {
        let mut rng = Rng::new(n as u64);
        let (a, ah) = upload::<T>(s, &rng.vec(n, -6.0, 6.0));
        let (b, bh) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
        let (d, dh) = upload::<T>(s, &rng.vec(n, -1.0, 1.0));
        let (mut o, mut o2) = (poisoned::<T>(s, n), poisoned::<T>(s, n));
        let tol = tol_for::<T>();
        let each = |f: &dyn Fn(usize) -> f64| (0..n).map(f).collect::<Vec<f64>>();
        ew::add(s, &a, &b, &mut o).unwrap();
        assert_close("add", &download(s, &o), &each(&|i| ah[i] + bh[i]), tol);
        ew::gelu_tanh(s, &a, &mut o).unwrap();
        assert_close(
            "gelu",
            &download(s, &o),
            &each(&|i| ew_ref::gelu_tanh(ah[i])),
            tol,
        );
        ew::silu(s, &a, &mut o).unwrap();
        assert_close(
            "silu",
            &download(s, &o),
            &each(&|i| ew_ref::silu(ah[i])),
            tol,
        );
        ew::swiglu(s, &a, &b, &mut o).unwrap();
        assert_close(
            "swiglu",
            &download(s, &o),
            &each(&|i| ew_ref::swiglu(ah[i], bh[i])),
            tol,
        );
        ew::swiglu_backward(s, &a, &b, &d, &mut o, &mut o2).unwrap();
        let w = each(&|i| ew_ref::swiglu_backward(ah[i], bh[i], dh[i]).0);
        assert_close("dgate", &download(s, &o), &w, tol);
        let w = each(&|i| ew_ref::swiglu_backward(ah[i], bh[i], dh[i]).1);
        assert_close("dup", &download(s, &o2), &w, tol);
    }
}

#[test]
fn gpu_elementwise_ops_match_reference() {
    let Some(s) = gpu() else { return };
    elementwise::<f32>(&s);
    elementwise::<Bf16>(&s);
}

#[test]
fn gpu_casts_round_like_the_host() {
    let Some(s) = gpu() else { return };
    let n = (1 << 22) + 5;
    let x = Rng::new(3).vec(n, -70000.0, 70000.0);
    let src = Buffer::from_host(&s, &x).unwrap();
    let mut b = Buffer::from_host(&s, &vec![Bf16::from_bits(1); n]).unwrap();
    let mut h = Buffer::from_host(&s, &vec![F16::from_bits(1); n]).unwrap();
    cast(&s, &src, &mut b).unwrap();
    cast(&s, &src, &mut h).unwrap();
    let bw: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let hw: Vec<F16> = x.iter().map(|&v| F16::from_f32(v)).collect();
    assert!(b.to_host(&s).unwrap() == bw, "f32→bf16");
    assert!(h.to_host(&s).unwrap() == hw, "f32→f16");
}

#[test]
fn gpu_adamw_matches_reference_over_many_tensors() {
    let Some(s) = gpu() else { return };
    let lens: Vec<usize> = (0..20).map(|i| 100_000 * (i + 1) + 13 * i).collect();
    let decay: Vec<bool> = (0..20).map(|i| i % 3 != 0).collect();
    let opt = AdamW::new(&s, &lens, &decay).unwrap();
    let layout = opt.layout().clone();
    let n = layout.total();
    let mut rng = Rng::new(5);
    let p = rng.vec(n, -1.0, 1.0);
    let g = rng.vec(n, -0.1, 0.1);
    let m0 = rng.vec(n, -0.01, 0.01);
    let v0 = rng.vec(n, 1e-6, 1e-3);
    let mut params = Buffer::from_host(&s, &p).unwrap();
    let grads = Buffer::from_host(&s, &rounded::<Bf16>(&g)).unwrap();
    let mut m = Buffer::from_host(&s, &m0).unwrap();
    let mut v = Buffer::from_host(&s, &v0).unwrap();
    let mut copy = poisoned::<Bf16>(&s, n);
    let cfg = AdamWConfig::default();
    let state = AdamWState {
        params: &mut params,
        grads: &grads,
        m: &mut m,
        v: &mut v,
        bf16_copy: Some(&mut copy),
        clip: None,
    };
    opt.step(&s, 5, &cfg, state).unwrap();
    let (p2, c2) = (params.to_host(&s).unwrap(), copy.to_host(&s).unwrap());
    for (t, &flag) in decay.iter().enumerate() {
        for i in layout.range(t).unwrap() {
            let gi = Bf16::from_f32(g[i]).to_f32() as f64;
            let (wp, _, _) =
                opt_ref::adamw(&cfg, 5, flag, p[i] as f64, gi, m0[i] as f64, v0[i] as f64);
            assert!(
                (p2[i] as f64 - wp).abs() <= 2e-6 * (1.0 + wp.abs()),
                "p[{i}]"
            );
            assert_eq!(c2[i], Bf16::from_f32(p2[i]), "copy[{i}]");
        }
    }
}

#[test]
fn gpu_clip_matches_reference_and_replays_from_a_graph() {
    let Some(s) = gpu() else { return };
    let n = 10_000_003;
    let x = Rng::new(6).vec(n, -1.0, 1.0);
    let xh: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let (norm_want, scale_want) = clip::reference::norm_and_scale(&xh, 1.0);
    let mut g = Buffer::from_host(&s, &x).unwrap();
    let mut ws = poisoned::<f32>(&s, clip::WORKSPACE_LEN as usize);
    let mut out = poisoned::<f32>(&s, 2);
    clip::clip_grad_norm(&s, &mut g, 1.0, &mut ws, &mut out).unwrap();
    let got = download(&s, &out);
    let tight = Tol {
        atol: 0.0,
        rtol: 1e-5,
    };
    assert_close("norm, scale", &got, &[norm_want, scale_want], tight);
    let direct = bits(&s, &g);

    let mut g2 = Buffer::from_host(&s, &x).unwrap();
    let mut out2 = poisoned::<f32>(&s, 2);
    let graph = s
        .capture(|st| {
            clip::clip_grad_norm(st, &mut g2, 1.0, &mut ws, &mut out2).map_err(|e| match e {
                kernels::Error::Runtime(r) => r,
                other => panic!("{other}"),
            })
        })
        .unwrap();
    graph.replay().unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        bits(&s, &g2),
        direct,
        "graph replay differs from the direct run"
    );
    assert_eq!(bits(&s, &out2), bits(&s, &out));
}
