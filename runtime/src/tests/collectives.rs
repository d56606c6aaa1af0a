//! Collectives on the emulator's one-rank communicator: every operation on both element
//! types, typed shape errors that leave the buffers untouched, all-reduce inside a capture, and
//! the message for a missing libnccl.

use super::mock_device;
use crate::collective::probe_result;
use crate::{Bf16, Buffer, CollectiveElem, Communicator, Device, Error, ReduceOp, UniqueId};
use std::time::Duration;

fn values<T: CollectiveElem>(n: usize, from: fn(f32) -> T) -> Vec<T> {
    (0..n).map(|i| from(i as f32 * 0.75 - 3.0)).collect()
}

fn every_collective_round_trips<T: CollectiveElem + PartialEq + std::fmt::Debug>(
    from: fn(f32) -> T,
) {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let comm = Communicator::single(&device).unwrap();
    let host = values(12, from);

    for op in [ReduceOp::Sum, ReduceOp::Average] {
        let mut buf = Buffer::from_host(&stream, &host).unwrap();
        comm.all_reduce(&stream, &mut buf, op).unwrap();
        assert_eq!(buf.to_host(&stream).unwrap(), host, "all_reduce {op:?}");
        comm.all_reduce_range(&stream, &mut buf, 3..9, op).unwrap();
        assert_eq!(
            buf.to_host(&stream).unwrap(),
            host,
            "all_reduce_range {op:?}"
        );

        let send = Buffer::from_host(&stream, &host).unwrap();
        let mut recv = Buffer::from_host(&stream, &[from(9.0); 12]).unwrap();
        comm.reduce_scatter(&stream, &send, &mut recv, op).unwrap();
        assert_eq!(
            recv.to_host(&stream).unwrap(),
            host,
            "reduce_scatter {op:?}"
        );
    }

    let send = Buffer::from_host(&stream, &host).unwrap();
    let mut recv = Buffer::from_host(&stream, &[from(9.0); 12]).unwrap();
    comm.all_gather(&stream, &send, &mut recv).unwrap();
    assert_eq!(recv.to_host(&stream).unwrap(), host, "all_gather");

    let mut buf = Buffer::from_host(&stream, &host).unwrap();
    comm.broadcast(&stream, &mut buf, 0).unwrap();
    assert_eq!(buf.to_host(&stream).unwrap(), host, "broadcast");
    comm.wait(&stream, Duration::from_secs(1)).unwrap();
}

#[test]
fn every_collective_on_one_rank_is_an_identity_for_f32() {
    every_collective_round_trips(|x| x);
}

#[test]
fn every_collective_on_one_rank_is_an_identity_for_bf16() {
    every_collective_round_trips(Bf16::from_f32);
}

#[test]
fn shape_errors_are_typed_and_write_nothing() {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let comm = Communicator::single(&device).unwrap();
    let send = Buffer::from_host(&stream, &[1.0f32, 2.0, 3.0]).unwrap();
    let mut recv = Buffer::from_host(&stream, &[7.0f32, 7.0]).unwrap();

    let err = comm
        .reduce_scatter(&stream, &send, &mut recv, ReduceOp::Sum)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::CollectiveLength {
                op: "reduce_scatter",
                buffer: "send",
                world: 1,
                expected: 2,
                got: 3
            }
        ),
        "{err}"
    );
    let err = comm.all_gather(&stream, &send, &mut recv).unwrap_err();
    assert!(
        matches!(
            err,
            Error::CollectiveLength {
                op: "all_gather",
                buffer: "recv",
                expected: 3,
                got: 2,
                ..
            }
        ),
        "{err}"
    );
    let err = comm
        .all_reduce_range(&stream, &mut recv, 1..3, ReduceOp::Sum)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::SliceRange {
                start: 1,
                end: 3,
                len: 2
            }
        ),
        "{err}"
    );
    let err = comm.broadcast(&stream, &mut recv, 1).unwrap_err();
    assert!(
        matches!(err, Error::CollectiveRank { rank: 1, world: 1 }),
        "{err}"
    );
    assert_eq!(recv.to_host(&stream).unwrap(), vec![7.0, 7.0]);
}

#[test]
fn buffers_and_streams_of_another_device_are_refused() {
    let device = mock_device();
    let other = mock_device();
    let comm = Communicator::single(&device).unwrap();
    let foreign_stream = other.stream().unwrap();
    let mut foreign = Buffer::from_host(&foreign_stream, &[1.0f32]).unwrap();
    let err = comm
        .all_reduce(&foreign_stream, &mut foreign, ReduceOp::Sum)
        .unwrap_err();
    assert!(matches!(err, Error::DeviceMismatch { .. }), "{err}");
    let stream = device.stream().unwrap();
    let err = comm
        .all_reduce(&stream, &mut foreign, ReduceOp::Sum)
        .unwrap_err();
    assert!(matches!(err, Error::DeviceMismatch { .. }), "{err}");
}

#[test]
fn all_reduce_is_legal_inside_capture_and_the_graph_keeps_its_buffer() {
    let device = mock_device();
    let stream = device.stream().unwrap();
    let comm = Communicator::single(&device).unwrap();
    let mut grads = Buffer::from_host(&stream, &[0.5f32, -1.0]).unwrap();
    let graph = stream
        .capture(|s| {
            comm.all_reduce_range(s, &mut grads, 0..1, ReduceOp::Average)?;
            comm.all_reduce_range(s, &mut grads, 1..2, ReduceOp::Average)
        })
        .unwrap();
    graph.replay().unwrap();
    assert_eq!(grads.to_host(&stream).unwrap(), vec![0.5, -1.0]);
    // Copies are refused in capture on the emulator, and say so.
    let send = Buffer::from_host(&stream, &[1.0f32]).unwrap();
    let mut recv = Buffer::<f32>::zeros(&stream, 1).unwrap();
    let Err(err) = stream.capture(|s| comm.all_gather(s, &send, &mut recv)) else {
        panic!("all_gather on the emulator must be refused inside capture");
    };
    assert!(
        matches!(err, Error::NotAllowedDuringCapture { .. }),
        "{err}"
    );
}

#[test]
fn emulator_communicators_have_one_rank() {
    let device = Device::emulator();
    let id = UniqueId::from_hex(&"5a".repeat(128)).unwrap();
    assert!(matches!(
        Communicator::join(&device, 0, 2, &id),
        Err(Error::EmulatorWorld { world: 2 })
    ));
    assert!(matches!(
        Communicator::per_device(&[device.clone(), device.clone()]),
        Err(Error::EmulatorWorld { world: 2 })
    ));
    assert!(matches!(
        Communicator::per_device(&[]),
        Err(Error::CollectiveRank { world: 0, .. })
    ));
}

#[test]
fn a_missing_nccl_library_says_how_to_install_it() {
    let names = vec!["libnccl.so".to_string(), "libnccl.so.2".to_string()];
    let err = probe_result(false, &names).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::NcclMissing { .. }));
    assert!(text.contains("libnccl.so, libnccl.so.2"), "{text}");
    assert!(text.contains("pip install nvidia-nccl-cu12"), "{text}");
    assert!(text.contains("LD_LIBRARY_PATH"), "{text}");
    assert!(probe_result(true, &names).is_ok());
    // The real probe never panics: it answers either way.
    match crate::nccl_available() {
        Ok(()) => {}
        Err(e) => assert!(matches!(e, Error::NcclMissing { .. }), "{e}"),
    }
}

#[test]
fn unique_ids_round_trip_through_text_and_reject_garbage() {
    let text: String = (0..128).map(|i| format!("{:02x}", (i * 7) % 256)).collect();
    let id = UniqueId::from_hex(&text).unwrap();
    assert_eq!(id.to_hex(), text);
    assert_eq!(UniqueId::from_hex(&format!(" {text}\n")).unwrap(), id);
    assert!(matches!(
        UniqueId::from_hex(&text[..254]),
        Err(Error::InvalidUniqueId { .. })
    ));
    let bad = format!("zz{}", &text[2..]);
    assert!(matches!(
        UniqueId::from_hex(&bad),
        Err(Error::InvalidUniqueId { .. })
    ));
}
