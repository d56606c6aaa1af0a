//! Generic addressing windows and the CTA's shared memory with its written-bytes shadow.

use crate::program::Space;

/// Generic addresses in `[SHARED_WINDOW, SHARED_WINDOW + 4 GiB)` are shared memory.
pub(crate) const SHARED_WINDOW: u64 = 0x0000_0100_0000_0000;
/// Generic addresses in `[LOCAL_WINDOW, LOCAL_WINDOW + 4 GiB)` are the thread's local memory.
pub(crate) const LOCAL_WINDOW: u64 = 0x0000_0200_0000_0000;
/// Generic addresses in `[CONST_WINDOW, CONST_WINDOW + 4 GiB)` are module `.const` data.
pub(crate) const CONST_WINDOW: u64 = 0x0000_0300_0000_0000;
/// Generic addresses in `[PARAM_WINDOW, PARAM_WINDOW + 4 GiB)` are the kernel parameters.
pub(crate) const PARAM_WINDOW: u64 = 0x0000_0400_0000_0000;
const WINDOW_SIZE: u64 = 1 << 32;

/// The generic address of `addr` in `space`.
pub(crate) fn to_generic(space: Space, addr: u64) -> u64 {
    match space {
        Space::Shared => SHARED_WINDOW + (addr & 0xffff_ffff),
        Space::Local => LOCAL_WINDOW + (addr & 0xffff_ffff),
        Space::Const => CONST_WINDOW + (addr & 0xffff_ffff),
        Space::Param => PARAM_WINDOW + (addr & 0xffff_ffff),
        Space::Global | Space::Generic => addr,
    }
}

/// The address in `space` of the generic address `addr` (`cvta.to`).
pub(crate) fn from_generic(space: Space, addr: u64) -> u64 {
    match space {
        Space::Shared => addr.wrapping_sub(SHARED_WINDOW) & 0xffff_ffff,
        Space::Local => addr.wrapping_sub(LOCAL_WINDOW) & 0xffff_ffff,
        Space::Const => addr.wrapping_sub(CONST_WINDOW) & 0xffff_ffff,
        Space::Param => addr.wrapping_sub(PARAM_WINDOW) & 0xffff_ffff,
        Space::Global | Space::Generic => addr,
    }
}

/// Which space a generic address falls in, and its address there.
#[inline]
pub(crate) fn resolve_generic(addr: u64) -> (Space, u64) {
    if addr.wrapping_sub(SHARED_WINDOW) < WINDOW_SIZE {
        (Space::Shared, addr - SHARED_WINDOW)
    } else if addr.wrapping_sub(LOCAL_WINDOW) < WINDOW_SIZE {
        (Space::Local, addr - LOCAL_WINDOW)
    } else if addr.wrapping_sub(CONST_WINDOW) < WINDOW_SIZE {
        (Space::Const, addr - CONST_WINDOW)
    } else if addr.wrapping_sub(PARAM_WINDOW) < WINDOW_SIZE {
        (Space::Param, addr - PARAM_WINDOW)
    } else {
        (Space::Global, addr)
    }
}

/// One CTA's shared memory, with a byte-granular record of what was written in this launch so
/// a read of never-written shared memory is reported.
pub(crate) struct SharedMem {
    pub bytes: Vec<u8>,
    pub written: Vec<bool>,
    /// With the race check on: per byte, 1 + the thread that last stored it (0: none) and the
    /// barrier epoch of that store.
    pub last_writer: Vec<u32>,
    pub write_epoch: Vec<u32>,
    /// Incremented whenever threads synchronise (a barrier opens, an mbarrier phase completes).
    pub epoch: u32,
}

impl SharedMem {
    pub(crate) fn new(size: usize, race_check: bool) -> SharedMem {
        let shadow = if race_check { size } else { 0 };
        SharedMem {
            bytes: vec![0; size],
            written: vec![false; size],
            last_writer: vec![0; shadow],
            write_epoch: vec![0; shadow],
            epoch: 0,
        }
    }

    /// Forgets everything written (for the next CTA).
    pub(crate) fn reset(&mut self) {
        self.written.fill(false);
        self.last_writer.fill(0);
        self.epoch = 0;
        // Poison so a kernel relying on zeroed shared memory does not pass by accident.
        self.bytes.fill(0xcd);
    }
}

impl SharedMem {
    /// With the race check on, finds a read by `thread` of a byte in `start..end` that another
    /// warp stored since the last synchronisation. Stores only record their writer: two warps
    /// storing to one byte (often the same flag value) are left alone.
    pub(crate) fn race(
        &mut self,
        start: usize,
        end: usize,
        thread: usize,
        store: bool,
    ) -> Option<(u64, usize)> {
        if self.last_writer.is_empty() {
            return None;
        }
        if !store {
            for b in start..end {
                let w = self.last_writer[b];
                if w != 0
                    && (w as usize - 1) / 32 != thread / 32
                    && self.write_epoch[b] == self.epoch
                {
                    return Some((b as u64, w as usize - 1));
                }
            }
        }
        if store {
            self.last_writer[start..end].fill(thread as u32 + 1);
            self.write_epoch[start..end].fill(self.epoch);
        }
        None
    }
}
