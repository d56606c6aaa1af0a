//! Executing a decoded kernel over a grid: CTAs in linear block order, each with fresh shared
//! memory, per-thread registers and local memory. A CTA runs until it finishes or stalls (its
//! threads poll for something only another CTA can provide); a stalled CTA stays resident, with
//! its state, while later ones are admitted, and is retried once anything has progressed.

pub(crate) mod alu;
mod async_copy;
mod atomics;
mod context;
mod cta;
mod mbarrier;
pub(crate) mod mma;
mod report;
pub(crate) mod spaces;
mod tensor_copy;
mod tensor_store;
pub(crate) mod thread;
mod warp;
mod wgmma;

use crate::error::Error;
use crate::memory::GlobalMemory;
use crate::program::Kernel;
use crate::LaunchConfig;
use context::{ClusterBarrier, ClusterView, Ctx};
use ptx_parser::{Dim, SpecialReg, SpecialScalar, SpecialVector};
use spaces::SharedMem;
use thread::Thread;

fn component(v: [u32; 3], d: Dim) -> u64 {
    (match d {
        Dim::X => v[0],
        Dim::Y => v[1],
        Dim::Z => v[2],
    }) as u64
}

struct Geometry {
    tid: [u32; 3],
    block: [u32; 3],
    grid: [u32; 3],
    ctaid: [u32; 3],
    cluster: [u32; 3],
    linear: usize,
    threads: usize,
    dynamic_shared: u32,
    total_shared: u32,
}

fn special_value(reg: SpecialReg, g: &Geometry) -> u64 {
    let lane = (g.linear % 32) as u32;
    let lt = (1u64 << lane) - 1;
    let le = (2u64 << lane) - 1;
    match reg {
        SpecialReg::Vector(v, d) => match v {
            SpecialVector::Tid => component(g.tid, d),
            SpecialVector::Ntid => component(g.block, d),
            SpecialVector::Ctaid => component(g.ctaid, d),
            SpecialVector::Clusterid => component(div3(g.ctaid, g.cluster), d),
            SpecialVector::Nctaid => component(g.grid, d),
            SpecialVector::Nclusterid => component(div3(g.grid, g.cluster), d),
            SpecialVector::ClusterCtaid => component(rem3(g.ctaid, g.cluster), d),
            SpecialVector::ClusterNctaid => component(g.cluster, d),
        },
        SpecialReg::Scalar(s) => match s {
            SpecialScalar::Laneid => lane as u64,
            SpecialScalar::Warpid => (g.linear / 32) as u64,
            SpecialScalar::Nwarpid => g.threads.div_ceil(32) as u64,
            SpecialScalar::Smid | SpecialScalar::Gridid => 0,
            SpecialScalar::ClusterCtarank => linear3(rem3(g.ctaid, g.cluster), g.cluster),
            SpecialScalar::ClusterNctarank => volume(g.cluster),
            SpecialScalar::ClusterNclusterid => volume(div3(g.grid, g.cluster)),
            SpecialScalar::Nsmid => 1,
            SpecialScalar::LanemaskEq => 1u64 << lane,
            SpecialScalar::LanemaskLt => lt,
            SpecialScalar::LanemaskLe => le & 0xffff_ffff,
            SpecialScalar::LanemaskGe => !lt & 0xffff_ffff,
            SpecialScalar::LanemaskGt => !le & 0xffff_ffff,
            SpecialScalar::DynamicSmemSize => g.dynamic_shared as u64,
            SpecialScalar::TotalSmemSize | SpecialScalar::AggrSmemSize => g.total_shared as u64,
            SpecialScalar::IsExplicitCluster => (volume(g.cluster) > 1) as u64,
            // Clocks are read through `mov`, decoded to their own instruction.
            _ => 0,
        },
    }
}

fn div3(a: [u32; 3], b: [u32; 3]) -> [u32; 3] {
    [a[0] / b[0], a[1] / b[1], a[2] / b[2]]
}

fn rem3(a: [u32; 3], b: [u32; 3]) -> [u32; 3] {
    [a[0] % b[0], a[1] % b[1], a[2] % b[2]]
}

/// `v`'s index in a box of `shape`, x fastest.
fn linear3(v: [u32; 3], shape: [u32; 3]) -> u64 {
    v[0] as u64 + shape[0] as u64 * (v[1] as u64 + shape[1] as u64 * v[2] as u64)
}

fn volume(v: [u32; 3]) -> u64 {
    v.iter().map(|&d| d as u64).product()
}

/// The point of index `i` in a box of `shape`, x fastest.
fn point3(i: u64, shape: [u32; 3]) -> [u32; 3] {
    let (x, y) = (shape[0] as u64, shape[1] as u64);
    [(i % x) as u32, (i / x % y) as u32, (i / (x * y)) as u32]
}

/// Whether a special register differs between the CTAs of a launch (set as each is admitted).
fn per_cta(reg: SpecialReg) -> bool {
    matches!(
        reg,
        SpecialReg::Vector(
            SpecialVector::Ctaid | SpecialVector::Clusterid | SpecialVector::ClusterCtaid,
            _
        ) | SpecialReg::Scalar(SpecialScalar::ClusterCtarank)
    )
}

/// The largest cluster the emulator keeps resident at once (the hardware's non-portable
/// maximum).
const MAX_CLUSTER: u64 = 16;

/// The most CTAs resident at once. Only a CTA that stalls (a thread polling, through
/// `nanosleep` or an mbarrier wait, for what another thread provides) holds a slot while the
/// next is admitted; a grid whose CTAs never stall runs one at a time in one reused set of
/// buffers. Each slot holds a whole CTA's registers, shared memory (with its shadows) and local
/// memory, a few MiB at most, so 32 bounds a stalling launch to about a hundred MiB while
/// leaving room for the op library's widest wait (the split cross-entropy spreads a row over up
/// to 32 blocks that wait for one another) and for the small grids tests launch, a grid-wide
/// barrier included. A GPU too keeps only so many blocks resident: a block that waits on one
/// that cannot start is a deadlock there as well.
pub(crate) const MAX_RESIDENT: usize = 32;

/// One resident CTA: everything its threads own, kept while it is stalled.
struct Resident {
    regs: Vec<u64>,
    threads: Vec<Thread>,
    shared: SharedMem,
    local: Vec<u8>,
    sched: cta::Sched,
    shape: report::CtaShape,
    /// `progress` when it last stalled: it is retried once that has moved ([`FRESH`]: it has
    /// not run yet).
    stalled_at: u64,
    /// Its cluster (by index in launch order) and rank there.
    cluster: u64,
    rank: u32,
}

/// The `stalled_at` of a CTA admitted but not yet run.
const FRESH: u64 = u64::MAX;

/// What every CTA of the launch shares, from which each run builds its [`Ctx`].
struct Grid<'a> {
    kernel: &'a Kernel,
    global: &'a mut GlobalMemory,
    params: &'a [u8],
    budget: u64,
    spent: u64,
    progress: u64,
    check_shared_init: bool,
    block_threads: u32,
    cluster_size: u32,
}

impl Grid<'_> {
    /// Runs (or resumes) CTA `resident[pick]` until it finishes or stalls; the other resident
    /// CTAs of its cluster lend it their shared memory.
    fn run(
        &mut self,
        resident: &mut [Resident],
        pick: usize,
        barrier: &mut ClusterBarrier,
    ) -> Result<cta::Outcome, Error> {
        let (before, rest) = resident.split_at_mut(pick);
        let (me, after) = rest.split_first_mut().expect("pick is a resident CTA");
        let Resident {
            regs,
            threads,
            shared,
            local,
            sched,
            shape,
            cluster,
            rank,
            ..
        } = me;
        let peers = before
            .iter_mut()
            .chain(after.iter_mut())
            .filter(|r| r.cluster == *cluster)
            .map(|r| (r.rank, &mut r.shared))
            .collect();
        let view = ClusterView {
            rank: *rank,
            size: self.cluster_size,
            peers,
            barrier,
        };
        let mut ctx = self.ctx(shared, local, view);
        let out = cta::run_cta(&mut ctx, regs, threads, sched, shape);
        (self.spent, self.progress) = (ctx.spent, ctx.progress);
        out
    }

    /// The deadlock report of the stalled CTA `r`.
    fn deadlock(&mut self, r: &mut Resident) -> Error {
        let mut barrier = ClusterBarrier::default();
        let view = ClusterView {
            rank: r.rank,
            size: self.cluster_size,
            peers: Vec::new(),
            barrier: &mut barrier,
        };
        let ctx = self.ctx(&mut r.shared, &mut r.local, view);
        report::deadlock(&ctx, &r.regs, &r.threads, &r.shape)
    }

    fn ctx<'b>(
        &'b mut self,
        shared: &'b mut SharedMem,
        local: &'b mut [u8],
        cluster: ClusterView<'b>,
    ) -> Ctx<'b> {
        Ctx {
            kernel: self.kernel,
            global: &mut *self.global,
            shared,
            local,
            params: self.params,
            budget: self.budget,
            spent: self.spent,
            check_shared_init: self.check_shared_init,
            progress: self.progress,
            block_threads: self.block_threads,
            cluster,
        }
    }
}

/// Runs `kernel` over the grid of `cfg`; returns the number of thread-instructions executed.
pub(crate) fn launch(
    kernel: &Kernel,
    cfg: &LaunchConfig,
    params: &[u8],
    links: &[(crate::program::Slot, u64)],
    mem: &mut GlobalMemory,
    options: crate::module::Options,
    budget: u64,
) -> Result<u64, Error> {
    let shape_error = |detail: String| Error::LaunchShape {
        kernel: kernel.name.clone(),
        detail,
    };
    let [bx, by, bz] = cfg.block;
    let [gx, gy, gz] = cfg.grid;
    if cfg.block.contains(&0) || cfg.grid.contains(&0) {
        return Err(shape_error(format!(
            "grid {:?} and block {:?} must have no zero dimension",
            cfg.grid, cfg.block
        )));
    }
    let threads = bx as u64 * by as u64 * bz as u64;
    if threads > 1024 || bz > 64 {
        return Err(shape_error(format!(
            "a block of {bx}x{by}x{bz} = {threads} threads exceeds the 1024-thread (and z <= 64) limit"
        )));
    }
    let threads = threads as usize;
    let total_shared = if cfg.dynamic_shared_bytes > 0 {
        kernel.dynamic_offset + cfg.dynamic_shared_bytes
    } else {
        kernel.static_shared
    };
    if total_shared > 227 * 1024 {
        return Err(shape_error(format!(
            "the block needs {total_shared} bytes of shared memory, more than the 227 KiB a CTA can have"
        )));
    }
    let cluster = kernel.cluster;
    if (0..3).any(|k| !cfg.grid[k].is_multiple_of(cluster[k])) {
        return Err(shape_error(format!(
            "the grid {:?} is not a whole number of the kernel's {cluster:?} clusters (`.reqnctapercluster`) in every dimension",
            cfg.grid
        )));
    }
    let cluster_size = volume(cluster);
    if cluster_size > MAX_CLUSTER {
        return Err(shape_error(format!(
            "a cluster of {cluster:?} holds {cluster_size} CTAs, more than the {MAX_CLUSTER} a cluster can have"
        )));
    }
    let slots = kernel.slots as usize;
    let registers = kernel.registers as usize;
    let cta_slots: Vec<(usize, SpecialReg)> = kernel
        .specials
        .iter()
        .filter(|&&(_, reg)| per_cta(reg))
        .map(|&(s, reg)| (s as usize, reg))
        .collect();
    // A CTA's buffers, made once and reused for every CTA that runs in them.
    let fresh = || {
        let mut regs = vec![0u64; threads * slots];
        for t in 0..threads {
            let g = Geometry {
                tid: [t as u32 % bx, (t as u32 / bx) % by, t as u32 / (bx * by)],
                block: cfg.block,
                grid: cfg.grid,
                ctaid: [0; 3],
                cluster,
                linear: t,
                threads,
                dynamic_shared: cfg.dynamic_shared_bytes,
                total_shared,
            };
            let file = &mut regs[t * slots..(t + 1) * slots];
            for &(s, v) in kernel.constants.iter().chain(links) {
                file[s as usize] = v;
            }
            for &(s, reg) in &kernel.specials {
                file[s as usize] = special_value(reg, &g);
            }
        }
        Resident {
            regs,
            threads: vec![Thread::new(); threads],
            shared: SharedMem::new(total_shared as usize, options.check_races),
            local: vec![0u8; threads * kernel.local_bytes as usize],
            sched: cta::Sched::new(),
            shape: report::CtaShape {
                block: [0; 3],
                dims: cfg.block,
            },
            stalled_at: FRESH,
            cluster: 0,
            rank: 0,
        }
    };
    let mut grid = Grid {
        kernel,
        global: mem,
        params,
        budget,
        spent: 0,
        progress: 0,
        check_shared_init: options.check_shared_init,
        block_threads: threads as u32,
        cluster_size: cluster_size as u32,
    };
    // Each cluster's barrier, while any of its CTAs is resident.
    let mut barriers: std::collections::HashMap<u64, ClusterBarrier> = Default::default();
    let clusters_per_grid = div3(cfg.grid, cluster);
    let blocks = gx as u64 * gy as u64 * gz as u64;
    let mut next = 0u64;
    // In admission order, so the first is the earliest block still running.
    let mut resident: Vec<Resident> = Vec::new();
    let mut spare: Vec<Resident> = Vec::new();
    // Where the round of retries goes on.
    let mut cursor = 0usize;
    let mut executed = 0u64;
    loop {
        let pick = if let Some(i) = resident.iter().position(|r| r.stalled_at == FRESH) {
            i
        } else if resident.len() + cluster_size as usize <= MAX_RESIDENT && next < blocks {
            // A whole cluster at once, its CTAs in rank order, so each finds the others'
            // shared memory; clusters go in launch order (one CTA each without a shape).
            let index = next / cluster_size;
            for rank in 0..cluster_size {
                let mut r = spare.pop().unwrap_or_else(fresh);
                let at = point3(index, clusters_per_grid);
                let within = point3(rank, cluster);
                let ctaid = [0, 1, 2].map(|k| at[k] * cluster[k] + within[k]);
                next += 1;
                let g = Geometry {
                    tid: [0; 3],
                    block: cfg.block,
                    grid: cfg.grid,
                    ctaid,
                    cluster,
                    linear: 0,
                    threads,
                    dynamic_shared: cfg.dynamic_shared_bytes,
                    total_shared,
                };
                for t in 0..threads {
                    let file = &mut r.regs[t * slots..(t + 1) * slots];
                    file[..registers].fill(0);
                    for &(s, reg) in &cta_slots {
                        file[s] = special_value(reg, &g);
                    }
                }
                if !r.shared.bytes.is_empty() {
                    r.shared.reset();
                }
                r.threads.iter_mut().for_each(Thread::reset);
                r.sched = cta::Sched::new();
                r.shape.block = ctaid;
                r.stalled_at = FRESH;
                r.cluster = index;
                r.rank = rank as u32;
                resident.push(r);
            }
            barriers.insert(
                index,
                ClusterBarrier {
                    threads: (threads as u64 * cluster_size) as u32,
                    ..Default::default()
                },
            );
            resident.len() - cluster_size as usize
        } else if let Some(i) = (0..resident.len())
            .map(|k| (cursor + k) % resident.len())
            .find(|&i| resident[i].stalled_at != grid.progress)
        {
            i
        } else if resident.is_empty() {
            break;
        } else {
            return Err(stalled_grid(&mut grid, &mut resident, blocks - next));
        };
        let id = resident[pick].cluster;
        let barrier = barriers
            .get_mut(&id)
            .expect("a resident CTA's cluster has a barrier");
        match grid.run(&mut resident, pick, barrier)? {
            cta::Outcome::Done => {
                let r = resident.remove(pick);
                if !resident.iter().any(|o| o.cluster == id) {
                    barriers.remove(&id);
                }
                executed += r.threads.iter().map(|t| t.executed).sum::<u64>();
                spare.push(r);
                cursor = pick;
            }
            cta::Outcome::Stalled => {
                resident[pick].stalled_at = grid.progress;
                cursor = pick + 1;
            }
        }
    }
    Ok(executed)
}

/// The error of a launch whose resident CTAs are all stalled with nothing left to change: the
/// earliest one's deadlock, with what the others were doing.
fn stalled_grid(grid: &mut Grid<'_>, resident: &mut [Resident], waiting: u64) -> Error {
    let others = resident.len() - 1;
    let mut err = grid.deadlock(&mut resident[0]);
    if let Error::SpinDeadlock { detail, .. } = &mut err {
        if others > 0 || waiting > 0 {
            detail.push_str(&format!(
                "; {others} other blocks are stalled too and {waiting} never started (the emulator keeps at most {MAX_RESIDENT} blocks resident, started in launch order)"
            ));
        }
    }
    err
}
