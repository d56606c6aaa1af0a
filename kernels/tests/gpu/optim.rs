//! The AdamW step on the GPU at real shapes.

use crate::common_tensor::*;
use kernel_runtime::{Bf16, Buffer};
use kernels::optim::{reference as opt_ref, AdamW, AdamWConfig, AdamWState};

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
