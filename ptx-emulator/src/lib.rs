//! Executes PTX kernels on the CPU, so kernel numerics can be checked without a GPU, and
//! reports what a GPU would not: out-of-bounds accesses with the buffer they missed, reads of
//! never-written shared memory, shared-memory races between warps (a missing `bar.sync`),
//! barriers not every thread reaches, warp collectives whose member lanes never arrive,
//! unsupported instructions by name.
//!
//! # How it runs
//!
//! [`ptx_parser`] reads the text; `decode` turns each `.entry` (and the `.func`s it calls) into
//! a compact program: registers become slot indices, immediates and special registers become
//! slots filled before the launch, labels become instruction indices, modifiers become small
//! enums. `exec` runs CTAs one after another (but see below for blocks that wait on others);
//! inside a CTA each thread runs on its own until it exits or reaches `bar.sync` or a
//! warp-collective instruction (`shfl`, `vote`, `redux`, `match`, `elect`, `mma`, `ldmatrix`,
//! `stmatrix`), which executes once every lane of its member mask has arrived (`wgmma`: every
//! thread of the warpgroup). Threads run in a fixed order, so every result is bit-identical run
//! to run. `numerics` holds IEEE rounding in every mode, f16/bf16/tf32 conversions and the
//! approximations.
//!
//! Blocks wait on one another only through spin-waits, and a spin-wait must give way: a thread
//! at `nanosleep` (or at an unsatisfied mbarrier wait) stops and lets the others run. A CTA
//! whose remaining threads are all stopped so, or blocked behind them at a barrier, with
//! nothing changed since they last polled, has stalled: it stays resident, with its registers,
//! shared and local memory, and the next CTA in linear block order starts, as long as fewer
//! than 32 are resident. CTAs run one at a time, each until it finishes or stalls; a stalled
//! one is retried, round-robin, once anything (a store, an atomic, an exit) has happened since
//! it stalled. When every resident CTA is stalled, nothing has happened since, and no CTA can
//! start, the launch fails with [`Error::SpinDeadlock`] for the earliest of them. So a block
//! may wait on a flag a later block sets as long as at most 32 blocks wait at once (a GPU, too,
//! holds only so many blocks). A loop that polls without `nanosleep` never gives way: it keeps
//! its CTA running until the step budget ends it, so poll with `nanosleep` (the `#[kernel]`
//! intrinsic of that name). A grid whose CTAs never stall runs one CTA at a time in one reused
//! set of buffers, as before there was a scheduler.
//!
//! # What is emulated
//!
//! Integer, bit and predicate instructions at every width (carry chains included); f32/f64
//! arithmetic with `.rn/.rz/.rm/.rp`, `.ftz`, `.sat`; f16/bf16 scalar and packed arithmetic;
//! `cvt` between all scalar types with every rounding mode, packed `cvt.rn.{bf16,f16}x2.f32`,
//! `.relu`, `.satfinite`, tf32, FP8 pairs (`.e4m3x2`, `.e5m2x2`, from f32 or f16x2 and back);
//! the `.approx` transcendentals (computed in f64: within the documented hardware error);
//! `ld`/`st` in every state space and generic addressing (`.v2/.v4`, `.nc`, cache hints
//! ignored); atomics and reductions on global and shared memory; `cp.async` with zero-fill,
//! deferred until `wait_group`/`wait_all`; 1-D `cp.async.bulk` with mbarrier transaction
//! counts; tensor TMA loads `cp.async.bulk.tensor.{1..5}d.shared::{cluster,cta}.global{.tile}
//! .mbarrier::complete_tx::bytes` (see below); `bar.sync`/`bar.arrive`/`bar.red`, named
//! barriers over a subset of threads (`bar.sync 1, 256`); `mma.sync` m16n8k8/m16n8k16 (f16,
//! bf16), m16n8k8/m16n8k4 (tf32), m16n8k32 (s8/u8); `ldmatrix`, `stmatrix`; `wgmma.mma_async`
//! m64nNk16 (f16, bf16 into f32) over a warpgroup, with A in registers or shared memory and
//! K-major or MN-major descriptors (unswizzled or 128/64/32-byte swizzle); `mbarrier` (a
//! thread whose wait is not yet satisfied gives way to the others); `nanosleep` (gives way,
//! see above); device-function calls;
//! module `.global` and `.const` variables; `elect.sync`; `setmaxnreg` and the proxy fences
//! (`fence.proxy.async`) as no-ops, since the emulator has neither register files to resize
//! nor separate memory proxies.
//!
//! Tensor TMA: a real `CUtensorMap` is opaque, so the emulator reads its own 128-byte
//! [`TensorMap`] encoding, passed as a kernel parameter declared
//! `.param .align 64 .b8 tmap[128]` (with [`ArgValue::from`] a map) and named in the
//! instruction (`[tmap, {%r1, %r2}]`), or placed in global memory (64-byte aligned) and named
//! by a register holding its address (`[%rd1, {%r1, %r2}]`). The copy runs when issued: the
//! box at the signed coordinates is written row-major to the shared destination (which must
//! be 128-byte aligned; hardware kernels align 128-byte-swizzled tiles to 1024 bytes so the
//! pattern lines up), elements outside the tensor read as zero, each
//! 16-byte chunk is moved by the map's swizzle applied to the absolute shared address (the
//! pattern `wgmma` descriptors read), and the mbarrier sees the whole box's bytes completed.
//! `.L2::cache_hint` is accepted and ignored. With `.multicast::cluster` the box lands at the
//! same offset in every CTA of the cluster whose bit is set in the 16-bit mask, each of whose
//! mbarriers (at the same offset) sees the bytes.
//!
//! Thread-block clusters: a kernel with `.reqnctapercluster` runs a whole cluster's CTAs
//! resident together (a launch whose grid is not whole clusters is an
//! [`Error::LaunchShape`]); `%cluster_ctarank`, `%cluster_nctarank`, `%clusterid`,
//! `%cluster_ctaid` and the rest read the cluster geometry; `barrier.cluster.arrive`/`wait`
//! wait for every thread of the cluster that has not exited (one that never arrives is a
//! deadlock, reported as such); `mapa.shared::cluster` and `ld`/`st`/`mbarrier` on
//! `.shared::cluster` addresses reach another resident CTA's shared memory, bounds-checked, and
//! a CTA that has exited, or a rank beyond the cluster, is an [`Error::Cluster`]. In the
//! emulator a cluster address keeps the CTA offset in its low 24 bits and 1 + the rank above. A map that does not decode or breaks a rule of
//! [`TensorMap::check`] is an [`Error::TensorCopy`] naming the parameter or address.
//!
//! Not emulated (reported as [`Error::Unsupported`]): `wgmma` with non-16-bit inputs, `wmma`,
//! the other tensor-copy forms (`.im2col`, shared-to-global stores,
//! `cp.reduce.async.bulk`), textures and surfaces, indirect calls, recursion.
//!
//! Deliberately strict: a `bar.sync` that some thread exited before reaching is an error, as is
//! a warp collective whose member mask names an exited lane, or a lane the block's last, partial
//! warp does not have (a full mask in a block of 48 threads; [`Error::PartialWarpMask`]): both
//! are undefined behaviour on a GPU. The legacy forms without `.sync` name no mask and run over
//! the lanes present. A shuffle whose source lane (within its clamp) is outside the member mask,
//! or absent from a partial warp, reads an undefined value on a GPU and is an
//! [`Error::ShuffleSource`] here. A pointer argument given as a view of part of a buffer ([`ViewArg`])
//! bounds that buffer to the view for the launch, so a kernel handed `y[0..8]` cannot write
//! `y[8..16]` unreported ([`Error::ViewOutOfBounds`]). A launch that runs past its step budget
//! ([`Emulator::with_step_budget`], the [`STEP_BUDGET_ENV`] variable, else
//! [`DEFAULT_STEP_BUDGET`] instructions over all its threads) stops with
//! [`Error::StepBudget`], so an endless loop is an error instead of a hang.
//! Tensor-core sums are exact in f64 and rounded once; real tensor cores round partial sums
//! differently, so compare MMA results with a tolerance.
//!
//! ```
//! use ptx_emulator::{ArgValue, Emulator, GlobalMemory, LaunchConfig};
//! let ptx = ".version 7.8\n.target sm_80\n.address_size 64\n\
//!            .visible .entry k(.param .u64 p)\n{\n\t.reg .b64 %rd<2>;\n\t.reg .f32 %f<2>;\n\
//!            \tld.param.u64 %rd1, [p];\n\tmov.f32 %f1, 0f40490FDB;\n\tst.global.f32 [%rd1], %f1;\n\tret;\n}\n";
//! let module = Emulator::new().load(ptx).unwrap();
//! let mut mem = GlobalMemory::new();
//! let out = mem.alloc(4);
//! module.launch("k", &LaunchConfig::linear(1, 1), &[ArgValue::Ptr(out)], &mut mem).unwrap();
//! assert_eq!(mem.read_f32(out, 1).unwrap(), vec![std::f32::consts::PI]);
//! ```

mod decode;
mod error;
mod exec;
mod memory;
mod module;
pub mod numerics;
mod program;
mod tensor_map;

pub use error::{Access, Error, Nearest, Site, SourceLine, ViewBounds};
pub use memory::GlobalMemory;
pub use module::{
    ArgValue, Emulator, LaunchConfig, LaunchStats, Module, ViewArg, DEFAULT_STEP_BUDGET,
    STEP_BUDGET_ENV,
};
pub use tensor_map::{TensorMap, TensorSwizzle};
