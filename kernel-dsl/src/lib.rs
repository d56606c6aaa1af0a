//! kernel-dsl: the types, target table, instruction catalog, typed IR, builder, verifier and
//! PTX emitter that every other ptxkit crate stands on.
//!
//! Data flows through the modules in this order: [`types`] and [`target`] describe values and
//! machines; [`catalog`] records what each instruction form needs from a target; [`intrinsics`]
//! lists the `#[kernel]` language's intrinsics and the instructions they lower to; [`ir`] holds
//! kernels as typed virtual registers and structured control flow; [`builder`] writes IR;
//! [`source_map`] records where
//! `#[kernel]` instructions came from in Rust; [`verify`] checks it; [`emit`] prints PTX for one target; [`parity`] checks PTX text
//! against a device; [`artifact`] is what a compiled kernel hands the runtime.

pub mod artifact;
pub mod error;
pub mod parity;
pub mod target;
pub mod types;

pub use artifact::{
    BlockContract, KernelArtifacts, KernelMeta, ModuleKey, ParamKind, ParamMeta, Ptx,
    TENSOR_MAP_ALIGN, TENSOR_MAP_BYTES,
};
pub use error::Error;
pub use parity::{check_ptx_parity, read_ptx_header, PtxHeader};
pub use target::{IsaVersion, Target, TargetLimits};
pub use types::{RegClass, ScalarType, StateSpace, TypeClass, VecWidth};
pub mod build_env;
pub mod builder;
pub mod catalog;
pub mod cubin_sections;
pub mod embed;
pub mod emit;
pub mod intrinsics;
pub mod ir;
mod line_directives;
pub mod op;
pub mod ptxas;
pub mod samples;
pub mod scalar;
pub mod source_map;
pub mod verify;
