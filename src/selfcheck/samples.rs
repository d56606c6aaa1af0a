//! One check per builder sample: inputs, launch, CPU reference, error.

use super::{max_rel_error, SampleResult, Scale, SeededRng};
use kernel_dsl::{samples as dsl_samples, KernelArtifacts};
use kernel_runtime::{Bf16, Buffer, Device, DeviceKind, Error, KernelArg, LaunchConfig, Stream};
use std::sync::OnceLock;

pub type Check = fn(&Stream, Scale, &mut SeededRng) -> Result<SampleResult, Error>;

macro_rules! artifacts {
    ($build:path) => {{
        static CELL: OnceLock<KernelArtifacts> = OnceLock::new();
        CELL.get_or_init(|| KernelArtifacts::from_kernel(&$build()))
    }};
}

fn result(
    kernel: &'static str,
    shape: String,
    got: &[f64],
    want: &[f64],
    tolerance: f64,
) -> SampleResult {
    SampleResult {
        kernel,
        shape,
        max_rel_error: max_rel_error(got, want),
        tolerance,
        skipped: None,
        millis: 0.0,
    }
}

fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// NaN-filled output, so an element the kernel never writes fails the comparison.
fn poisoned(stream: &Stream, n: usize) -> Result<Buffer<f32>, Error> {
    Buffer::from_host(stream, &vec![f32::NAN; n])
}

pub fn vector_add(
    stream: &Stream,
    scale: Scale,
    rng: &mut SeededRng,
) -> Result<SampleResult, Error> {
    let n = if scale == Scale::Small { 1003 } else { 1 << 24 };
    let (a, b) = (rng.vec_f32(n), rng.vec_f32(n));
    let da = Buffer::from_host(stream, &a)?;
    let db = Buffer::from_host(stream, &b)?;
    let mut dc = poisoned(stream, n)?;
    let cfg = LaunchConfig::for_elements(n as u32, 128);
    let args = [
        KernelArg::from(&da),
        KernelArg::from(&db),
        KernelArg::from(&mut dc),
        KernelArg::from(n as u32),
    ];
    stream.launch(artifacts!(dsl_samples::vector_add), cfg, &args)?;
    let got = dc.to_host(stream)?;
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    Ok(result(
        "vector_add",
        format!("n={n}"),
        &widen(&got),
        &widen(&want),
        0.0,
    ))
}

pub fn saxpy(stream: &Stream, scale: Scale, rng: &mut SeededRng) -> Result<SampleResult, Error> {
    let (n, grid) = if scale == Scale::Small {
        (10_007, 8)
    } else {
        (1 << 24, 1024)
    };
    let alpha = 1.75f32;
    let (x, y) = (rng.vec_f32(n), rng.vec_f32(n));
    let dx = Buffer::from_host(stream, &x)?;
    let mut dy = Buffer::from_host(stream, &y)?;
    let args = [
        KernelArg::from(alpha),
        KernelArg::from(&dx),
        KernelArg::from(&mut dy),
        KernelArg::from(n as u32),
    ];
    stream.launch(
        artifacts!(dsl_samples::saxpy),
        LaunchConfig::linear(grid, 128),
        &args,
    )?;
    let got = dy.to_host(stream)?;
    // fma.rn.f32 rounds once, as `mul_add` does: the result must match bit for bit.
    let want: Vec<f32> = x
        .iter()
        .zip(&y)
        .map(|(xi, yi)| alpha.mul_add(*xi, *yi))
        .collect();
    Ok(result(
        "saxpy",
        format!("n={n}, grid-stride over {grid} blocks"),
        &widen(&got),
        &widen(&want),
        0.0,
    ))
}

pub fn block_reduce_sum(
    stream: &Stream,
    scale: Scale,
    rng: &mut SeededRng,
) -> Result<SampleResult, Error> {
    let threads = dsl_samples::BLOCK_REDUCE_THREADS as usize;
    let (n, blocks) = if scale == Scale::Small {
        (100_003, 7)
    } else {
        (1 << 24, 264)
    };
    let x = rng.vec_f32(n);
    let dx = Buffer::from_host(stream, &x)?;
    let mut out = poisoned(stream, blocks)?;
    let args = [
        KernelArg::from(&dx),
        KernelArg::from(&mut out),
        KernelArg::from(n as u32),
    ];
    stream.launch(
        artifacts!(dsl_samples::block_reduce_sum),
        LaunchConfig::linear(blocks as u32, threads as u32),
        &args,
    )?;
    let got = out.to_host(stream)?;
    // Block b sums the elements whose grid-stride owner is one of its threads.
    let mut want = vec![0.0f64; blocks];
    for (i, v) in x.iter().enumerate() {
        want[(i % (blocks * threads)) / threads] += *v as f64;
    }
    let shape = format!("n={n}, {blocks} blocks of {threads}");
    Ok(result("block_reduce_sum", shape, &widen(&got), &want, 1e-5))
}

pub fn transpose_32x32(
    stream: &Stream,
    scale: Scale,
    rng: &mut SeededRng,
) -> Result<SampleResult, Error> {
    let (rows, cols) = if scale == Scale::Small {
        (67, 45)
    } else {
        (4099, 4097)
    };
    let input = rng.vec_f32(rows * cols);
    let din = Buffer::from_host(stream, &input)?;
    let mut dout = poisoned(stream, rows * cols)?;
    let [bx, by, _] = dsl_samples::TRANSPOSE_BLOCK;
    let cfg = LaunchConfig {
        grid: [(cols as u32).div_ceil(32), (rows as u32).div_ceil(32), 1],
        block: [bx, by, 1],
        dynamic_shared_bytes: 0,
    };
    let args = [
        KernelArg::from(&din),
        KernelArg::from(&mut dout),
        KernelArg::from(rows as u32),
        KernelArg::from(cols as u32),
    ];
    stream.launch(artifacts!(dsl_samples::transpose_32x32), cfg, &args)?;
    let got = dout.to_host(stream)?;
    let mut want = vec![0.0f64; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            want[c * rows + r] = input[r * cols + c] as f64;
        }
    }
    Ok(result(
        "transpose_32x32",
        format!("{rows}x{cols}"),
        &widen(&got),
        &want,
        0.0,
    ))
}

/// Random bf16 values and their exact f64 values.
fn bf16_matrix(rng: &mut SeededRng, n: usize) -> (Vec<Bf16>, Vec<f64>) {
    let v: Vec<Bf16> = (0..n).map(|_| Bf16::from_f32(rng.next_f32())).collect();
    let exact = v.iter().map(|b| b.to_f32() as f64).collect();
    (v, exact)
}

/// `c[m][n] = Σ_k a[m][k] · bt[n][k]` in f64.
fn matmul_bt(a: &[f64], bt: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * k + p] * bt[j * k + p]).sum();
        }
    }
    c
}

pub fn mma_bf16_16x8x16(
    stream: &Stream,
    _scale: Scale,
    rng: &mut SeededRng,
) -> Result<SampleResult, Error> {
    let (a, a64) = bf16_matrix(rng, 16 * 16);
    let (bt, bt64) = bf16_matrix(rng, 8 * 16);
    let da = Buffer::from_host(stream, &a)?;
    let dbt = Buffer::from_host(stream, &bt)?;
    let mut dc = poisoned(stream, 16 * 8)?;
    let args = [
        KernelArg::from(&da),
        KernelArg::from(&dbt),
        KernelArg::from(&mut dc),
    ];
    stream.launch(
        artifacts!(dsl_samples::mma_bf16_16x8x16),
        LaunchConfig::linear(1, 32),
        &args,
    )?;
    let got = dc.to_host(stream)?;
    // Products of bf16 values are exact in f32; only the f32 accumulation rounds.
    Ok(result(
        "mma_bf16_16x8x16",
        "16x8x16".into(),
        &widen(&got),
        &matmul_bt(&a64, &bt64, 16, 8, 16),
        1e-5,
    ))
}

pub fn wgmma_bf16_64x8x16(
    stream: &Stream,
    _scale: Scale,
    rng: &mut SeededRng,
) -> Result<SampleResult, Error> {
    let shape = "64x8x16".to_string();
    let device = stream.device();
    // The emulator runs wgmma, but only for a module built for sm_90a, so it checks the
    // sample on an sm_90a emulator of its own; a GPU must have sm_90a itself.
    let emulated;
    let stream = if device.props().kind == DeviceKind::Emulator {
        emulated = Device::emulator_for(kernel_dsl::Target::Sm90a).stream()?;
        &emulated
    } else if device.target().arch_specific_variant() != Some(kernel_dsl::Target::Sm90a) {
        return Ok(SampleResult {
            kernel: "wgmma_bf16_64x8x16",
            shape,
            max_rel_error: 0.0,
            tolerance: 0.0,
            skipped: Some(format!(
                "wgmma needs sm_90a; this device is {}",
                device.target()
            )),
            millis: 0.0,
        });
    } else {
        stream
    };
    let (a, a64) = bf16_matrix(rng, 64 * 16);
    let (bt, bt64) = bf16_matrix(rng, 8 * 16);
    let da = Buffer::from_host(stream, &a)?;
    let dbt = Buffer::from_host(stream, &bt)?;
    let mut dc = poisoned(stream, 64 * 8)?;
    let args = [
        KernelArg::from(&da),
        KernelArg::from(&dbt),
        KernelArg::from(&mut dc),
    ];
    stream.launch(
        artifacts!(dsl_samples::wgmma_bf16_64x8x16),
        LaunchConfig::linear(1, 128),
        &args,
    )?;
    let got = dc.to_host(stream)?;
    Ok(result(
        "wgmma_bf16_64x8x16",
        shape,
        &widen(&got),
        &matmul_bt(&a64, &bt64, 64, 8, 16),
        1e-5,
    ))
}
