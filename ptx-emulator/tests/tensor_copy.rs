//! `cp.async.bulk.tensor` (TMA) loads: boxes inside and overhanging the tensor, pitched and
//! 3-D tensors, every swizzle, the mbarrier phase the copy completes, tensor-map parameters of
//! 128 bytes, and the errors bad maps and destinations give. Every copy is checked element by
//! element against a CPU model of the hardware's placement rule.

mod common;

use common::*;
use ptx_emulator::{ArgValue, Emulator, Error, GlobalMemory, LaunchConfig, TensorMap, TensorSwizzle};

/// Bytes of the shared tile the kernel zeroes, copies into, and stores back whole.
const TILE: usize = 8192;

/// Eight warps: every thread zeroes and later stores back 32 bytes of `tile` (at shared
/// address 0, so the tile's offsets are absolute addresses); thread 0 arms the mbarrier, copies
/// the box to `tile + dst_off` and records whether the phase was complete just before and just
/// after the copy. The map is the parameter `tmap` or, when `map` names `%rd9`, the 128 bytes
/// at `map_ptr`; `coords` is the coordinate list as written (registers `%r20..` hold `c0..`).
fn copy_kernel(rank: usize, map: &str, coords: &str) -> String {
    ptx(&format!(
        r#"
.visible .entry copy(.param .u64 out, .param .align 64 .b8 tmap[128], .param .u32 dst_off,
	.param .u32 tx, .param .s32 c0, .param .s32 c1, .param .s32 c2, .param .s32 c3,
	.param .s32 c4, .param .u64 map_ptr)
{{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<30>;
	.reg .b64 	%rd<12>;
	.shared .align 1024 .b8 tile[{TILE}];
	.shared .align 8 .b64 bar;

	ld.param.u64 	%rd1, [out];
	ld.param.u32 	%r1, [dst_off];
	ld.param.u32 	%r2, [tx];
	ld.param.s32 	%r20, [c0];
	ld.param.s32 	%r21, [c1];
	ld.param.s32 	%r22, [c2];
	ld.param.s32 	%r23, [c3];
	ld.param.s32 	%r24, [c4];
	ld.param.u64 	%rd9, [map_ptr];
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, tile;
	shl.b32 	%r5, %r3, 5;
	add.s32 	%r6, %r4, %r5;
	mov.u32 	%r7, 0;
	st.shared.v4.u32 	[%r6], {{%r7, %r7, %r7, %r7}};
	st.shared.v4.u32 	[%r6+16], {{%r7, %r7, %r7, %r7}};
	fence.proxy.async.shared::cta;
	setp.eq.u32 	%p1, %r3, 0;
	@%p1 mbarrier.init.shared::cta.b64 	[bar], 1;
	bar.sync 	0;
	@!%p1 bra 	$L__wait;
	add.s32 	%r8, %r4, %r1;
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [bar], %r2;
	mbarrier.test_wait.parity.shared::cta.b64 	%p2, [bar], 0;
	cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes 	[%r8], [{map}, {{{coords}}}], [bar];
	mbarrier.test_wait.parity.shared::cta.b64 	%p3, [bar], 0;
	selp.u32 	%r9, 1, 0, %p2;
	selp.u32 	%r10, 1, 0, %p3;
	st.global.v2.u32 	[%rd1+{TILE}], {{%r9, %r10}};
$L__wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p2, [bar], 0;
	@!%p2 bra 	$L__wait;
	ld.shared.v4.u32 	{{%r11, %r12, %r13, %r14}}, [%r6];
	ld.shared.v4.u32 	{{%r15, %r16, %r17, %r18}}, [%r6+16];
	cvt.u64.u32 	%rd2, %r5;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.v4.u32 	[%rd3], {{%r11, %r12, %r13, %r14}};
	st.global.v4.u32 	[%rd3+16], {{%r15, %r16, %r17, %r18}};
	ret;
}}
"#
    ))
}

/// The register coordinate list of a `rank`-D copy.
fn reg_coords(rank: usize) -> String {
    (0..rank)
        .map(|i| format!("%r{}", 20 + i))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A tensor of `dims` elements of `elem_bytes`, rows `pitch` bytes apart (dimension `i > 0`
/// strides the previous one's stride times its extent, rounded up to `pitch` for dimension 1).
fn map(elem_bytes: u32, dims: &[u64], pitch: u64, boxes: &[u32], swizzle: TensorSwizzle) -> TensorMap {
    let rank = dims.len();
    let mut m = TensorMap {
        elem_bytes,
        rank: rank as u32,
        address: 0,
        dims: [1; 5],
        strides: [0; 5],
        boxes: [1; 5],
        swizzle,
    };
    m.dims[..rank].copy_from_slice(dims);
    m.boxes[..rank].copy_from_slice(boxes);
    m.strides[0] = elem_bytes as u64;
    for i in 1..rank {
        m.strides[i] = if i == 1 {
            pitch
        } else {
            m.strides[i - 1] * dims[i - 1]
        };
    }
    m
}

/// Bytes from the tensor's first element to past its last.
fn extent(m: &TensorMap) -> usize {
    (0..m.rank as usize)
        .map(|i| (m.dims[i] - 1) * m.strides[i])
        .sum::<u64>() as usize
        + m.elem_bytes as usize
}

/// The CPU model: `(shared offset of each byte, its value)` for every element of the box, in
/// box order; out-of-tensor elements are zero. `swizzle_mask` is 7/3/1 for 128/64/32 bytes.
fn expected_box(m: &TensorMap, coords: &[i32], dst: usize, data: &[u8]) -> Vec<(Vec<i64>, Vec<usize>, Vec<u8>)> {
    let rank = m.rank as usize;
    let mask = match m.swizzle {
        TensorSwizzle::None => 0,
        TensorSwizzle::B32 => 1,
        TensorSwizzle::B64 => 3,
        TensorSwizzle::B128 => 7,
    };
    let eb = m.elem_bytes as usize;
    let count: usize = m.boxes[..rank].iter().map(|&b| b as usize).product();
    let mut out = Vec::with_capacity(count);
    for linear in 0..count {
        let mut rest = linear;
        let mut at = Vec::with_capacity(rank);
        for i in 0..rank {
            at.push(coords[i] as i64 + (rest % m.boxes[i] as usize) as i64);
            rest /= m.boxes[i] as usize;
        }
        let inside = (0..rank).all(|i| at[i] >= 0 && (at[i] as u64) < m.dims[i]);
        let value = if inside {
            let off: u64 = (0..rank).map(|i| at[i] as u64 * m.strides[i]).sum();
            data[off as usize..off as usize + eb].to_vec()
        } else {
            vec![0; eb]
        };
        let places = (0..eb)
            .map(|k| {
                let a = dst + linear * eb + k;
                a ^ (((a >> 7) & mask) << 4)
            })
            .collect();
        out.push((at, places, value));
    }
    out
}

/// How the kernel finds the map.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    Param,
    Pointer,
}

struct Case {
    map: TensorMap,
    coords: Vec<i32>,
    dst_off: u32,
}

/// Runs `case` on random tensor data and checks every element, every untouched byte, and
/// that the phase completed exactly when the copy was issued.
fn check_copy(case: Case, via: Via, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut m = case.map;
    let data: Vec<u8> = (0..extent(&m)).map(|_| rng.next_u32() as u8).collect();
    let mut mem = GlobalMemory::new();
    let tensor = mem.alloc(data.len());
    mem.write(tensor, &data).unwrap();
    m.address = tensor;
    let out = mem.alloc(TILE + 8);
    let map_ptr = mem.alloc(128);
    mem.write(map_ptr, &m.encode()).unwrap();
    let rank = m.rank as usize;
    let operand = if via == Via::Param { "tmap" } else { "%rd9" };
    let mut args = vec![
        ArgValue::Ptr(out),
        ArgValue::from(m),
        ArgValue::U32(case.dst_off),
        ArgValue::U32(m.box_bytes() as u32),
    ];
    args.extend((0..5).map(|i| ArgValue::S32(case.coords.get(i).copied().unwrap_or(0))));
    args.push(ArgValue::Ptr(map_ptr));
    launch(
        &copy_kernel(rank, operand, &reg_coords(rank)),
        "copy",
        LaunchConfig::linear(1, (TILE / 32) as u32),
        &args,
        &mut mem,
    )
    .unwrap();
    let mut image = vec![0u8; TILE + 8];
    mem.read(out, &mut image).unwrap();
    assert_eq!(image[TILE..], [0, 0, 0, 0, 1, 0, 0, 0], "phase before/after the copy");
    let mut touched = vec![false; TILE];
    for (at, places, want) in expected_box(&m, &case.coords, case.dst_off as usize, &data) {
        let got: Vec<u8> = places.iter().map(|&p| image[p]).collect();
        assert_eq!(got, want, "element at tensor coordinates {at:?}, shared {:#x}", places[0]);
        places.iter().for_each(|&p| touched[p] = true);
    }
    let stray = (0..TILE).find(|&i| !touched[i] && image[i] != 0);
    assert_eq!(stray, None, "a byte outside the box was written");
}

#[test]
fn an_interior_f32_box_lands_row_major() {
    let m = map(4, &[40, 30], 160, &[16, 8], TensorSwizzle::None);
    for via in [Via::Param, Via::Pointer] {
        check_copy(Case { map: m, coords: vec![8, 5], dst_off: 0 }, via, 1);
    }
}

#[test]
fn boxes_overhanging_the_right_and_bottom_edges_are_zero_filled() {
    let m = map(4, &[40, 30], 160, &[16, 8], TensorSwizzle::None);
    for coords in [[32, 26], [39, 29], [40, 0], [100, 100]] {
        check_copy(Case { map: m, coords: coords.to_vec(), dst_off: 128 }, Via::Param, 2);
    }
}

#[test]
fn negative_coordinates_are_zero_filled() {
    let m = map(4, &[40, 30], 160, &[16, 8], TensorSwizzle::None);
    for coords in [[-4, -3], [-16, 0], [0, -8], [-5, 27]] {
        check_copy(Case { map: m, coords: coords.to_vec(), dst_off: 256 }, Via::Param, 3);
    }
}

#[test]
fn a_pitched_16_bit_tensor_copies_only_its_columns() {
    // 100 columns of 2 bytes in rows 256 bytes apart: the 56 bytes of padding are not data.
    let m = map(2, &[100, 20], 256, &[64, 4], TensorSwizzle::None);
    for coords in [[0, 0], [50, 18], [36, 7], [-10, -1]] {
        check_copy(Case { map: m, coords: coords.to_vec(), dst_off: 0 }, Via::Param, 4);
    }
}

#[test]
fn three_d_boxes_step_through_planes() {
    // 8-byte elements, rows padded to 64 bytes, planes of 5 rows.
    let m = map(8, &[6, 5, 4], 64, &[4, 3, 2], TensorSwizzle::None);
    for coords in [[0, 0, 0], [3, -1, 3], [2, 2, 1], [-2, 4, -1]] {
        check_copy(Case { map: m, coords: coords.to_vec(), dst_off: 384 }, Via::Pointer, 5);
    }
}

#[test]
fn one_and_five_dimensional_boxes() {
    let m = map(4, &[50], 0, &[32], TensorSwizzle::None);
    check_copy(Case { map: m, coords: vec![30], dst_off: 0 }, Via::Param, 6);
    let m = map(2, &[9, 3, 2, 2, 3], 32, &[8, 2, 2, 1, 2], TensorSwizzle::None);
    check_copy(Case { map: m, coords: vec![4, 2, 0, 1, 2], dst_off: 128 }, Via::Param, 7);
}

#[test]
fn every_swizzle_permutes_chunks_by_the_absolute_address() {
    for (swizzle, span) in [
        (TensorSwizzle::B32, 32u32),
        (TensorSwizzle::B64, 64),
        (TensorSwizzle::B128, 128),
    ] {
        for (elem_bytes, seed) in [(1u32, 10u64), (2, 11), (4, 12)] {
            let cols = span / elem_bytes;
            let m = map(elem_bytes, &[cols as u64 + 7, 40], 256, &[cols, 24], swizzle);
            // 1024-aligned, and 128-aligned only: the pattern follows the absolute address.
            for dst_off in [0, 128, 1024 + 384] {
                let coords = vec![-3, 20];
                check_copy(Case { map: m, coords, dst_off }, Via::Param, seed);
            }
        }
    }
}

#[test]
fn a_swizzle_with_rows_narrower_than_its_span_still_follows_the_formula() {
    let m = map(2, &[64, 64], 128, &[16, 16], TensorSwizzle::B128);
    check_copy(Case { map: m, coords: vec![8, 3], dst_off: 0 }, Via::Param, 13);
}

#[test]
fn immediate_coordinates_are_signed() {
    let mut rng = Rng::new(14);
    let mut m = map(4, &[16, 16], 64, &[8, 4], TensorSwizzle::None);
    let data: Vec<u8> = (0..extent(&m)).map(|_| rng.next_u32() as u8).collect();
    let mut mem = GlobalMemory::new();
    m.address = mem.alloc(data.len());
    mem.write(m.address, &data).unwrap();
    let out = mem.alloc(TILE + 8);
    let mut args = vec![
        ArgValue::Ptr(out),
        ArgValue::from(m),
        ArgValue::U32(0),
        ArgValue::U32(m.box_bytes() as u32),
    ];
    args.extend((0..5).map(|_| ArgValue::S32(0)));
    args.push(ArgValue::Ptr(0));
    let cfg = LaunchConfig::linear(1, (TILE / 32) as u32);
    launch(&copy_kernel(2, "tmap", "-4, 14"), "copy", cfg, &args, &mut mem).unwrap();
    let mut image = vec![0u8; TILE];
    mem.read(out, &mut image).unwrap();
    for (at, places, want) in expected_box(&m, &[-4, 14], 0, &data) {
        let got: Vec<u8> = places.iter().map(|&p| image[p]).collect();
        assert_eq!(got, want, "element at {at:?}");
    }
}

/// Scalars on both sides of a 64-byte-aligned 128-byte parameter: each `ld.param` reads its
/// own bytes, at offsets 0, 64 (the map), 192 and 200.
#[test]
fn scalar_parameters_around_an_aligned_map_parameter_keep_their_places() {
    let source = ptx(r#"
.visible .entry params(.param .u32 a, .param .align 64 .b8 tmap[128], .param .u32 b, .param .u64 c, .param .u64 out)
{
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<6>;

	ld.param.u32 	%r1, [a];
	ld.param.u32 	%r2, [b];
	ld.param.u64 	%rd1, [c];
	ld.param.u64 	%rd2, [out];
	ld.param.u32 	%r3, [tmap];
	ld.param.u32 	%r4, [tmap+124];
	st.global.u32 	[%rd2], %r1;
	st.global.u32 	[%rd2+4], %r2;
	st.global.u64 	[%rd2+8], %rd1;
	st.global.u32 	[%rd2+16], %r3;
	st.global.u32 	[%rd2+20], %r4;
	ret;
}
"#);
    let mut mem = GlobalMemory::new();
    let out = mem.alloc(24);
    let bytes: Vec<u8> = (0..128u32).map(|i| (i * 7 + 1) as u8).collect();
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let args = [
        ArgValue::U32(0x1111_1111),
        ArgValue::Bytes(bytes.clone()),
        ArgValue::U32(0x2222_2222),
        ArgValue::U64(0x3333_3333_4444_4444),
        ArgValue::Ptr(out),
    ];
    launch(&source, "params", LaunchConfig::linear(1, 1), &args, &mut mem).unwrap();
    let got = mem.read_u32(out, 6).unwrap();
    assert_eq!(
        got,
        [0x1111_1111, 0x2222_2222, 0x4444_4444, 0x3333_3333, word(0), word(124)]
    );
}

// ---- errors ----

fn run_copy(map_arg: ArgValue, dst_off: u32, rank: usize, map_ptr: u64) -> Result<(), Error> {
    run_copy_source(&copy_kernel(rank, "tmap", &reg_coords(rank)), map_arg, dst_off, map_ptr)
}

fn run_copy_source(source: &str, map_arg: ArgValue, dst_off: u32, map_ptr: u64) -> Result<(), Error> {
    let mut mem = GlobalMemory::new();
    let tensor = mem.alloc(4096);
    let out = mem.alloc(TILE + 8);
    let stored = mem.alloc(128);
    mem.write(stored, &[0x5a; 128]).unwrap();
    let map_arg = match map_arg {
        ArgValue::Ptr(0) => ArgValue::from(TensorMap {
            address: tensor,
            ..small_map()
        }),
        other => other,
    };
    let map_ptr = if map_ptr == 0 { stored } else { map_ptr };
    let mut args = vec![ArgValue::Ptr(out), map_arg, ArgValue::U32(dst_off), ArgValue::U32(512)];
    args.extend((0..5).map(|_| ArgValue::S32(0)));
    args.push(ArgValue::Ptr(map_ptr));
    launch(source, "copy", LaunchConfig::linear(1, 256), &args, &mut mem).map(drop)
}

/// A valid 2-D f32 map of 16x8 boxes; its address is filled in by `run_copy`.
fn small_map() -> TensorMap {
    map(4, &[32, 32], 128, &[16, 8], TensorSwizzle::None)
}

fn tensor_copy_detail(err: Error) -> String {
    match err {
        Error::TensorCopy { site, detail } => {
            assert!(site.instruction.starts_with("cp.async.bulk.tensor.2d"), "{}", site.instruction);
            assert_eq!(site.thread, [0, 0, 0]);
            detail
        }
        other => panic!("expected a tensor-copy error, got {other}"),
    }
}

#[test]
fn a_destination_not_128_byte_aligned_is_reported() {
    let detail = tensor_copy_detail(run_copy(ArgValue::Ptr(0), 64, 2, 0).unwrap_err());
    assert!(detail.contains("0x40 is not 128-byte aligned"), "{detail}");
    assert!(detail.contains("1024-byte"), "{detail}");
}

#[test]
fn bytes_that_are_not_a_map_name_the_parameter() {
    let err = run_copy(ArgValue::Bytes(vec![0xab; 128]), 0, 2, 0).unwrap_err();
    let text = err.to_string();
    let detail = tensor_copy_detail(err);
    assert!(detail.contains("kernel parameter `tmap` is not a tensor map"), "{detail}");
    assert!(detail.contains("magic"), "{detail}");
    assert!(text.contains("help: pass a map built with TensorMap::encode"), "{text}");
}

#[test]
fn a_map_breaking_a_rule_names_the_parameter_and_the_field() {
    let bad = TensorMap {
        boxes: [6, 8, 1, 1, 1],
        address: 4096,
        ..small_map()
    };
    let detail = tensor_copy_detail(run_copy(ArgValue::from(bad), 0, 2, 0).unwrap_err());
    assert!(detail.contains("kernel parameter `tmap` is invalid"), "{detail}");
    assert!(detail.contains("boxes[0] * elem_bytes"), "{detail}");
    assert!(detail.contains("6 * 4 = 24"), "{detail}");
}

#[test]
fn a_map_in_global_memory_that_does_not_decode_names_its_address() {
    let source = copy_kernel(2, "%rd9", &reg_coords(2));
    let detail = tensor_copy_detail(run_copy_source(&source, ArgValue::Ptr(0), 0, 0).unwrap_err());
    assert!(detail.contains("the tensor map at address 0x"), "{detail}");
    assert!(detail.contains("is not a tensor map"), "{detail}");
}

#[test]
fn a_map_address_not_64_byte_aligned_is_reported() {
    let source = copy_kernel(2, "%rd9", &reg_coords(2));
    let detail =
        tensor_copy_detail(run_copy_source(&source, ArgValue::Ptr(0), 0, 0x10_0020).unwrap_err());
    assert!(detail.contains("not 64-byte aligned"), "{detail}");
}

#[test]
fn a_map_of_another_rank_than_the_instruction_is_reported() {
    let err = run_copy(ArgValue::Ptr(0), 0, 3, 0).unwrap_err();
    let detail = match err {
        Error::TensorCopy { detail, .. } => detail,
        other => panic!("expected a tensor-copy error, got {other}"),
    };
    assert!(detail.contains("`.3d`, but the tensor map has rank 2"), "{detail}");
}

#[test]
fn a_box_reading_outside_every_buffer_is_a_global_out_of_bounds_load() {
    // The tensor claims 64 rows but its buffer holds 32.
    let big = TensorMap {
        dims: [32, 64, 1, 1, 1],
        ..small_map()
    };
    let mut mem = GlobalMemory::new();
    let tensor = mem.alloc(32 * 128);
    let out = mem.alloc(TILE + 8);
    let mut args = vec![
        ArgValue::Ptr(out),
        ArgValue::from(TensorMap { address: tensor, ..big }),
        ArgValue::U32(0),
        ArgValue::U32(512),
        ArgValue::S32(0),
        ArgValue::S32(30),
    ];
    args.extend((0..3).map(|_| ArgValue::S32(0)));
    args.push(ArgValue::Ptr(0));
    let source = copy_kernel(2, "tmap", &reg_coords(2));
    let err = launch(&source, "copy", LaunchConfig::linear(1, 256), &args, &mut mem).unwrap_err();
    match err {
        Error::GlobalOutOfBounds { address, .. } => assert_eq!(address, tensor + 32 * 128),
        other => panic!("expected an out-of-bounds load, got {other}"),
    }
}

#[test]
fn a_map_argument_of_the_wrong_size_names_expected_and_given_bytes() {
    for (arg, given) in [(ArgValue::Bytes(vec![0; 64]), 64), (ArgValue::U64(7), 8)] {
        match run_copy(arg, 0, 2, 0).unwrap_err() {
            Error::ArgumentSize {
                index,
                param,
                expected,
                given: g,
                ..
            } => {
                assert_eq!((index, param.as_str(), expected, g), (1, "tmap", 128, given));
            }
            other => panic!("expected an argument-size error, got {other}"),
        }
    }
}

/// A kernel holding one `cp.async.bulk.tensor` line.
fn one_line(line: &str) -> String {
    ptx(&format!(
        r#"
.visible .entry k(.param .align 64 .b8 tmap[128], .param .align 8 .b8 small[16])
{{
	.reg .b16 	%rs<3>;
	.reg .b32 	%r<9>;
	.reg .b64 	%rd<4>;
	{line}
	ret;
}}
"#
    ))
}

#[test]
fn other_forms_are_unsupported_by_name_and_bad_operands_are_malformed() {
    let emu = Emulator::new();
    let check = |line: &str| emu.load(&one_line(line)).unwrap().check("k");
    let unsupported = [
        ("cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r1], [tmap, {%r2, %r3, %r4}], [%r5], {%rs1};", ".im2col"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [tmap, {%r2, %r3}], [%r5], %rs1;", "multicast::cluster"),
        ("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [tmap, {%r2, %r3}], [%r1];", "shared to global"),
        ("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [tmap, {%r2, %r3}], [%r1];", "reductions"),
    ];
    for (line, word) in unsupported {
        match check(line) {
            Err(Error::Unsupported { detail, .. }) => assert!(detail.contains(word), "{line}: {detail}"),
            other => panic!("{line}: expected unsupported, got {other:?}"),
        }
    }
    let malformed = [
        ("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [tmap, {%r2, %r3}], [%r5];", "takes 3 coordinates, but 2"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [small, {%r2, %r3}], [%r5];", "`small` is 16 bytes"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [nowhere, {%r2, %r3}], [%r5];", "`nowhere` is not a register"),
    ];
    for (line, word) in malformed {
        match check(line) {
            Err(Error::Malformed { detail, .. }) => assert!(detail.contains(word), "{line}: {detail}"),
            other => panic!("{line}: expected malformed, got {other:?}"),
        }
    }
    // The accepted spellings: `.shared::cta`, no `.tile`, an L2 cache hint (ignored).
    for line in [
        "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [tmap, {%r2, %r3}], [%r5];",
        "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%r1], [%rd1, {%r2}], [%r5], %rd2;",
    ] {
        check(line).unwrap();
    }
}
