//! The intrinsics added for the op library, run on the emulator against Rust references:
//! IEEE-rounded results bit for bit, approximate ones within the PTX ISA's error bounds.

mod common;

use common::intrinsics::*;
use kernel_dsl::Target;
use kernel_runtime::{Bf16, Buffer, Device, Error, LaunchConfig};

/// Relative error the PTX ISA allows `ex2.approx` and `rsqrt.approx` (about 2^-22), with room.
const APPROX_REL: f32 = 1.0 / (1 << 21) as f32;

fn same(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn close(got: f32, want: f32) -> bool {
    same(got, want) || (got - want).abs() <= APPROX_REL * want.abs()
}

/// `cvt.rna.tf32.f32` on the host: round to 10 mantissa bits, ties away from zero.
fn tf32_rna(x: f32) -> u32 {
    let b = x.to_bits();
    if x.is_nan() || x.is_infinite() {
        return b;
    }
    b.wrapping_add(0x1000) & 0xFFFF_E000
}

fn inputs() -> Vec<f32> {
    let mut v = vec![
        -130.0, -126.5, -149.0, -1.5, -0.0, 0.0, 0.25, 1.0, 2.0, 3.7, 4.0, 100.0, 127.5, 1e-30,
        1e30, 1e-40, 7.0e-39,
    ];
    let mut seed = 11u64;
    for _ in 0..200 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let u = (seed >> 40) as f32 / (1u64 << 24) as f32;
        v.push(u * 60.0 - 30.0);
    }
    v
}

#[test]
fn float_intrinsics_match_their_rust_references() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let x = inputs();
    let n = x.len() as u32;
    let dx = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::from_host(&stream, &vec![f32::NAN; 8 * x.len()])?;
    float_intrinsics(&stream, LaunchConfig::for_elements(n, 64), &dx, &mut y, n)?;
    let y = y.to_host(&stream)?;
    for (i, &v) in x.iter().enumerate() {
        let r = &y[i * 8..i * 8 + 8];
        // ftz flushes a subnormal input to zero (2^0 = 1) and a subnormal result to zero.
        let flushed = if v.is_subnormal() { 0.0 } else { v };
        let e = flushed.exp2();
        let ftz = if e < f32::MIN_POSITIVE { 0.0 } else { e };
        assert!(
            close(r[0], ftz),
            "ex2_approx_ftz({v:e}) = {:e}, want {ftz:e}",
            r[0]
        );
        assert!(close(r[7], ftz), "x.ex2_approx_ftz() for {v:e}");
        if !v.is_subnormal() {
            assert!(close(r[1], v.exp2()), "exp2({v:e}) = {:e}", r[1]);
        }
        assert!(same(r[2], v.sqrt()), "sqrt_rn({v:e}) = {:e}", r[2]);
        assert!(same(r[3], 1.0 / v), "rcp_rn({v:e}) = {:e}", r[3]);
        // Both steps correctly rounded: exactly Rust's `1.0 / v.sqrt()`.
        let rn = 1.0 / v.sqrt();
        assert!(same(r[5], rn), "rsqrt_rn({v:e}) = {:e}, want {rn:e}", r[5]);
        assert!(same(r[6], rn), "x.rsqrt_rn() for {v:e}");
        if v > 0.0 && v.is_normal() {
            assert!(close(r[4], rn), "rsqrt({v:e}) = {:e}, want ≈{rn:e}", r[4]);
        }
    }
    // The subnormal result is where the two `ex2` forms differ.
    let k = x
        .iter()
        .position(|&v| v == -130.0)
        .expect("an input of -130");
    assert_eq!(y[k * 8], 0.0);
    assert!(y[k * 8 + 1] > 0.0, "ex2.approx.f32 keeps 2^-130");
    Ok(())
}

#[test]
fn round_ties_even_and_nan_match_rust() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let mut x = inputs();
    x.extend([
        0.5,
        1.5,
        2.5,
        -0.5,
        -2.5,
        8388607.5,
        1e10,
        f32::INFINITY,
        f32::NAN,
    ]);
    let n = x.len() as u32;
    let dx = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::from_host(&stream, &vec![1.0f32; 3 * x.len()])?;
    rounding_and_nan(&stream, LaunchConfig::for_elements(n, 64), &dx, &mut y, n)?;
    let y = y.to_host(&stream)?;
    for (i, &v) in x.iter().enumerate() {
        let want = v.round_ties_even();
        assert!(
            same(y[i * 3], want),
            "round_ties_even({v:e}) = {:e}",
            y[i * 3]
        );
        assert!(same(y[i * 3 + 1], want), "x.round_ties_even() for {v:e}");
        let kept = if v < 0.0 { f32::NAN } else { v };
        assert!(same(y[i * 3 + 2], kept), "f32::NAN for {v:e}");
        if v < 0.0 {
            assert_eq!(
                y[i * 3 + 2].to_bits(),
                f32::NAN.to_bits(),
                "the host's quiet NaN"
            );
        }
    }
    Ok(())
}

#[test]
fn sqrt_on_f64_is_rusts_f64_sqrt() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let mut x = inputs().into_iter().map(f32::abs).collect::<Vec<_>>();
    x.extend([0.0, 2.0, 3.0, 1e-40, 1e30, f32::INFINITY, -1.0]);
    let n = x.len() as u32;
    let dx = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::from_host(&stream, &vec![1.0f32; 2 * x.len()])?;
    sqrt_f64(&stream, LaunchConfig::for_elements(n, 64), &dx, &mut y, n)?;
    let y = y.to_host(&stream)?;
    for (i, &v) in x.iter().enumerate() {
        let r = (v as f64).sqrt();
        let low = ((r - ((r as f32) as f64)) * 1048576.0) as f32;
        assert!(same(y[i * 2], r as f32), "sqrt({v:e}) = {:e}", y[i * 2]);
        assert!(same(y[i * 2 + 1], low), "the f64 bits of sqrt({v:e})");
    }
    Ok(())
}

/// `c` plus the products of the bytes of `a` and `b`, signed where asked, in i64, wrapped
/// to 32 bits as the PTX ISA defines `dp4a`.
fn dp4a_model(a: u32, b: u32, c: i64, a_signed: bool, b_signed: bool) -> u32 {
    let byte = |v: u32, k: u32, signed: bool| {
        let x = (v >> (8 * k)) & 0xff;
        if signed && x >= 128 {
            x as i64 - 256
        } else {
            x as i64
        }
    };
    let sum = (0..4).fold(c, |acc, k| {
        acc + byte(a, k, a_signed) * byte(b, k, b_signed)
    });
    sum as u32
}

#[test]
fn byte_dot_products_match_the_ptx_definition_of_dp4a() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let mut a: Vec<u32> = vec![
        0,
        u32::MAX,
        0x8080_8080,
        0x7f7f_7f7f,
        0x0f0f_0f0f,
        0x8000_00ff,
    ];
    let mut b: Vec<u32> = vec![
        0,
        u32::MAX,
        0x8080_8080,
        0x8080_8080,
        0xff01_7f80,
        0x7f00_0001,
    ];
    let mut c: Vec<i32> = vec![0, 0, i32::MAX, i32::MIN, -7, 123];
    for k in 0..64u32 {
        a.push(k.wrapping_mul(2654435761));
        b.push(k.wrapping_mul(40503).rotate_left(k % 32) ^ 0x9e37_79b9);
        c.push((k as i32 - 32).wrapping_mul(77_777_777));
    }
    let n = a.len() as u32;
    let (da, db, dc) = (
        Buffer::from_host(&stream, &a)?,
        Buffer::from_host(&stream, &b)?,
        Buffer::from_host(&stream, &c)?,
    );
    let mut y = Buffer::from_host(&stream, &vec![0xDEAD_BEEF; 3 * a.len()])?;
    byte_dot_products(
        &stream,
        LaunchConfig::for_elements(n, 32),
        &da,
        &db,
        &dc,
        &mut y,
        n,
    )?;
    let y = y.to_host(&stream)?;
    for i in 0..a.len() {
        let (x, w, acc) = (a[i], b[i], c[i]);
        let what = format!("a = {x:#x}, b = {w:#x}, c = {acc}");
        assert_eq!(
            y[i * 3],
            dp4a_model(x, w, acc as i64, true, true),
            "dp4a_s8, {what}"
        );
        assert_eq!(
            y[i * 3 + 1],
            dp4a_model(x, w, acc as i64, false, true),
            "dp4a_u8_s8, {what}"
        );
        assert_eq!(
            y[i * 3 + 2],
            dp4a_model(x, w, acc as u32 as i64, false, false),
            "dp4a_u8, {what}"
        );
    }
    // -128 · -128 · 4 = 65536 on the int8 path, 128 · 128 · 4 on the u8 path.
    assert_eq!(y[2 * 3] as i32, i32::MAX.wrapping_add(65536));
    assert_eq!(y[2 * 3 + 2], (i32::MAX as u32).wrapping_add(65536));
    Ok(())
}

/// `prmt.b32` in its default mode: result byte `i` is byte `c >> 4i & 7` of `b:a`, replicated
/// from that byte's sign bit where bit 3 of the nibble is set.
fn prmt_model(a: u32, b: u32, c: u32) -> u32 {
    let bytes = (u64::from(b) << 32) | u64::from(a);
    (0..4).fold(0, |out, i| {
        let nib = (c >> (4 * i)) & 0xf;
        let byte = (bytes >> (8 * (nib & 7))) as u8;
        let byte = if nib & 8 != 0 {
            if byte & 0x80 != 0 {
                0xff
            } else {
                0
            }
        } else {
            byte
        };
        out | (u32::from(byte) << (8 * i))
    })
}

/// `a × b + c` on each bf16 half, the exact f64 result rounded once to nearest even.
fn fma_bf16x2_model(a: u32, b: u32, c: u32) -> u32 {
    let half = |w: u32, k: u32| f64::from(f32::from_bits((w >> (16 * k)) << 16));
    (0..2).fold(0, |out, k| {
        let exact = half(a, k).mul_add(half(b, k), half(c, k));
        let r = Bf16::from_f32(exact as f32);
        // f64 → f32 → bf16 rounds twice; the inputs below keep the exact sum within f32's
        // 24 bits, so the first rounding is exact.
        assert_eq!(
            f64::from(exact as f32),
            exact,
            "inputs must keep the sum exact in f32"
        );
        let bits = if exact.is_nan() {
            0x7fff
        } else {
            u32::from(r.to_bits())
        };
        out | (bits << (16 * k))
    })
}

#[test]
fn prmt_and_fma_bf16x2_match_the_ptx_definitions() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    // Operands of bf16 halves with few mantissa bits, so that every exact a·b + c fits f32.
    let small = |k: u32| {
        let e = 124 + (k * 7) % 8;
        let m = (k * 37) % 8;
        let sign = k.is_multiple_of(3) as u32;
        ((sign << 15) | (e << 7) | (m << 4)) as u16
    };
    let mut a = vec![0x4300_4340u32, 0x80ff_7f01, 0x80ff_7f01];
    let mut b = vec![0x3f80_3f80u32, 0xdead_beef, 0x0000_0043];
    let mut c = vec![0xc300_c300u32, 0x0000_ba40, 0x0000_4140];
    for k in 0..64u32 {
        a.push(u32::from(small(k)) | (u32::from(small(k + 5)) << 16));
        b.push(u32::from(small(k + 11)) | (u32::from(small(k + 3)) << 16));
        c.push(u32::from(small(k + 17)) | (u32::from(small(2 * k)) << 16));
    }
    let n = a.len() as u32;
    let (da, db, dc) = (
        Buffer::from_host(&stream, &a)?,
        Buffer::from_host(&stream, &b)?,
        Buffer::from_host(&stream, &c)?,
    );
    let mut y = Buffer::from_host(&stream, &vec![0xDEAD_BEEF; 2 * a.len()])?;
    packed_word_ops(
        &stream,
        LaunchConfig::for_elements(n, 32),
        &da,
        &db,
        &dc,
        &mut y,
        n,
    )?;
    let y = y.to_host(&stream)?;
    for i in 0..a.len() {
        let what = format!("a = {:#x}, b = {:#x}, c = {:#x}", a[i], b[i], c[i]);
        assert_eq!(y[2 * i], prmt_model(a[i], b[i], c[i]), "prmt, {what}");
        if i >= 3 || i == 0 {
            assert_eq!(
                y[2 * i + 1],
                fma_bf16x2_model(a[i], b[i], c[i]),
                "fma_bf16x2, {what}"
            );
        }
    }
    // 128 + 64 and 128 + 0 as bf16 codes, less 128: the nibble-to-bf16 step of the GGUF GEMV.
    assert_eq!(y[1], 0x0000_4280);
    // Bytes of `b` beside bytes of `a`, and two bytes replicated from their sign bits.
    assert_eq!(y[2], 0xffff_ef01);
    // A code byte beside the bf16 exponent byte 0x43.
    assert_eq!(y[4], 0x437f_4301);
    Ok(())
}

#[test]
fn bit_intrinsics_and_tf32_rounding_match_rust() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let mut xs: Vec<u32> = vec![0, 1, 2, 0x8000_0000, u32::MAX, 0x0001_0000, 0x1234_5678];
    xs.extend((0..100u32).map(|k| k.wrapping_mul(2654435761) >> (k % 32)));
    let mut fs = inputs();
    // Ties in the dropped 13 bits round away from zero; the next one up carries.
    fs.splice(
        0..4,
        [
            f32::from_bits(0x3F80_1000),
            f32::from_bits(0xBF80_1000),
            f32::from_bits(0x3F80_0FFF),
            f32::from_bits(0x7F7F_F000),
        ],
    );
    fs.resize(xs.len(), 1.5);
    let n = xs.len() as u32;
    let (dx, df) = (
        Buffer::from_host(&stream, &xs)?,
        Buffer::from_host(&stream, &fs)?,
    );
    let mut y = Buffer::from_host(&stream, &vec![0xDEAD_BEEF; 3 * xs.len()])?;
    bit_intrinsics(
        &stream,
        LaunchConfig::for_elements(n, 32),
        &dx,
        &df,
        &mut y,
        n,
    )?;
    let y = y.to_host(&stream)?;
    for (i, (&x, &f)) in xs.iter().zip(&fs).enumerate() {
        assert_eq!(y[i * 3], x.reverse_bits(), "brev({x:#x})");
        assert_eq!(y[i * 3 + 1], x.leading_zeros(), "clz({x:#x})");
        // The low 13 bits of a tf32 word are not promised; compare the 19 that are.
        let want = tf32_rna(f);
        assert_eq!(
            y[i * 3 + 2] & 0xFFFF_E000,
            want,
            "cvt_tf32({f:e}), {:#x}",
            f.to_bits()
        );
    }
    assert_eq!(
        y[2] & 0xFFFF_E000,
        0x3F80_2000,
        "a tie rounds away from zero"
    );
    assert_eq!(
        y[3 * 3 + 2] & 0xFFFF_E000,
        0x7F80_0000,
        "rounding up past f32::MAX gives inf"
    );
    Ok(())
}

#[test]
fn shared_vector_loads_read_what_cp_async_staged() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let x: Vec<f32> = (0..128).map(|i| i as f32 * 0.5 - 3.0).collect();
    let h: Vec<Bf16> = (0..256).map(|i| Bf16::from_f32(i as f32 - 100.0)).collect();
    let (dx, dh) = (
        Buffer::from_host(&stream, &x)?,
        Buffer::from_host(&stream, &h)?,
    );
    let mut y = Buffer::from_host(&stream, &vec![f32::NAN; 128])?;
    let mut g = Buffer::from_host(&stream, &vec![Bf16::from_f32(f32::NAN); 256])?;
    staged_vectors(
        &stream,
        LaunchConfig::linear(1, 32),
        &dx,
        &dh,
        &mut y,
        &mut g,
    )?;
    let (y, g) = (y.to_host(&stream)?, g.to_host(&stream)?);
    for t in 0..32 {
        for k in 0..4 {
            assert_eq!(y[t * 4 + k], x[t * 4 + 3 - k], "f32 lane {k} of thread {t}");
        }
        for k in 0..8 {
            assert_eq!(
                g[t * 8 + k].to_bits(),
                h[t * 8 + 7 - k].to_bits(),
                "bf16 lane {k} of thread {t}"
            );
        }
    }
    Ok(())
}

#[test]
fn atomic_inc_hands_out_each_ticket_below_the_limit_equally() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let (n, limit) = (100u32, 9u32);
    let mut counter = Buffer::from_host(&stream, &[0u32])?;
    let mut out = Buffer::from_host(&stream, &vec![u32::MAX; n as usize])?;
    tickets(
        &stream,
        LaunchConfig::for_elements(n, 32),
        &mut counter,
        &mut out,
        limit,
        n,
    )?;
    let mut out = out.to_host(&stream)?;
    out.sort_unstable();
    let want: Vec<u32> = (0..=limit).flat_map(|t| [t; 10]).collect();
    assert_eq!(out, want);
    // 100 increments wrap ten times at 9 and end where they began.
    assert_eq!(counter.to_host(&stream)?, [0]);
    Ok(())
}

#[test]
fn a_block_waits_on_a_flag_a_later_block_sets() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let blocks = 5u32;
    let mut flags = Buffer::from_host(&stream, &vec![0u32; blocks as usize])?;
    let mut out = Buffer::from_host(&stream, &vec![u32::MAX; blocks as usize])?;
    chained_blocks(
        &stream,
        LaunchConfig::linear(blocks, 32),
        &mut flags,
        &mut out,
    )?;
    let want: Vec<u32> = (0..blocks).map(|b| (b + 1..=blocks).sum()).collect();
    assert_eq!(out.to_host(&stream)?, want);
    assert_eq!(flags.to_host(&stream)?, vec![1; blocks as usize]);
    let ptx = CHAINED_BLOCKS
        .ptx_for(Target::Sm80)
        .expect("sm_80 is built");
    for inst in ["nanosleep.u32", "ld.global.cg.u32", "fence.acq_rel.gpu"] {
        assert!(ptx.contains(inst), "no `{inst}` in\n{ptx}");
    }
    Ok(())
}

#[test]
fn the_last_block_adds_every_partial_sum() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let blocks = 7u32;
    let x: Vec<u32> = (0..blocks * 64).map(|k| k * 3 + 1).collect();
    let dx = Buffer::from_host(&stream, &x)?;
    let mut partial = Buffer::from_host(&stream, &vec![0u32; blocks as usize])?;
    let mut counter = Buffer::from_host(&stream, &[0u32])?;
    let mut total = Buffer::from_host(&stream, &[u32::MAX])?;
    for _ in 0..2 {
        last_block_total(
            &stream,
            LaunchConfig::linear(blocks, 64),
            &dx,
            &mut partial,
            &mut counter,
            &mut total,
        )?;
        assert_eq!(total.to_host(&stream)?, [x.iter().sum::<u32>()]);
        assert_eq!(
            counter.to_host(&stream)?,
            [0],
            "the ticket counter wraps to 0"
        );
    }
    let ptx = LAST_BLOCK_TOTAL
        .ptx_for(Target::Sm80)
        .expect("sm_80 is built");
    for inst in [
        "ld.global.cg.u32",
        "atom.global.inc.u32",
        "fence.acq_rel.gpu",
    ] {
        assert!(ptx.contains(inst), "no `{inst}` in\n{ptx}");
    }
    Ok(())
}

#[test]
fn fences_of_each_scope_keep_the_copy_intact() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let x: Vec<f32> = (0..50).map(|k| k as f32 * 0.5 - 3.0).collect();
    let dx = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::from_host(&stream, &[f32::NAN; 50])?;
    let mut flags = Buffer::from_host(&stream, &[0u32; 50])?;
    fenced_copy(
        &stream,
        LaunchConfig::for_elements(50, 32),
        &dx,
        &mut y,
        &mut flags,
        50,
    )?;
    assert_eq!(y.to_host(&stream)?, x);
    assert_eq!(flags.to_host(&stream)?, [1u32; 50]);
    let ptx = FENCED_COPY.ptx_for(Target::Sm80).expect("sm_80 is built");
    for scope in ["cta", "gpu", "sys"] {
        assert!(ptx.contains(&format!("fence.acq_rel.{scope};")), "{scope}");
    }
    Ok(())
}

#[test]
fn tf32_mma_computes_a_times_b_plus_c() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    // Small integers and halves are exact in tf32, so the products and sums are exact too.
    let a: Vec<f32> = (0..16 * 8).map(|k| ((k * 7) % 9) as f32 - 4.0).collect();
    let b: Vec<f32> = (0..8 * 8)
        .map(|k| ((k * 5) % 7) as f32 * 0.5 - 1.5)
        .collect();
    let c: Vec<f32> = (0..16 * 8).map(|k| (k % 5) as f32).collect();
    let (da, db, dc) = (
        Buffer::from_host(&stream, &a)?,
        Buffer::from_host(&stream, &b)?,
        Buffer::from_host(&stream, &c)?,
    );
    let mut d = Buffer::from_host(&stream, &[f32::NAN; 16 * 8])?;
    mma_tf32_16x8x8(&stream, LaunchConfig::linear(1, 32), &da, &db, &dc, &mut d)?;
    let d = d.to_host(&stream)?;
    for m in 0..16 {
        for n in 0..8 {
            let want = c[m * 8 + n] + (0..8).map(|k| a[m * 8 + k] * b[k * 8 + n]).sum::<f32>();
            assert_eq!(d[m * 8 + n], want, "d[{m}][{n}]");
        }
    }
    Ok(())
}

#[test]
fn int8_mma_computes_a_times_b_plus_c_with_a_signed_or_unsigned() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    // Bytes over the whole range, so the signed and unsigned readings of `a` differ, and
    // accumulators of both signs.
    let a: Vec<u8> = (0..16 * 32).map(|k| (k * 73 + 11) as u8).collect();
    let b: Vec<i8> = (0..32 * 8).map(|k| (k * 37 + 5) as u8 as i8).collect();
    let c: Vec<i32> = (0..16 * 8).map(|k: i32| (k - 64) * 1001).collect();
    let mut bt = vec![0u8; 8 * 32];
    for k in 0..32 {
        for n in 0..8 {
            bt[n * 32 + k] = b[k * 8 + n] as u8;
        }
    }
    let words = |v: &[u8]| -> Vec<u32> {
        v.chunks(4)
            .map(|q| u32::from_le_bytes([q[0], q[1], q[2], q[3]]))
            .collect()
    };
    let (da, db, dc) = (
        Buffer::from_host(&stream, &words(&a))?,
        Buffer::from_host(&stream, &words(&bt))?,
        Buffer::from_host(&stream, &c)?,
    );
    let mut ds = Buffer::from_host(&stream, &[i32::MIN; 16 * 8])?;
    let mut du = Buffer::from_host(&stream, &[i32::MIN; 16 * 8])?;
    mma_int8_16x8x32(
        &stream,
        LaunchConfig::linear(1, 32),
        &da,
        &db,
        &dc,
        &mut ds,
        &mut du,
    )?;
    let (ds, du) = (ds.to_host(&stream)?, du.to_host(&stream)?);
    for m in 0..16 {
        for n in 0..8 {
            let dot = |signed: bool| -> i32 {
                (0..32)
                    .map(|k| {
                        let x = a[m * 32 + k];
                        let x = if signed { x as i8 as i32 } else { x as i32 };
                        x * b[k * 8 + n] as i32
                    })
                    .sum()
            };
            assert_eq!(ds[m * 8 + n], c[m * 8 + n] + dot(true), "s8 d[{m}][{n}]");
            assert_eq!(du[m * 8 + n], c[m * 8 + n] + dot(false), "u8 d[{m}][{n}]");
        }
    }
    Ok(())
}

#[test]
fn int8_mma_emits_both_byte_readings_and_ptxas_takes_them() {
    let ptx = MMA_INT8_16X8X32
        .ptx_for(Target::Sm80)
        .expect("sm_80 is built");
    for want in [
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
        "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32",
    ] {
        assert!(ptx.contains(want), "no `{want}` in\n{ptx}");
    }
    let Some(ptxas) = kernel_dsl::ptxas::Ptxas::find() else {
        eprintln!("skipping the ptxas half: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
    ptxas.assemble(&ptx).expect("ptxas accepts the module");
}

#[test]
fn f16_bits_to_f32_widens_every_kind_of_half_exactly() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    // Normals, subnormals, zeros of both signs, infinities and the largest half, with junk
    // in the other half of each word for the low-half read.
    let halves: Vec<u16> = vec![
        0x3c00, 0xbc00, 0x0001, 0x83ff, 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7bff, 0x3555, 0x0400,
        0xc6e3,
    ];
    let words: Vec<u32> = halves
        .chunks(2)
        .map(|p| u32::from(p[0]) | (u32::from(p[1]) << 16))
        .collect();
    let n = words.len() as u32;
    let h = Buffer::from_host(&stream, &words)?;
    let mut y = Buffer::from_host(&stream, &vec![f32::NAN; halves.len()])?;
    half_words_to_f32(&stream, LaunchConfig::for_elements(n, 32), &h, &mut y, n)?;
    let y = y.to_host(&stream)?;
    for (i, &bits) in halves.iter().enumerate() {
        let want = kernel_runtime::F16::from_bits(bits).to_f32();
        assert_eq!(y[i].to_bits(), want.to_bits(), "half {bits:#06x}");
    }
    assert_eq!(y[2], 2f32.powi(-24));
    assert_eq!(y[8], 65504.0);
    Ok(())
}

#[test]
fn block_wide_votes_count_and_combine_every_threads_flag() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    for threads in [64u32, 96] {
        let t = threads as usize;
        // Per block: none, all, only the last thread, every third thread, a scatter.
        let mut flags = vec![0u32; t];
        flags.extend(vec![1u32; t]);
        flags.extend((0..t).map(|k| u32::from(k == t - 1)));
        flags.extend((0..t).map(|k| u32::from(k % 3 == 0)));
        flags.extend((0..t).map(|k| u32::from((k * 7 + 3) % 11 < 4)));
        let blocks = flags.len() / t;
        let dflags = Buffer::from_host(&stream, &flags)?;
        let mut out = Buffer::from_host(&stream, &vec![u32::MAX; 3 * flags.len()])?;
        block_votes(
            &stream,
            LaunchConfig::linear(blocks as u32, threads),
            &dflags,
            &mut out,
        )?;
        let out = out.to_host(&stream)?;
        for (b, block) in flags.chunks(t).enumerate() {
            let count = block.iter().filter(|&&f| f != 0).count() as u32;
            let want = [count, u32::from(count == threads), u32::from(count > 0)];
            for k in 0..t {
                let i = b * t + k;
                assert_eq!(
                    out[i * 3..i * 3 + 3],
                    want,
                    "{threads} threads, block {b}, thread {k}"
                );
            }
        }
    }
    let ptx = BLOCK_VOTES.ptx_for(Target::Sm80).expect("sm_80 is built");
    for inst in ["bar.red.popc.u32", "bar.red.and.pred", "bar.red.or.pred"] {
        assert!(ptx.contains(inst), "no `{inst}` in\n{ptx}");
    }
    Ok(())
}

#[test]
fn a_loop_ended_by_sync_threads_or_hands_out_every_chunk_once() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    for (threads, blocks, n) in [
        (64u32, 3u32, 1000u32),
        (96, 4, 961),
        (96, 2, 96),
        (64, 5, 0),
    ] {
        let mut seen = Buffer::from_host(&stream, &vec![0u32; n.max(1) as usize])?;
        let mut counter = Buffer::from_host(&stream, &[0u32])?;
        chunked_work(
            &stream,
            LaunchConfig::linear(blocks, threads),
            &mut seen,
            &mut counter,
            n,
        )?;
        let seen = seen.to_host(&stream)?;
        assert!(
            seen[..n as usize].iter().all(|&s| s == 1),
            "{threads}×{blocks}, n = {n}: {seen:?}"
        );
        // Every chunk once, then one ticket past the end per block, which ends its loop.
        let chunks = n.div_ceil(threads);
        assert_eq!(counter.to_host(&stream)?, [chunks + blocks]);
    }
    Ok(())
}
