use super::counting_device;
use crate::testing::{artifacts_for, artifacts_with, axpy_meta, VECTOR_ADD_SM80};
use crate::{Buffer, Error, KernelArg, LaunchConfig};
use kernel_dsl::Target;

#[test]
fn after_seal_a_prewarmed_kernel_launches_and_any_other_is_refused() {
    let (device, _) = counting_device();
    let stream = device.stream().unwrap();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let other = artifacts_for(
        axpy_meta(),
        &[(
            Target::Sm80,
            include_str!("../../tests/fixtures/test_kernels.sm_80.ptx").trim_end(),
        )],
        &[],
        None,
    );
    device.prewarm(&[add]).unwrap();
    device.seal();
    let x = Buffer::from_host(&stream, &[1.5f32; 32]).unwrap();
    let mut y = Buffer::from_host(&stream, &[f32::NAN; 32]).unwrap();
    stream
        .launch(
            add,
            LaunchConfig::linear(1, 32),
            &[(&x).into(), (&x).into(), (&mut y).into(), 32u32.into()],
        )
        .unwrap();
    assert_eq!(y.to_host(&stream).unwrap(), vec![3.0; 32]);

    let err = stream
        .launch(
            other,
            LaunchConfig::linear(1, 32),
            &[2.0f32.into(), (&x).into(), (&mut y).into(), 32u32.into()],
        )
        .unwrap_err();
    match &err {
        Error::KernelNotPrewarmed { kernel, target } => {
            assert_eq!((kernel.as_str(), *target), ("axpy", Target::Sm80));
        }
        e => panic!("expected KernelNotPrewarmed, got {e}"),
    }
    assert!(err.to_string().contains("prewarm"), "{err}");
    assert_eq!(
        device.loaded_modules().len(),
        1,
        "a sealed device loads nothing"
    );
}

#[test]
fn before_seal_a_launch_loads_on_first_use_under_the_prewarm_key() {
    let (device, _) = counting_device();
    let stream = device.stream().unwrap();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let x = Buffer::from_host(&stream, &[1.0f32; 4]).unwrap();
    let mut y = Buffer::<f32>::zeros(&stream, 4).unwrap();
    stream
        .launch(
            add,
            LaunchConfig::linear(1, 4),
            &[(&x).into(), (&x).into(), (&mut y).into(), 4u32.into()],
        )
        .unwrap();
    let after_launch = device.loaded_modules();
    let prewarmed = device.prewarm(&[add]).unwrap();
    assert_eq!(
        after_launch, prewarmed,
        "pre-warm finds what the launch loaded"
    );
    assert_eq!(
        prewarmed[0].key,
        kernel_dsl::ModuleKey::of(Target::Sm80, VECTOR_ADD_SM80.as_bytes())
    );
}

#[test]
fn a_copy_of_the_artifacts_at_another_address_hits_the_prewarmed_module() {
    let (device, _) = counting_device();
    let stream = device.stream().unwrap();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let twin = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    device.prewarm(&[add]).unwrap();
    device.seal();
    let x = Buffer::from_host(&stream, &[1.0f32; 4]).unwrap();
    let mut y = Buffer::<f32>::zeros(&stream, 4).unwrap();
    let args = [
        KernelArg::from(&x),
        KernelArg::from(&x),
        KernelArg::from(&mut y),
        KernelArg::from(4u32),
    ];
    stream
        .launch(twin, LaunchConfig::linear(1, 4), &args)
        .unwrap();
}

#[test]
fn prewarm_after_seal_says_the_runtime_is_sealed_and_loads_nothing() {
    let (device, _) = counting_device();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    device.seal();
    let err = device.prewarm(&[add]).unwrap_err();
    match &err {
        Error::PrewarmAfterSeal { kernel, target } => {
            assert_eq!((kernel.as_str(), *target), ("vector_add", Target::Sm80));
        }
        e => panic!("expected PrewarmAfterSeal, got {e}"),
    }
    assert!(err.to_string().contains("already sealed"), "{err}");
    assert!(device.loaded_modules().is_empty());
}
