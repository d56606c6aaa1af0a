//! The `.approx` transcendental instructions. Each is computed in f64 and rounded to f32, which
//! lies inside the error bound the PTX ISA documents for the hardware unit (ex2/lg2 2 ulp,
//! rsqrt/rcp 1 ulp, sin/cos 2^-20.9 absolute in [-pi, pi], tanh 2^-11 relative); what the
//! emulator adds on top is the hardware's treatment of special values and `.ftz`.

use super::float::{f32_result, flush_f32};

/// The transcendental functions with an `.approx` form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approx {
    Ex2,
    Lg2,
    Rsqrt,
    Rcp,
    Sqrt,
    Sin,
    Cos,
    Tanh,
}

/// `func.approx{.ftz}.f32 x`.
pub fn approx_f32(func: Approx, ftz: bool, x: f32) -> u32 {
    let x = if ftz { flush_f32(x) } else { x };
    let v = x as f64;
    let r = match func {
        Approx::Ex2 => v.exp2(),
        // Subnormal inputs count as zero on the hardware log unit only under .ftz; log2 of
        // +-0 is -inf.
        Approx::Lg2 => v.log2(),
        Approx::Rsqrt => 1.0 / v.sqrt(),
        Approx::Rcp => 1.0 / v,
        Approx::Sqrt => v.sqrt(),
        Approx::Sin => v.sin(),
        Approx::Cos => v.cos(),
        Approx::Tanh => v.tanh(),
    };
    let mut r = r as f32;
    if ftz {
        r = flush_f32(r);
    }
    f32_result(r)
}

/// `func.approx.f64` (only rcp, rsqrt and sqrt exist; computed exactly rounded).
pub fn approx_f64(func: Approx, x: f64) -> u64 {
    let r = match func {
        Approx::Rsqrt => 1.0 / x.sqrt(),
        Approx::Rcp => 1.0 / x,
        Approx::Sqrt => x.sqrt(),
        Approx::Ex2 => x.exp2(),
        Approx::Lg2 => x.log2(),
        Approx::Sin => x.sin(),
        Approx::Cos => x.cos(),
        Approx::Tanh => x.tanh(),
    };
    super::float::f64_result(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: u32, b: f64) -> f64 {
        let a = f32::from_bits(a) as f64;
        let ulp = (b.abs() as f32).to_bits();
        let ulp = f32::from_bits(ulp + 1) as f64 - f32::from_bits(ulp) as f64;
        (a - b).abs() / ulp
    }

    #[test]
    fn ex2_and_lg2_are_within_two_ulp_of_the_exact_value() {
        for i in -200..200 {
            let x = i as f32 * 0.173;
            assert!(ulps(approx_f32(Approx::Ex2, false, x), (x as f64).exp2()) <= 2.0);
            let y = (i as f32).abs() * 3.7 + 0.01;
            assert!(ulps(approx_f32(Approx::Lg2, false, y), (y as f64).log2()) <= 2.0);
        }
    }

    #[test]
    fn special_values_follow_ieee() {
        assert_eq!(
            approx_f32(Approx::Lg2, false, 0.0),
            f32::NEG_INFINITY.to_bits()
        );
        assert_eq!(
            approx_f32(Approx::Rsqrt, false, 0.0),
            f32::INFINITY.to_bits()
        );
        assert_eq!(approx_f32(Approx::Ex2, false, f32::NEG_INFINITY), 0);
        assert_eq!(
            approx_f32(Approx::Rcp, false, -0.0),
            f32::NEG_INFINITY.to_bits()
        );
        assert_eq!(approx_f32(Approx::Sqrt, false, -1.0), 0x7fff_ffff);
        // ex2 of -130 is subnormal in f32; .ftz flushes it.
        assert_ne!(approx_f32(Approx::Ex2, false, -130.0), 0);
        assert_eq!(approx_f32(Approx::Ex2, true, -130.0), 0);
        assert_eq!(approx_f32(Approx::Tanh, false, 20.0), 1.0f32.to_bits());
        assert!(
            (f32::from_bits(approx_f32(Approx::Sin, false, 1.0)) as f64 - 1f64.sin()).abs() < 1e-6
        );
    }
}
