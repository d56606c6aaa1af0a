//! `mbarrier` objects: arrival counts, transaction bytes and phases, kept in the barrier's 8
//! bytes of shared memory.

use super::context::{le, Ctx};
use super::thread::{Fault, Thread};
use crate::error::Access;
use crate::program::Space;

/// An mbarrier object as the emulator lays out its 8 bytes: pending arrivals (bits 0..21),
/// expected arrivals (21..42), outstanding transaction bytes (42..63, two's complement) and the
/// current phase's parity (bit 63).
#[derive(Debug, Clone, Copy)]
struct Mbar {
    pending: u32,
    expected: u32,
    tx: i32,
    phase: bool,
}

const MASK21: u64 = (1 << 21) - 1;

impl Mbar {
    fn from_bits(v: u64) -> Mbar {
        let tx = ((v >> 42) & MASK21) as i32;
        Mbar {
            pending: (v & MASK21) as u32,
            expected: ((v >> 21) & MASK21) as u32,
            tx: (tx << 11) >> 11,
            phase: v >> 63 == 1,
        }
    }
    fn bits(self) -> u64 {
        (self.pending as u64 & MASK21)
            | (self.expected as u64 & MASK21) << 21
            | (self.tx as u32 as u64 & MASK21) << 42
            | (self.phase as u64) << 63
    }
    /// Arrives `count` times; returns the token of the phase arrived at.
    fn arrive(&mut self, count: u32) -> u64 {
        let token = (self.phase as u64) << 63;
        self.pending = self.pending.saturating_sub(count);
        self.settle();
        token
    }
    /// Completes the phase once every arrival and transaction byte is in.
    fn settle(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase = !self.phase;
            self.pending = self.expected;
        }
    }
}

/// Executes one mbarrier operation; `Ok(None)` is a wait whose phase has not completed.
/// A fault's pc is `u32::MAX` when it belongs to this instruction.
pub(crate) fn mbarrier(
    ctx: &mut Ctx<'_>,
    th: &mut Thread,
    t: usize,
    op: crate::program::MbarOp,
    space: Space,
    addr: u64,
    b: u64,
) -> Result<Option<u64>, Fault> {
    use crate::program::MbarOp;
    let here = |kind| Fault { kind, pc: u32::MAX };
    if let MbarOp::Init = op {
        let state = Mbar {
            pending: b as u32,
            expected: b as u32,
            tx: 0,
            phase: false,
        };
        ctx.write(space, addr, &state.bits().to_le_bytes(), t)
            .map_err(here)?;
        return Ok(Some(0));
    }
    if let MbarOp::CpAsyncArrive { .. } = op {
        ctx.complete_copies(th, t, u32::MAX)?;
    }
    let bytes = ctx.read(space, addr, 8, t, Access::Atomic).map_err(here)?;
    let mut state = Mbar::from_bits(le(&bytes[..8]));
    let phase_before = state.phase;
    let result = match op {
        MbarOp::Init | MbarOp::Inval => return Ok(Some(0)),
        MbarOp::Wait { parity } => {
            let waited = if parity { b & 1 == 1 } else { b >> 63 == 1 };
            return Ok((state.phase != waited).then_some(1));
        }
        MbarOp::Arrive { drop } => {
            if drop {
                state.expected = state.expected.saturating_sub(b as u32);
            }
            state.arrive(b as u32)
        }
        MbarOp::ArriveExpectTx => {
            state.tx = state.tx.wrapping_add(b as i32);
            state.arrive(1)
        }
        MbarOp::ExpectTx => {
            state.tx = state.tx.wrapping_add(b as i32);
            0
        }
        MbarOp::CompleteTx => {
            state.tx = state.tx.wrapping_sub(b as i32);
            state.settle();
            0
        }
        MbarOp::CpAsyncArrive { noinc } => {
            // Without `.noinc` the pending count is raised before the arrival: no net change.
            if noinc {
                state.arrive(1);
            }
            0
        }
    };
    if state.phase != phase_before {
        // A completed phase orders the arrivals before it with the waits after it.
        ctx.shared.epoch += 1;
    }
    ctx.write_as(space, addr, &state.bits().to_le_bytes(), t, Access::Atomic)
        .map_err(here)?;
    Ok(Some(result))
}
