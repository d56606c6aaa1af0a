//! f16/bf16 (scalar and packed) and f64 instructions against references written with exact
//! f64 arithmetic and an independent round-to-nearest-even.

mod common;

use common::*;
use ptx_emulator::{ArgValue, GlobalMemory, LaunchConfig};

/// f16 bits of an f32 value that f16 represents exactly (normal range).
fn exact_f16_bits(x: f32) -> u16 {
    if x == 0.0 {
        return if x.is_sign_negative() { 0x8000 } else { 0 };
    }
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32 - 127;
    let man = bits & 0x7f_ffff;
    if exp < -14 {
        // Subnormal f16: value / 2^-24 is an integer.
        return sign | (x.abs() as f64 / 2f64.powi(-24)) as u16;
    }
    sign | (((exp + 15) as u16) << 10) | (man >> 13) as u16
}

/// Round-to-nearest-even of an exact f64 to a format with `man` mantissa bits and minimum
/// normal exponent `emin`, returned as an f64.
fn round_to(v: f64, man: i32, emin: i32) -> f64 {
    if v == 0.0 {
        return v;
    }
    let e = v.abs().log2().floor() as i32;
    let q = 2f64.powi(e.max(emin) - man);
    (v / q).round_ties_even() * q
}

fn f16_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let man = (h & 0x3ff) as f64;
    sign * if exp == 0 {
        man * 2f64.powi(-24)
    } else {
        (1.0 + man / 1024.0) * 2f64.powi(exp - 15)
    }
}

const HALF_OPS: &str = r#"
.visible .entry half_ops(.param .u64 in_a, .param .u64 in_b, .param .u64 out)
{
	.reg .b16 	%h<16>;
	.reg .b32 	%r<20>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [in_a];
	ld.param.u64 	%rd2, [in_b];
	ld.param.u64 	%rd3, [out];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd4, %r1, 8;
	add.s64 	%rd5, %rd1, %rd4;
	add.s64 	%rd6, %rd2, %rd4;
	ld.global.v2.f32 	{%f1, %f2}, [%rd5];
	cvt.rn.f16x2.f32 	%r2, %f2, %f1;
	ld.global.v2.f32 	{%f1, %f2}, [%rd6];
	cvt.rn.f16x2.f32 	%r3, %f2, %f1;
	add.f16x2 	%r4, %r2, %r3;
	mul.rn.f16x2 	%r5, %r2, %r3;
	fma.rn.f16x2 	%r6, %r2, %r3, %r2;
	sub.f16x2 	%r7, %r2, %r3;
	min.f16x2 	%r8, %r2, %r3;
	max.f16x2 	%r9, %r2, %r3;
	neg.f16x2 	%r10, %r2;
	abs.f16x2 	%r11, %r3;
	mov.b32 	{%h1, %h2}, %r2;
	mov.b32 	{%h3, %h4}, %r3;
	add.rn.f16 	%h5, %h1, %h3;
	cvt.f32.f16 	%f3, %h5;
	mov.b32 	%r12, %f3;
	mul.wide.u32 	%rd4, %r1, 48;
	add.s64 	%rd7, %rd3, %rd4;
	st.global.v4.u32 	[%rd7], {%r4, %r5, %r6, %r7};
	st.global.v4.u32 	[%rd7+16], {%r8, %r9, %r10, %r11};
	cvt.rn.bf16x2.f32 	%r13, %f2, %f1;
	fma.rn.bf16x2 	%r14, %r13, %r13, %r13;
	ex2.approx.f16x2 	%r15, %r2;
	st.global.v4.u32 	[%rd7+32], {%r12, %r13, %r14, %r15};
	ret;
}
"#;

#[test]
fn packed_half_arithmetic_rounds_each_lane_to_nearest_even() {
    let mut rng = Rng::new(91);
    let n = 256;
    // Magnitudes at least 1/64 keep every reference computation exact in f64.
    let gen = |rng: &mut Rng| -> f32 {
        let v = rng.f32_in(-8.0, 8.0);
        let v = if v.abs() < 1.0 / 64.0 { 0.5 } else { v };
        f16_value(exact_f16_bits(round_to(v as f64, 10, -14) as f32)) as f32
    };
    let a: Vec<f32> = (0..2 * n).map(|_| gen(&mut rng)).collect();
    let b: Vec<f32> = (0..2 * n).map(|_| gen(&mut rng)).collect();
    let mut mem = GlobalMemory::new();
    let (da, db) = (mem.alloc_f32(&a), mem.alloc_f32(&b));
    let dout = poisoned_u32(&mut mem, n * 12);
    launch(
        &ptx(HALF_OPS),
        "half_ops",
        LaunchConfig::linear(1, n as u32),
        &[ArgValue::Ptr(da), ArgValue::Ptr(db), ArgValue::Ptr(dout)],
        &mut mem,
    )
    .unwrap();
    let out = mem.read_u32(dout, n * 12).unwrap();
    let h = |v: f64| exact_f16_bits(round_to(v, 10, -14) as f32) as u32;
    let pair = |lo: u32, hi: u32| lo | hi << 16;
    for t in 0..n {
        let (a0, a1) = (a[2 * t] as f64, a[2 * t + 1] as f64);
        let (b0, b1) = (b[2 * t] as f64, b[2 * t + 1] as f64);
        let o = &out[t * 12..t * 12 + 12];
        assert_eq!(o[0], pair(h(a0 + b0), h(a1 + b1)), "add, thread {t}");
        assert_eq!(o[1], pair(h(a0 * b0), h(a1 * b1)), "mul, thread {t}");
        assert_eq!(
            o[2],
            pair(h(a0 * b0 + a0), h(a1 * b1 + a1)),
            "fma, thread {t}"
        );
        assert_eq!(o[3], pair(h(a0 - b0), h(a1 - b1)), "sub, thread {t}");
        assert_eq!(o[4], pair(h(a0.min(b0)), h(a1.min(b1))), "min, thread {t}");
        assert_eq!(o[5], pair(h(a0.max(b0)), h(a1.max(b1))), "max, thread {t}");
        assert_eq!(o[6], pair(h(-a0), h(-a1)), "neg, thread {t}");
        assert_eq!(o[7], pair(h(b0.abs()), h(b1.abs())), "abs, thread {t}");
        assert_eq!(
            f32::from_bits(o[8]) as f64,
            round_to(a0 + b0, 10, -14),
            "add.f16, thread {t}"
        );
        // bf16 lanes of (b0, b1): 7 mantissa bits, f32's exponent range.
        let bf = |v: f64| (round_to(v, 7, -126) as f32).to_bits() >> 16;
        assert_eq!(o[9], pair(bf(b0), bf(b1)), "cvt bf16x2, thread {t}");
        let (c0, c1) = (round_to(b0, 7, -126), round_to(b1, 7, -126));
        assert_eq!(
            o[10],
            pair(bf(c0 * c0 + c0), bf(c1 * c1 + c1)),
            "fma bf16x2, thread {t}"
        );
        for (lane, x) in [a0, a1].into_iter().enumerate() {
            let got = f16_value((o[11] >> (16 * lane)) as u16);
            let want = x.exp2();
            assert!(
                (got - want).abs() <= want * 2f64.powi(-9),
                "ex2.f16 thread {t}: {got} vs {want}"
            );
        }
    }
}

const DOUBLE_OPS: &str = r#"
.visible .entry double_ops(.param .u64 in_a, .param .u64 in_b, .param .u64 out)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<4>;
	.reg .f32 	%f<3>;
	.reg .f64 	%fd<16>;
	.reg .b64 	%rd<16>;

	ld.param.u64 	%rd1, [in_a];
	ld.param.u64 	%rd2, [in_b];
	ld.param.u64 	%rd3, [out];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd4, %r1, 8;
	add.s64 	%rd5, %rd1, %rd4;
	add.s64 	%rd6, %rd2, %rd4;
	ld.global.f64 	%fd1, [%rd5];
	ld.global.f64 	%fd2, [%rd6];
	add.rn.f64 	%fd3, %fd1, %fd2;
	add.rz.f64 	%fd4, %fd1, %fd2;
	add.rp.f64 	%fd5, %fd1, %fd2;
	fma.rn.f64 	%fd6, %fd1, %fd2, %fd1;
	div.rn.f64 	%fd7, %fd1, %fd2;
	abs.f64 	%fd8, %fd1;
	sqrt.rn.f64 	%fd9, %fd8;
	rcp.rn.f64 	%fd10, %fd2;
	max.f64 	%fd11, %fd1, %fd2;
	cvt.rn.f32.f64 	%f1, %fd1;
	cvt.rz.f32.f64 	%f2, %fd1;
	mov.b64 	%rd7, {%f1, %f2};
	cvt.rni.s64.f64 	%rd8, %fd1;
	setp.gtu.f64 	%p1, %fd1, %fd2;
	selp.u64 	%rd9, 1, 0, %p1;
	mul.wide.u32 	%rd4, %r1, 96;
	add.s64 	%rd10, %rd3, %rd4;
	st.global.v2.f64 	[%rd10], {%fd3, %fd4};
	st.global.v2.f64 	[%rd10+16], {%fd5, %fd6};
	st.global.v2.f64 	[%rd10+32], {%fd7, %fd9};
	st.global.v2.f64 	[%rd10+48], {%fd10, %fd11};
	st.global.v2.u64 	[%rd10+64], {%rd7, %rd8};
	st.global.u64 	[%rd10+80], %rd9;
	ret;
}
"#;

fn step(x: f64, up: bool) -> f64 {
    let b = x.to_bits() as i64;
    let dir = if (x > 0.0 || (x == 0.0 && !x.is_sign_negative())) == up {
        1
    } else {
        -1
    };
    if x == 0.0 {
        return if up {
            f64::from_bits(1)
        } else {
            -f64::from_bits(1)
        };
    }
    f64::from_bits((b + dir) as u64)
}

#[test]
fn double_precision_arithmetic_and_conversions() {
    let mut rng = Rng::new(92);
    let n = 300;
    let mut a: Vec<f64> = (0..n)
        .map(|_| rng.f32_in(-1e3, 1e3) as f64 * (1.0 + 1e-9 * rng.f32_in(0.0, 1.0) as f64))
        .collect();
    let mut b: Vec<f64> = (0..n).map(|_| rng.f32_in(-1e3, 1e3) as f64 / 3.0).collect();
    a[0] = f64::NAN;
    b[1] = f64::NAN;
    a[2] = 2.5;
    a[3] = -3.5;
    let to_u64 = |v: &[f64]| -> Vec<u32> {
        v.iter()
            .flat_map(|x| {
                let b = x.to_bits();
                [b as u32, (b >> 32) as u32]
            })
            .collect()
    };
    let mut mem = GlobalMemory::new();
    let da = alloc_u32(&mut mem, &to_u64(&a));
    let db = alloc_u32(&mut mem, &to_u64(&b));
    let dout = mem.alloc(n * 96);
    launch(
        &ptx(DOUBLE_OPS),
        "double_ops",
        LaunchConfig::linear(1, n as u32),
        &[ArgValue::Ptr(da), ArgValue::Ptr(db), ArgValue::Ptr(dout)],
        &mut mem,
    )
    .unwrap();
    let out = read_u64(&mem, dout, n * 12);
    let canon = |x: f64| {
        if x.is_nan() {
            0x7fff_ffff_ffff_ffff
        } else {
            x.to_bits()
        }
    };
    for t in 0..n {
        let (x, y) = (a[t], b[t]);
        let o = &out[t * 12..t * 12 + 12];
        let s = x + y;
        // Error-free: x + y = s + e exactly.
        let bb = s - x;
        let e = (x - (s - bb)) + (y - bb);
        let rz = if e != 0.0 && (e > 0.0) != (s > 0.0) {
            step(s, s < 0.0)
        } else {
            s
        };
        let rp = if e > 0.0 { step(s, true) } else { s };
        assert_eq!(o[0], canon(s), "add.rn {x} {y}");
        if !s.is_nan() {
            assert_eq!(o[1], rz.to_bits(), "add.rz {x} {y}");
            assert_eq!(o[2], rp.to_bits(), "add.rp {x} {y}");
        }
        assert_eq!(o[3], canon(x.mul_add(y, x)), "fma {x} {y}");
        assert_eq!(o[4], canon(x / y), "div {x} {y}");
        assert_eq!(o[5], canon(x.abs().sqrt()), "sqrt {x}");
        assert_eq!(o[6], canon(1.0 / y), "rcp {y}");
        let max = if x.is_nan() {
            y
        } else if y.is_nan() {
            x
        } else {
            x.max(y)
        };
        assert_eq!(o[7], canon(max), "max {x} {y}");
        let f_rn = x as f32;
        let f_rz = if (f_rn as f64).abs() > x.abs() {
            f32::from_bits(f_rn.to_bits() - 1)
        } else {
            f_rn
        };
        let f_rn_bits = if x.is_nan() {
            0x7fff_ffff
        } else {
            f_rn.to_bits() as u64
        };
        let f_rz_bits = if x.is_nan() {
            0x7fff_ffff
        } else {
            f_rz.to_bits() as u64
        };
        assert_eq!(o[8], f_rn_bits | f_rz_bits << 32, "cvt f32 {x}");
        let rni = if x.is_nan() {
            0
        } else {
            x.round_ties_even() as i64 as u64
        };
        assert_eq!(o[9], rni, "cvt.rni {x}");
        assert_eq!(
            o[10],
            (x.is_nan() || y.is_nan() || x > y) as u64,
            "setp.gtu {x} {y}"
        );
    }
}

/// Every finite E4M3 value by bit pattern (positive half).
fn e4m3_values() -> Vec<f64> {
    (0u8..0x7f)
        .map(|b| {
            let e = (b >> 3) as i32;
            let m = (b & 7) as f64;
            if e == 0 {
                m / 8.0 * 2f64.powi(-6)
            } else {
                (1.0 + m / 8.0) * 2f64.powi(e - 7)
            }
        })
        .collect()
}

/// Nearest E4M3 bits by search, ties to the even pattern, saturating at 448.
fn e4m3_nearest(v: f32) -> u8 {
    let values = e4m3_values();
    let a = (v.abs() as f64).min(448.0);
    let mut best = 0usize;
    for (i, &x) in values.iter().enumerate() {
        let (d, db) = ((x - a).abs(), (values[best] - a).abs());
        if d < db || (d == db && i % 2 == 0) {
            best = i;
        }
    }
    best as u8 | if v < 0.0 { 0x80 } else { 0 }
}

#[test]
fn fp8_e4m3_pairs_round_to_nearest_and_widen_exactly_to_f16() {
    let source = ptx(r#"
.visible .entry fp8(.param .u64 in, .param .u64 out)
{
	.reg .b16 	%rs<3>;
	.reg .b32 	%r<4>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<6>;
	ld.param.u64 	%rd1, [in];
	ld.param.u64 	%rd2, [out];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 8;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.v2.f32 	{%f1, %f2}, [%rd4];
	cvt.rn.satfinite.e4m3x2.f32 	%rs1, %f1, %f2;
	cvt.rn.f16x2.e4m3x2 	%r2, %rs1;
	cvt.u32.u16 	%r3, %rs1;
	add.s64 	%rd5, %rd2, %rd3;
	st.global.v2.u32 	[%rd5], {%r3, %r2};
	ret;
}
"#);
    let mut rng = Rng::new(93);
    let n = 256;
    let mut x: Vec<f32> = (0..2 * n)
        .map(|_| rng.f32_in(-500.0, 500.0) / (1 << (rng.next_u32() % 12)) as f32)
        .collect();
    x[0] = 1.0625;
    x[1] = 1e6;
    let mut mem = GlobalMemory::new();
    let dx = mem.alloc_f32(&x);
    let dout = poisoned_u32(&mut mem, 2 * n);
    launch(
        &source,
        "fp8",
        LaunchConfig::linear(1, n as u32),
        &[ArgValue::Ptr(dx), ArgValue::Ptr(dout)],
        &mut mem,
    )
    .unwrap();
    let out = mem.read_u32(dout, 2 * n).unwrap();
    let values = e4m3_values();
    for t in 0..n {
        let (hi, lo) = (e4m3_nearest(x[2 * t]), e4m3_nearest(x[2 * t + 1]));
        assert_eq!(
            out[2 * t],
            (hi as u32) << 8 | lo as u32,
            "inputs {} {}",
            x[2 * t],
            x[2 * t + 1]
        );
        let widen = |b: u8| {
            let v = values[(b & 0x7f) as usize];
            exact_f16_bits(if b & 0x80 != 0 { -v as f32 } else { v as f32 }) as u32
        };
        assert_eq!(out[2 * t + 1], widen(hi) << 16 | widen(lo), "widening {t}");
    }
}
