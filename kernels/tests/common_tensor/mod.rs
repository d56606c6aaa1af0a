//! Test helpers for the elementwise, norm, cast, optim and clip suites: a seeded generator,
//! uploads that round to the storage type, NaN-poisoned outputs and tolerance checks.
#![allow(dead_code)]

use kernel_runtime::{Buffer, Device, Stream};
use kernels::Float;

/// xorshift64*: small, seeded, good enough for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }

    /// `n` values uniform in `[lo, hi)`, none exactly zero.
    pub fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n)
            .map(|_| {
                let v = self.uniform(lo, hi);
                if v == 0.0 {
                    hi * 0.5
                } else {
                    v
                }
            })
            .collect()
    }
}

/// The emulator (the CI oracle for numerics).
pub fn emulator() -> Stream {
    Device::emulator().stream().expect("emulator stream")
}

/// `vals` rounded to `T` (what the kernel will see).
pub fn rounded<T: Float>(vals: &[f32]) -> Vec<T> {
    vals.iter().map(|&v| T::from_f32(v)).collect()
}

/// Uploads `vals` rounded to `T`; returns the buffer and the stored values widened to f64.
pub fn upload<T: Float>(stream: &Stream, vals: &[f32]) -> (Buffer<T>, Vec<f64>) {
    let host = rounded::<T>(vals);
    let exact = host.iter().map(|v| v.to_f32() as f64).collect();
    (Buffer::from_host(stream, &host).expect("upload"), exact)
}

/// A buffer of `n` NaNs, so an element the kernel fails to write shows up.
pub fn poisoned<T: Float>(stream: &Stream, n: usize) -> Buffer<T> {
    Buffer::from_host(stream, &vec![T::from_f32(f32::NAN); n]).expect("upload poison")
}

/// The buffer's contents widened to f64.
pub fn download<T: Float>(stream: &Stream, buf: &Buffer<T>) -> Vec<f64> {
    buf.to_host(stream)
        .expect("download")
        .iter()
        .map(|v| v.to_f32() as f64)
        .collect()
}

/// The buffer's raw bits, for bit-identity checks.
pub fn bits<T: Float>(stream: &Stream, buf: &Buffer<T>) -> Vec<u32> {
    buf.to_host(stream)
        .expect("download")
        .iter()
        .map(|v| v.to_f32().to_bits())
        .collect()
}

/// Tolerances: `|got − want| ≤ atol + rtol·|want|`.
#[derive(Clone, Copy, Debug)]
pub struct Tol {
    pub atol: f64,
    pub rtol: f64,
}

/// Tolerance of an output stored as `T` whose f64 reference is computed from the same
/// stored inputs.
pub fn tol_for<T: Float>() -> Tol {
    match T::TYPE {
        kernels::FloatType::F32 => Tol {
            atol: 2e-5,
            rtol: 2e-5,
        },
        kernels::FloatType::Bf16 => Tol {
            atol: 1e-2,
            rtol: 1e-2,
        },
        kernels::FloatType::F16 => unreachable!("these ops have no f16 kernels"),
    }
}

/// Panics naming the first element out of tolerance (NaN counts as out).
pub fn assert_close(what: &str, got: &[f64], want: &[f64], tol: Tol) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g - w).abs() <= tol.atol + tol.rtol * w.abs();
        assert!(
            ok,
            "{what}: element {i} is {g}, expected {w} (tolerance {tol:?})"
        );
    }
}

/// Odd and aligned row widths: scalar and vector paths, warp- and CTA-per-row, and (16400)
/// rows wider than the registers hold.
pub const WIDTHS: [usize; 8] = [1, 7, 33, 64, 512, 1024, 4097, 16400];
/// Row counts.
pub const ROWS: [usize; 2] = [1, 3];

/// A stream on CUDA device 0, or `None` after printing the one skip line.
pub fn gpu() -> Option<Stream> {
    match Device::cuda(0).and_then(|d| d.stream()) {
        Ok(stream) => Some(stream),
        Err(_) => {
            println!("skipping: no CUDA driver/GPU present");
            None
        }
    }
}
