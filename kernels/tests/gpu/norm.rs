//! RMSNorm, the fused residual RMSNorm and LayerNorm, forward and backward on the GPU at real shapes.

use crate::common_tensor::*;
use kernel_runtime::{Bf16, Stream};
use kernels::norm::{self, reference};
use kernels::Float;

/// Real shapes plus odd ones: aligned wide rows, odd widths, narrow (warp) rows, rows wider
/// than the registers hold (in vectors, and one element at a time).
const SHAPES: [(usize, usize); 6] = [
    (1024, 4096),
    (3, 4097),
    (515, 128),
    (33, 16400),
    (2, 1),
    (5, 13001),
];

fn grad_tol<T: Float>() -> Tol {
    match T::TYPE {
        kernels::FloatType::F32 => Tol {
            atol: 1e-4,
            rtol: 1e-4,
        },
        kernels::FloatType::Bf16 => Tol {
            atol: 3e-2,
            rtol: 1.5e-2,
        },
        kernels::FloatType::F16 => unreachable!("these ops have no f16 kernels"),
    }
}

fn norms_forward<T: Float>(s: &Stream) {
    for (rows, cols) in SHAPES {
        let mut rng = Rng::new((rows * cols) as u64);
        let n = rows * cols;
        let (x, xh) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
        let (r, rh) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
        let (g, gh) = upload::<T>(s, &rng.vec(cols, 0.5, 1.5));
        let (be, bh) = upload::<T>(s, &rng.vec(cols, -0.5, 0.5));
        let what = format!("{rows}x{cols} {:?}", T::TYPE);

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

fn norms_backward<T: Float>(s: &Stream) {
    for (rows, cols) in SHAPES {
        let mut rng = Rng::new((rows + cols) as u64);
        let n = rows * cols;
        let (x, xh) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
        let (g, gh) = upload::<T>(s, &rng.vec(cols, 0.5, 1.5));
        let (dy, dyh) = upload::<T>(s, &rng.vec(n, -1.0, 1.0));
        let what = format!("{rows}x{cols} {:?}", T::TYPE);
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
