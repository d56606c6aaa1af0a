//! The toolchain checked end to end on a device: each builder sample is emitted, loaded through
//! the runtime (target parity, module cache, launch validation) and run on the device — the
//! CPU emulator where no GPU is present — and its output is compared with a CPU reference.
//! `ptxkit run` prints the table; the test suite asserts every row.

mod inputs;
mod samples;

use kernel_runtime::{Device, Error as RuntimeError};
use std::time::Instant;

pub use inputs::SeededRng;

/// One sample's outcome.
#[derive(Clone, Debug)]
pub struct SampleResult {
    pub kernel: &'static str,
    /// The problem size, as a person would write it.
    pub shape: String,
    /// Largest error against the reference, relative to the reference's largest magnitude.
    pub max_rel_error: f64,
    /// The bound the sample must meet.
    pub tolerance: f64,
    /// `None` when it ran; the reason otherwise (an instruction the device cannot run).
    pub skipped: Option<String>,
    pub millis: f64,
}

impl SampleResult {
    pub fn passed(&self) -> bool {
        self.skipped.is_some() || self.max_rel_error <= self.tolerance
    }
}

/// Problem sizes: small and odd for the emulator, large enough to fill a GPU otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Small,
    Large,
}

impl Scale {
    /// The scale that suits a device: small on the emulator.
    pub fn for_device(device: &Device) -> Scale {
        match device.props().kind {
            kernel_runtime::DeviceKind::Emulator => Scale::Small,
            _ => Scale::Large,
        }
    }
}

/// Runs every sample on `device`, seeded by `seed`.
///
/// ```
/// let device = kernel_runtime::Device::emulator();
/// let results = ptxkit::selfcheck::run_all(&device, ptxkit::selfcheck::Scale::Small, 7).unwrap();
/// assert!(results.iter().all(|r| r.passed()));
/// ```
pub fn run_all(
    device: &Device,
    scale: Scale,
    seed: u64,
) -> Result<Vec<SampleResult>, RuntimeError> {
    let stream = device.stream()?;
    let mut rng = SeededRng::new(seed);
    let checks: [samples::Check; 6] = [
        samples::vector_add,
        samples::saxpy,
        samples::block_reduce_sum,
        samples::transpose_32x32,
        samples::mma_bf16_16x8x16,
        samples::wgmma_bf16_64x8x16,
    ];
    let mut results = Vec::new();
    for check in checks {
        let start = Instant::now();
        let mut r = check(&stream, scale, &mut rng)?;
        r.millis = start.elapsed().as_secs_f64() * 1e3;
        results.push(r);
    }
    Ok(results)
}

/// `max |a - b| / max |b|`, with NaN anywhere counting as infinite error.
pub fn max_rel_error(got: &[f64], want: &[f64]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    let scale = want
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    got.iter().zip(want).fold(0.0f64, |m, (g, w)| {
        let e = (g - w).abs();
        if e.is_nan() {
            f64::INFINITY
        } else {
            m.max(e / scale)
        }
    })
}
