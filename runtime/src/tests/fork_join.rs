//! A second stream forked into a capture: its launches land in the same graph, it must be
//! joined back, and buffers of the capturing stream may be used on it.

use super::counting_device;
use crate::testing::{artifacts_with, VECTOR_ADD_SM80};
use crate::{Buffer, Error, LaunchConfig};
use kernel_dsl::Target;
use std::sync::atomic::Ordering;

#[test]
fn a_forked_stream_records_into_the_capture_and_replays_with_it() {
    let (device, launches) = counting_device();
    let (main, side) = (device.stream().unwrap(), device.stream().unwrap());
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    device.prewarm(&[add]).unwrap();
    let cfg = LaunchConfig::for_elements(64, 64);
    let a = Buffer::<f32>::zeros(&main, 64).unwrap();
    let mut b = Buffer::<f32>::zeros(&main, 64).unwrap();
    let mut c = Buffer::<f32>::zeros(&main, 64).unwrap();
    let mut d = Buffer::<f32>::zeros(&main, 64).unwrap();
    let graph = main
        .capture(|s| {
            s.fork(&side)?;
            assert!(side.is_capturing());
            // `b` was allocated on `main`: its first use on the forked stream is allowed.
            side.launch(
                add,
                cfg,
                &[(&a).into(), (&a).into(), (&mut b).into(), 64u32.into()],
            )?;
            s.launch(
                add,
                cfg,
                &[(&a).into(), (&a).into(), (&mut c).into(), 64u32.into()],
            )?;
            s.join(&side)?;
            s.launch(
                add,
                cfg,
                &[(&b).into(), (&c).into(), (&mut d).into(), 64u32.into()],
            )
        })
        .unwrap();
    assert!(!side.is_capturing(), "the capture's end releases the fork");
    assert_eq!(
        graph.launches(),
        3,
        "the forked stream's launch is in the graph"
    );
    assert_eq!(launches.load(Ordering::Relaxed), 0, "capture runs nothing");
    graph.replay().unwrap();
    assert_eq!(launches.load(Ordering::Relaxed), 3);
    // After the capture the side stream launches directly again.
    side.launch(
        add,
        cfg,
        &[(&a).into(), (&a).into(), (&mut b).into(), 64u32.into()],
    )
    .unwrap();
    assert_eq!(launches.load(Ordering::Relaxed), 4);
}

#[test]
fn a_fork_with_work_never_joined_fails_the_capture_and_releases_the_stream() {
    let (device, _) = counting_device();
    let (main, side) = (device.stream().unwrap(), device.stream().unwrap());
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    device.prewarm(&[add]).unwrap();
    let cfg = LaunchConfig::for_elements(64, 64);
    let a = Buffer::<f32>::zeros(&main, 64).unwrap();
    let mut b = Buffer::<f32>::zeros(&main, 64).unwrap();
    let err = main
        .capture(|s| {
            s.fork(&side)?;
            side.launch(
                add,
                cfg,
                &[(&a).into(), (&a).into(), (&mut b).into(), 64u32.into()],
            )
        })
        .err()
        .unwrap();
    assert!(matches!(err, Error::UnjoinedFork { streams: 1 }), "{err}");
    assert!(!side.is_capturing());
    // Joined, then used again before the end: unjoined again.
    let err = main
        .capture(|s| {
            s.fork(&side)?;
            s.join(&side)?;
            side.launch(
                add,
                cfg,
                &[(&a).into(), (&a).into(), (&mut b).into(), 64u32.into()],
            )
        })
        .err()
        .unwrap();
    assert!(matches!(err, Error::UnjoinedFork { streams: 1 }), "{err}");
    // A fork with nothing queued on it needs no join.
    main.capture(|s| s.fork(&side)).unwrap();
}

#[test]
fn a_forked_stream_refuses_a_first_use_of_a_buffer_from_an_unrelated_stream() {
    let (device, _) = counting_device();
    let (main, side, other) = (
        device.stream().unwrap(),
        device.stream().unwrap(),
        device.stream().unwrap(),
    );
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    device.prewarm(&[add]).unwrap();
    let cfg = LaunchConfig::for_elements(64, 64);
    let a = Buffer::<f32>::zeros(&other, 64).unwrap();
    let mut b = Buffer::<f32>::zeros(&main, 64).unwrap();
    let err = main
        .capture(|s| {
            s.fork(&side)?;
            let r = side.launch(
                add,
                cfg,
                &[(&a).into(), (&a).into(), (&mut b).into(), 64u32.into()],
            );
            s.join(&side)?;
            r
        })
        .err()
        .unwrap();
    assert!(
        matches!(err, Error::NotAllowedDuringCapture { .. }),
        "{err}"
    );
}

#[test]
fn a_stream_cannot_fork_itself_or_a_stream_of_another_device() {
    let (device, _) = counting_device();
    let (other_device, _) = counting_device();
    let main = device.stream().unwrap();
    assert!(matches!(main.fork(&main), Err(Error::ForkOfItself)));
    assert!(matches!(main.join(&main), Err(Error::ForkOfItself)));
    let foreign = other_device.stream().unwrap();
    assert!(matches!(
        main.fork(&foreign),
        Err(Error::DeviceMismatch { op: "fork" })
    ));
}
