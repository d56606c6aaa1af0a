//! Floating-point instructions and conversions, one thread per random input pair, against
//! oracles written independently of the emulator's rounding code: exact f64 arithmetic plus
//! stepping to the neighbouring f32 for directed rounding.

mod common;

use common::*;
use ptx_emulator::{ArgValue, GlobalMemory, LaunchConfig};

const OUTPUTS: usize = 24;

const FLOAT_OPS: &str = r#"
.visible .entry float_ops(.param .u64 in_a, .param .u64 in_b, .param .u64 out, .param .u32 n)
{
	.reg .pred 	%p<3>;
	.reg .b16 	%rs<4>;
	.reg .b32 	%r<24>;
	.reg .f32 	%f<40>;
	.reg .b64 	%rd<10>;

	ld.param.u64 	%rd1, [in_a];
	ld.param.u64 	%rd2, [in_b];
	ld.param.u64 	%rd3, [out];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	$L__end;
	mul.wide.u32 	%rd4, %r5, 4;
	add.s64 	%rd5, %rd1, %rd4;
	add.s64 	%rd6, %rd2, %rd4;
	ld.global.f32 	%f1, [%rd5];
	ld.global.f32 	%f2, [%rd6];
	mul.wide.u32 	%rd7, %r5, 96;
	add.s64 	%rd8, %rd3, %rd7;
	add.rz.f32 	%f10, %f1, %f2;
	add.rm.f32 	%f11, %f1, %f2;
	add.rp.f32 	%f12, %f1, %f2;
	mul.rz.f32 	%f13, %f1, %f2;
	st.global.v4.f32 	[%rd8], {%f10, %f11, %f12, %f13};
	mul.rp.f32 	%f10, %f1, %f2;
	div.rn.f32 	%f11, %f1, %f2;
	div.rz.f32 	%f12, %f1, %f2;
	fma.rn.f32 	%f13, %f1, %f2, %f1;
	st.global.v4.f32 	[%rd8+16], {%f10, %f11, %f12, %f13};
	abs.f32 	%f3, %f1;
	sqrt.rn.f32 	%f10, %f3;
	sqrt.rp.f32 	%f11, %f3;
	rcp.rn.f32 	%f12, %f1;
	add.sat.f32 	%f13, %f1, %f2;
	st.global.v4.f32 	[%rd8+32], {%f10, %f11, %f12, %f13};
	min.f32 	%f10, %f1, %f2;
	max.f32 	%f11, %f1, %f2;
	neg.f32 	%f12, %f1;
	copysign.f32 	%f13, %f2, %f1;
	st.global.v4.f32 	[%rd8+48], {%f10, %f11, %f12, %f13};
	cvt.rzi.s32.f32 	%r10, %f1;
	cvt.rni.s32.f32 	%r11, %f1;
	cvt.rmi.s32.f32 	%r12, %f1;
	cvt.rpi.u32.f32 	%r13, %f1;
	st.global.v4.u32 	[%rd8+64], {%r10, %r11, %r12, %r13};
	cvt.rn.f16.f32 	%rs1, %f1;
	cvt.u32.u16 	%r10, %rs1;
	cvt.rz.bf16.f32 	%rs2, %f1;
	cvt.u32.u16 	%r11, %rs2;
	cvt.rn.bf16x2.f32 	%r12, %f1, %f2;
	cvt.f32.f16 	%f20, %rs1;
	mov.b32 	%r13, %f20;
	st.global.v4.u32 	[%rd8+80], {%r10, %r11, %r12, %r13};
$L__end:
	ret;
}
"#;

fn next_up(x: f32) -> f32 {
    if x == 0.0 {
        return f32::from_bits(1);
    }
    if x > 0.0 {
        f32::from_bits(x.to_bits() + 1)
    } else {
        f32::from_bits(x.to_bits() - 1)
    }
}

fn next_down(x: f32) -> f32 {
    -next_up(-x)
}

/// Directed roundings of an exactly known real `v` (given as an exact f64).
fn directed(v: f64) -> (f32, f32, f32) {
    let r = v as f32;
    if r as f64 == v {
        return (r, r, r);
    }
    let down = if (r as f64) < v { r } else { next_down(r) };
    let up = if (r as f64) > v { r } else { next_up(r) };
    let zero = if v > 0.0 { down } else { up };
    (zero, down, up)
}

/// Round-toward-zero of a/b: step the nearest quotient toward zero while it overshoots.
fn div_rz(a: f32, b: f32) -> f32 {
    let q = a / b;
    // q*b is exact in f64; compare magnitudes against a.
    if ((q as f64) * (b as f64)).abs() > (a as f64).abs() {
        if q > 0.0 {
            next_down(q)
        } else {
            next_up(q)
        }
    } else {
        q
    }
}

fn sqrt_up(x: f32) -> f32 {
    let r = x.sqrt();
    if (r as f64) * (r as f64) < x as f64 {
        next_up(r)
    } else {
        r
    }
}

fn bf16_rz(x: f32) -> u32 {
    x.to_bits() >> 16
}

fn reference(a: f32, b: f32) -> [u32; OUTPUTS] {
    let sum = a as f64 + b as f64;
    let (add_rz, add_rm, add_rp) = directed(sum);
    let prod = a as f64 * b as f64;
    let (mul_rz, _, mul_rp) = directed(prod);
    let f16 = half_bits(a);
    let f16_back = half_to_f32(f16);
    let rpi = a.ceil();
    [
        add_rz.to_bits(),
        add_rm.to_bits(),
        add_rp.to_bits(),
        mul_rz.to_bits(),
        mul_rp.to_bits(),
        (a / b).to_bits(),
        div_rz(a, b).to_bits(),
        a.mul_add(b, a).to_bits(),
        a.abs().sqrt().to_bits(),
        sqrt_up(a.abs()).to_bits(),
        (1.0 / a).to_bits(),
        (a + b).clamp(0.0, 1.0).to_bits(),
        a.min(b).to_bits(),
        a.max(b).to_bits(),
        (-a).to_bits(),
        a.abs().copysign(b).to_bits(),
        a.trunc() as i32 as u32,
        a.round_ties_even() as i32 as u32,
        a.floor() as i32 as u32,
        if rpi <= 0.0 { 0 } else { rpi as u32 },
        f16 as u32,
        bf16_rz(a),
        (bf16(a) as u32) << 16 | bf16(b) as u32,
        f16_back.to_bits(),
    ]
}

/// f32 -> f16 bits, round to nearest even, for normal-range halves (the test's inputs).
fn half_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let man = bits & 0x7f_ffff;
    assert!(
        (1..31).contains(&exp),
        "test inputs stay in f16's normal range"
    );
    let mut h = ((exp as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
        h += 1;
    }
    sign | h as u16
}

fn half_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    f32::from_bits(sign | ((exp + 127 - 15) << 23) | (man << 13))
}

#[test]
fn float_arithmetic_and_conversions_round_as_specified() {
    let mut rng = Rng::new(41);
    let n = 3000;
    let mut a = rng.f32s(n, -1000.0, 1000.0);
    let b = rng.f32s(n, -1000.0, 1000.0);
    // Values that sit exactly on integer and half-integer boundaries for the cvt roundings.
    for (i, v) in [2.5f32, -2.5, 3.5, -0.5, 0.5, 1.0, -1.0, 100.0]
        .iter()
        .enumerate()
    {
        a[i] = *v;
    }
    let mut mem = GlobalMemory::new();
    let (da, db) = (mem.alloc_f32(&a), mem.alloc_f32(&b));
    let dout = poisoned_u32(&mut mem, n * OUTPUTS);
    launch(
        &ptx(FLOAT_OPS),
        "float_ops",
        LaunchConfig::linear((n as u32).div_ceil(128), 128),
        &[
            ArgValue::Ptr(da),
            ArgValue::Ptr(db),
            ArgValue::Ptr(dout),
            ArgValue::U32(n as u32),
        ],
        &mut mem,
    )
    .unwrap();
    let out = mem.read_u32(dout, n * OUTPUTS).unwrap();
    for i in 0..n {
        let want = reference(a[i], b[i]);
        for k in 0..OUTPUTS {
            assert_eq!(
                out[i * OUTPUTS + k],
                want[k],
                "a={} b={} output {k}",
                a[i],
                b[i]
            );
        }
    }
}

const TRANSCENDENTALS: &str = r#"
.visible .entry approx(.param .u64 in, .param .u64 out)
{
	.reg .b32 	%r<3>;
	.reg .f32 	%f<12>;
	.reg .b64 	%rd<8>;
	ld.param.u64 	%rd1, [in];
	ld.param.u64 	%rd2, [out];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.f32 	%f1, [%rd4];
	ex2.approx.ftz.f32 	%f2, %f1;
	abs.f32 	%f3, %f1;
	lg2.approx.f32 	%f4, %f3;
	rsqrt.approx.f32 	%f5, %f3;
	sin.approx.f32 	%f6, %f1;
	cos.approx.f32 	%f7, %f1;
	tanh.approx.f32 	%f8, %f1;
	mul.wide.u32 	%rd5, %r1, 32;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.v4.f32 	[%rd6], {%f2, %f4, %f5, %f6};
	st.global.v2.f32 	[%rd6+16], {%f7, %f8};
	ret;
}
"#;

#[test]
fn approximate_transcendentals_stay_within_documented_error() {
    let mut rng = Rng::new(42);
    let n = 256;
    let x = rng.f32s(n, -3.1, 3.1);
    let mut mem = GlobalMemory::new();
    let dx = mem.alloc_f32(&x);
    let dout = poisoned_f32(&mut mem, n * 8);
    launch(
        &ptx(TRANSCENDENTALS),
        "approx",
        LaunchConfig::linear(1, n as u32),
        &[ArgValue::Ptr(dx), ArgValue::Ptr(dout)],
        &mut mem,
    )
    .unwrap();
    let out = mem.read_f32(dout, n * 8).unwrap();
    let ulp = |v: f64| {
        (next_up((v.abs() as f32).max(f32::MIN_POSITIVE)) as f64 - (v.abs() as f32) as f64).abs()
    };
    for i in 0..n {
        let v = x[i] as f64;
        let o = &out[i * 8..i * 8 + 8];
        assert!(
            (o[0] as f64 - v.exp2()).abs() <= 2.0 * ulp(v.exp2()),
            "ex2({v})"
        );
        assert!(
            (o[1] as f64 - v.abs().log2()).abs() <= 2.0 * ulp(v.abs().log2()) + 1e-7,
            "lg2({v})"
        );
        assert!(
            (o[2] as f64 - 1.0 / v.abs().sqrt()).abs() <= 2.0 * ulp(1.0 / v.abs().sqrt()),
            "rsqrt({v})"
        );
        // sin/cos: absolute error 2^-20.9 in [-pi, pi].
        assert!(
            (o[3] as f64 - v.sin()).abs() <= 2f64.powf(-20.9),
            "sin({v})"
        );
        assert!(
            (o[4] as f64 - v.cos()).abs() <= 2f64.powf(-20.9),
            "cos({v})"
        );
        // tanh: relative error 2^-11.
        assert!(
            (o[5] as f64 - v.tanh()).abs() <= 2f64.powi(-11) * v.tanh().abs().max(1e-30),
            "tanh({v})"
        );
        assert_eq!(o[6], POISON_F32, "slot 6 is never written");
    }
}
