//! A host-side meeting point for the ranks of one process (one thread per GPU).
//!
//! In one process, freeing or allocating device memory, loading a module or instantiating a
//! graph on one GPU can wait for the work of its peer GPUs, and an NCCL kernel that is waiting
//! for that very thread's rank never finishes: the two deadlock. Ranks therefore finish every
//! such call, meet here, and only then queue their first collective.

use crate::error::{Error, Result};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The ranks of one `Communicator::per_device` group.
pub(crate) struct Rendezvous {
    world: usize,
    state: Mutex<State>,
    arrived: Condvar,
}

struct State {
    /// Ranks waiting in the current round.
    waiting: usize,
    /// Rounds completed; a rank leaves when this moves past the round it joined.
    round: u64,
    /// A rank gave up waiting: the group is broken and every later meeting fails at once.
    broken: bool,
}

impl Rendezvous {
    pub fn new(world: usize) -> Rendezvous {
        Rendezvous {
            world,
            state: Mutex::new(State {
                waiting: 0,
                round: 0,
                broken: false,
            }),
            arrived: Condvar::new(),
        }
    }

    /// Blocks until all `world` ranks have called this, or fails after `timeout` (and breaks
    /// the group, so the peers fail too instead of waiting for a rank that left).
    pub fn meet(&self, timeout: Duration) -> Result<()> {
        let timed_out = || Error::CollectiveTimeout {
            op: "rendezvous",
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        };
        let deadline = Instant::now() + timeout;
        // A poisoned lock means a rank panicked while holding it: treat the group as broken.
        let mut state = self.state.lock().map_err(|_| timed_out())?;
        if state.broken {
            return Err(timed_out());
        }
        let round = state.round;
        state.waiting += 1;
        if state.waiting == self.world {
            state.waiting = 0;
            state.round += 1;
            self.arrived.notify_all();
            return Ok(());
        }
        while state.round == round && !state.broken {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                state.broken = true;
                self.arrived.notify_all();
                return Err(timed_out());
            }
            state = self
                .arrived
                .wait_timeout(state, left)
                .map_err(|_| timed_out())?
                .0;
        }
        if state.round == round {
            return Err(timed_out());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Rendezvous;
    use crate::error::Error;
    use std::time::Duration;

    #[test]
    fn every_rank_leaves_once_all_have_arrived_and_rounds_repeat() {
        let group = Rendezvous::new(3);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..4 {
                        group.meet(Duration::from_secs(10)).unwrap();
                    }
                });
            }
        });
    }

    #[test]
    fn a_missing_rank_is_a_timeout_for_the_waiter_and_breaks_the_group() {
        let group = Rendezvous::new(2);
        let err = group.meet(Duration::from_millis(20)).unwrap_err();
        assert!(matches!(
            err,
            Error::CollectiveTimeout {
                op: "rendezvous",
                ..
            }
        ));
        // The late peer fails at once rather than waiting for the rank that gave up.
        assert!(group.meet(Duration::from_secs(10)).is_err());
    }
}
