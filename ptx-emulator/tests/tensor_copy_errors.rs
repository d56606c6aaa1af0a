//! What bad tensor copies report: misaligned destinations and map addresses, bytes that are
//! not a tensor map, maps breaking a rule, rank mismatches, reads outside every buffer, map
//! arguments of the wrong size, and the instruction forms the emulator does not run.

mod common;
mod tma;

use common::*;
use ptx_emulator::{
    ArgValue, Emulator, Error, GlobalMemory, LaunchConfig, TensorMap, TensorSwizzle,
};
use tma::*;

/// Launches `source` (with `tma::copy_kernel`'s parameters) at coordinates (0, ..): `tmap` is
/// `map`, or else a valid `small_map` of a 4 KiB tensor; `map_ptr` is `map_ptr`, or else 128
/// bytes of 0x5a in global memory.
fn run(
    source: &str,
    map: Option<ArgValue>,
    dst_off: u32,
    map_ptr: Option<u64>,
) -> Result<(), Error> {
    let mut mem = GlobalMemory::new();
    let tensor = mem.alloc(4096);
    let out = mem.alloc(TILE + 8);
    let stored = mem.alloc(128);
    mem.write(stored, &[0x5a; 128]).unwrap();
    let map = map.unwrap_or_else(|| {
        ArgValue::from(TensorMap {
            address: tensor,
            ..small_map()
        })
    });
    let mut args = vec![
        ArgValue::Ptr(out),
        map,
        ArgValue::U32(dst_off),
        ArgValue::U32(512),
    ];
    args.extend((0..5).map(|_| ArgValue::S32(0)));
    args.push(ArgValue::Ptr(map_ptr.unwrap_or(stored)));
    launch(
        source,
        "copy",
        LaunchConfig::linear(1, 256),
        &args,
        &mut mem,
    )
    .map(drop)
}

/// `run` of a `rank`-D copy from the parameter `tmap`.
fn run_copy(map: Option<ArgValue>, dst_off: u32, rank: usize) -> Result<(), Error> {
    run(
        &copy_kernel(rank, "tmap", &reg_coords(rank)),
        map,
        dst_off,
        None,
    )
}

/// A valid 2-D f32 map of 16x8 boxes, without an address.
fn small_map() -> TensorMap {
    map(4, &[32, 32], 128, &[16, 8], TensorSwizzle::None)
}

fn tensor_copy_detail(err: Error) -> String {
    match err {
        Error::TensorCopy { site, detail } => {
            assert!(
                site.instruction.starts_with("cp.async.bulk.tensor.2d"),
                "{}",
                site.instruction
            );
            assert_eq!(site.thread, [0, 0, 0]);
            detail
        }
        other => panic!("expected a tensor-copy error, got {other}"),
    }
}

#[test]
fn a_destination_not_128_byte_aligned_is_reported() {
    let detail = tensor_copy_detail(run_copy(None, 64, 2).unwrap_err());
    assert!(detail.contains("0x40 is not 128-byte aligned"), "{detail}");
    assert!(detail.contains("1024-byte"), "{detail}");
}

#[test]
fn bytes_that_are_not_a_map_name_the_parameter() {
    let err = run_copy(Some(ArgValue::Bytes(vec![0xab; 128])), 0, 2).unwrap_err();
    let text = err.to_string();
    let detail = tensor_copy_detail(err);
    assert!(
        detail.contains("kernel parameter `tmap` is not a tensor map"),
        "{detail}"
    );
    assert!(detail.contains("magic"), "{detail}");
    assert!(
        text.contains("help: pass a map built with TensorMap::encode"),
        "{text}"
    );
}

#[test]
fn a_map_breaking_a_rule_names_the_parameter_and_the_field() {
    let bad = TensorMap {
        boxes: [6, 8, 1, 1, 1],
        address: 4096,
        ..small_map()
    };
    let detail = tensor_copy_detail(run_copy(Some(ArgValue::from(bad)), 0, 2).unwrap_err());
    assert!(
        detail.contains("kernel parameter `tmap` is invalid"),
        "{detail}"
    );
    assert!(detail.contains("boxes[0] * elem_bytes"), "{detail}");
    assert!(detail.contains("6 * 4 = 24"), "{detail}");
}

#[test]
fn a_map_in_global_memory_that_does_not_decode_names_its_address() {
    let source = copy_kernel(2, "%rd9", &reg_coords(2));
    let detail = tensor_copy_detail(run(&source, None, 0, None).unwrap_err());
    assert!(detail.contains("the tensor map at address 0x"), "{detail}");
    assert!(detail.contains("is not a tensor map"), "{detail}");
}

#[test]
fn a_map_address_not_64_byte_aligned_is_reported() {
    let source = copy_kernel(2, "%rd9", &reg_coords(2));
    let detail = tensor_copy_detail(run(&source, None, 0, Some(0x10_0020)).unwrap_err());
    assert!(detail.contains("not 64-byte aligned"), "{detail}");
}

#[test]
fn a_map_of_another_rank_than_the_instruction_is_reported() {
    let err = run_copy(None, 0, 3).unwrap_err();
    let detail = match err {
        Error::TensorCopy { detail, .. } => detail,
        other => panic!("expected a tensor-copy error, got {other}"),
    };
    assert!(
        detail.contains("`.3d`, but the tensor map has rank 2"),
        "{detail}"
    );
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
        ArgValue::from(TensorMap {
            address: tensor,
            ..big
        }),
        ArgValue::U32(0),
        ArgValue::U32(512),
        ArgValue::S32(0),
        ArgValue::S32(30),
    ];
    args.extend((0..3).map(|_| ArgValue::S32(0)));
    args.push(ArgValue::Ptr(0));
    let source = copy_kernel(2, "tmap", &reg_coords(2));
    let err = launch(
        &source,
        "copy",
        LaunchConfig::linear(1, 256),
        &args,
        &mut mem,
    )
    .unwrap_err();
    match err {
        Error::GlobalOutOfBounds { address, .. } => assert_eq!(address, tensor + 32 * 128),
        other => panic!("expected an out-of-bounds load, got {other}"),
    }
}

#[test]
fn a_map_argument_of_the_wrong_size_names_expected_and_given_bytes() {
    for (arg, given) in [(ArgValue::Bytes(vec![0; 64]), 64), (ArgValue::U64(7), 8)] {
        match run_copy(Some(arg), 0, 2).unwrap_err() {
            Error::ArgumentSize {
                index,
                param,
                expected,
                given: g,
                ..
            } => {
                assert_eq!(
                    (index, param.as_str(), expected, g),
                    (1, "tmap", 128, given)
                );
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
        ("cp.async.bulk.tensor.3d.global.shared::cta.im2col_no_offs.bulk_group [tmap, {%r2, %r3, %r4}], [%r1];", ".im2col_no_offs"),
        ("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [tmap, {%r2, %r3}], [%r1];", "reductions"),
    ];
    for (line, word) in unsupported {
        match check(line) {
            Err(Error::Unsupported { detail, .. }) => {
                assert!(detail.contains(word), "{line}: {detail}")
            }
            other => panic!("{line}: expected unsupported, got {other:?}"),
        }
    }
    let malformed = [
        ("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [tmap, {%r2, %r3}], [%r5];", "takes 3 coordinates, but 2"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [small, {%r2, %r3}], [%r5];", "`small` is 16 bytes"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [nowhere, {%r2, %r3}], [%r5];", "`nowhere` is not a register"),
        ("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [tmap, {%r2, %r3, %r4}], [%r1];", "takes 2 coordinates, but 3"),
        ("cp.async.bulk.tensor.2d.global.shared::cta.tile [tmap, {%r2, %r3}], [%r1];", "through `.bulk_group`"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [tmap, {%r2, %r3}], [%r5];", "needs a CTA-mask operand"),
    ];
    for (line, word) in malformed {
        match check(line) {
            Err(Error::Malformed { detail, .. }) => {
                assert!(detail.contains(word), "{line}: {detail}")
            }
            other => panic!("{line}: expected malformed, got {other:?}"),
        }
    }
    // The accepted spellings: `.shared::cta`, no `.tile`, an L2 cache hint (ignored), a
    // multicast to the CTAs of a 16-bit mask; stores likewise.
    for line in [
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r1], [tmap, {%r2, %r3}], [%r5], %rs1;",
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [tmap, {%r2, %r3}], [%r1];",
        "cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group.L2::cache_hint [%rd1, {%r2}], [%r1], %rd2;",
        "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [tmap, {%r2, %r3}], [%r5];",
        "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%r1], [%rd1, {%r2}], [%r5], %rd2;",
    ] {
        check(line).unwrap();
    }
}
