//! The casts on the GPU at real shapes, against the host's conversions.

use crate::common_tensor::*;
use kernel_runtime::{Bf16, Buffer, F16};
use kernels::cast::cast;

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

    // Widening back, and the cross casts.
    let mut f = Buffer::from_host(&s, &vec![f32::NAN; n]).unwrap();
    cast(&s, &b, &mut f).unwrap();
    let want: Vec<f32> = bw.iter().map(|v| v.to_f32()).collect();
    assert!(f.to_host(&s).unwrap() == want, "bf16→f32");
    let mut hb = Buffer::from_host(&s, &vec![F16::from_bits(1); n]).unwrap();
    cast(&s, &b, &mut hb).unwrap();
    let want: Vec<F16> = bw.iter().map(|v| F16::from_f32(v.to_f32())).collect();
    assert!(hb.to_host(&s).unwrap() == want, "bf16→f16");
    let mut copy = Buffer::from_host(&s, &vec![Bf16::from_bits(1); n]).unwrap();
    cast(&s, &b, &mut copy).unwrap();
    assert!(copy.to_host(&s).unwrap() == bw, "bf16→bf16");
}
