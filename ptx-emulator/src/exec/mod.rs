//! Executing a decoded kernel over a grid: CTAs one after another in a fixed order, each with
//! fresh shared memory, per-thread registers and local memory.

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
pub(crate) mod thread;
mod warp;
mod wgmma;

use crate::error::Error;
use crate::memory::GlobalMemory;
use crate::program::Kernel;
use crate::LaunchConfig;
use context::Ctx;
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
            SpecialVector::Ctaid | SpecialVector::Clusterid => component(g.ctaid, d),
            SpecialVector::Nctaid | SpecialVector::Nclusterid => component(g.grid, d),
            SpecialVector::ClusterCtaid => 0,
            SpecialVector::ClusterNctaid => 1,
        },
        SpecialReg::Scalar(s) => match s {
            SpecialScalar::Laneid => lane as u64,
            SpecialScalar::Warpid => (g.linear / 32) as u64,
            SpecialScalar::Nwarpid => g.threads.div_ceil(32) as u64,
            SpecialScalar::Smid | SpecialScalar::Gridid | SpecialScalar::ClusterCtarank => 0,
            SpecialScalar::Nsmid
            | SpecialScalar::ClusterNctarank
            | SpecialScalar::ClusterNclusterid => 1,
            SpecialScalar::LanemaskEq => 1u64 << lane,
            SpecialScalar::LanemaskLt => lt,
            SpecialScalar::LanemaskLe => le & 0xffff_ffff,
            SpecialScalar::LanemaskGe => !lt & 0xffff_ffff,
            SpecialScalar::LanemaskGt => !le & 0xffff_ffff,
            SpecialScalar::DynamicSmemSize => g.dynamic_shared as u64,
            SpecialScalar::TotalSmemSize | SpecialScalar::AggrSmemSize => g.total_shared as u64,
            SpecialScalar::IsExplicitCluster => 0,
            // Clocks are read through `mov`, decoded to their own instruction.
            _ => 0,
        },
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
    let slots = kernel.slots as usize;
    let mut regs = vec![0u64; threads * slots];
    let mut ctaid_slots = Vec::new();
    for t in 0..threads {
        let g = Geometry {
            tid: [t as u32 % bx, (t as u32 / bx) % by, t as u32 / (bx * by)],
            block: cfg.block,
            grid: cfg.grid,
            ctaid: [0; 3],
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
    for &(s, reg) in &kernel.specials {
        if let SpecialReg::Vector(SpecialVector::Ctaid | SpecialVector::Clusterid, d) = reg {
            ctaid_slots.push((s as usize, d));
        }
    }
    let mut shared = SharedMem::new(total_shared as usize, options.check_races);
    let mut local = vec![0u8; threads * kernel.local_bytes as usize];
    let mut state = vec![Thread::new(); threads];
    let mut ctx = Ctx {
        kernel,
        global: mem,
        shared: &mut shared,
        local: &mut local,
        params,
        budget,
        spent: 0,
        check_shared_init: options.check_shared_init,
        progress: 0,
        block_threads: threads as u32,
    };
    let registers = kernel.registers as usize;
    let mut executed = 0u64;
    for cz in 0..gz {
        for cy in 0..gy {
            for cx in 0..gx {
                let ctaid = [cx, cy, cz];
                for t in 0..threads {
                    let file = &mut regs[t * slots..(t + 1) * slots];
                    file[..registers].fill(0);
                    for &(s, d) in &ctaid_slots {
                        file[s] = component(ctaid, d);
                    }
                }
                if !ctx.shared.bytes.is_empty() {
                    ctx.shared.reset();
                }
                state.iter_mut().for_each(Thread::reset);
                let shape = report::CtaShape {
                    block: ctaid,
                    dims: cfg.block,
                };
                cta::run_cta(&mut ctx, &mut regs, &mut state, &shape)?;
                executed += state.iter().map(|t| t.executed).sum::<u64>();
            }
        }
    }
    Ok(executed)
}
