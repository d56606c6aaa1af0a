//! Gradient clipping on the GPU at real shapes.

use crate::common_tensor::*;
use kernel_runtime::Buffer;
use kernels::clip;

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
    // Every gradient is scaled by the device's scale, one f32 product each.
    let scaled: Vec<u32> = x.iter().map(|&v| (v * got[1] as f32).to_bits()).collect();
    let direct = bits(&s, &g);
    assert!(
        direct == scaled,
        "the scaled gradients differ from x · scale"
    );

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
