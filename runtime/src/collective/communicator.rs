//! [`Communicator`]: one rank of a group of devices that reduce, scatter, gather and
//! broadcast buffers together, each call queued on one of our [`Stream`]s.

use super::elem::CollectiveElem;
use super::library::nccl_available;
use super::nccl_comm::{Call, NcclComm};
use super::reduce_op::ReduceOp;
use super::rendezvous::Rendezvous;
use super::shape;
use super::unique_id::UniqueId;
use super::wait;
use crate::buffer::Buffer;
use crate::device::{Backend, Device};
use crate::error::{Error, Result};
use crate::stream::Stream;
use std::ffi::c_void;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// One rank of a communicator: NCCL on CUDA devices; on the emulator, a communicator of one
/// rank whose collectives are identities and copies (so the code path runs without a GPU).
///
/// Every collective checks its operands first (typed errors, nothing queued), then queues on
/// `stream` like a launch, so it is legal inside [`Stream::capture`]: a captured step can hold
/// its own all-reduce. On the emulator, reduce-scatter and all-gather are copies and so, like
/// every copy, are refused inside capture.
///
/// ```
/// use kernel_runtime::{Buffer, Communicator, Device, ReduceOp};
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let device = Device::emulator();
/// let stream = device.stream()?;
/// let comm = Communicator::single(&device)?;
/// let mut grads = Buffer::from_host(&stream, &[1.0f32, 2.0, 3.0])?;
/// comm.all_reduce(&stream, &mut grads, ReduceOp::Average)?;
/// assert_eq!(grads.to_host(&stream)?, vec![1.0, 2.0, 3.0]); // the mean over one rank
/// # Ok(()) }
/// ```
pub struct Communicator {
    device: Device,
    rank: usize,
    world: usize,
    backend: CommBackend,
    /// The host meeting point shared by the ranks of one [`Communicator::per_device`] group.
    group: Option<Arc<Rendezvous>>,
}

enum CommBackend {
    /// A single emulator rank.
    Identity,
    /// Shared with every graph that captured one of its collectives.
    Nccl(Arc<NcclComm>),
}

impl Communicator {
    /// A communicator of one rank on `device`.
    ///
    /// ```
    /// let comm = kernel_runtime::Communicator::single(&kernel_runtime::Device::emulator()).unwrap();
    /// assert_eq!((comm.rank(), comm.world()), (0, 1));
    /// ```
    pub fn single(device: &Device) -> Result<Communicator> {
        match &device.inner.backend {
            Backend::Emulator { .. } => Ok(Communicator::identity(device)),
            Backend::Cuda { .. } => Communicator::join(device, 0, 1, &UniqueId::new()?),
        }
    }

    /// Joins the communicator of `world` ranks named by `id` as `rank`, one process per GPU:
    /// rank 0 makes the id ([`UniqueId::new`]) and hands it to the others (an environment
    /// variable, [`UniqueId::from_env`], or a file). Blocks until every rank has joined.
    ///
    /// ```
    /// use kernel_runtime::{Communicator, Device, Error, UniqueId};
    /// let id = UniqueId::from_hex(&"00".repeat(128)).unwrap();
    /// let device = Device::emulator();
    /// assert!(Communicator::join(&device, 0, 1, &id).is_ok());
    /// assert!(matches!(Communicator::join(&device, 2, 2, &id), Err(Error::CollectiveRank { .. })));
    /// assert!(matches!(Communicator::join(&device, 0, 2, &id), Err(Error::EmulatorWorld { world: 2 })));
    /// ```
    pub fn join(device: &Device, rank: usize, world: usize, id: &UniqueId) -> Result<Communicator> {
        shape::rank_inside(rank, world)?;
        let world_i32 = i32::try_from(world).map_err(|_| Error::CollectiveRank { rank, world })?;
        match &device.inner.backend {
            Backend::Emulator { .. } if world == 1 => Ok(Communicator::identity(device)),
            Backend::Emulator { .. } => Err(Error::EmulatorWorld { world }),
            Backend::Cuda { ctx, .. } => {
                nccl_available()?;
                let comm = NcclComm::init_rank(ctx, world_i32 as usize, id.raw(), rank)?;
                Ok(Communicator {
                    device: device.clone(),
                    rank,
                    world,
                    backend: CommBackend::Nccl(Arc::new(comm)),
                    group: None,
                })
            }
        }
    }

    /// One communicator per device, rank `i` on `devices[i]`, for one thread per GPU in one
    /// process: move each into its own thread. Devices must all be CUDA devices, or a single
    /// emulator.
    ///
    /// In one process, allocating or freeing device memory, loading modules or instantiating a
    /// graph on one GPU can wait for its peers' work, and a collective waiting for that thread's
    /// rank then never finishes. So each rank makes every buffer and graph it needs first, then
    /// calls [`Communicator::rendezvous`], and only then queues collectives.
    ///
    /// ```
    /// let device = kernel_runtime::Device::emulator();
    /// let comms = kernel_runtime::Communicator::per_device(&[device]).unwrap();
    /// assert_eq!(comms.len(), 1);
    /// ```
    pub fn per_device(devices: &[Device]) -> Result<Vec<Communicator>> {
        let world = devices.len();
        if world == 0 {
            return Err(Error::CollectiveRank { rank: 0, world });
        }
        let mut ctxs = Vec::with_capacity(world);
        for device in devices {
            match &device.inner.backend {
                Backend::Cuda { ctx, .. } => ctxs.push(ctx.clone()),
                Backend::Emulator { .. } if world == 1 => {
                    return Ok(vec![Communicator::identity(device)])
                }
                Backend::Emulator { .. } => return Err(Error::EmulatorWorld { world }),
            }
        }
        nccl_available()?;
        let comms = NcclComm::init_all(&ctxs)?;
        let group = Arc::new(Rendezvous::new(world));
        Ok(devices
            .iter()
            .zip(comms)
            .enumerate()
            .map(|(rank, (device, comm))| Communicator {
                device: device.clone(),
                rank,
                world,
                backend: CommBackend::Nccl(Arc::new(comm)),
                group: Some(group.clone()),
            })
            .collect())
    }

    fn identity(device: &Device) -> Communicator {
        Communicator {
            device: device.clone(),
            rank: 0,
            world: 1,
            backend: CommBackend::Identity,
            group: None,
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks the communicator has.
    pub fn world(&self) -> usize {
        self.world
    }

    /// The device this rank runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Reduces `buf` over every rank, in place: each rank ends with the sum or the average.
    ///
    /// ```
    /// # use kernel_runtime::{Buffer, Communicator, Device, ReduceOp, Bf16};
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = Device::emulator();
    /// let stream = device.stream()?;
    /// let comm = Communicator::single(&device)?;
    /// let mut x = Buffer::from_host(&stream, &[Bf16::from_f32(1.5)])?;
    /// comm.all_reduce(&stream, &mut x, ReduceOp::Sum)?;
    /// assert_eq!(x.to_host(&stream)?[0].to_f32(), 1.5);
    /// # Ok(()) }
    /// ```
    pub fn all_reduce<T: CollectiveElem>(
        &self,
        stream: &Stream,
        buf: &mut Buffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        let len = buf.len();
        self.all_reduce_range(stream, buf, 0..len, op)
    }

    /// [`Communicator::all_reduce`] of the elements `range` of `buf` (one bucket of a flat
    /// gradient buffer).
    ///
    /// ```
    /// # use kernel_runtime::{Buffer, Communicator, Device, Error, ReduceOp};
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = Device::emulator();
    /// let stream = device.stream()?;
    /// let comm = Communicator::single(&device)?;
    /// let mut x = Buffer::from_host(&stream, &[1.0f32; 8])?;
    /// comm.all_reduce_range(&stream, &mut x, 2..6, ReduceOp::Sum)?;
    /// let err = comm.all_reduce_range(&stream, &mut x, 6..9, ReduceOp::Sum);
    /// assert!(matches!(err, Err(Error::SliceRange { .. })));
    /// # Ok(()) }
    /// ```
    pub fn all_reduce_range<T: CollectiveElem>(
        &self,
        stream: &Stream,
        buf: &mut Buffer<T>,
        range: Range<usize>,
        op: ReduceOp,
    ) -> Result<()> {
        self.check_stream(stream, "all_reduce")?;
        shape::range_inside(&range, buf.len())?;
        stream.note_collective(&[&buf.core], self.kept_alive())?;
        match &self.backend {
            // The sum and the average over one rank are the rank's own values.
            CommBackend::Identity => Ok(()),
            CommBackend::Nccl(comm) => {
                let at = address::<T>(buf, range.start);
                let _call = tracing::debug_span!(target: "ptxkit::collective", "all_reduce", rank = self.rank, count = range.len()).entered();
                comm.all_reduce(call::<T>(stream, at, at, range.len())?, op.nccl())?;
                tracing::debug!(target: "ptxkit::collective", "queued");
                Ok(())
            }
        }
    }

    /// Reduces `send` (`world` blocks of `recv.len()` elements) over every rank and leaves
    /// block `rank` of the result in `recv`.
    ///
    /// ```
    /// # use kernel_runtime::{Buffer, Communicator, Device, Error, ReduceOp};
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = Device::emulator();
    /// let stream = device.stream()?;
    /// let comm = Communicator::single(&device)?;
    /// let send = Buffer::from_host(&stream, &[1.0f32, 2.0])?;
    /// let mut recv = Buffer::<f32>::zeros(&stream, 2)?;
    /// comm.reduce_scatter(&stream, &send, &mut recv, ReduceOp::Sum)?;
    /// assert_eq!(recv.to_host(&stream)?, vec![1.0, 2.0]);
    /// # Ok(()) }
    /// ```
    pub fn reduce_scatter<T: CollectiveElem>(
        &self,
        stream: &Stream,
        send: &Buffer<T>,
        recv: &mut Buffer<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.check_stream(stream, "reduce_scatter")?;
        shape::scatter_lengths(self.world, send.len(), recv.len())?;
        match &self.backend {
            CommBackend::Identity => recv.copy_from(stream, send),
            CommBackend::Nccl(comm) => {
                stream.note_collective(&[&send.core, &recv.core], self.kept_alive())?;
                let c = call::<T>(stream, address(send, 0), address(recv, 0), recv.len())?;
                comm.reduce_scatter(c, op.nccl())
            }
        }
    }

    /// Gathers every rank's `send` into `recv`, rank `r`'s at block `r`.
    ///
    /// ```
    /// # use kernel_runtime::{Buffer, Communicator, Device, Error};
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = Device::emulator();
    /// let stream = device.stream()?;
    /// let comm = Communicator::single(&device)?;
    /// let send = Buffer::from_host(&stream, &[4.0f32])?;
    /// let mut recv = Buffer::<f32>::zeros(&stream, 2)?;
    /// let err = comm.all_gather(&stream, &send, &mut recv);
    /// assert!(matches!(err, Err(Error::CollectiveLength { expected: 1, got: 2, .. })));
    /// # Ok(()) }
    /// ```
    pub fn all_gather<T: CollectiveElem>(
        &self,
        stream: &Stream,
        send: &Buffer<T>,
        recv: &mut Buffer<T>,
    ) -> Result<()> {
        self.check_stream(stream, "all_gather")?;
        shape::gather_lengths(self.world, send.len(), recv.len())?;
        match &self.backend {
            CommBackend::Identity => recv.copy_from(stream, send),
            CommBackend::Nccl(comm) => {
                stream.note_collective(&[&send.core, &recv.core], self.kept_alive())?;
                let c = call::<T>(stream, address(send, 0), address(recv, 0), send.len())?;
                comm.all_gather(c)
            }
        }
    }

    /// Copies `root`'s `buf` into every other rank's `buf`, in place.
    ///
    /// ```
    /// # use kernel_runtime::{Buffer, Communicator, Device, Error};
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = Device::emulator();
    /// let stream = device.stream()?;
    /// let comm = Communicator::single(&device)?;
    /// let mut w = Buffer::from_host(&stream, &[0.5f32])?;
    /// comm.broadcast(&stream, &mut w, 0)?;
    /// assert!(matches!(comm.broadcast(&stream, &mut w, 1), Err(Error::CollectiveRank { rank: 1, .. })));
    /// # Ok(()) }
    /// ```
    pub fn broadcast<T: CollectiveElem>(
        &self,
        stream: &Stream,
        buf: &mut Buffer<T>,
        root: usize,
    ) -> Result<()> {
        self.check_stream(stream, "broadcast")?;
        shape::rank_inside(root, self.world)?;
        stream.note_collective(&[&buf.core], self.kept_alive())?;
        match &self.backend {
            CommBackend::Identity => Ok(()),
            CommBackend::Nccl(comm) => {
                let at = address::<T>(buf, 0);
                comm.broadcast(call::<T>(stream, at, at, buf.len())?, root)
            }
        }
    }

    /// Waits until `stream` is idle, at most `timeout`: where a peer died or hung, or NCCL
    /// reports an error, the communicator is aborted and the error returned, never a hang.
    ///
    /// ```
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let device = kernel_runtime::Device::emulator();
    /// let comm = kernel_runtime::Communicator::single(&device)?;
    /// comm.wait(&device.stream()?, std::time::Duration::from_secs(1))?;
    /// # Ok(()) }
    /// ```
    pub fn wait(&self, stream: &Stream, timeout: Duration) -> Result<()> {
        self.check_stream(stream, "wait")?;
        match &self.backend {
            CommBackend::Identity => stream.synchronize(),
            CommBackend::Nccl(comm) => wait::until_idle(comm, stream, timeout),
        }
    }

    /// Blocks until every rank of this process's [`Communicator::per_device`] group has called
    /// it, at most `timeout` (then the group is broken and every rank's call fails, rather than
    /// waiting for a rank that died). Call it after making every buffer and graph and before the
    /// first collective. Ranks in their own processes ([`Communicator::join`]) and single ranks
    /// return at once.
    ///
    /// ```
    /// let comm = kernel_runtime::Communicator::single(&kernel_runtime::Device::emulator()).unwrap();
    /// comm.rendezvous(std::time::Duration::from_secs(1)).unwrap();
    /// ```
    pub fn rendezvous(&self, timeout: Duration) -> Result<()> {
        match &self.group {
            Some(group) => group.meet(timeout),
            None => Ok(()),
        }
    }

    /// Aborts the communicator (its running collectives stop; later calls are
    /// [`Error::CommunicatorAborted`]). Nothing to do on the emulator.
    ///
    /// ```
    /// kernel_runtime::Communicator::single(&kernel_runtime::Device::emulator()).unwrap().abort();
    /// ```
    pub fn abort(&self) {
        if let CommBackend::Nccl(comm) = &self.backend {
            comm.abort();
        }
    }

    /// What a graph capturing one of this communicator's collectives must keep alive.
    fn kept_alive(&self) -> Option<crate::graph::KeptAlive> {
        match &self.backend {
            CommBackend::Identity => None,
            CommBackend::Nccl(comm) => Some(Arc::clone(comm) as crate::graph::KeptAlive),
        }
    }

    fn check_stream(&self, stream: &Stream, op: &'static str) -> Result<()> {
        if stream.device().inner.id != self.device.inner.id {
            return Err(Error::DeviceMismatch { op });
        }
        Ok(())
    }
}

/// The device address of element `at` of `buf`.
fn address<T: CollectiveElem>(buf: &Buffer<T>, at: usize) -> *mut c_void {
    (buf.core.addr + (at * std::mem::size_of::<T>()) as u64) as *mut c_void
}

fn call<T: CollectiveElem>(
    stream: &Stream,
    send: *mut c_void,
    recv: *mut c_void,
    count: usize,
) -> Result<Call> {
    let cuda = stream
        .cuda
        .as_ref()
        .ok_or(Error::DeviceMismatch { op: "collective" })?;
    Ok(Call {
        send,
        recv,
        count,
        dtype: T::nccl_type(),
        stream: cuda.cu_stream() as _,
    })
}
