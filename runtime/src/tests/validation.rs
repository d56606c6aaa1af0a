//! Each launch-validation error, raised before any module is loaded.

use super::mock_device;
use crate::testing::{
    artifacts_for, artifacts_with, reverse_meta, vector_add_meta, VECTOR_ADD_SM80,
};
use crate::{Buffer, Device, Error, KernelArg, LaunchConfig, Stream};
use kernel_dsl::{BlockContract, KernelArtifacts, ParamKind, ScalarType, Target};

struct Setup {
    device: Device,
    stream: Stream,
    add: &'static KernelArtifacts,
    x: Buffer<f32>,
    y: Buffer<f32>,
}

fn setup() -> Setup {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let x = Buffer::from_host(&stream, &[1.0f32; 64]).unwrap();
    let y = Buffer::<f32>::zeros(&stream, 64).unwrap();
    Setup {
        device,
        stream,
        add,
        x,
        y,
    }
}

fn assert_nothing_loaded(s: &Setup) {
    assert!(
        s.device.loaded_modules().is_empty(),
        "validation must fail before loading"
    );
}

#[test]
fn a_wrong_argument_count_is_refused() {
    let mut s = setup();
    let err = s
        .stream
        .launch(
            s.add,
            LaunchConfig::linear(1, 64),
            &[(&s.x).into(), (&s.x).into(), (&mut s.y).into()],
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::ArgCount {
                expected: 4,
                got: 3,
                ..
            }
        ),
        "{err}"
    );
    assert_nothing_loaded(&s);
}

#[test]
fn a_scalar_of_the_wrong_type_is_refused_with_both_types() {
    let mut s = setup();
    let args = [
        (&s.x).into(),
        (&s.x).into(),
        (&mut s.y).into(),
        KernelArg::from(64i64),
    ];
    let err = s
        .stream
        .launch(s.add, LaunchConfig::linear(1, 64), &args)
        .unwrap_err();
    match &err {
        &Error::ArgKind {
            index: 3,
            ref param,
            expected,
            got,
            ..
        } => {
            assert_eq!(param, "n");
            assert_eq!(expected, ParamKind::Scalar(ScalarType::U32));
            assert_eq!(got, ParamKind::Scalar(ScalarType::S64));
        }
        e => panic!("expected ArgKind, got {e}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("u32") && msg.contains("s64"), "{msg}");
    assert_nothing_loaded(&s);
}

#[test]
fn a_buffer_of_the_wrong_element_type_is_refused() {
    let mut s = setup();
    let ints = Buffer::<i32>::zeros(&s.stream, 64).unwrap();
    let args = [
        (&ints).into(),
        (&s.x).into(),
        (&mut s.y).into(),
        64u32.into(),
    ];
    let err = s
        .stream
        .launch(s.add, LaunchConfig::linear(1, 64), &args)
        .unwrap_err();
    assert!(matches!(err, Error::ArgKind { index: 0, .. }), "{err}");
    assert!(err.to_string().contains("&[f32]"), "{err}");
}

#[test]
fn a_scalar_where_a_buffer_belongs_is_refused() {
    let mut s = setup();
    let args = [
        1.0f32.into(),
        (&s.x).into(),
        (&mut s.y).into(),
        64u32.into(),
    ];
    let err = s
        .stream
        .launch(s.add, LaunchConfig::linear(1, 64), &args)
        .unwrap_err();
    assert!(matches!(err, Error::ArgKind { index: 0, .. }), "{err}");
}

#[test]
fn a_shared_view_for_a_mutable_parameter_is_refused() {
    let s = setup();
    let args = [(&s.x).into(), (&s.x).into(), (&s.y).into(), 64u32.into()];
    let err = s
        .stream
        .launch(s.add, LaunchConfig::linear(1, 64), &args)
        .unwrap_err();
    assert!(
        matches!(err, Error::NeedsMutableBuffer { index: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("&mut [f32]"), "{err}");
}

#[test]
fn a_mutable_buffer_may_fill_a_read_only_parameter() {
    let mut s = setup();
    let mut z = Buffer::from_host(&s.stream, &[2.0f32; 64]).unwrap();
    let args = [
        (&mut z).into(),
        (&s.x).into(),
        (&mut s.y).into(),
        64u32.into(),
    ];
    s.stream
        .launch(s.add, LaunchConfig::linear(1, 64), &args)
        .unwrap();
    assert_eq!(s.y.to_host(&s.stream).unwrap(), vec![3.0; 64]);
}

#[test]
fn a_buffer_of_another_device_is_refused() {
    let mut s = setup();
    let other = mock_device();
    let other_stream = other.stream().unwrap();
    let foreign = Buffer::from_host(&other_stream, &[1.0f32; 64]).unwrap();
    let args = [
        (&foreign).into(),
        (&s.x).into(),
        (&mut s.y).into(),
        64u32.into(),
    ];
    let err = s
        .stream
        .launch(s.add, LaunchConfig::linear(1, 64), &args)
        .unwrap_err();
    assert!(
        matches!(err, Error::BufferOnOtherDevice { index: 0, .. }),
        "{err}"
    );
}

fn launch_shape(s: &mut Setup, kernel: &'static KernelArtifacts, cfg: LaunchConfig) -> Error {
    let args = [
        (&s.x).into(),
        (&s.x).into(),
        (&mut s.y).into(),
        64u32.into(),
    ];
    s.stream.launch(kernel, cfg, &args).unwrap_err()
}

#[test]
fn empty_grids_and_blocks_are_refused() {
    let mut s = setup();
    let add = s.add;
    for cfg in [
        LaunchConfig::linear(0, 64),
        LaunchConfig::linear(1, 0),
        LaunchConfig::for_elements(0, 64),
    ] {
        let err = launch_shape(&mut s, add, cfg);
        assert!(
            matches!(err, Error::ZeroSizedLaunch { .. }),
            "{cfg:?}: {err}"
        );
    }
    let mut cfg = LaunchConfig::linear(1, 64);
    cfg.grid[2] = 0;
    assert!(matches!(
        launch_shape(&mut s, add, cfg),
        Error::ZeroSizedLaunch { .. }
    ));
}

#[test]
fn blocks_outside_the_kernels_contract_are_refused() {
    let mut s = setup();
    let mut meta = vector_add_meta();
    meta.block = BlockContract::Exactly([128, 1, 1]);
    let exact = artifacts_for(meta, &[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let err = launch_shape(&mut s, exact, LaunchConfig::linear(1, 64));
    assert!(
        matches!(
            err,
            Error::BlockContract {
                block: [64, 1, 1],
                ..
            }
        ),
        "{err}"
    );

    let mut meta = vector_add_meta();
    meta.block = BlockContract::AtMost(256);
    let at_most = artifacts_for(meta, &[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let err = launch_shape(&mut s, at_most, LaunchConfig::linear(1, 512));
    assert!(matches!(err, Error::BlockContract { .. }), "{err}");
}

#[test]
fn blocks_above_the_device_limit_are_refused() {
    let mut s = setup();
    let mut meta = vector_add_meta();
    meta.block = BlockContract::Any;
    let any = artifacts_for(meta, &[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let err = launch_shape(&mut s, any, LaunchConfig::linear(1, 2048));
    assert!(
        matches!(
            err,
            Error::BlockTooLarge {
                max_threads: 1024,
                ..
            }
        ),
        "{err}"
    );
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [1, 1, 128],
        dynamic_shared_bytes: 0,
    };
    assert!(matches!(
        launch_shape(&mut s, any, cfg),
        Error::BlockTooLarge { .. }
    ));
    let cfg = LaunchConfig {
        grid: [1, 1, 1],
        block: [32, 32, 2],
        dynamic_shared_bytes: 0,
    };
    assert!(matches!(
        launch_shape(&mut s, any, cfg),
        Error::BlockTooLarge { .. }
    ));
}

#[test]
fn grids_above_the_device_limit_are_refused() {
    let mut s = setup();
    let add = s.add;
    let cfg = LaunchConfig {
        grid: [1, 65536, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
    };
    assert!(matches!(
        launch_shape(&mut s, add, cfg),
        Error::GridTooLarge { .. }
    ));
    let cfg = LaunchConfig {
        grid: [u32::MAX, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
    };
    let err = launch_shape(&mut s, add, cfg);
    assert!(matches!(err, Error::GridTooLarge { .. }), "{err}");
}

#[test]
fn dynamic_shared_memory_for_a_kernel_without_it_is_refused() {
    let mut s = setup();
    let add = s.add;
    let err = launch_shape(
        &mut s,
        add,
        LaunchConfig::linear(1, 64).with_dynamic_shared(256),
    );
    assert!(
        matches!(err, Error::DynamicSharedNotDeclared { bytes: 256, .. }),
        "{err}"
    );
}

#[test]
fn shared_memory_beyond_the_opt_in_limit_is_refused() {
    let mut s = setup();
    let rev = artifacts_for(
        reverse_meta(),
        &[(Target::Sm80, VECTOR_ADD_SM80)],
        &[],
        None,
    );
    let limit = s.device.props().shared_bytes_per_block_optin;
    let args = [(&s.x).into(), (&mut s.y).into()];
    // static 1024 + dynamic (limit - 1024) fits exactly; one byte more does not.
    let fits = LaunchConfig::linear(2, 32).with_dynamic_shared(limit - 1024);
    s.stream.launch(rev, fits, &args).unwrap();
    let over = LaunchConfig::linear(2, 32).with_dynamic_shared(limit - 1023);
    let err = s.stream.launch(rev, over, &args).unwrap_err();
    match err {
        Error::SharedMemory {
            static_bytes: 1024,
            dynamic_bytes,
            limit: l,
            ..
        } => {
            assert_eq!((dynamic_bytes, l), (limit - 1023, limit));
        }
        e => panic!("expected SharedMemory, got {e}"),
    }

    let mut meta = reverse_meta();
    meta.static_shared_bytes = 64 * 1024;
    let big_static = artifacts_for(meta, &[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let err = s
        .stream
        .launch(big_static, LaunchConfig::linear(2, 32), &args)
        .unwrap_err();
    assert!(matches!(err, Error::SharedMemory { .. }), "{err}");
}

#[test]
fn an_untyped_bits_parameter_accepts_any_value_of_its_width() {
    let mut s = setup();
    let mut meta = vector_add_meta();
    meta.params.to_mut()[3].kind = ParamKind::Scalar(ScalarType::B32);
    let bits = artifacts_for(meta, &[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    for n in [
        KernelArg::from(64u32),
        KernelArg::from(64i32),
        KernelArg::from(64.0f32),
    ] {
        let args = [(&s.x).into(), (&s.x).into(), (&mut s.y).into(), n];
        // Validation passes; the mock engine then rejects non-u32 encodings, which is fine.
        let r = s.stream.launch(bits, LaunchConfig::linear(1, 64), &args);
        assert!(!matches!(r, Err(Error::ArgKind { .. })), "{r:?}");
    }
    let args = [
        (&s.x).into(),
        (&s.x).into(),
        (&mut s.y).into(),
        KernelArg::from(64u64),
    ];
    let err = s
        .stream
        .launch(bits, LaunchConfig::linear(1, 64), &args)
        .unwrap_err();
    assert!(matches!(err, Error::ArgKind { index: 3, .. }), "{err}");
}

#[test]
fn parity_is_checked_before_the_emulator_sees_the_module() {
    let mut s = setup();
    let lying = artifacts_with(
        &[(Target::Sm80, crate::testing::VECTOR_ADD_SM90)],
        &[],
        None,
    );
    let err = launch_shape(&mut s, lying, LaunchConfig::linear(1, 64));
    assert!(matches!(err, Error::Parity { .. }), "{err}");
    assert!(err.to_string().contains("vector_add"), "{err}");
    assert_nothing_loaded(&s);
}

#[test]
fn a_kernel_using_dynamic_shared_memory_launched_without_any_is_refused() {
    let mut s = setup();
    let rev = artifacts_for(
        reverse_meta(),
        &[(Target::Sm80, VECTOR_ADD_SM80)],
        &[],
        None,
    );
    let args = [(&s.x).into(), (&mut s.y).into()];
    let err = s
        .stream
        .launch(rev, LaunchConfig::linear(2, 32), &args)
        .unwrap_err();
    assert!(
        matches!(&err, Error::DynamicSharedMissing { kernel } if kernel == "reverse_in_block"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("LaunchConfig::dynamic_shared_bytes"),
        "{err}"
    );
    assert_nothing_loaded(&s);
}

#[test]
fn dynamic_shared_memory_smaller_than_the_kernel_declares_is_refused_with_both_sizes() {
    let mut s = setup();
    let mut meta = reverse_meta();
    meta.min_dynamic_shared_bytes = 256;
    let rev = artifacts_for(meta, &[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let args = [(&s.x).into(), (&mut s.y).into()];
    let err = s
        .stream
        .launch(
            rev,
            LaunchConfig::linear(2, 32).with_dynamic_shared(128),
            &args,
        )
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::DynamicSharedTooSmall { kernel, bytes: 128, min: 256 } if kernel == "reverse_in_block"
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("256") && msg.contains("128"), "{msg}");
    assert_nothing_loaded(&s);
}

#[test]
fn a_grid_that_is_not_whole_clusters_is_refused_naming_both_shapes() {
    let mut s = setup();
    let mut meta = vector_add_meta();
    meta.cluster = Some([2, 1, 1]);
    let add = artifacts_for(meta, &[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let args = [(&s.x).into(), (&mut s.y).into()];
    let err = s
        .stream
        .launch(add, LaunchConfig::linear(3, 32), &args)
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::ClusterGrid {
                grid: [3, 1, 1],
                cluster: [2, 1, 1],
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("multiple of the cluster"), "{err}");
    assert_nothing_loaded(&s);
}
