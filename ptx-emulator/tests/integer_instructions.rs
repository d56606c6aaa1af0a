//! Integer and bit-manipulation instructions, one thread per random input pair, against results
//! computed by hand in Rust from the PTX ISA's definitions.

mod common;

use common::*;
use ptx_emulator::{ArgValue, GlobalMemory, LaunchConfig};

const OUTPUTS: usize = 36;

const INTEGER_OPS: &str = r#"
.visible .entry int_ops(.param .u64 in_a, .param .u64 in_b, .param .u64 out, .param .u32 n)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<64>;
	.reg .b64 	%rd<12>;

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
	ld.global.u32 	%r6, [%rd5];
	ld.global.u32 	%r7, [%rd6];
	mul.wide.u32 	%rd7, %r5, 144;
	add.s64 	%rd8, %rd3, %rd7;
	or.b32 	%r8, %r7, 1;
	and.b32 	%r9, %r7, 63;
	and.b32 	%r10, %r7, 31;
	bfe.u32 	%r11, %r7, 8, 5;
	add.s32 	%r20, %r6, %r7;
	sub.s32 	%r21, %r6, %r7;
	mul.lo.s32 	%r22, %r6, %r7;
	mul.hi.u32 	%r23, %r6, %r7;
	st.global.v4.u32 	[%rd8], {%r20, %r21, %r22, %r23};
	mul.hi.s32 	%r20, %r6, %r7;
	mad.lo.s32 	%r21, %r6, %r7, %r6;
	div.u32 	%r22, %r6, %r8;
	rem.s32 	%r23, %r6, %r8;
	st.global.v4.u32 	[%rd8+16], {%r20, %r21, %r22, %r23};
	min.s32 	%r20, %r6, %r7;
	max.u32 	%r21, %r6, %r7;
	and.b32 	%r22, %r6, %r7;
	or.b32 	%r23, %r6, %r7;
	st.global.v4.u32 	[%rd8+32], {%r20, %r21, %r22, %r23};
	xor.b32 	%r20, %r6, %r7;
	not.b32 	%r21, %r6;
	shl.b32 	%r22, %r6, %r9;
	shr.s32 	%r23, %r6, %r9;
	st.global.v4.u32 	[%rd8+48], {%r20, %r21, %r22, %r23};
	shr.u32 	%r20, %r6, %r9;
	popc.b32 	%r21, %r6;
	clz.b32 	%r22, %r6;
	brev.b32 	%r23, %r6;
	st.global.v4.u32 	[%rd8+64], {%r20, %r21, %r22, %r23};
	bfe.u32 	%r20, %r6, %r10, %r11;
	bfe.s32 	%r21, %r6, %r10, %r11;
	bfi.b32 	%r22, %r6, %r7, %r10, %r11;
	shr.u32 	%r12, %r7, 16;
	prmt.b32 	%r23, %r6, %r7, %r12;
	st.global.v4.u32 	[%rd8+80], {%r20, %r21, %r22, %r23};
	xor.b32 	%r13, %r6, %r10;
	lop3.b32 	%r20, %r6, %r7, %r13, 0xe8;
	abs.s32 	%r21, %r6;
	neg.s32 	%r22, %r6;
	mul.wide.s32 	%rd9, %r6, %r7;
	mov.b64 	{%r23, %r24}, %rd9;
	st.global.v4.u32 	[%rd8+96], {%r20, %r21, %r22, %r23};
	setp.lt.s32 	%p2, %r6, %r7;
	selp.b32 	%r20, %r6, %r7, %p2;
	and.b32 	%r14, %r6, 3;
	cnot.b32 	%r21, %r14;
	add.cc.u32 	%r15, %r6, %r7;
	addc.u32 	%r22, %r7, %r6;
	st.global.v4.u32 	[%rd8+112], {%r24, %r20, %r21, %r22};
	sad.u32 	%r20, %r6, %r7, 5;
	bfind.u32 	%r21, %r6;
	shf.l.wrap.b32 	%r22, %r6, %r7, %r9;
	dp4a.s32.s32 	%r23, %r6, %r7, 7;
	st.global.v4.u32 	[%rd8+128], {%r20, %r21, %r22, %r23};
$L__end:
	ret;
}
"#;

fn bfe(a: u32, pos: u32, len: u32, signed: bool) -> u32 {
    let mut out = 0u32;
    let sign_pos = (pos + len).saturating_sub(1).min(31);
    let sign = if signed && len > 0 {
        (a >> sign_pos) & 1
    } else {
        0
    };
    for i in 0..32 {
        let bit = if i < len && pos + i < 32 {
            (a >> (pos + i)) & 1
        } else {
            sign
        };
        out |= bit << i;
    }
    out
}

fn reference(a: u32, b: u32) -> [u32; OUTPUTS] {
    let (sa, sb) = (a as i32, b as i32);
    let b1 = b | 1;
    let sh = b & 63;
    let pos = b & 31;
    let len = (b >> 8) & 31;
    let shl = if sh >= 32 { 0 } else { a << sh };
    let shr_s = (sa >> sh.min(31)) as u32;
    let shr_u = if sh >= 32 { 0 } else { a >> sh };
    let mut bfi = b;
    for i in 0..len {
        if pos + i < 32 {
            bfi = (bfi & !(1 << (pos + i))) | (((a >> i) & 1) << (pos + i));
        }
    }
    let sel = b >> 16;
    let bytes = [a.to_le_bytes(), b.to_le_bytes()].concat();
    let mut prmt = 0u32;
    for i in 0..4 {
        let s = (sel >> (4 * i)) & 0xf;
        let byte = bytes[(s & 7) as usize];
        let byte = if s & 8 != 0 {
            if byte & 0x80 != 0 {
                0xff
            } else {
                0
            }
        } else {
            byte
        };
        prmt |= (byte as u32) << (8 * i);
    }
    let c = a ^ pos;
    let majority = (a & b) | (a & c) | (b & c);
    let wide = (sa as i64 * sb as i64) as u64;
    let carry = (a as u64 + b as u64 > u32::MAX as u64) as u32;
    let dp4a = (0..4).fold(7i32, |acc, i| {
        acc + (a.to_le_bytes()[i] as i8 as i32) * (b.to_le_bytes()[i] as i8 as i32)
    });
    let funnel = {
        let n = sh & 31;
        (((b as u64) << 32 | a as u64) << n >> 32) as u32
    };
    [
        a.wrapping_add(b),
        a.wrapping_sub(b),
        a.wrapping_mul(b),
        ((a as u64 * b as u64) >> 32) as u32,
        ((sa as i64 * sb as i64) >> 32) as u32,
        a.wrapping_mul(b).wrapping_add(a),
        a / b1,
        (sa.wrapping_rem(b1 as i32)) as u32,
        sa.min(sb) as u32,
        a.max(b),
        a & b,
        a | b,
        a ^ b,
        !a,
        shl,
        shr_s,
        shr_u,
        a.count_ones(),
        a.leading_zeros(),
        a.reverse_bits(),
        bfe(a, pos, len, false),
        bfe(a, pos, len, true),
        bfi,
        prmt,
        majority,
        sa.wrapping_abs() as u32,
        sa.wrapping_neg() as u32,
        wide as u32,
        (wide >> 32) as u32,
        if sa < sb { a } else { b },
        ((a & 3) == 0) as u32,
        b.wrapping_add(a).wrapping_add(carry),
        a.abs_diff(b) + 5,
        if a == 0 {
            u32::MAX
        } else {
            31 - a.leading_zeros()
        },
        funnel,
        dp4a as u32,
    ]
}

#[test]
fn integer_and_bit_instructions_match_hand_computed_results() {
    let mut rng = Rng::new(31);
    let n = 2000;
    let mut a = rng.u32s(n);
    let mut b = rng.u32s(n);
    // Edge values: zero, all ones, sign bits, small shifts.
    let edges = [0u32, 1, u32::MAX, 0x8000_0000, 0x7fff_ffff, 31, 32, 33];
    for (i, &e) in edges.iter().enumerate() {
        a[i] = e;
        b[edges.len() + i] = e;
        a[2 * edges.len() + i] = e;
        b[2 * edges.len() + i] = edges[(i + 3) % edges.len()];
    }
    let mut mem = GlobalMemory::new();
    let (da, db) = (alloc_u32(&mut mem, &a), alloc_u32(&mut mem, &b));
    let dout = poisoned_u32(&mut mem, n * OUTPUTS);
    launch(
        &ptx(INTEGER_OPS),
        "int_ops",
        LaunchConfig::linear((n as u32).div_ceil(192), 192),
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
                "a={:#x} b={:#x} output {k}",
                a[i],
                b[i]
            );
        }
    }
}

#[test]
fn sixty_four_bit_and_narrow_integer_forms() {
    let source = ptx(r#"
.visible .entry narrow_wide(.param .u64 out, .param .u64 x)
{
	.reg .b16 	%rs<4>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<12>;
	ld.param.u64 	%rd1, [out];
	ld.param.u64 	%rd2, [x];
	mul.hi.u64 	%rd3, %rd2, %rd2;
	mad.wide.u32 	%rd4, 0xffffffff, 0xffffffff, %rd2;
	shr.s64 	%rd5, %rd2, 60;
	cvt.u16.u64 	%rs1, %rd2;
	cvt.s64.s16 	%rd6, %rs1;
	add.u16 	%rs2, %rs1, 0xffff;
	cvt.u64.u16 	%rd7, %rs2;
	clz.b64 	%r1, %rd2;
	cvt.u64.u32 	%rd8, %r1;
	popc.b64 	%r2, %rd2;
	cvt.u64.u32 	%rd9, %r2;
	st.global.v2.u64 	[%rd1], {%rd3, %rd4};
	st.global.v2.u64 	[%rd1+16], {%rd5, %rd6};
	st.global.v2.u64 	[%rd1+32], {%rd7, %rd8};
	st.global.u64 	[%rd1+48], %rd9;
	ret;
}
"#);
    let x: u64 = 0x9abc_def0_1234_8765;
    let mut mem = GlobalMemory::new();
    let out = mem.alloc(56);
    launch(
        &source,
        "narrow_wide",
        LaunchConfig::linear(1, 1),
        &[ArgValue::Ptr(out), ArgValue::U64(x)],
        &mut mem,
    )
    .unwrap();
    let got = read_u64(&mem, out, 7);
    let want = [
        ((x as u128 * x as u128) >> 64) as u64,
        (0xffff_ffffu64 * 0xffff_ffff).wrapping_add(x),
        ((x as i64) >> 60) as u64,
        0x8765u16 as i16 as i64 as u64,
        0x8764,
        x.leading_zeros() as u64,
        x.count_ones() as u64,
    ];
    assert_eq!(got, want);
}
