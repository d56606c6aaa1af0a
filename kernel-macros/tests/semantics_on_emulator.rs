//! Kernels whose results follow Rust's semantics for integer division, shifts, casts, `if` as
//! a value, loops with `continue`, and shared memory, checked on the emulator against the same
//! expressions evaluated on the host.

mod common;

use kernel_macros::{device, kernel};
use kernel_runtime::{Buffer, Device, LaunchConfig, F16};

#[kernel(crate = crate::common::paths)]
pub fn semantics(x: &[f32], xi: &[i32], y: &mut [f32], yi: &mut [i32], yu: &mut [u32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i >= n {
        return;
    }
    let a = xi[i];
    let v = x[i];
    yi[i * 4] = a / 3 + a % 5;
    yi[i * 4 + 1] = (a >> 2) ^ (a << 1);
    yi[i * 4 + 2] = v as i32;
    yi[i * 4 + 3] = if a > 0 { a } else { -a };
    yu[i * 2] = (a as u32) >> 3;
    yu[i * 2 + 1] = {
        let mut s = 0;
        for k in 0..(i % 7) {
            if k == 2 {
                continue;
            }
            s += k;
        }
        s
    };
    y[i * 2] = if v > 0.0 { v.sqrt() } else { v * v };
    y[i * 2 + 1] = (a as f32) * 0.5 + v.floor();
}

/// Reverses each block's 64 elements through shared memory.
#[kernel(crate = crate::common::paths, block = 64)]
pub fn reverse_in_block(x: &[u32], y: &mut [u32]) {
    let buf = shared_array::<u32, 64>();
    let t = thread_idx().x;
    let base = block_idx().x * 64;
    buf[t] = x[base + t];
    sync_threads();
    y[base + t] = buf[63 - t];
}

fn host(i: u32, a: i32, v: f32) -> ([i32; 4], [u32; 2], [f32; 2]) {
    let s: u32 = (0..i % 7).filter(|&k| k != 2).sum();
    (
        [
            a / 3 + a % 5,
            (a >> 2) ^ (a << 1),
            v as i32,
            if a > 0 { a } else { -a },
        ],
        [(a as u32) >> 3, s],
        [
            if v > 0.0 { v.sqrt() } else { v * v },
            (a as f32) * 0.5 + v.floor(),
        ],
    )
}

#[test]
fn integer_float_and_control_flow_semantics_match_rust() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let n = 300u32;
    let mut seed = 7u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as u32
    };
    let xi: Vec<i32> = (0..n).map(|_| (next() as i32 % 20001) - 10000).collect();
    let x: Vec<f32> = (0..n)
        .map(|k| {
            if k % 10 == 0 {
                3.0e9
            } else {
                (next() % 20000) as f32 / 100.0 - 100.0
            }
        })
        .collect();
    let dx = Buffer::from_host(&stream, &x)?;
    let dxi = Buffer::from_host(&stream, &xi)?;
    let mut y = Buffer::from_host(&stream, &vec![f32::NAN; 2 * n as usize])?;
    let mut yi = Buffer::from_host(&stream, &vec![i32::MIN; 4 * n as usize])?;
    let mut yu = Buffer::from_host(&stream, &vec![u32::MAX; 2 * n as usize])?;
    semantics(
        &stream,
        LaunchConfig::for_elements(n, 64),
        &dx,
        &dxi,
        &mut y,
        &mut yi,
        &mut yu,
        n,
    )?;
    let (y, yi, yu) = (
        y.to_host(&stream)?,
        yi.to_host(&stream)?,
        yu.to_host(&stream)?,
    );
    for i in 0..n as usize {
        let (ei, eu, ef) = host(i as u32, xi[i], x[i]);
        assert_eq!(
            &yi[i * 4..i * 4 + 4],
            &ei,
            "ints at {i} (a = {}, v = {})",
            xi[i],
            x[i]
        );
        assert_eq!(&yu[i * 2..i * 2 + 2], &eu, "uints at {i}");
        assert_eq!(y[i * 2].to_bits(), ef[0].to_bits(), "sqrt/square at {i}");
        assert_eq!(y[i * 2 + 1].to_bits(), ef[1].to_bits(), "floor at {i}");
    }
    Ok(())
}

#[test]
fn shared_memory_reverses_each_block() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let x: Vec<u32> = (0..256u32).map(|k| k.wrapping_mul(2654435761)).collect();
    let dx = Buffer::from_host(&stream, &x)?;
    let mut y = Buffer::from_host(&stream, &vec![0xDEAD_BEEF; 256])?;
    reverse_in_block(&stream, LaunchConfig::linear(4, 64), &dx, &mut y)?;
    let y = y.to_host(&stream)?;
    for b in 0..4 {
        for t in 0..64 {
            assert_eq!(y[b * 64 + t], x[b * 64 + 63 - t]);
        }
    }
    Ok(())
}

/// Copies `n` elements and widens f16 to f32, for launches on parts of buffers.
#[kernel(crate = crate::common::paths, instances(T in [u32, f16]))]
pub fn widen_part<T: Element>(x: &[T], y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = x[i] as f32;
    }
}

#[test]
fn launchers_take_views_of_parts_of_buffers() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let h: Vec<F16> = (0..12).map(|k| F16::from_f32(k as f32 - 5.5)).collect();
    let dh = Buffer::from_host(&stream, &h)?;
    let mut y = Buffer::from_host(&stream, &[-1.0f32; 10])?;
    // Elements 3..8 of `h` into elements 4..9 of `y`: the rest of `y` is untouched.
    let cfg = LaunchConfig::linear(1, 32);
    widen_part::<F16>(&stream, cfg, &dh.slice(3..8)?, &mut y.slice_mut(4..9)?, 5)?;
    let want: Vec<f32> = (0..10)
        .map(|k| {
            if (4..9).contains(&k) {
                h[k - 1].to_f32()
            } else {
                -1.0
            }
        })
        .collect();
    assert_eq!(y.to_host(&stream)?, want);
    // A whole buffer still goes by reference, to the per-instance launcher as well.
    widen_part__f16(&stream, cfg, &dh, &mut y, 10)?;
    assert_eq!(y.to_host(&stream)?[9], h[9].to_f32());
    // A view carries its element type only at run time: a view of u32 for `&[f16]` is the
    // runtime's argument error, before anything runs.
    let du = Buffer::from_host(&stream, &[7u32; 4])?;
    let e = widen_part::<F16>(&stream, cfg, &du.slice(0..4)?, &mut y, 4).unwrap_err();
    assert!(
        matches!(e, kernel_runtime::Error::ArgKind { index: 0, .. }),
        "{e}"
    );
    Ok(())
}

/// Scalars of every width arrive intact: `bool` travels as a byte, `f16` as 16 bits.
#[kernel(crate = crate::common::paths)]
pub fn scalars(out: &mut [f32], flag: bool, h: f16, k: i64, u: u64, d: f64) {
    let t = thread_idx().x;
    if t == 0 {
        out[0] = if flag { 1.0 } else { -1.0 };
        out[1] = h as f32;
        out[2] = k as f32;
        out[3] = u as f32;
        out[4] = d as f32;
    }
}

#[test]
fn scalar_parameters_of_every_width_reach_the_kernel() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    for flag in [true, false] {
        let mut out = Buffer::from_host(&stream, &[f32::NAN; 5])?;
        scalars(
            &stream,
            LaunchConfig::linear(1, 32),
            &mut out,
            flag,
            F16::from_f32(-2.5),
            -7_000_000_000,
            1 << 40,
            0.125,
        )?;
        let out = out.to_host(&stream)?;
        assert_eq!(
            out,
            [
                if flag { 1.0 } else { -1.0 },
                -2.5,
                -7.0e9,
                (1u64 << 40) as f32,
                0.125
            ]
        );
    }
    Ok(())
}

/// `let` copies: a name bound to an array element or a mutable variable keeps its value when
/// the element or variable is assigned afterwards, as in Rust.
#[kernel(crate = crate::common::paths)]
pub fn let_copies(x: &[f32], y: &mut [f32]) {
    let mut v = x.load4(0);
    let first = v[0];
    v[0] = 100.0;
    let mut m = x[1];
    let before = m;
    m += 1.0;
    y[0] = first;
    y[1] = v[0];
    y[2] = before;
    y[3] = m;
}

#[test]
fn a_let_keeps_its_value_when_what_it_was_read_from_changes() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let x = Buffer::from_host(&stream, &[2.0f32, 3.0, 0.0, 0.0])?;
    let mut y = Buffer::from_host(&stream, &[f32::NAN; 4])?;
    let_copies(&stream, LaunchConfig::linear(1, 1), &x, &mut y)?;
    assert_eq!(y.to_host(&stream)?, vec![2.0, 100.0, 3.0, 4.0]);
    Ok(())
}

/// Integer operations by a neutral constant (`W = 1` in `c * W`) are copies: the result is a
/// value of its own, unchanged when the operand is assigned afterwards.
#[kernel(crate = crate::common::paths)]
pub fn identities(xs: &[u32], ys: &mut [u32]) {
    let a = xs[0];
    let mut b = a * 1;
    b += 5;
    let mut c = 0 + a;
    c *= 3;
    let d = a / 1 - 0;
    let mut m = xs[1];
    let e = m * 1;
    m += 1;
    ys[0] = a;
    ys[1] = b;
    ys[2] = c;
    ys[3] = d;
    ys[4] = e;
    ys[5] = m;
}

#[test]
fn operations_by_neutral_constants_are_copies() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let xs = Buffer::from_host(&stream, &[7u32, 40])?;
    let mut ys = Buffer::from_host(&stream, &[0u32; 6])?;
    identities(&stream, LaunchConfig::linear(1, 1), &xs, &mut ys)?;
    assert_eq!(ys.to_host(&stream)?, vec![7, 12, 21, 7, 40, 41]);
    Ok(())
}

/// The float type constants reach the kernel bit for bit.
#[kernel(crate = crate::common::paths)]
pub fn float_constants(y: &mut [f32]) {
    y[0] = f32::NAN;
    y[1] = f32::NEG_INFINITY;
    y[2] = f32::INFINITY;
    y[3] = f32::MAX;
}

#[test]
fn float_type_constants_are_the_hosts() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let mut y = Buffer::from_host(&stream, &[0.0f32; 4])?;
    float_constants(&stream, LaunchConfig::linear(1, 1), &mut y)?;
    let y = y.to_host(&stream)?;
    assert!(y[0].is_nan());
    assert_eq!(y[1..], [f32::NEG_INFINITY, f32::INFINITY, f32::MAX]);
    Ok(())
}

/// `to_bits` is Rust's: the IEEE bits of an f32, as a method or a function.
#[kernel(crate = crate::common::paths)]
pub fn float_bits(x: &[f32], y: &mut [u32]) {
    y[0] = x[0].to_bits();
    y[1] = to_bits(x[1]);
}

#[test]
fn to_bits_is_rusts() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let xs = [-1.5f32, f32::NEG_INFINITY];
    let x = Buffer::from_host(&stream, &xs)?;
    let mut y = Buffer::from_host(&stream, &[0u32; 2])?;
    float_bits(&stream, LaunchConfig::linear(1, 1), &x, &mut y)?;
    assert_eq!(y.to_host(&stream)?, vec![xs[0].to_bits(), xs[1].to_bits()]);
    Ok(())
}

/// `from_bits` is Rust's `f32::from_bits`: the f32 a word's bits spell, NaN payloads kept.
#[kernel(crate = crate::common::paths)]
pub fn float_from_bits(x: &[u32], y: &mut [f32]) {
    y[0] = from_bits(x[0]);
    y[1] = from_bits(x[1]);
    y[2] = from_bits(x[2]);
}

#[test]
fn from_bits_is_rusts() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let xs = [(-1.5f32).to_bits(), 0x0000_0001, 0x7fa0_0001];
    let x = Buffer::from_host(&stream, &xs)?;
    let mut y = Buffer::from_host(&stream, &[0.0f32; 3])?;
    float_from_bits(&stream, LaunchConfig::linear(1, 1), &x, &mut y)?;
    let got: Vec<u32> = y.to_host(&stream)?.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, xs);
    Ok(())
}

/// `pack_bf16x2` and `pack_f16x2` round each f32 to nearest even and put `hi` in the upper
/// half, as the tensor cores read a pair.
#[kernel(crate = crate::common::paths)]
pub fn packs(x: &[f32], y: &mut [u32]) {
    y[0] = pack_bf16x2(x[0], x[1]);
    y[1] = pack_f16x2(x[0], x[1]);
}

#[test]
fn packed_pairs_round_each_half() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    // 1 + 2^-9 is below half a bf16 step, so rounds to 1 there, and is exact in f16.
    let xs = [-2.0f32, 1.0 + 1.0 / 512.0];
    let x = Buffer::from_host(&stream, &xs)?;
    let mut y = Buffer::from_host(&stream, &[0u32; 2])?;
    packs(&stream, LaunchConfig::linear(1, 1), &x, &mut y)?;
    assert_eq!(y.to_host(&stream)?, vec![0xC000_3F80, 0xC000_3C02]);
    Ok(())
}

/// The larger of two (value, index) pairs, the lower index on a tie.
#[device(crate = crate::common::paths)]
fn better(a: (f32, u32), b: (f32, u32)) -> (f32, u32) {
    let take = b.0 > a.0 || (b.0 == a.0 && b.1 < a.1);
    if take {
        b
    } else {
        a
    }
}

/// A tuple holding an array, returned from a helper.
#[device(crate = crate::common::paths)]
fn halves(x: f32) -> (u32, [f32; 2]) {
    (x as u32, [x * 0.5, x - x * 0.5])
}

/// Tuples as values, fields, patterns, helper parameters and results, and `if` arms (pure
/// arms select, arms with a load branch).
#[kernel(crate = crate::common::paths)]
pub fn tuples(x: &[f32], best: &mut [f32], at: &mut [u32], parts: &mut [f32]) {
    let (mut m, mut i) = (x[0], 0u32);
    for k in 1..5 {
        let (nm, ni) = better((m, i), (x[k], k));
        m = nm;
        i = ni;
    }
    best[0] = m;
    at[0] = i;
    let t: (f32, u32) = (2.5, 7);
    let (_, seven) = t;
    at[1] = seven + t.1;
    let (whole, [lo, hi]) = halves(x[5]);
    at[2] = whole;
    parts[0] = lo;
    parts[1] = hi;
    let pair = (x[0], x[1]);
    let branchy = if x[2] > 0.0 {
        (x[3], 1u32)
    } else {
        (pair.1, 2u32)
    };
    parts[2] = branchy.0;
    at[3] = branchy.1;
}

#[test]
fn tuples_pass_through_helpers_patterns_and_ifs() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let xs = [1.0f32, 4.0, -3.0, 4.0, 2.0, 9.0];
    let x = Buffer::from_host(&stream, &xs)?;
    let mut best = Buffer::from_host(&stream, &[0.0f32])?;
    let mut at = Buffer::from_host(&stream, &[0u32; 4])?;
    let mut parts = Buffer::from_host(&stream, &[0.0f32; 3])?;
    tuples(
        &stream,
        LaunchConfig::linear(1, 1),
        &x,
        &mut best,
        &mut at,
        &mut parts,
    )?;
    // The first 4.0 wins the tie; 9 → (9, [4.5, 4.5]); x[2] < 0 takes the else arm, pair.1.
    assert_eq!(best.to_host(&stream)?, vec![4.0]);
    assert_eq!(at.to_host(&stream)?, vec![1, 14, 9, 2]);
    assert_eq!(parts.to_host(&stream)?, vec![4.5, 4.5, 4.0]);
    Ok(())
}

/// Unsigned division and remainder by a power of two (a shift and a mask) give Rust's results,
/// up to the top of the range.
#[kernel(crate = crate::common::paths)]
pub fn powers_of_two(xs: &[u32], ws: &[u64], ys: &mut [u32], zs: &mut [u64]) {
    let i = thread_idx().x;
    ys[2 * i] = xs[i] / 8;
    ys[2 * i + 1] = xs[i] % 16;
    zs[2 * i] = ws[i] / 1024;
    zs[2 * i + 1] = ws[i] % 2;
}

#[test]
fn unsigned_division_by_powers_of_two_is_rusts() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let xs = [0u32, 7, 8, 0xFFFF_FFFF];
    let ws = [0u64, 1023, 1025, u64::MAX];
    let x = Buffer::from_host(&stream, &xs)?;
    let w = Buffer::from_host(&stream, &ws)?;
    let mut y = Buffer::from_host(&stream, &[0u32; 8])?;
    let mut z = Buffer::from_host(&stream, &[0u64; 8])?;
    powers_of_two(&stream, LaunchConfig::linear(1, 4), &x, &w, &mut y, &mut z)?;
    let want_y: Vec<u32> = xs.iter().flat_map(|&v| [v / 8, v % 16]).collect();
    let want_z: Vec<u64> = ws.iter().flat_map(|&v| [v / 1024, v % 2]).collect();
    assert_eq!(y.to_host(&stream)?, want_y);
    assert_eq!(z.to_host(&stream)?, want_z);
    Ok(())
}
