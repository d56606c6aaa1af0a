use super::{counting_device, mock_device};
use crate::testing::{artifacts_for, artifacts_with, axpy_meta, random_f32s, VECTOR_ADD_SM80};
use crate::{Buffer, Error, GraphCache, KernelArg, LaunchConfig};
use kernel_dsl::Target;
use std::sync::atomic::Ordering;

#[test]
fn graph_replay_matches_direct_launches_and_sees_new_buffer_contents() {
    let (device, launches) = counting_device();
    let stream = device.stream().unwrap();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let axpy = artifacts_for(axpy_meta(), &[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    device.prewarm(&[add, axpy]).unwrap();
    let n = 300u32;
    let cfg = LaunchConfig::for_elements(n, 128);
    let (a, b) = (random_f32s(10, n as usize), random_f32s(11, n as usize));
    let mut da = Buffer::from_host(&stream, &a).unwrap();
    let db = Buffer::from_host(&stream, &b).unwrap();
    let mut dc = Buffer::from_host(&stream, &vec![f32::NAN; n as usize]).unwrap();
    let mut dy = Buffer::from_host(&stream, &b).unwrap();

    let graph = stream
        .capture(|s| {
            s.launch(
                add,
                cfg,
                &[(&da).into(), (&db).into(), (&mut dc).into(), n.into()],
            )?;
            s.launch(
                axpy,
                cfg,
                &[2.0f32.into(), (&dc).into(), (&mut dy).into(), n.into()],
            )
        })
        .unwrap();
    assert_eq!(graph.launches(), 2);
    assert_eq!(
        launches.load(Ordering::Relaxed),
        0,
        "capture must not run the launches"
    );
    graph.replay().unwrap();
    let y = dy.to_host(&stream).unwrap();
    for i in 0..n as usize {
        assert_eq!(y[i], 2.0f32.mul_add(a[i] + b[i], b[i]));
    }

    // New contents in the same buffers: replay reads the same addresses.
    let a2 = random_f32s(12, n as usize);
    da.copy_from_host(&stream, &a2).unwrap();
    dy.copy_from_host(&stream, &b).unwrap();
    graph.replay().unwrap();
    let y_graph = dy.to_host(&stream).unwrap();
    dy.copy_from_host(&stream, &b).unwrap();
    stream
        .launch(
            add,
            cfg,
            &[(&da).into(), (&db).into(), (&mut dc).into(), n.into()],
        )
        .unwrap();
    stream
        .launch(
            axpy,
            cfg,
            &[2.0f32.into(), (&dc).into(), (&mut dy).into(), n.into()],
        )
        .unwrap();
    assert_eq!(y_graph, dy.to_host(&stream).unwrap());
    assert_ne!(y_graph, y);
}

#[test]
fn capture_refuses_kernels_that_were_not_loaded_even_when_unsealed() {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    let da = Buffer::from_host(&stream, &[1.0f32; 8]).unwrap();
    let mut dc = Buffer::<f32>::zeros(&stream, 8).unwrap();
    let err = stream
        .capture(|s| {
            s.launch(
                add,
                LaunchConfig::linear(1, 8),
                &[(&da).into(), (&da).into(), (&mut dc).into(), 8u32.into()],
            )
        })
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            Error::KernelNotPrewarmed {
                target: Target::Sm80,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        !stream.is_capturing(),
        "a failed capture must end the capture"
    );
    assert!(device.loaded_modules().is_empty());
}

#[test]
fn capture_refuses_host_copies_and_allocations() {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let mut buf = Buffer::<f32>::zeros(&stream, 4).unwrap();
    let err = stream
        .capture(|s| buf.copy_from_host(s, &[1.0; 4]))
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            Error::NotAllowedDuringCapture {
                op: "copy_from_host"
            }
        ),
        "{err}"
    );
    let err = stream
        .capture(|s| Buffer::<f32>::zeros(s, 4).map(drop))
        .err()
        .unwrap();
    assert!(
        matches!(err, Error::NotAllowedDuringCapture { op: "allocate" }),
        "{err}"
    );
}

#[test]
fn a_graph_keeps_its_buffers_alive_after_they_are_dropped() {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    device.prewarm(&[add]).unwrap();
    let da = Buffer::from_host(&stream, &[1.0f32; 8]).unwrap();
    let mut dc = Buffer::<f32>::zeros(&stream, 8).unwrap();
    let graph = stream
        .capture(|s| {
            s.launch(
                add,
                LaunchConfig::linear(1, 8),
                &[(&da).into(), (&da).into(), (&mut dc).into(), 8u32.into()],
            )
        })
        .unwrap();
    drop(da);
    drop(dc);
    graph.replay().unwrap();
}

#[test]
fn graph_cache_captures_once_per_shape_key() {
    let (device, launches) = counting_device();
    let stream = device.stream().unwrap();
    let add = artifacts_with(&[(Target::Sm80, VECTOR_ADD_SM80)], &[], None);
    device.prewarm(&[add]).unwrap();
    let mut graphs = GraphCache::new();
    let mut captures = 0;
    for &n in &[64u32, 64, 128, 64, 128] {
        let da = Buffer::from_host(&stream, &random_f32s(n as u64, n as usize)).unwrap();
        let mut dc = Buffer::<f32>::zeros(&stream, n as usize).unwrap();
        let captured = graphs
            .run(&stream, n, |s| {
                s.launch(
                    add,
                    LaunchConfig::for_elements(n, 64),
                    &[
                        KernelArg::from(&da),
                        KernelArg::from(&da),
                        KernelArg::from(&mut dc),
                        n.into(),
                    ],
                )
            })
            .unwrap();
        captures += captured as usize;
    }
    assert_eq!(captures, 2);
    assert_eq!(graphs.len(), 2);
    assert_eq!(
        launches.load(Ordering::Relaxed),
        5,
        "every run replays once"
    );
}
