//! `mma.sync` fragment layouts against a CPU matrix product, and `ldmatrix`/`stmatrix`
//! distributions. The kernels compute fragment addresses from the PTX ISA's layout tables with
//! plain integer arithmetic, as a hand-written kernel would.

mod common;

use common::*;
use ptx_emulator::{ArgValue, GlobalMemory, LaunchConfig};

/// One warp: D = A (16x16, row-major bf16) * B (16x8, stored transposed as Bt[n][k]) + C.
const MMA_BF16: &str = r#"
.visible .entry mma_bf16(.param .u64 a, .param .u64 bt, .param .u64 c, .param .u64 d)
{
	.reg .b32 	%r<16>;
	.reg .f32 	%f<9>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [bt];
	ld.param.u64 	%rd3, [c];
	ld.param.u64 	%rd4, [d];
	mov.u32 	%r1, %laneid;
	shr.u32 	%r2, %r1, 2;
	and.b32 	%r3, %r1, 3;
	shl.b32 	%r4, %r3, 1;
	mad.lo.s32 	%r5, %r2, 16, %r4;
	mul.wide.u32 	%rd5, %r5, 2;
	add.s64 	%rd6, %rd1, %rd5;
	ld.global.u32 	%r6, [%rd6];
	ld.global.u32 	%r7, [%rd6+256];
	ld.global.u32 	%r8, [%rd6+16];
	ld.global.u32 	%r9, [%rd6+272];
	add.s64 	%rd7, %rd2, %rd5;
	ld.global.u32 	%r10, [%rd7];
	ld.global.u32 	%r11, [%rd7+16];
	mad.lo.s32 	%r12, %r2, 8, %r4;
	mul.wide.u32 	%rd8, %r12, 4;
	add.s64 	%rd9, %rd3, %rd8;
	ld.global.v2.f32 	{%f1, %f2}, [%rd9];
	ld.global.v2.f32 	{%f3, %f4}, [%rd9+256];
	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 	{%f5, %f6, %f7, %f8}, {%r6, %r7, %r8, %r9}, {%r10, %r11}, {%f1, %f2, %f3, %f4};
	add.s64 	%rd10, %rd4, %rd8;
	st.global.v2.f32 	[%rd10], {%f5, %f6};
	st.global.v2.f32 	[%rd10+256], {%f7, %f8};
	ret;
}
"#;

#[test]
fn mma_m16n8k16_bf16_fragments_reproduce_a_cpu_matrix_product() {
    let mut rng = Rng::new(21);
    for _ in 0..3 {
        let a: Vec<u16> = (0..16 * 16).map(|_| bf16(rng.f32_in(-2.0, 2.0))).collect();
        let b: Vec<u16> = (0..16 * 8).map(|_| bf16(rng.f32_in(-2.0, 2.0))).collect();
        let c = rng.f32s(16 * 8, -4.0, 4.0);
        // Bt[n][k] = B[k][n]
        let mut bt = vec![0u16; 8 * 16];
        for k in 0..16 {
            for n in 0..8 {
                bt[n * 16 + k] = b[k * 8 + n];
            }
        }
        let mut mem = GlobalMemory::new();
        let (da, db) = (alloc_u16(&mut mem, &a), alloc_u16(&mut mem, &bt));
        let dc = mem.alloc_f32(&c);
        let dd = poisoned_f32(&mut mem, 16 * 8);
        launch(
            &ptx(MMA_BF16),
            "mma_bf16",
            LaunchConfig::linear(1, 32),
            &[
                ArgValue::Ptr(da),
                ArgValue::Ptr(db),
                ArgValue::Ptr(dc),
                ArgValue::Ptr(dd),
            ],
            &mut mem,
        )
        .unwrap();
        let d = mem.read_f32(dd, 16 * 8).unwrap();
        for i in 0..16 {
            for j in 0..8 {
                let want: f64 = c[i * 8 + j] as f64
                    + (0..16)
                        .map(|k| {
                            bf16_to_f32(a[i * 16 + k]) as f64 * bf16_to_f32(b[k * 8 + j]) as f64
                        })
                        .sum::<f64>();
                let got = d[i * 8 + j] as f64;
                assert!(
                    (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                    "D[{i}][{j}] = {got}, want {want}"
                );
            }
        }
    }
}

/// 4 matrices of 8x8 b16 in shared memory; `ldmatrix.x4` (optionally `.trans`) distributes them,
/// each lane writes its four registers out, then `stmatrix` writes them back to a second area,
/// which is copied out too.
fn ldmatrix_source(trans: bool) -> String {
    let t = if trans { ".trans" } else { "" };
    ptx(&format!(
        r#"
.visible .entry ldst_matrix(.param .u64 src, .param .u64 regs_out, .param .u64 back_out)
{{
	.reg .b32 	%r<24>;
	.reg .b64 	%rd<12>;
	.shared .align 16 .b8 tiles[512];
	.shared .align 16 .b8 again[512];

	ld.param.u64 	%rd1, [src];
	ld.param.u64 	%rd2, [regs_out];
	ld.param.u64 	%rd3, [back_out];
	mov.u32 	%r1, %laneid;
	shl.b32 	%r2, %r1, 4;
	cvt.u64.u32 	%rd4, %r2;
	add.s64 	%rd5, %rd1, %rd4;
	ld.global.v4.u32 	{{%r3, %r4, %r5, %r6}}, [%rd5];
	mov.u32 	%r7, tiles;
	add.s32 	%r8, %r7, %r2;
	st.shared.v4.u32 	[%r8], {{%r3, %r4, %r5, %r6}};
	bar.sync 	0;
	ldmatrix.sync.aligned.m8n8.x4{t}.shared.b16 	{{%r10, %r11, %r12, %r13}}, [%r8];
	add.s64 	%rd6, %rd2, %rd4;
	st.global.v4.u32 	[%rd6], {{%r10, %r11, %r12, %r13}};
	mov.u32 	%r14, again;
	add.s32 	%r15, %r14, %r2;
	stmatrix.sync.aligned.m8n8.x4{t}.shared.b16 	[%r15], {{%r10, %r11, %r12, %r13}};
	bar.sync 	0;
	ld.shared.v4.u32 	{{%r16, %r17, %r18, %r19}}, [%r15];
	add.s64 	%rd7, %rd3, %rd4;
	st.global.v4.u32 	[%rd7], {{%r16, %r17, %r18, %r19}};
	ret;
}}
"#
    ))
}

#[test]
fn ldmatrix_x4_distributes_rows_by_quad_and_stmatrix_inverts_it() {
    let mut rng = Rng::new(22);
    for trans in [false, true] {
        let values: Vec<u16> = (0..256).map(|_| rng.next_u32() as u16).collect();
        let mut mem = GlobalMemory::new();
        let src = alloc_u16(&mut mem, &values);
        let regs = poisoned_u32(&mut mem, 128);
        let back = poisoned_u32(&mut mem, 128);
        launch(
            &ldmatrix_source(trans),
            "ldst_matrix",
            LaunchConfig::linear(1, 32),
            &[ArgValue::Ptr(src), ArgValue::Ptr(regs), ArgValue::Ptr(back)],
            &mut mem,
        )
        .unwrap();
        let got = mem.read_u32(regs, 128).unwrap();
        // Matrix m, row r, column c is element m*64 + r*8 + c (lane 8m+r gave row r's address).
        let at = |m: usize, r: usize, c: usize| values[m * 64 + r * 8 + c] as u32;
        for lane in 0..32 {
            let (g, q) = (lane / 4, lane % 4);
            for m in 0..4 {
                let want = if trans {
                    at(m, 2 * q, g) | at(m, 2 * q + 1, g) << 16
                } else {
                    at(m, g, 2 * q) | at(m, g, 2 * q + 1) << 16
                };
                assert_eq!(got[lane * 4 + m], want, "trans={trans} lane {lane} reg {m}");
            }
        }
        let original: Vec<u32> = values
            .chunks(2)
            .map(|p| p[0] as u32 | (p[1] as u32) << 16)
            .collect();
        assert_eq!(mem.read_u32(back, 128).unwrap(), original, "trans={trans}");
    }
}

/// One warp: D = A (16x8 tf32, row-major f32) * B (8x8, Bt[n][k]) + 0, using m16n8k8 tf32.
const MMA_TF32: &str = r#"
.visible .entry mma_tf32(.param .u64 a, .param .u64 bt, .param .u64 d)
{
	.reg .b32 	%r<16>;
	.reg .f32 	%f<12>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [bt];
	ld.param.u64 	%rd4, [d];
	mov.u32 	%r1, %laneid;
	shr.u32 	%r2, %r1, 2;
	and.b32 	%r3, %r1, 3;
	mad.lo.s32 	%r5, %r2, 8, %r3;
	mul.wide.u32 	%rd5, %r5, 4;
	add.s64 	%rd6, %rd1, %rd5;
	ld.global.f32 	%f1, [%rd6];
	ld.global.f32 	%f2, [%rd6+256];
	ld.global.f32 	%f3, [%rd6+16];
	ld.global.f32 	%f4, [%rd6+272];
	cvt.rna.tf32.f32 	%r6, %f1;
	cvt.rna.tf32.f32 	%r7, %f2;
	cvt.rna.tf32.f32 	%r8, %f3;
	cvt.rna.tf32.f32 	%r9, %f4;
	add.s64 	%rd7, %rd2, %rd5;
	ld.global.b32 	%r10, [%rd7];
	ld.global.b32 	%r11, [%rd7+16];
	mov.f32 	%f5, 0f00000000;
	mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 	{%f6, %f7, %f8, %f9}, {%r6, %r7, %r8, %r9}, {%r10, %r11}, {%f5, %f5, %f5, %f5};
	shl.b32 	%r12, %r3, 1;
	mad.lo.s32 	%r13, %r2, 8, %r12;
	mul.wide.u32 	%rd8, %r13, 4;
	add.s64 	%rd9, %rd4, %rd8;
	st.global.v2.f32 	[%rd9], {%f6, %f7};
	st.global.v2.f32 	[%rd9+256], {%f8, %f9};
	ret;
}
"#;

#[test]
fn mma_m16n8k8_tf32_rounds_inputs_and_matches_cpu_product() {
    let mut rng = Rng::new(23);
    let a = rng.f32s(16 * 8, -1.0, 1.0);
    // B values are exact in tf32 so only A's rounding matters.
    let b: Vec<f32> = (0..8 * 8)
        .map(|_| (rng.f32_in(-8.0, 8.0) * 16.0).round() / 16.0)
        .collect();
    let mut bt = vec![0f32; 64];
    for k in 0..8 {
        for n in 0..8 {
            bt[n * 8 + k] = b[k * 8 + n];
        }
    }
    let mut mem = GlobalMemory::new();
    let (da, db) = (mem.alloc_f32(&a), mem.alloc_f32(&bt));
    let dd = poisoned_f32(&mut mem, 128);
    launch(
        &ptx(MMA_TF32),
        "mma_tf32",
        LaunchConfig::linear(1, 32),
        &[ArgValue::Ptr(da), ArgValue::Ptr(db), ArgValue::Ptr(dd)],
        &mut mem,
    )
    .unwrap();
    let d = mem.read_f32(dd, 128).unwrap();
    // Round to nearest, ties away, to 10 mantissa bits.
    let tf32 = |x: f32| f32::from_bits((x.to_bits() + 0x1000) & 0xffff_e000);
    for i in 0..16 {
        for j in 0..8 {
            let want: f64 = (0..8)
                .map(|k| tf32(a[i * 8 + k]) as f64 * b[k * 8 + j] as f64)
                .sum();
            let got = d[i * 8 + j] as f64;
            assert!(
                (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                "D[{i}][{j}] = {got}, want {want}"
            );
        }
    }
}

/// One warp: D = A (16x32 s8, row-major) * B (32x8 s8, stored as Bt[n][k]) + C (s32).
const MMA_S8: &str = r#"
.visible .entry mma_s8(.param .u64 a, .param .u64 bt, .param .u64 c, .param .u64 d)
{
	.reg .b32 	%r<24>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [bt];
	ld.param.u64 	%rd3, [c];
	ld.param.u64 	%rd4, [d];
	mov.u32 	%r1, %laneid;
	shr.u32 	%r2, %r1, 2;
	and.b32 	%r3, %r1, 3;
	shl.b32 	%r4, %r3, 2;
	mad.lo.s32 	%r5, %r2, 32, %r4;
	cvt.u64.u32 	%rd5, %r5;
	add.s64 	%rd6, %rd1, %rd5;
	ld.global.u32 	%r6, [%rd6];
	ld.global.u32 	%r7, [%rd6+256];
	ld.global.u32 	%r8, [%rd6+16];
	ld.global.u32 	%r9, [%rd6+272];
	add.s64 	%rd7, %rd2, %rd5;
	ld.global.u32 	%r10, [%rd7];
	ld.global.u32 	%r11, [%rd7+16];
	shl.b32 	%r12, %r3, 1;
	mad.lo.s32 	%r13, %r2, 8, %r12;
	mul.wide.u32 	%rd8, %r13, 4;
	add.s64 	%rd9, %rd3, %rd8;
	ld.global.v2.u32 	{%r14, %r15}, [%rd9];
	ld.global.v2.u32 	{%r16, %r17}, [%rd9+256];
	mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 	{%r18, %r19, %r20, %r21}, {%r6, %r7, %r8, %r9}, {%r10, %r11}, {%r14, %r15, %r16, %r17};
	add.s64 	%rd10, %rd4, %rd8;
	st.global.v2.u32 	[%rd10], {%r18, %r19};
	st.global.v2.u32 	[%rd10+256], {%r20, %r21};
	ret;
}
"#;

#[test]
fn mma_m16n8k32_s8_accumulates_exact_integer_products() {
    let mut rng = Rng::new(24);
    let a: Vec<i8> = (0..16 * 32).map(|_| rng.next_u32() as i8).collect();
    let b: Vec<i8> = (0..32 * 8).map(|_| rng.next_u32() as i8).collect();
    let c: Vec<i32> = (0..128)
        .map(|_| (rng.next_u32() % 100_000) as i32 - 50_000)
        .collect();
    let mut bt = vec![0i8; 8 * 32];
    for k in 0..32 {
        for n in 0..8 {
            bt[n * 32 + k] = b[k * 8 + n];
        }
    }
    let bytes = |v: &[i8]| -> Vec<u32> {
        v.chunks(4)
            .map(|q| u32::from_le_bytes([q[0] as u8, q[1] as u8, q[2] as u8, q[3] as u8]))
            .collect()
    };
    let mut mem = GlobalMemory::new();
    let da = alloc_u32(&mut mem, &bytes(&a));
    let db = alloc_u32(&mut mem, &bytes(&bt));
    let dc = alloc_u32(&mut mem, &c.iter().map(|&v| v as u32).collect::<Vec<_>>());
    let dd = poisoned_u32(&mut mem, 128);
    launch(
        &ptx(MMA_S8),
        "mma_s8",
        LaunchConfig::linear(1, 32),
        &[
            ArgValue::Ptr(da),
            ArgValue::Ptr(db),
            ArgValue::Ptr(dc),
            ArgValue::Ptr(dd),
        ],
        &mut mem,
    )
    .unwrap();
    let d = mem.read_u32(dd, 128).unwrap();
    for i in 0..16 {
        for j in 0..8 {
            let want = c[i * 8 + j]
                + (0..32)
                    .map(|k| a[i * 32 + k] as i32 * b[k * 8 + j] as i32)
                    .sum::<i32>();
            assert_eq!(d[i * 8 + j] as i32, want, "D[{i}][{j}]");
        }
    }
}

/// One warpgroup: D = A (64x16 bf16) * B (16x8, stored as Bt[n][k]) with both operands staged
/// in shared memory in the 128-byte swizzled K-major layout (8-row atoms of 128-byte rows,
/// 16-byte chunks XORed with address bits 7..9).
const WGMMA_SWIZZLED: &str = r#"
.visible .entry wgmma_sw128(.param .u64 a, .param .u64 bt, .param .u64 c)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<40>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<20>;
	.shared .align 1024 .b8 tiles[9216];

	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [bt];
	ld.param.u64 	%rd3, [c];
	mov.u32 	%r1, %tid.x;
	shr.u32 	%r2, %r1, 1;
	and.b32 	%r3, %r1, 1;
	shr.u32 	%r4, %r2, 3;
	shl.b32 	%r4, %r4, 10;
	and.b32 	%r5, %r2, 7;
	shl.b32 	%r5, %r5, 7;
	add.s32 	%r4, %r4, %r5;
	shl.b32 	%r6, %r3, 4;
	add.s32 	%r4, %r4, %r6;
	mov.u32 	%r7, tiles;
	add.s32 	%r8, %r7, %r4;
	shr.u32 	%r9, %r8, 7;
	and.b32 	%r9, %r9, 7;
	shl.b32 	%r9, %r9, 4;
	xor.b32 	%r8, %r8, %r9;
	mul.wide.u32 	%rd4, %r1, 16;
	add.s64 	%rd5, %rd1, %rd4;
	ld.global.v4.u32 	{%r10, %r11, %r12, %r13}, [%rd5];
	st.shared.v4.u32 	[%r8], {%r10, %r11, %r12, %r13};
	setp.lt.u32 	%p1, %r1, 16;
	@!%p1 bra 	$L__staged;
	add.s32 	%r14, %r7, 8192;
	add.s32 	%r15, %r14, %r4;
	shr.u32 	%r16, %r15, 7;
	and.b32 	%r16, %r16, 7;
	shl.b32 	%r16, %r16, 4;
	xor.b32 	%r15, %r15, %r16;
	add.s64 	%rd6, %rd2, %rd4;
	ld.global.v4.u32 	{%r10, %r11, %r12, %r13}, [%rd6];
	st.shared.v4.u32 	[%r15], {%r10, %r11, %r12, %r13};
$L__staged:
	fence.proxy.async.shared::cta;
	bar.sync 	0;
	cvt.u64.u32 	%rd7, %r7;
	shr.u64 	%rd8, %rd7, 4;
	or.b64 	%rd9, %rd8, 0x4000004000010000;
	add.s64 	%rd10, %rd7, 8192;
	shr.u64 	%rd10, %rd10, 4;
	or.b64 	%rd11, %rd10, 0x4000004000010000;
	setp.ne.u32 	%p2, 0, 0;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 	{%f1, %f2, %f3, %f4}, %rd9, %rd11, %p2, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 	0;
	shr.u32 	%r20, %r1, 5;
	and.b32 	%r21, %r1, 31;
	shr.u32 	%r22, %r21, 2;
	and.b32 	%r23, %r21, 3;
	shl.b32 	%r24, %r23, 1;
	shl.b32 	%r25, %r20, 4;
	add.s32 	%r26, %r25, %r22;
	mad.lo.s32 	%r27, %r26, 8, %r24;
	mul.wide.u32 	%rd12, %r27, 4;
	add.s64 	%rd13, %rd3, %rd12;
	st.global.v2.f32 	[%rd13], {%f1, %f2};
	st.global.v2.f32 	[%rd13+256], {%f3, %f4};
	ret;
}
"#;

#[test]
fn wgmma_reads_operands_through_128_byte_swizzled_descriptors() {
    let mut rng = Rng::new(25);
    let a: Vec<u16> = (0..64 * 16).map(|_| bf16(rng.f32_in(-2.0, 2.0))).collect();
    let bt: Vec<u16> = (0..8 * 16).map(|_| bf16(rng.f32_in(-2.0, 2.0))).collect();
    let mut mem = GlobalMemory::new();
    let (da, db) = (alloc_u16(&mut mem, &a), alloc_u16(&mut mem, &bt));
    let dc = poisoned_f32(&mut mem, 64 * 8);
    launch(
        &ptx(WGMMA_SWIZZLED),
        "wgmma_sw128",
        LaunchConfig::linear(1, 128),
        &[ArgValue::Ptr(da), ArgValue::Ptr(db), ArgValue::Ptr(dc)],
        &mut mem,
    )
    .unwrap();
    let c = mem.read_f32(dc, 64 * 8).unwrap();
    for i in 0..64 {
        for j in 0..8 {
            let want: f64 = (0..16)
                .map(|k| bf16_to_f32(a[i * 16 + k]) as f64 * bf16_to_f32(bt[j * 16 + k]) as f64)
                .sum();
            assert!(
                (c[i * 8 + j] as f64 - want).abs() <= 1e-5 * want.abs().max(1.0),
                "C[{i}][{j}] = {}, want {want}",
                c[i * 8 + j]
            );
        }
    }
}

#[test]
fn wgmma_with_a_matrix_base_offset_is_reported_as_unsupported_at_run_time() {
    let source = ptx(r#"
.visible .entry based()
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<3>;
	mov.u64 	%rd1, 0x4002004000010000;
	mov.u64 	%rd2, 0x4002004000010000;
	setp.ne.u32 	%p1, 0, 0;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 	{%f1, %f2, %f3, %f4}, %rd1, %rd2, %p1, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 	0;
	ret;
}
"#);
    let err = launch(
        &source,
        "based",
        LaunchConfig::linear(1, 128),
        &[],
        &mut GlobalMemory::new(),
    )
    .unwrap_err();
    match err {
        ptx_emulator::Error::Unsupported { opcode, detail, .. } => {
            assert_eq!(opcode, "wgmma");
            assert!(detail.contains("base offset"), "{detail}");
        }
        other => panic!("expected unsupported, got {other:?}"),
    }
}

#[test]
fn wgmma_with_a_k_or_layout_flags_its_input_type_lacks_is_refused() {
    for (shape, flags, why) in [
        ("m64n8k16.f32.tf32.tf32", "", "shape"),
        ("m64n8k16.f32.e4m3.e5m2", "", "shape"),
        ("m64n8k8.f32.tf32.tf32", ", 0, 1", "imm-trans"),
        ("m64n8k16.f32.bf16.f16", ", 0, 0", "types"),
    ] {
        let source = ptx(&format!(
            r#"
.visible .entry refused()
{{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<3>;
	mov.u64 	%rd1, 0;
	mov.u64 	%rd2, 0;
	setp.ne.u32 	%p1, 0, 0;
	wgmma.mma_async.sync.aligned.{shape} 	{{%f1, %f2, %f3, %f4}}, %rd1, %rd2, %p1, 1, 1{flags};
	ret;
}}
"#
        ));
        let err = launch(
            &source,
            "refused",
            LaunchConfig::linear(1, 128),
            &[],
            &mut GlobalMemory::new(),
        )
        .unwrap_err();
        assert!(format!("{err:?}").contains(why), "{shape}{flags}: {err:?}");
    }
}

/// One warpgroup: D (64x16) = A * B with both operands MN-major (`imm-trans-a/b` = 1) in the
/// unswizzled canonical layout: 16-byte chunks run along M (or N); chunks along M/N are the
/// stride byte offset apart, groups of 8 K rows the leading byte offset apart. A arrives
/// column-major (`at[k][m]`) and B row-major (`b[k][n]`), so each thread moves one chunk.
const WGMMA_MN_MAJOR: &str = r#"
.visible .entry wgmma_mn(.param .u64 at, .param .u64 b, .param .u64 c)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<40>;
	.reg .f32 	%f<9>;
	.reg .b64 	%rd<20>;
	.shared .align 128 .b8 tiles[2560];

	ld.param.u64 	%rd1, [at];
	ld.param.u64 	%rd2, [b];
	ld.param.u64 	%rd3, [c];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, tiles;
	and.b32 	%r3, %r1, 7;
	shr.u32 	%r4, %r1, 3;
	shl.b32 	%r5, %r3, 7;
	and.b32 	%r6, %r4, 7;
	shl.b32 	%r6, %r6, 4;
	add.s32 	%r5, %r5, %r6;
	shr.u32 	%r7, %r4, 3;
	shl.b32 	%r7, %r7, 10;
	add.s32 	%r5, %r5, %r7;
	add.s32 	%r8, %r2, %r5;
	mul.wide.u32 	%rd4, %r1, 16;
	add.s64 	%rd5, %rd1, %rd4;
	ld.global.v4.u32 	{%r10, %r11, %r12, %r13}, [%rd5];
	st.shared.v4.u32 	[%r8], {%r10, %r11, %r12, %r13};
	setp.lt.u32 	%p1, %r1, 32;
	@!%p1 bra 	$L__staged;
	and.b32 	%r14, %r1, 1;
	shr.u32 	%r15, %r1, 1;
	shl.b32 	%r16, %r14, 7;
	and.b32 	%r17, %r15, 7;
	shl.b32 	%r17, %r17, 4;
	add.s32 	%r16, %r16, %r17;
	shr.u32 	%r18, %r15, 3;
	shl.b32 	%r18, %r18, 8;
	add.s32 	%r16, %r16, %r18;
	add.s32 	%r19, %r2, 2048;
	add.s32 	%r19, %r19, %r16;
	add.s64 	%rd6, %rd2, %rd4;
	ld.global.v4.u32 	{%r10, %r11, %r12, %r13}, [%rd6];
	st.shared.v4.u32 	[%r19], {%r10, %r11, %r12, %r13};
$L__staged:
	bar.sync 	0;
	cvt.u64.u32 	%rd7, %r2;
	shr.u64 	%rd8, %rd7, 4;
	or.b64 	%rd9, %rd8, 0x0000000800400000;
	add.s64 	%rd10, %rd7, 2048;
	shr.u64 	%rd10, %rd10, 4;
	or.b64 	%rd11, %rd10, 0x0000000800100000;
	setp.ne.u32 	%p2, 0, 0;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 	{%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, %rd9, %rd11, %p2, 1, 1, 1, 1;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 	0;
	shr.u32 	%r20, %r1, 5;
	and.b32 	%r21, %r1, 31;
	shr.u32 	%r22, %r21, 2;
	and.b32 	%r23, %r21, 3;
	shl.b32 	%r24, %r23, 1;
	shl.b32 	%r25, %r20, 4;
	add.s32 	%r26, %r25, %r22;
	mad.lo.s32 	%r27, %r26, 16, %r24;
	mul.wide.u32 	%rd12, %r27, 4;
	add.s64 	%rd13, %rd3, %rd12;
	st.global.v2.f32 	[%rd13], {%f1, %f2};
	st.global.v2.f32 	[%rd13+512], {%f3, %f4};
	st.global.v2.f32 	[%rd13+32], {%f5, %f6};
	st.global.v2.f32 	[%rd13+544], {%f7, %f8};
	ret;
}
"#;

#[test]
fn wgmma_reads_mn_major_operands_through_the_canonical_interleaved_layout() {
    let mut rng = Rng::new(26);
    let a: Vec<f32> = rng.f32s(64 * 16, -2.0, 2.0);
    let b: Vec<f32> = rng.f32s(16 * 16, -2.0, 2.0);
    // at[k][m] = a[m][k]; b stays [k][n].
    let mut at = vec![0u16; 16 * 64];
    for m in 0..64 {
        for k in 0..16 {
            at[k * 64 + m] = bf16(a[m * 16 + k]);
        }
    }
    let bk: Vec<u16> = b.iter().map(|&v| bf16(v)).collect();
    let mut mem = GlobalMemory::new();
    let (da, db) = (alloc_u16(&mut mem, &at), alloc_u16(&mut mem, &bk));
    let dc = poisoned_f32(&mut mem, 64 * 16);
    launch(
        &ptx(WGMMA_MN_MAJOR),
        "wgmma_mn",
        LaunchConfig::linear(1, 128),
        &[ArgValue::Ptr(da), ArgValue::Ptr(db), ArgValue::Ptr(dc)],
        &mut mem,
    )
    .unwrap();
    let c = mem.read_f32(dc, 64 * 16).unwrap();
    for i in 0..64 {
        for j in 0..16 {
            let want: f64 = (0..16)
                .map(|k| bf16_to_f32(at[k * 64 + i]) as f64 * bf16_to_f32(bk[k * 16 + j]) as f64)
                .sum();
            assert!(
                (c[i * 16 + j] as f64 - want).abs() <= 1e-5 * want.abs().max(1.0),
                "C[{i}][{j}] = {}, want {want}",
                c[i * 16 + j]
            );
        }
    }
}

#[test]
fn ldmatrix_x1_and_x2_read_only_the_matrices_they_name() {
    let mut rng = Rng::new(27);
    for (count, regs) in [(1usize, "{%r10}"), (2, "{%r10, %r11}")] {
        let source = ptx(&format!(
            r#"
.visible .entry ldm(.param .u64 src, .param .u64 out)
{{
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<8>;
	.shared .align 16 .b8 tiles[512];
	ld.param.u64 	%rd1, [src];
	ld.param.u64 	%rd2, [out];
	mov.u32 	%r1, %laneid;
	shl.b32 	%r2, %r1, 4;
	cvt.u64.u32 	%rd3, %r2;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.v4.u32 	{{%r3, %r4, %r5, %r6}}, [%rd4];
	mov.u32 	%r7, tiles;
	add.s32 	%r8, %r7, %r2;
	setp.lt.u32 	%p1, %r1, {rows};
	@%p1 st.shared.v4.u32 	[%r8], {{%r3, %r4, %r5, %r6}};
	bar.warp.sync 	-1;
	mov.u32 	%r10, 0;
	mov.u32 	%r11, 0;
	ldmatrix.sync.aligned.m8n8.x{count}.shared.b16 	{regs}, [%r8];
	mul.wide.u32 	%rd5, %r1, 8;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.v2.u32 	[%rd6], {{%r10, %r11}};
	ret;
}}
"#,
            rows = 8 * count,
        ))
        .replace(
            ".reg .b32 	%r<20>;",
            ".reg .b32 	%r<20>;\n\t.reg .pred 	%p<2>;",
        );
        let values: Vec<u16> = (0..256).map(|_| rng.next_u32() as u16).collect();
        let mut mem = GlobalMemory::new();
        let src = alloc_u16(&mut mem, &values);
        let out = poisoned_u32(&mut mem, 64);
        launch(
            &source,
            "ldm",
            LaunchConfig::linear(1, 32),
            &[ArgValue::Ptr(src), ArgValue::Ptr(out)],
            &mut mem,
        )
        .unwrap();
        let got = mem.read_u32(out, 64).unwrap();
        let at = |m: usize, r: usize, c: usize| values[m * 64 + r * 8 + c] as u32;
        for lane in 0..32 {
            let (g, q) = (lane / 4, lane % 4);
            for m in 0..2 {
                let want = if m < count {
                    at(m, g, 2 * q) | at(m, g, 2 * q + 1) << 16
                } else {
                    0
                };
                assert_eq!(got[lane * 2 + m], want, "x{count} lane {lane} reg {m}");
            }
        }
    }
}
