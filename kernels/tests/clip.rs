//! Gradient clipping on the emulator against the f64 reference.

mod common_tensor;

use common_tensor::*;
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::clip::{self, reference, WORKSPACE_LEN};
use kernels::Float;

const LENGTHS: [usize; 6] = [1, 7, 33, 4097, 70_001, 300_000];

fn buffers(stream: &Stream) -> (Buffer<f32>, Buffer<f32>) {
    (
        poisoned::<f32>(stream, WORKSPACE_LEN as usize),
        poisoned::<f32>(stream, 2),
    )
}

fn clip_case<T: Float>(n: usize, max_norm: f32, seed: u64) -> Vec<u32> {
    let stream = emulator();
    let (mut g, gh) = upload::<T>(&stream, &Rng::new(seed).vec(n, -1.0, 1.0));
    let (mut ws, mut out) = buffers(&stream);
    clip::clip_grad_norm(&stream, &mut g, max_norm, &mut ws, &mut out).unwrap();
    let (norm, scale) = reference::norm_and_scale(&gh, max_norm as f64);
    let got = download(&stream, &out);
    let what = format!("clip n={n} {:?}", T::TYPE);
    let tight = Tol {
        atol: 0.0,
        rtol: 1e-5,
    };
    assert_close(
        &format!("{what} [norm, scale]"),
        &got,
        &[norm, scale],
        tight,
    );
    let want: Vec<f64> = if scale < 1.0 {
        gh.iter().map(|v| v * got[1]).collect()
    } else {
        gh.clone()
    };
    assert_close(&what, &download(&stream, &g), &want, tol_for::<T>());
    bits(&stream, &g)
}

#[test]
fn clip_grad_norm_matches_reference_at_odd_lengths() {
    for n in LENGTHS {
        // Norms run from 0.5 to about 300; clip at 1 scales every case down.
        clip_case::<f32>(n, 0.25, n as u64);
        clip_case::<Bf16>(n, 0.25, n as u64 + 1);
    }
}

/// Past what the capped grid covers in one trip (1024 blocks × 256 threads × two vectors of 4
/// f32), so the scaling loop takes a second trip, and past a whole vector, so the scalar tail
/// runs too.
#[test]
fn clip_grad_norm_scales_every_gradient_over_several_trips() {
    clip_case::<f32>(3 * (1 << 20) + 13, 0.25, 11);
}

#[test]
fn clip_grad_norm_leaves_small_gradients_bit_identical() {
    for n in LENGTHS {
        let stream = emulator();
        let x = Rng::new(n as u64 + 2).vec(n, -1.0, 1.0);
        let mut g = Buffer::from_host(&stream, &x).unwrap();
        let (mut ws, mut out) = buffers(&stream);
        clip::clip_grad_norm(&stream, &mut g, 1e6, &mut ws, &mut out).unwrap();
        assert_eq!(g.to_host(&stream).unwrap(), x, "n = {n}");
        assert_eq!(out.to_host(&stream).unwrap()[1], 1.0);
    }
}

#[test]
fn grad_norm_reports_without_scaling() {
    let stream = emulator();
    let x = Rng::new(4).vec(5000, -1.0, 1.0);
    let g = Buffer::from_host(&stream, &x).unwrap();
    let (mut ws, mut out) = buffers(&stream);
    clip::grad_norm(&stream, &g, 0.5, &mut ws, &mut out).unwrap();
    let xh: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let (norm, scale) = reference::norm_and_scale(&xh, 0.5);
    let tight = Tol {
        atol: 0.0,
        rtol: 1e-5,
    };
    assert_close("grad_norm", &download(&stream, &out), &[norm, scale], tight);
    assert_eq!(g.to_host(&stream).unwrap(), x);
}

#[test]
fn clip_grad_norm_is_bit_identical_across_runs() {
    assert_eq!(
        clip_case::<f32>(300_000, 0.5, 8),
        clip_case::<f32>(300_000, 0.5, 8)
    );
}

#[test]
fn clip_grad_norm_replays_from_a_captured_graph() {
    let stream = emulator();
    let x = Rng::new(10).vec(20_000, -1.0, 1.0);
    let mut direct = Buffer::from_host(&stream, &x).unwrap();
    let (mut ws, mut out) = buffers(&stream);
    clip::clip_grad_norm(&stream, &mut direct, 0.5, &mut ws, &mut out).unwrap();

    let mut g = Buffer::from_host(&stream, &x).unwrap();
    let (mut ws2, mut out2) = buffers(&stream);
    let graph = stream
        .capture(|s| {
            clip::clip_grad_norm(s, &mut g, 0.5, &mut ws2, &mut out2).map_err(|e| match e {
                kernels::Error::Runtime(r) => r,
                other => panic!("{other}"),
            })
        })
        .unwrap();
    assert_eq!(graph.launches(), 3);
    assert_eq!(
        g.to_host(&stream).unwrap(),
        x,
        "capture must not run the kernels"
    );
    graph.replay().unwrap();
    assert_eq!(bits(&stream, &g), bits(&stream, &direct));
    assert_eq!(bits(&stream, &out2), bits(&stream, &out));
}

#[test]
fn clip_grad_norm_leaves_non_finite_gradients_alone_and_reports_the_norm() {
    let stream = emulator();
    let mut x = Rng::new(12).vec(100, -1.0, 1.0);
    x[17] = f32::INFINITY;
    let mut g = Buffer::from_host(&stream, &x).unwrap();
    let (mut ws, mut out) = buffers(&stream);
    clip::clip_grad_norm(&stream, &mut g, 1.0, &mut ws, &mut out).unwrap();
    assert_eq!(out.to_host(&stream).unwrap()[0], f32::INFINITY);
    assert_eq!(g.to_host(&stream).unwrap(), x);
}

#[test]
fn clip_rejects_bad_arguments_before_launching() {
    let stream = emulator();
    let mut g = Buffer::from_host(&stream, &[1.0f32, 2.0]).unwrap();
    let (mut ws, mut out) = buffers(&stream);
    let err = clip::clip_grad_norm(&stream, &mut g, 0.0, &mut ws, &mut out).unwrap_err();
    assert!(err.to_string().contains("max_norm is 0"), "{err}");
    let mut short = poisoned::<f32>(&stream, 3);
    let err = clip::clip_grad_norm(&stream, &mut g, 1.0, &mut short, &mut out).unwrap_err();
    assert!(err.to_string().contains("`workspace` holds 3"), "{err}");
    let mut one = poisoned::<f32>(&stream, 1);
    let err = clip::clip_grad_norm(&stream, &mut g, 1.0, &mut ws, &mut one).unwrap_err();
    assert!(err.to_string().contains("`norm_scale` holds 1"), "{err}");
    assert_eq!(g.to_host(&stream).unwrap(), vec![1.0, 2.0]);
    assert!(download(&stream, &out).iter().all(|v| v.is_nan()));
}
