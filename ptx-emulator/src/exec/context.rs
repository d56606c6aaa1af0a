//! What a running thread can reach, and memory access through it: bounds, alignment, generic
//! addressing, the shared-memory written-bytes record, local memory.

use super::spaces::{resolve_generic, to_generic, SharedMem};
use super::thread::FaultKind;
use crate::error::Access;
use crate::memory::GlobalMemory;
use crate::program::{Elem, Kernel, MemRef, Space};

/// What a running thread can reach.
pub(crate) struct Ctx<'a> {
    pub kernel: &'a Kernel,
    pub global: &'a mut GlobalMemory,
    pub shared: &'a mut SharedMem,
    /// Every thread's local memory, `kernel.local_bytes` each.
    pub local: &'a mut [u8],
    pub params: &'a [u8],
    /// Instructions the launch may run in all, and those its threads have run so far (not
    /// counting the run in progress).
    pub budget: u64,
    pub spent: u64,
    pub check_shared_init: bool,
    /// Counts events other threads can observe (stores, atomics, exits, collectives), so a
    /// round of spin-waits with no progress is recognised as a deadlock.
    pub progress: u64,
    pub block_threads: u32,
    /// The CTA's thread-block cluster: its rank, the other resident CTAs' shared memory and
    /// the cluster barrier.
    pub cluster: ClusterView<'a>,
}

/// A `.shared::cluster` address is this form: the CTA-local offset in the low 24 bits, and
/// in the bits above, 1 + the rank of the CTA whose memory it names (0: this CTA's own, as a
/// `.shared::cta` address is also a valid `.shared::cluster` one).
pub(crate) const CLUSTER_OFFSET: u64 = (1 << 24) - 1;

/// The high bits [`CLUSTER_OFFSET`] leaves for `rank`.
pub(crate) fn cluster_base(rank: u32) -> u64 {
    (rank as u64 + 1) << 24
}

/// What a CTA sees of its cluster.
pub(crate) struct ClusterView<'a> {
    pub rank: u32,
    /// CTAs in the cluster.
    pub size: u32,
    /// The shared memory of the cluster's other resident CTAs, by rank (one that has exited
    /// is absent).
    pub peers: Vec<(u32, &'a mut SharedMem)>,
    pub barrier: &'a mut ClusterBarrier,
}

/// The cluster-wide barrier (`barrier.cluster`): arrivals in the current phase, phases
/// completed, the threads of the whole cluster, and those that have exited (a phase waits
/// for every thread that has not).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClusterBarrier {
    pub arrived: u32,
    pub completed: u64,
    pub threads: u32,
    pub exited: u32,
}

/// Little-endian value of 1, 2, 4 or 8 bytes (fixed-size reads: no `memcpy` call).
#[inline]
pub(crate) fn le(bytes: &[u8]) -> u64 {
    match *bytes {
        [a] => a as u64,
        [a, b] => u16::from_le_bytes([a, b]) as u64,
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]) as u64,
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => {
            let mut v = [0u8; 8];
            let n = bytes.len().min(8);
            v[..n].copy_from_slice(&bytes[..n]);
            u64::from_le_bytes(v)
        }
    }
}

/// Stores the low `out.len()` bytes of `v` little-endian.
#[inline]
pub(crate) fn put_le(out: &mut [u8], v: u64) {
    match out.len() {
        1 => out[0] = v as u8,
        2 => out.copy_from_slice(&(v as u16).to_le_bytes()),
        4 => out.copy_from_slice(&(v as u32).to_le_bytes()),
        8 => out.copy_from_slice(&v.to_le_bytes()),
        n => out.copy_from_slice(&v.to_le_bytes()[..n.min(8)]),
    }
}

#[inline]
pub(crate) fn extend(v: u64, elem: Elem) -> u64 {
    if !elem.signed {
        return v;
    }
    match elem.bytes {
        1 => v as i8 as i64 as u64,
        2 => v as i16 as i64 as u64,
        4 => v as i32 as i64 as u64,
        _ => v,
    }
}

#[inline]
pub(crate) fn effective(regs: &[u64], at: &MemRef) -> u64 {
    regs[at.base as usize].wrapping_add(at.offset as u64)
}

impl Ctx<'_> {
    /// The bytes an access touches, checked for bounds and alignment; shared-memory reads are
    /// checked for having been written, and shared-memory writes are recorded.
    #[inline]
    pub(crate) fn bytes(
        &mut self,
        space: Space,
        addr: u64,
        size: u32,
        thread: usize,
        access: Access,
    ) -> Result<&mut [u8], FaultKind> {
        let oob = FaultKind::OutOfBounds {
            space,
            access,
            addr,
            size,
        };
        match space {
            Space::Global | Space::Generic => self.global.bytes_mut(addr, size as u64).ok_or(oob),
            Space::Shared if addr > CLUSTER_OFFSET => {
                let rank = (addr >> 24) as u32 - 1;
                let offset = addr & CLUSTER_OFFSET;
                if rank == self.cluster.rank {
                    return self.bytes(space, offset, size, thread, access);
                }
                self.remote_bytes(rank, offset, size, access)
            }
            Space::Shared => {
                let start = addr as usize;
                let end = start.saturating_add(size as usize);
                if end > self.shared.bytes.len() {
                    return Err(oob);
                }
                let written = &mut self.shared.written[start..end];
                match access {
                    Access::Store => written.fill(true),
                    Access::Load | Access::Atomic => {
                        let unwritten = if self.check_shared_init {
                            written.iter().position(|w| !w)
                        } else {
                            None
                        };
                        if let Some(i) = unwritten {
                            return Err(FaultKind::Uninitialized {
                                addr: addr + i as u64,
                            });
                        }
                        if access == Access::Atomic {
                            written.fill(true);
                        }
                    }
                }
                if access != Access::Atomic {
                    if let Some((byte, other)) =
                        self.shared
                            .race(start, end, thread, access == Access::Store)
                    {
                        return Err(FaultKind::SharedRace {
                            addr: byte,
                            other,
                            store: access == Access::Store,
                        });
                    }
                }
                Ok(&mut self.shared.bytes[start..end])
            }
            Space::Local => {
                let per = self.kernel.local_bytes as usize;
                let start = addr as usize;
                if start.saturating_add(size as usize) > per {
                    return Err(oob);
                }
                let base = thread * per + start;
                Ok(&mut self.local[base..base + size as usize])
            }
            Space::Const | Space::Param => Err(oob),
        }
    }

    /// The bytes of another CTA of the cluster, checked for bounds and (reads) for having been
    /// written. The race check covers one CTA's threads, so it leaves these alone.
    fn remote_bytes(
        &mut self,
        rank: u32,
        offset: u64,
        size: u32,
        access: Access,
    ) -> Result<&mut [u8], FaultKind> {
        let cluster_size = self.cluster.size;
        if rank >= cluster_size {
            return Err(FaultKind::Cluster(format!(
                "the shared::cluster address {:#x} names rank {rank}, but the cluster holds {cluster_size} CTAs",
                offset | cluster_base(rank)
            )));
        }
        let check_init = self.check_shared_init;
        let Some((_, mem)) = self.cluster.peers.iter_mut().find(|(r, _)| *r == rank) else {
            return Err(FaultKind::Cluster(format!(
                "CTA {rank} of the cluster has exited, and its shared memory with it"
            )));
        };
        let start = offset as usize;
        let end = start.saturating_add(size as usize);
        if end > mem.bytes.len() {
            return Err(FaultKind::OutOfBounds {
                space: Space::Shared,
                access,
                addr: offset | cluster_base(rank),
                size,
            });
        }
        let written = &mut mem.written[start..end];
        if access != Access::Store && check_init {
            if let Some(i) = written.iter().position(|w| !w) {
                return Err(FaultKind::Uninitialized {
                    addr: (offset + i as u64) | cluster_base(rank),
                });
            }
        }
        if access != Access::Load {
            written.fill(true);
        }
        Ok(&mut mem.bytes[start..end])
    }

    /// Completes the cluster barrier's phase once every thread of the cluster that has not
    /// exited has arrived.
    pub(crate) fn cluster_settle(&mut self) {
        let bar = &mut *self.cluster.barrier;
        if bar.arrived == 0 || bar.arrived + bar.exited < bar.threads {
            return;
        }
        bar.arrived = 0;
        bar.completed += 1;
        // Release/acquire across the cluster: stores before the barrier are ordered before
        // loads after it in every CTA, a new epoch to the race check.
        self.shared.epoch += 1;
        for (_, peer) in self.cluster.peers.iter_mut() {
            peer.epoch += 1;
        }
    }

    /// A thread of this CTA has exited: later cluster-barrier phases no longer wait for it.
    pub(crate) fn cluster_exit(&mut self) {
        self.cluster.barrier.exited += 1;
        self.cluster_settle();
    }

    /// Resolves generic addresses and checks alignment.
    #[inline]
    fn place(
        &self,
        space: Space,
        addr: u64,
        size: u32,
        access: Access,
    ) -> Result<(Space, u64), FaultKind> {
        let (space, addr) = match space {
            Space::Generic => resolve_generic(addr),
            Space::Shared | Space::Local => (space, addr & 0xffff_ffff),
            _ => (space, addr),
        };
        if addr & (size as u64 - 1) != 0 {
            return Err(FaultKind::Misaligned {
                access,
                addr: to_generic(space, addr),
                size,
            });
        }
        Ok((space, addr))
    }

    /// Reads `size` (at most 16) bytes.
    #[inline]
    pub(crate) fn read(
        &mut self,
        space: Space,
        addr: u64,
        size: u32,
        thread: usize,
        access: Access,
    ) -> Result<[u8; 16], FaultKind> {
        let (space, addr) = self.place(space, addr, size, access)?;
        let mut out = [0u8; 16];
        if matches!(space, Space::Const | Space::Param) {
            let start = addr as usize;
            let data = if space == Space::Const {
                &self.kernel.const_data[..]
            } else {
                self.params
            };
            let src = data.get(start..start.saturating_add(size as usize)).ok_or(
                FaultKind::OutOfBounds {
                    space,
                    access,
                    addr,
                    size,
                },
            )?;
            out[..size as usize].copy_from_slice(src);
            return Ok(out);
        }
        let src = self.bytes(space, addr, size, thread, access)?;
        out[..size as usize].copy_from_slice(src);
        Ok(out)
    }

    #[inline]
    pub(crate) fn write(
        &mut self,
        space: Space,
        addr: u64,
        data: &[u8],
        thread: usize,
    ) -> Result<(), FaultKind> {
        self.write_as(space, addr, data, thread, Access::Store)
    }

    /// A store as part of `access`: atomics and mbarrier updates pass `Access::Atomic`, which
    /// the race check leaves alone.
    pub(crate) fn write_as(
        &mut self,
        space: Space,
        addr: u64,
        data: &[u8],
        thread: usize,
        access: Access,
    ) -> Result<(), FaultKind> {
        self.progress += 1;
        let (space, addr) = self.place(space, addr, data.len() as u32, access)?;
        self.bytes(space, addr, data.len() as u32, thread, access)?
            .copy_from_slice(data);
        Ok(())
    }

    pub(crate) fn check_range(
        &mut self,
        space: Space,
        addr: u64,
        size: u32,
        thread: usize,
        access: Access,
    ) -> Result<(), FaultKind> {
        let (space, addr) = self.place(space, addr, size, access)?;
        if space == Space::Shared {
            if (addr as usize).saturating_add(size as usize) > self.shared.bytes.len() {
                return Err(FaultKind::OutOfBounds {
                    space,
                    access,
                    addr,
                    size,
                });
            }
            return Ok(());
        }
        self.bytes(space, addr, size, thread, Access::Load)
            .map(|_| ())
    }

    /// Copies (source, destination, length) ranges within thread `t`'s local memory.
    pub(crate) fn copy_local(&mut self, t: usize, copies: &[(u32, u32, u32)]) {
        let per = self.kernel.local_bytes as usize;
        let mine = &mut self.local[t * per..(t + 1) * per];
        for &(src, dst, len) in copies {
            mine.copy_within(src as usize..(src + len) as usize, dst as usize);
        }
    }
}
