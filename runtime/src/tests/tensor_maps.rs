use super::mock_device;
use crate::testing::{artifacts_with, VECTOR_ADD_SM80};
use crate::{Buffer, Error, KernelArg, LaunchConfig, TensorMap, TensorSwizzle, TensorTiling};
use kernel_dsl::{ParamKind, Target};

fn refused(detail_has: &str, result: Result<TensorMap, Error>) {
    match result {
        Err(Error::TensorMap { detail }) => {
            assert!(detail.contains(detail_has), "{detail}")
        }
        other => panic!("expected a tensor-map error about `{detail_has}`, got {other:?}"),
    }
}

#[test]
fn every_copy_engine_rule_is_checked_before_encoding() {
    let stream = mock_device().stream().unwrap();
    let a = Buffer::<f32>::zeros(&stream, 64 * 64).unwrap();
    let ok = TensorTiling::matrix(64, 64, 64, 8, 32, TensorSwizzle::B128);
    assert!(TensorMap::tiled(a.view(), &ok).is_ok());

    let no_dims = TensorTiling {
        dims: vec![],
        strides: vec![],
        boxes: vec![],
        swizzle: TensorSwizzle::None,
    };
    refused("1 to 5 dimensions", TensorMap::tiled(a.view(), &no_dims));
    let mismatched = TensorTiling {
        strides: vec![],
        ..ok.clone()
    };
    refused("need 1 strides", TensorMap::tiled(a.view(), &mismatched));
    // A pitch of 63 f32 is 252 bytes: not a multiple of 16.
    let pitch = TensorTiling::matrix(64, 63, 63, 8, 32, TensorSwizzle::B128);
    refused("multiple of 16 bytes", TensorMap::tiled(a.view(), &pitch));
    let tall = TensorTiling::matrix(64, 64, 64, 257, 32, TensorSwizzle::B128);
    refused("1 to 256", TensorMap::tiled(a.view(), &tall));
    let ragged = TensorTiling::matrix(64, 64, 64, 8, 6, TensorSwizzle::None);
    refused("multiple of 16", TensorMap::tiled(a.view(), &ragged));
    let wide = TensorTiling::matrix(64, 64, 64, 8, 64, TensorSwizzle::B128);
    refused("swizzle span", TensorMap::tiled(a.view(), &wide));
    let offset = a.slice(1..64 * 64).unwrap();
    let small = TensorTiling::matrix(8, 32, 32, 8, 32, TensorSwizzle::None);
    refused("16-byte aligned", TensorMap::tiled(offset, &small));
    let big = TensorTiling::matrix(65, 64, 64, 8, 32, TensorSwizzle::B128);
    refused("buffer holds 16384", TensorMap::tiled(a.view(), &big));
}

#[test]
fn emulator_maps_decode_to_the_tiling_in_bytes() {
    let stream = mock_device().stream().unwrap();
    let a = Buffer::<crate::Bf16>::zeros(&stream, 3 * 40 * 72).unwrap();
    let tiling = TensorTiling::matrix(40, 64, 72, 128, 64, TensorSwizzle::B128).batched(3, 40 * 72);
    let map = TensorMap::tiled(a.view(), &tiling).unwrap();
    assert_eq!(map.box_bytes(), 128 * 64 * 2);
    let decoded = ptx_emulator::TensorMap::decode(map.bytes()).unwrap();
    assert_eq!(decoded.elem_bytes, 2);
    assert_eq!(decoded.rank, 3);
    assert_eq!(decoded.address, a.view().addr());
    assert_eq!(&decoded.dims[..3], &[64, 40, 3]);
    assert_eq!(&decoded.strides[1..3], &[144, 40 * 72 * 2]);
    assert_eq!(&decoded.boxes[..3], &[64, 128, 1]);
    assert_eq!(decoded.swizzle, ptx_emulator::TensorSwizzle::B128);
}

#[test]
fn a_map_where_a_buffer_is_expected_is_refused_before_launch() {
    let stream = mock_device().stream().unwrap();
    let kernel = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let a = Buffer::<f32>::zeros(&stream, 64).unwrap();
    let mut c = Buffer::<f32>::zeros(&stream, 64).unwrap();
    let map = TensorMap::tiled(
        a.view(),
        &TensorTiling::matrix(4, 16, 16, 4, 16, TensorSwizzle::None),
    )
    .unwrap();
    let args = [
        KernelArg::from(&map),
        KernelArg::from(&a),
        KernelArg::from(&mut c),
        KernelArg::from(64u32),
    ];
    assert_eq!(args[0].kind(), ParamKind::TensorMap);
    let err = stream
        .launch(kernel, LaunchConfig::for_elements(64, 64), &args)
        .unwrap_err();
    assert!(matches!(err, Error::ArgKind { index: 0, .. }), "{err}");
    assert!(err.to_string().contains("a `&TensorMap`"), "{err}");
}

#[test]
fn an_encoding_is_reused_for_the_same_address_and_tiling_only() {
    let stream = mock_device().stream().unwrap();
    let a = Buffer::<f32>::zeros(&stream, 96 * 40).unwrap();
    // A tiling no other test encodes, so no other thread's encoding can be found first.
    let tiling = TensorTiling::matrix(96, 36, 40, 24, 12, TensorSwizzle::None);
    let before = TensorMap::encodings_computed_on_this_thread();
    let first = TensorMap::tiled(a.view(), &tiling).unwrap();
    assert_eq!(TensorMap::encodings_computed_on_this_thread(), before + 1);
    let again = TensorMap::tiled(a.view(), &tiling).unwrap();
    assert_eq!(TensorMap::encodings_computed_on_this_thread(), before + 1);
    assert_eq!(first.bytes(), again.bytes());
    // Another box, or the same tiling over another address, is encoded anew.
    let other_box = TensorTiling::matrix(96, 36, 40, 12, 12, TensorSwizzle::None);
    let third = TensorMap::tiled(a.view(), &other_box).unwrap();
    assert_ne!(first.bytes(), third.bytes());
    let b = Buffer::<f32>::zeros(&stream, 96 * 40).unwrap();
    let fourth = TensorMap::tiled(b.view(), &tiling).unwrap();
    assert_ne!(first.bytes(), fourth.bytes());
    assert_eq!(TensorMap::encodings_computed_on_this_thread(), before + 3);
    // A refused tiling is not remembered: it is refused again.
    let unaligned = TensorTiling::matrix(96, 36, 39, 24, 12, TensorSwizzle::None);
    assert!(TensorMap::tiled(a.view(), &unaligned).is_err());
    assert!(TensorMap::tiled(a.view(), &unaligned).is_err());
}
