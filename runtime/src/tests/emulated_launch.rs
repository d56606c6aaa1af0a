use super::mock_device;
use crate::testing::{
    artifacts_for, artifacts_with, random_f32s, reverse_meta, VECTOR_ADD_SM80, VECTOR_ADD_SM90,
};
use crate::{Buffer, Device, Error, KernelArg, LaunchConfig, ModuleOrigin};
use kernel_dsl::Target;

#[test]
fn vector_add_on_the_emulator_matches_the_cpu_sum() {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let kernel = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let n = 1000;
    let (a, b) = (random_f32s(1, n), random_f32s(2, n));
    let da = Buffer::from_host(&stream, &a).unwrap();
    let db = Buffer::from_host(&stream, &b).unwrap();
    let mut dc = Buffer::from_host(&stream, &vec![f32::NAN; n]).unwrap();
    let args = [
        KernelArg::from(&da),
        KernelArg::from(&db),
        KernelArg::from(&mut dc),
        KernelArg::from(n as u32),
    ];
    stream
        .launch(kernel, LaunchConfig::for_elements(n as u32, 256), &args)
        .unwrap();
    let c = dc.to_host(&stream).unwrap();
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "element {i}");
    }
}

#[test]
fn sub_slices_pass_their_offset_address() {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let kernel = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let a = random_f32s(3, 64);
    let da = Buffer::from_host(&stream, &a).unwrap();
    let mut dc = Buffer::from_host(&stream, &[f32::NAN; 32]).unwrap();
    let args = [
        KernelArg::from(da.slice(32..64).unwrap()),
        KernelArg::from(da.slice(0..32).unwrap()),
        KernelArg::from(&mut dc),
        KernelArg::from(32u32),
    ];
    stream
        .launch(kernel, LaunchConfig::for_elements(32, 32), &args)
        .unwrap();
    let c = dc.to_host(&stream).unwrap();
    for i in 0..32 {
        assert_eq!(c[i], a[32 + i] + a[i]);
    }
}

#[test]
fn the_emulator_loads_only_modules_for_its_own_target() {
    let device = mock_device();
    let kernel = artifacts_with(&[(Target::Sm90, VECTOR_ADD_SM90)], &[], None);
    let err = device.prewarm(&[kernel]).unwrap_err();
    assert!(
        err.to_string().contains("enable the `sm_80` feature"),
        "{err}"
    );
    let on_sm90 = Device::emulator_with_engine(
        Target::Sm90,
        Box::new(crate::testing::MockEngine::default()),
    );
    let info = on_sm90.prewarm(&[kernel]).unwrap();
    assert_eq!(info[0].target, Target::Sm90);
    assert_eq!(info[0].origin, ModuleOrigin::EmbeddedPtx);
}

#[test]
fn kernels_sharing_one_module_load_it_once_and_keep_their_own_entries() {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let rev = artifacts_for(
        reverse_meta(),
        &[(Target::Sm80, VECTOR_ADD_SM80)],
        &[],
        None,
    );
    let infos = device.prewarm(&[add, rev]).unwrap();
    assert_eq!(infos[0].key, infos[1].key, "same PTX text, same module key");
    assert_eq!(
        (infos[0].kernel.as_str(), infos[1].kernel.as_str()),
        ("vector_add", "reverse_in_block")
    );

    let x = random_f32s(4, 64);
    let dx = Buffer::from_host(&stream, &x).unwrap();
    let mut dy = Buffer::from_host(&stream, &[f32::NAN; 64]).unwrap();
    let cfg = LaunchConfig::linear(2, 32).with_dynamic_shared(128);
    stream
        .launch(rev, cfg, &[KernelArg::from(&dx), KernelArg::from(&mut dy)])
        .unwrap();
    let y = dy.to_host(&stream).unwrap();
    assert_eq!(y[0], x[31]);
    assert_eq!(y[32], x[63]);
    assert_eq!(y[63], x[32]);
}

#[test]
fn the_real_emulator_runs_vector_add_and_matches_the_cpu() {
    let device = Device::emulator();
    let stream = device.stream().unwrap();
    let kernel = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let n = 333;
    let (a, b) = (random_f32s(21, n), random_f32s(22, n));
    let da = Buffer::from_host(&stream, &a).unwrap();
    let db = Buffer::from_host(&stream, &b).unwrap();
    let mut dc = Buffer::from_host(&stream, &vec![f32::NAN; n]).unwrap();
    let args = [
        KernelArg::from(&da),
        KernelArg::from(&db),
        KernelArg::from(&mut dc),
        KernelArg::from(n as u32),
    ];
    stream
        .launch(kernel, LaunchConfig::for_elements(n as u32, 64), &args)
        .unwrap();
    let c = dc.to_host(&stream).unwrap();
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "element {i}");
    }
}

#[test]
fn an_out_of_bounds_launch_on_the_real_emulator_is_an_error_naming_the_kernel() {
    let device = Device::emulator();
    let stream = device.stream().unwrap();
    let kernel = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let da = Buffer::from_host(&stream, &random_f32s(23, 16)).unwrap();
    let mut dc = Buffer::<f32>::zeros(&stream, 16).unwrap();
    // n = 32 overruns the 16-element buffers: lengths are the op wrappers' job, and the
    // emulator catches what they miss.
    let args = [
        KernelArg::from(&da),
        KernelArg::from(&da),
        KernelArg::from(&mut dc),
        KernelArg::from(32u32),
    ];
    let err = stream
        .launch(kernel, LaunchConfig::linear(1, 32), &args)
        .unwrap_err();
    match &err {
        Error::Emulator { kernel, .. } => assert_eq!(kernel, "vector_add"),
        e => panic!("expected an emulator error, got {e}"),
    }
}

#[test]
fn the_real_emulator_replays_graphs_with_new_contents() {
    let device = Device::emulator();
    let stream = device.stream().unwrap();
    let rev = artifacts_for(
        reverse_meta(),
        &[(Target::Sm80, VECTOR_ADD_SM80)],
        &[],
        None,
    );
    device.prewarm(&[rev]).unwrap();
    let x = random_f32s(24, 64);
    let mut dx = Buffer::from_host(&stream, &x).unwrap();
    let mut dy = Buffer::from_host(&stream, &[f32::NAN; 64]).unwrap();
    let cfg = LaunchConfig::linear(2, 32).with_dynamic_shared(128);
    let graph = stream
        .capture(|s| s.launch(rev, cfg, &[(&dx).into(), (&mut dy).into()]))
        .unwrap();
    graph.replay().unwrap();
    assert_eq!(dy.to_host(&stream).unwrap()[0], x[31]);
    let x2 = random_f32s(25, 64);
    dx.copy_from_host(&stream, &x2).unwrap();
    graph.replay().unwrap();
    let y = dy.to_host(&stream).unwrap();
    assert_eq!((y[0], y[33], y[63]), (x2[31], x2[62], x2[32]));
}

#[test]
fn copies_check_lengths_and_round_trip_every_element_type() {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let mut buf = Buffer::<u64>::zeros(&stream, 3).unwrap();
    assert!(matches!(
        buf.copy_from_host(&stream, &[1, 2]),
        Err(Error::CopyLength {
            buffer_len: 3,
            host_len: 2
        })
    ));
    buf.copy_from_host(&stream, &[u64::MAX, 7, 1 << 40])
        .unwrap();
    assert_eq!(buf.to_host(&stream).unwrap(), vec![u64::MAX, 7, 1 << 40]);
    let h = [crate::F16::from_f32(1.5), crate::F16::from_f32(-0.25)];
    assert_eq!(
        Buffer::from_host(&stream, &h)
            .unwrap()
            .to_host(&stream)
            .unwrap(),
        h
    );
    let bf = [crate::Bf16::from_f32(3.0), crate::Bf16::from_f32(-1e30)];
    assert_eq!(
        Buffer::from_host(&stream, &bf)
            .unwrap()
            .to_host(&stream)
            .unwrap(),
        bf
    );
    let small = [0xabu8, 0, 255];
    assert_eq!(
        Buffer::from_host(&stream, &small)
            .unwrap()
            .to_host(&stream)
            .unwrap(),
        small
    );
}

#[test]
fn buffers_used_on_a_second_stream_stay_correct() {
    let device = mock_device();
    let (s1, s2) = (device.stream().unwrap(), device.stream().unwrap());
    let kernel = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let a = random_f32s(5, 16);
    let da = Buffer::from_host(&s1, &a).unwrap();
    let mut dc = Buffer::from_host(&s1, &[f32::NAN; 16]).unwrap();
    let args = [
        KernelArg::from(&da),
        KernelArg::from(&da),
        KernelArg::from(&mut dc),
        KernelArg::from(16u32),
    ];
    s2.launch(kernel, LaunchConfig::linear(1, 16), &args)
        .unwrap();
    let c = dc.to_host(&s2).unwrap();
    assert_eq!(c[5], a[5] * 2.0);
}

#[test]
fn the_real_emulator_runs_as_sm90_with_the_sm90_module() {
    let device = Device::emulator_for(Target::Sm90);
    let stream = device.stream().unwrap();
    let kernel = artifacts_with(
        &[
            (Target::Sm80, VECTOR_ADD_SM80),
            (Target::Sm90, VECTOR_ADD_SM90),
        ],
        &[],
        None,
    );
    let a = random_f32s(26, 100);
    let da = Buffer::from_host(&stream, &a).unwrap();
    let mut dc = Buffer::from_host(&stream, &[f32::NAN; 100]).unwrap();
    let args = [
        KernelArg::from(&da),
        KernelArg::from(&da),
        KernelArg::from(&mut dc),
        KernelArg::from(100u32),
    ];
    stream
        .launch(kernel, LaunchConfig::for_elements(100, 32), &args)
        .unwrap();
    assert_eq!(device.loaded_modules()[0].target, Target::Sm90);
    let c = dc.to_host(&stream).unwrap();
    assert!((0..100).all(|i| c[i] == a[i] * 2.0));
}

#[test]
fn an_allocation_whose_size_overflows_is_an_error() {
    let stream = mock_device().stream().unwrap();
    let err = Buffer::<f64>::zeros(&stream, usize::MAX / 4).unwrap_err();
    assert!(
        matches!(err, Error::AllocationTooLarge { elem_bytes: 8, .. }),
        "{err}"
    );
}

/// `vector_add` on the real emulator: `c = a + a` for `n` elements of whatever views it gets.
fn double_into(
    stream: &crate::Stream,
    a: crate::BufferView<'_>,
    c: crate::BufferViewMut<'_>,
    n: u32,
) -> crate::Result<()> {
    let kernel = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let args = [
        KernelArg::from(a),
        KernelArg::from(a),
        KernelArg::from(c),
        KernelArg::from(n),
    ];
    stream.launch(kernel, LaunchConfig::for_elements(n, 32), &args)
}

#[test]
fn a_kernel_writing_past_a_mutable_view_is_out_of_bounds_on_the_emulator() {
    let stream = Device::emulator().stream().unwrap();
    let x = Buffer::from_host(&stream, &[1.0f32; 16]).unwrap();
    let mut y = Buffer::from_host(&stream, &[f32::NAN; 16]).unwrap();
    let err = double_into(&stream, x.view(), y.slice_mut(0..8).unwrap(), 16).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Emulator { .. }), "{err:?}");
    for needle in [
        "vector_add",
        "store",
        "view `c`",
        "elements 0..8",
        "64 bytes, 16 elements",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
}

#[test]
fn a_kernel_reading_past_a_view_is_out_of_bounds_on_the_emulator() {
    let stream = Device::emulator().stream().unwrap();
    let x = Buffer::from_host(&stream, &[1.0f32; 16]).unwrap();
    let mut y = Buffer::from_host(&stream, &[f32::NAN; 16]).unwrap();
    let err = double_into(&stream, x.slice(0..8).unwrap(), y.view_mut(), 16).unwrap_err();
    let text = err.to_string();
    for needle in ["load", "view `a`", "elements 0..8"] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
}

#[test]
fn a_kernel_inside_its_views_runs_on_the_emulator() {
    let stream = Device::emulator().stream().unwrap();
    let x = Buffer::from_host(&stream, &random_f32s(7, 16)).unwrap();
    let mut y = Buffer::from_host(&stream, &[f32::NAN; 16]).unwrap();
    double_into(
        &stream,
        x.slice(8..16).unwrap(),
        y.slice_mut(0..8).unwrap(),
        8,
    )
    .unwrap();
    double_into(
        &stream,
        x.slice(0..8).unwrap(),
        y.slice_mut(8..16).unwrap(),
        8,
    )
    .unwrap();
    let (xs, ys) = (x.to_host(&stream).unwrap(), y.to_host(&stream).unwrap());
    for i in 0..8 {
        assert_eq!(ys[i], xs[8 + i] * 2.0, "element {i}");
        assert_eq!(ys[8 + i], xs[i] * 2.0, "element {}", 8 + i);
    }
}

/// A kernel that never ends.
const SPIN_SM80: &str = "\
.version 7.0
.target sm_80
.address_size 64

.visible .entry spin()
{
$L__top:
	bra.uni 	$L__top;
}
";

#[test]
fn an_endless_loop_on_the_emulator_stops_at_the_devices_step_budget() {
    let device = Device::emulator_with(crate::EmulatorOptions::new().step_budget(50_000));
    let stream = device.stream().unwrap();
    let meta = kernel_dsl::KernelMeta {
        entry: "spin".into(),
        params: std::borrow::Cow::Borrowed(&[]),
        block: kernel_dsl::BlockContract::Any,
        static_shared_bytes: 0,
        uses_dynamic_shared: false,
        min_dynamic_shared_bytes: 0,
        waits_on_prior_grid: false,
        cluster: None,
    };
    let spin = artifacts_for(meta, &[(Target::Sm80, SPIN_SM80)], &[], None);
    let err = stream
        .launch(spin, LaunchConfig::linear(2, 64), &[])
        .unwrap_err();
    let text = err.to_string();
    for needle in [
        "kernel `spin`",
        "step budget of 50000",
        "block (0, 0, 0), thread (0, 0, 0)",
        "bra.uni",
        "EmulatorOptions::step_budget",
        "PTXKIT_EMULATOR_STEP_BUDGET",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
}
