//! Vector access to shared arrays (`tile.load_vec::<W>(i)`, `tile.store_vec::<W>(i, v)`) and
//! sub-slices (`&x[start..]`, `&mut y[start..]`), on the emulator and in the emitted PTX.

mod common;

use kernel_macros::kernel;
use kernel_runtime::{Bf16, Buffer, Device, Error, LaunchConfig};

/// Reverses each 32-element block of `x` through shared memory: each thread stores four
/// elements as one vector and reads back the four that mirror them, lanes reversed.
#[kernel(crate = crate::common::paths, instances(<f32>, <bf16>), block = 8)]
pub fn reverse_blocks<T: Element>(x: &[T], y: &mut [T]) {
    let tile = shared_array::<T, 32>();
    let t = thread_idx().x;
    let base = block_idx().x * 32;
    let v = x.load_vec::<4>(base + 4 * t);
    tile.store_vec::<4>(4 * t, v);
    sync_threads();
    let w = tile.load_vec::<4>(28 - 4 * t);
    let guarded = tile.load_vec_or::<2>(0, t == 0, 0.0 as T);
    let mut out = [0.0 as T; 4];
    for k in 0..4 {
        out[k] = w[3 - k];
    }
    if t == 7 {
        // Thread 7's guard failed: its lanes are the fill, not tile[0..2].
        out[0] = (guarded[0] as f32 + guarded[1] as f32) as T;
    }
    y.store_vec::<4>(base + 4 * t, out);
}

/// `y[b·ys + i] = x[b·xs + i] + 1` for batch `b = block_idx().y`, through sub-slices whose
/// start is a 64-bit element count.
#[kernel(crate = crate::common::paths)]
pub fn shifted_copy(x: &[f32], y: &mut [f32], xs: u32, ys: u32, n: u32) {
    let b = block_idx().y as u64;
    let x = &x[b * xs as u64..];
    let y = &mut y[b * ys as u64..];
    let i = thread_idx().x;
    if i < n {
        y[i] = x[i] + 1.0;
    }
}

#[test]
fn shared_vectors_store_and_load_four_lanes_of_any_element_type() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let x: Vec<f32> = (0..64).map(|k| k as f32).collect();
    let cfg = LaunchConfig {
        grid: [2, 1, 1],
        block: [8, 1, 1],
        dynamic_shared_bytes: 0,
    };
    let want = |x: &[f32]| -> Vec<f32> {
        let mut w: Vec<f32> = x
            .chunks(32)
            .flat_map(|c| c.iter().rev().copied().collect::<Vec<_>>())
            .collect();
        for blk in 0..2 {
            w[blk * 32 + 28] = 0.0;
        }
        w
    };
    let mut y = Buffer::from_host(&stream, &[f32::NAN; 64])?;
    reverse_blocks__f32(&stream, cfg, &Buffer::from_host(&stream, &x)?, &mut y)?;
    assert_eq!(y.to_host(&stream)?, want(&x));

    let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let mut yb = Buffer::from_host(&stream, &[Bf16::from_f32(f32::NAN); 64])?;
    reverse_blocks__bf16(&stream, cfg, &Buffer::from_host(&stream, &xb)?, &mut yb)?;
    let got: Vec<f32> = yb.to_host(&stream)?.iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, want(&x));

    let ptx = REVERSE_BLOCKS__F32
        .ptx_for(kernel_dsl::Target::Sm80)
        .expect("sm_80 PTX");
    assert!(ptx.contains("st.shared.v4.f32"), "{ptx}");
    assert!(ptx.contains("ld.shared.v4.f32"), "{ptx}");
    Ok(())
}

#[test]
fn a_subslice_starts_at_its_element_and_writes_only_past_it() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let (n, xs, ys) = (5u32, 7u32, 9u32);
    let x: Vec<f32> = (0..3 * xs).map(|k| k as f32).collect();
    let mut y = Buffer::from_host(&stream, &vec![-1.0f32; 3 * ys as usize])?;
    let cfg = LaunchConfig {
        grid: [1, 3, 1],
        block: [8, 1, 1],
        dynamic_shared_bytes: 0,
    };
    shifted_copy(
        &stream,
        cfg,
        &Buffer::from_host(&stream, &x)?,
        &mut y,
        xs,
        ys,
        n,
    )?;
    let got = y.to_host(&stream)?;
    for b in 0..3 {
        for i in 0..ys {
            let want = if i < n {
                (b * xs + i) as f32 + 1.0
            } else {
                -1.0
            };
            assert_eq!(got[(b * ys + i) as usize], want, "batch {b}, element {i}");
        }
    }
    Ok(())
}
