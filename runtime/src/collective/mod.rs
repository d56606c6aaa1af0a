//! Collectives over several devices through NCCL (cudarc's bindings, loaded at run time):
//! [`Communicator`] with all-reduce, reduce-scatter, all-gather and broadcast on
//! `Buffer<f32>` and `Buffer<Bf16>`, queued on our streams and legal inside graph capture.
//!
//! The files: `library.rs` (finding libnccl, a typed error where it is missing),
//! `unique_id.rs` (the rendezvous id and how it travels), `elem.rs` and `reduce_op.rs` (what
//! may be reduced, and how), `shape.rs` (operand checks), `nccl_comm.rs` (the FFI),
//! `wait.rs` (waiting with a deadline), `rendezvous.rs` (the host meeting point of one
//! process's ranks), `communicator.rs` (the public type).

mod communicator;
mod elem;
mod library;
mod nccl_comm;
mod reduce_op;
mod rendezvous;
mod shape;
mod unique_id;
mod wait;

pub use communicator::Communicator;
pub use elem::CollectiveElem;
pub use library::nccl_available;
pub use reduce_op::ReduceOp;
pub use unique_id::{UniqueId, NCCL_ID_ENV};

#[cfg(test)]
pub(crate) use library::probe_result;
