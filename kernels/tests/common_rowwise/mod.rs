//! Test helpers of the row-wise and index-mapping ops: a seeded generator, upload/download in
//! either storage type, poisoned outputs and tolerance checks against f64 references.
#![allow(dead_code)]

use kernel_runtime::{Buffer, Device, Stream};
use kernels::Float;
use kernels::FloatType;

/// xorshift64*: small, seeded, good enough for test data.
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

    /// Uniform in `[0, n)`.
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }

    pub fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// The emulator, where every test of the numerics runs.
pub fn stream() -> Stream {
    Device::emulator()
        .stream()
        .expect("the emulator always opens a stream")
}

/// Uploads `vals` rounded to `T`; returns the buffer and the values it holds, as f32.
pub fn upload<T: Float>(stream: &Stream, vals: &[f32]) -> (Buffer<T>, Vec<f32>) {
    let stored: Vec<T> = vals.iter().map(|&v| T::from_f32(v)).collect();
    let held = stored.iter().map(|&v| v.to_f32()).collect();
    (Buffer::from_host(stream, &stored).expect("upload"), held)
}

/// A buffer of `n` NaNs, so an element the kernel fails to write shows up.
pub fn poisoned<T: Float>(stream: &Stream, n: usize) -> Buffer<T> {
    Buffer::from_host(stream, &vec![T::from_f32(f32::NAN); n]).expect("upload")
}

pub fn download<T: Float>(stream: &Stream, buf: &Buffer<T>) -> Vec<f32> {
    buf.to_host(stream)
        .expect("download")
        .into_iter()
        .map(|v| v.to_f32())
        .collect()
}

/// Bits of a download, for bit-identity checks.
pub fn bits<T: Float>(stream: &Stream, buf: &Buffer<T>) -> Vec<u32> {
    download(stream, buf).iter().map(|v| v.to_bits()).collect()
}

/// The relative tolerance of results stored as `T` (bf16 keeps 8 significant bits).
pub fn tol<T: Float>(f32_tol: f64) -> f64 {
    match T::TYPE {
        FloatType::F32 => f32_tol,
        FloatType::Bf16 => 8e-3,
        FloatType::F16 => unreachable!("these ops have no f16 kernels"),
    }
}

/// Checks `|actual − expected| ≤ atol + rtol·|expected|` everywhere; names the first miss.
pub fn assert_close(what: &str, actual: &[f32], expected: &[f64], atol: f64, rtol: f64) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let err = (a as f64 - e).abs();
        assert!(
            err <= atol + rtol * e.abs(),
            "{what}: element {i} is {a}, expected {e} (error {err:e})"
        );
    }
}

/// A stream on CUDA device 0, or `None` (after printing why) where there is no driver or GPU.
pub fn gpu_stream() -> Option<Stream> {
    match Device::cuda(0) {
        Ok(device) => Some(device.stream().expect("a stream on the GPU")),
        Err(_) => {
            println!("skipping: no CUDA driver/GPU present");
            None
        }
    }
}
