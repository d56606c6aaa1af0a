//! Casts on the emulator against the host conversions (round to nearest even).

mod common_tensor;

use common_tensor::*;
use kernel_runtime::{Bf16, Buffer, F16};
use kernels::cast::cast;
use kernels::Float;

const LENGTHS: [usize; 6] = [1, 7, 8, 33, 4097, 10_000];

/// Inputs that exercise rounding: random values, exact ties, specials and out-of-range ones.
fn inputs(n: usize, seed: u64) -> Vec<f32> {
    let mut v = Rng::new(seed).vec(n, -300.0, 300.0);
    let specials = [
        f32::from_bits(0x3f80_8000), // tie between bf16 neighbours: rounds to even
        f32::from_bits(0x3f81_8000),
        1.0 + f32::powi(2.0, -11), // f16 tie
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e30,
        -7e-8,
        65520.0, // just rounds to f16 infinity
    ];
    for (slot, s) in v.iter_mut().zip(specials) {
        *slot = s;
    }
    v
}

#[test]
fn f32_to_bf16_rounds_to_nearest_even_like_the_host() {
    let stream = emulator();
    for n in LENGTHS {
        let x = inputs(n, n as u64);
        let src = Buffer::from_host(&stream, &x).unwrap();
        let mut dst = Buffer::from_host(&stream, &vec![Bf16::from_bits(0x7fc1); n]).unwrap();
        cast(&stream, &src, &mut dst).unwrap();
        let want: Vec<u16> = x.iter().map(|&v| Bf16::from_f32(v).to_bits()).collect();
        let got: Vec<u16> = dst
            .to_host(&stream)
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got, want, "n = {n}");
    }
}

#[test]
fn f32_to_f16_rounds_to_nearest_even_like_the_host() {
    let stream = emulator();
    for n in LENGTHS {
        let x = inputs(n, n as u64 + 1);
        let src = Buffer::from_host(&stream, &x).unwrap();
        let mut dst = Buffer::from_host(&stream, &vec![F16::from_bits(0x7e01); n]).unwrap();
        cast(&stream, &src, &mut dst).unwrap();
        let want: Vec<u16> = x.iter().map(|&v| F16::from_f32(v).to_bits()).collect();
        let got: Vec<u16> = dst
            .to_host(&stream)
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got, want, "n = {n}");
    }
}

#[test]
fn widening_and_cross_casts_are_exact_where_the_host_is() {
    let stream = emulator();
    for n in LENGTHS {
        let x = inputs(n, n as u64 + 2);
        let b: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
        let h: Vec<F16> = x.iter().map(|&v| F16::from_f32(v)).collect();
        let (bsrc, hsrc) = (
            Buffer::from_host(&stream, &b).unwrap(),
            Buffer::from_host(&stream, &h).unwrap(),
        );
        let mut f = Buffer::from_host(&stream, &vec![f32::NAN; n]).unwrap();
        cast(&stream, &bsrc, &mut f).unwrap();
        let want: Vec<u32> = b.iter().map(|v| v.to_f32().to_bits()).collect();
        let got: Vec<u32> = f
            .to_host(&stream)
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got, want, "bf16→f32, n = {n}");

        cast(&stream, &hsrc, &mut f).unwrap();
        let want: Vec<u32> = h.iter().map(|v| v.to_f32().to_bits()).collect();
        let got: Vec<u32> = f
            .to_host(&stream)
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got, want, "f16→f32, n = {n}");

        let mut hb = Buffer::from_host(&stream, &vec![F16::from_bits(0x7e01); n]).unwrap();
        cast(&stream, &bsrc, &mut hb).unwrap();
        let want: Vec<u16> = b
            .iter()
            .map(|v| F16::from_f32(v.to_f32()).to_bits())
            .collect();
        let got: Vec<u16> = hb
            .to_host(&stream)
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got, want, "bf16→f16, n = {n}");
    }
}

#[test]
fn same_type_cast_copies_every_element() {
    let stream = emulator();
    for n in LENGTHS {
        let x = Rng::new(9).vec(n, -1.0, 1.0);
        let src = Buffer::from_host(&stream, &x).unwrap();
        let mut dst = Buffer::from_host(&stream, &vec![f32::NAN; n]).unwrap();
        cast(&stream, &src, &mut dst).unwrap();
        assert_eq!(dst.to_host(&stream).unwrap(), x, "n = {n}");
    }
}

#[test]
fn cast_rejects_a_length_mismatch_before_writing() {
    let stream = emulator();
    let src = Buffer::from_host(&stream, &[1.0f32; 5]).unwrap();
    let mut dst = Buffer::from_host(&stream, &[Bf16::from_bits(0x7fc1); 4]).unwrap();
    let err = cast(&stream, &src, &mut dst).unwrap_err();
    assert!(
        err.to_string().contains("`dst` holds 4 elements but 5"),
        "{err}"
    );
    assert!(dst
        .to_host(&stream)
        .unwrap()
        .iter()
        .all(|v| v.to_bits() == 0x7fc1));
}

#[test]
fn narrowing_casts_match_the_independent_reference() {
    use kernels::cast::reference::{round_to, BF16, F16 as F16_FORMAT};
    let stream = emulator();
    let mut x = inputs(50_000, 77);
    // Spread over many binades, subnormal halves included.
    for (i, v) in x.iter_mut().enumerate().skip(16) {
        *v *= f32::powi(2.0, (i % 60) as i32 - 40);
    }
    let src = Buffer::from_host(&stream, &x).unwrap();
    let mut b = Buffer::from_host(&stream, &vec![Bf16::from_bits(0x7fc1); x.len()]).unwrap();
    let mut h = Buffer::from_host(&stream, &vec![F16::from_bits(0x7e01); x.len()]).unwrap();
    cast(&stream, &src, &mut b).unwrap();
    cast(&stream, &src, &mut h).unwrap();
    let (b, h) = (b.to_host(&stream).unwrap(), h.to_host(&stream).unwrap());
    for (i, &v) in x.iter().enumerate() {
        let (wb, wh) = (round_to(v as f64, BF16), round_to(v as f64, F16_FORMAT));
        assert_eq!(b[i].to_f32() as f64, wb, "bf16 of {v:e}");
        assert_eq!(h[i].to_f32() as f64, wh, "f16 of {v:e}");
    }
}

/// The host's conversions for each element type.
trait Host: Float {
    fn round(v: f32) -> Self;
    fn widen(self) -> f32;
    fn bits(self) -> u32;
}

impl Host for f32 {
    fn round(v: f32) -> f32 {
        v
    }
    fn widen(self) -> f32 {
        self
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
}

impl Host for Bf16 {
    fn round(v: f32) -> Bf16 {
        Bf16::from_f32(v)
    }
    fn widen(self) -> f32 {
        self.to_f32()
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
}

impl Host for F16 {
    fn round(v: f32) -> F16 {
        F16::from_f32(v)
    }
    fn widen(self) -> f32 {
        self.to_f32()
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
}

/// Casts `S` to `D` at lengths around the kernel's tiles (2048 f32 or 4096 16-bit sources, a
/// partial tile after them), against the host's conversion through f32, into poisoned outputs.
fn pair<S: Host, D: Host>() {
    let stream = emulator();
    for n in [1, 7, 33, 2047, 2048, 4096 + 9, 3 * 4096 + 1001] {
        let x: Vec<S> = inputs(n, n as u64 + 3).into_iter().map(S::round).collect();
        let src = Buffer::from_host(&stream, &x).unwrap();
        let poison = vec![D::round(f32::NAN); n];
        let mut dst = Buffer::from_host(&stream, &poison).unwrap();
        cast(&stream, &src, &mut dst).unwrap();
        let got: Vec<u32> = dst
            .to_host(&stream)
            .unwrap()
            .into_iter()
            .map(D::bits)
            .collect();
        let want: Vec<u32> = x.iter().map(|v| D::round(v.widen()).bits()).collect();
        let what = format!("{:?} → {:?}, n = {n}", S::SCALAR, D::SCALAR);
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn every_pair_converts_like_the_host_and_the_builder_kernel() {
    pair::<f32, f32>();
    pair::<f32, Bf16>();
    pair::<f32, F16>();
    pair::<Bf16, f32>();
    pair::<Bf16, Bf16>();
    pair::<Bf16, F16>();
    pair::<F16, f32>();
    pair::<F16, Bf16>();
    pair::<F16, F16>();
}
