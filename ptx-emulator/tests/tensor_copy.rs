//! `cp.async.bulk.tensor` (TMA) loads: boxes inside and overhanging the tensor, pitched, 1-D,
//! 3-D and 5-D tensors, every swizzle, the mbarrier phase the copy completes, and scalar
//! parameters around a 128-byte tensor-map parameter. Every copy is checked element by element
//! against a CPU model of the hardware's placement rule (`tma::expected_box`).

mod common;
mod tma;

use common::*;
use ptx_emulator::{ArgValue, GlobalMemory, LaunchConfig, TensorMap, TensorSwizzle};
use tma::*;

/// How the kernel finds the map: the parameter `tmap`, the parameter's generic address
/// (`mov` + `cvta.param`, the form ptxas accepts), a register holding the address of a copy in
/// global memory, or a module `.const` or `.global` variable holding one.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    Param,
    ParamAddress,
    Pointer,
    ConstVariable,
    GlobalVariable,
}

/// `copy_kernel` reading the map `via`; the variables are initialised with `map`'s bytes.
fn kernel_via(via: Via, rank: usize, map: &TensorMap) -> String {
    let (operand, space) = match via {
        Via::Param => return copy_kernel(rank, "tmap", &reg_coords(rank)),
        Via::Pointer => return copy_kernel(rank, "%rd9", &reg_coords(rank)),
        Via::ParamAddress => return copy_kernel(rank, "%rd11", &reg_coords(rank)).replacen(
            "\tmov.u32 \t%r3, %tid.x;",
            "\tmov.u64 \t%rd10, tmap;\n\tcvta.param.u64 \t%rd11, %rd10;\n\tmov.u32 \t%r3, %tid.x;",
            1,
        ),
        Via::ConstVariable => ("vmap", "const"),
        Via::GlobalVariable => ("vmap", "global"),
    };
    let bytes: Vec<String> = map.encode().iter().map(|b| b.to_string()).collect();
    let decl = format!(
        ".{space} .align 64 .b8 vmap[128] = {{{}}};\n",
        bytes.join(", ")
    );
    copy_kernel(rank, operand, &reg_coords(rank)).replacen(
        ".visible .entry",
        &(decl + ".visible .entry"),
        1,
    )
}

/// Copies the box of `map` at `coords` to `tile + dst_off` from random tensor data and checks
/// every element, every byte outside the box, and that the phase completed exactly when the
/// copy was issued.
fn check_copy(map: TensorMap, coords: &[i32], dst_off: u32, via: Via, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut m = map;
    let data: Vec<u8> = (0..extent(&m)).map(|_| rng.next_u32() as u8).collect();
    let mut mem = GlobalMemory::new();
    let tensor = mem.alloc(data.len());
    mem.write(tensor, &data).unwrap();
    m.address = tensor;
    let out = mem.alloc(TILE + 8);
    let map_ptr = mem.alloc(128);
    mem.write(map_ptr, &m.encode()).unwrap();
    let rank = m.rank as usize;
    let mut args = vec![
        ArgValue::Ptr(out),
        ArgValue::from(m),
        ArgValue::U32(dst_off),
        ArgValue::U32(m.box_bytes() as u32),
    ];
    args.extend((0..5).map(|i| ArgValue::S32(coords.get(i).copied().unwrap_or(0))));
    args.push(ArgValue::Ptr(map_ptr));
    launch(
        &kernel_via(via, rank, &m),
        "copy",
        LaunchConfig::linear(1, (TILE / 32) as u32),
        &args,
        &mut mem,
    )
    .unwrap();
    let mut image = vec![0u8; TILE + 8];
    mem.read(out, &mut image).unwrap();
    assert_eq!(
        image[TILE..],
        [0, 0, 0, 0, 1, 0, 0, 0],
        "phase before/after the copy"
    );
    let mut touched = vec![false; TILE];
    for (at, places, want) in expected_box(&m, coords, dst_off as usize, &data) {
        let got: Vec<u8> = places.iter().map(|&p| image[p]).collect();
        assert_eq!(
            got, want,
            "element at tensor coordinates {at:?}, shared {:#x}",
            places[0]
        );
        places.iter().for_each(|&p| touched[p] = true);
    }
    let stray = (0..TILE).find(|&i| !touched[i] && image[i] != 0);
    assert_eq!(stray, None, "a byte outside the box was written");
}

#[test]
fn an_interior_f32_box_lands_row_major() {
    let m = map(4, &[40, 30], 160, &[16, 8], TensorSwizzle::None);
    for via in [
        Via::Param,
        Via::ParamAddress,
        Via::Pointer,
        Via::ConstVariable,
        Via::GlobalVariable,
    ] {
        check_copy(m, &[8, 5], 0, via, 1);
    }
}

#[test]
fn boxes_overhanging_the_right_and_bottom_edges_are_zero_filled() {
    let m = map(4, &[40, 30], 160, &[16, 8], TensorSwizzle::None);
    for coords in [[32, 26], [39, 29], [40, 0], [100, 100]] {
        check_copy(m, &coords, 128, Via::Param, 2);
    }
}

#[test]
fn negative_coordinates_are_zero_filled() {
    let m = map(4, &[40, 30], 160, &[16, 8], TensorSwizzle::None);
    for coords in [[-4, -3], [-16, 0], [0, -8], [-5, 27]] {
        check_copy(m, &coords, 256, Via::Param, 3);
    }
}

#[test]
fn a_pitched_16_bit_tensor_copies_only_its_columns() {
    // 100 columns of 2 bytes in rows 256 bytes apart: the 56 bytes of padding are not data.
    let m = map(2, &[100, 20], 256, &[64, 4], TensorSwizzle::None);
    for coords in [[0, 0], [50, 18], [36, 7], [-10, -1]] {
        check_copy(m, &coords, 0, Via::Param, 4);
    }
}

#[test]
fn three_d_boxes_step_through_planes() {
    // 8-byte elements, rows padded to 64 bytes, planes of 5 rows.
    let m = map(8, &[6, 5, 4], 64, &[4, 3, 2], TensorSwizzle::None);
    for coords in [[0, 0, 0], [3, -1, 3], [2, 2, 1], [-2, 4, -1]] {
        check_copy(m, &coords, 384, Via::Pointer, 5);
    }
}

#[test]
fn one_and_five_dimensional_boxes() {
    let m = map(4, &[50], 0, &[32], TensorSwizzle::None);
    check_copy(m, &[30], 0, Via::Param, 6);
    let m = map(
        2,
        &[9, 3, 2, 2, 3],
        32,
        &[8, 2, 2, 1, 2],
        TensorSwizzle::None,
    );
    check_copy(m, &[4, 2, 0, 1, 2], 128, Via::Param, 7);
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
            let m = map(
                elem_bytes,
                &[cols as u64 + 7, 40],
                256,
                &[cols, 24],
                swizzle,
            );
            // 1024-aligned, and 128-aligned only: the pattern follows the absolute address.
            for dst_off in [0, 128, 1024 + 384] {
                check_copy(m, &[-3, 20], dst_off, Via::Param, seed);
            }
        }
    }
}

#[test]
fn a_swizzle_with_rows_narrower_than_its_span_still_follows_the_formula() {
    let m = map(2, &[64, 64], 128, &[16, 16], TensorSwizzle::B128);
    check_copy(m, &[8, 3], 0, Via::Param, 13);
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
    launch(
        &copy_kernel(2, "tmap", "-4, 14"),
        "copy",
        cfg,
        &args,
        &mut mem,
    )
    .unwrap();
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
    launch(
        &source,
        "params",
        LaunchConfig::linear(1, 1),
        &args,
        &mut mem,
    )
    .unwrap();
    let got = mem.read_u32(out, 6).unwrap();
    assert_eq!(
        got,
        [
            0x1111_1111,
            0x2222_2222,
            0x4444_4444,
            0x3333_3333,
            word(0),
            word(124)
        ]
    );
}
