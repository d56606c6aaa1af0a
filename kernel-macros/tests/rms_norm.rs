//! A library-style kernel written with `#[kernel]`: RMS normalization, generic over the
//! storage type and the block size, with the width a runtime parameter. Checked on the
//! emulator against an f64 reference at odd widths.

mod common;

use kernel_macros::{device, kernel};
use kernel_runtime::{Bf16, Buffer, Device, LaunchConfig};

/// Butterfly sum over the warp: every lane ends with the total.
#[device(crate = crate::common::paths)]
fn warp_sum(v: f32) -> f32 {
    let mut s = v;
    s += shfl_xor(s, 16);
    s += shfl_xor(s, 8);
    s += shfl_xor(s, 4);
    s += shfl_xor(s, 2);
    s += shfl_xor(s, 1);
    s
}

/// `y[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) · w`, one block per row.
#[kernel(crate = crate::common::paths, instances(<f32, 256>, <bf16, 128>), block = BLOCK)]
pub fn rms_norm<T: Element, const BLOCK: u32>(x: &[T], w: &[T], y: &mut [T], cols: u32, eps: f32) {
    let partial = shared_array::<f32, { BLOCK / 32 }>();
    let t = thread_idx().x;
    let base = block_idx().x * cols;
    let mut ss = 0.0;
    for c in (t..cols).step_by(BLOCK) {
        let v = x[base + c] as f32;
        ss += v * v;
    }
    ss = warp_sum(ss);
    if t % 32 == 0 {
        partial[t / 32] = ss;
    }
    sync_threads();
    if t < 32 {
        let mut total = if t < BLOCK / 32 { partial[t] } else { 0.0 };
        total = warp_sum(total);
        if t == 0 {
            partial[0] = total;
        }
    }
    sync_threads();
    let scale = rsqrt(partial[0] / cols as f32 + eps);
    for c in (t..cols).step_by(BLOCK) {
        y[base + c] = ((x[base + c] as f32) * scale * (w[c] as f32)) as T;
    }
}

fn seeded(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

fn reference(x: &[f32], w: &[f32], rows: usize, cols: usize, eps: f32) -> Vec<f64> {
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let ms = row.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>() / cols as f64;
        let scale = 1.0 / (ms + eps as f64).sqrt();
        for c in 0..cols {
            out[r * cols + c] = row[c] as f64 * scale * w[c] as f64;
        }
    }
    out
}

#[test]
fn rms_norm_matches_an_f64_reference_at_odd_widths_in_f32_and_bf16(
) -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let eps = 1e-5f32;
    for (rows, cols) in [(3usize, 1000usize), (5, 77), (2, 1)] {
        let x = seeded(rows * cols, 11 + cols as u64);
        let w = seeded(cols, 5 + cols as u64);
        let want = reference(&x, &w, rows, cols, eps);

        let (dx, dw) = (
            Buffer::from_host(&stream, &x)?,
            Buffer::from_host(&stream, &w)?,
        );
        let mut dy = Buffer::from_host(&stream, &vec![f32::NAN; rows * cols])?;
        let cfg = LaunchConfig::linear(rows as u32, 256);
        rms_norm__f32_256(&stream, cfg, &dx, &dw, &mut dy, cols as u32, eps)?;
        for (k, got) in dy.to_host(&stream)?.into_iter().enumerate() {
            assert!(
                (got as f64 - want[k]).abs() <= 1e-5 * want[k].abs().max(1.0),
                "f32 {rows}x{cols} at {k}: {got} vs {}",
                want[k]
            );
        }

        let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
        let wb: Vec<Bf16> = w.iter().map(|&v| Bf16::from_f32(v)).collect();
        let want_b = reference(
            &xb.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
            &wb.iter().map(|v| v.to_f32()).collect::<Vec<_>>(),
            rows,
            cols,
            eps,
        );
        let (dxb, dwb) = (
            Buffer::from_host(&stream, &xb)?,
            Buffer::from_host(&stream, &wb)?,
        );
        let mut dyb = Buffer::from_host(&stream, &vec![Bf16::from_f32(f32::NAN); rows * cols])?;
        rms_norm__bf16_128(
            &stream,
            LaunchConfig::linear(rows as u32, 128),
            &dxb,
            &dwb,
            &mut dyb,
            cols as u32,
            eps,
        )?;
        for (k, got) in dyb.to_host(&stream)?.into_iter().enumerate() {
            let got = got.to_f32() as f64;
            assert!(
                (got - want_b[k]).abs() <= 8e-3 * want_b[k].abs().max(1.0),
                "bf16 {rows}x{cols} at {k}: {got} vs {}",
                want_b[k]
            );
        }
    }
    Ok(())
}
