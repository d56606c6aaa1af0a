//! `cp.async`: copies are recorded when issued and performed when a `wait_group`/`wait_all`
//! (or the thread's exit) completes their group, so a read of the destination before the wait
//! sees unwritten shared memory, as it could on a GPU.

use super::context::Ctx;
use super::thread::{Fault, Thread};
use crate::error::Access;
use crate::program::Space;

/// A `cp.async` issued but not yet complete.
#[derive(Debug, Clone)]
pub(crate) struct PendingCopy {
    pub dst: u64,
    pub src: u64,
    pub bytes: u32,
    pub src_bytes: u32,
    pub group: u32,
    pub pc: u32,
}

impl Ctx<'_> {
    pub(crate) fn complete_copies(
        &mut self,
        th: &mut Thread,
        t: usize,
        keep_groups: u32,
    ) -> Result<(), Fault> {
        if th.pending.is_empty() {
            return Ok(());
        }
        let limit = if keep_groups == u32::MAX {
            u32::MAX
        } else {
            th.group.saturating_sub(keep_groups)
        };
        let mut i = 0;
        while i < th.pending.len() {
            if th.pending[i].group >= limit && keep_groups != u32::MAX {
                i += 1;
                continue;
            }
            let copy = th.pending.remove(i);
            let fault = |kind| Fault { kind, pc: copy.pc };
            let mut data = [0u8; 16];
            if copy.src_bytes > 0 {
                let n = copy.src_bytes.min(copy.bytes);
                let (space, addr) = (Space::Global, copy.src);
                let src = self.bytes(space, addr, n, t, Access::Load).map_err(fault)?;
                data[..n as usize].copy_from_slice(src);
            }
            self.write(Space::Shared, copy.dst, &data[..copy.bytes as usize], t)
                .map_err(fault)?;
        }
        Ok(())
    }
}
