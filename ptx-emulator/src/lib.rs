//! Executes PTX kernels on the CPU, so kernel numerics can be checked without a GPU, and
//! reports what a GPU would not: out-of-bounds accesses with the buffer they missed, reads of
//! never-written shared memory, barriers not every thread reaches, unsupported instructions.
//!
//! The pipeline: [`ptx_parser`] reads the text; `decode` turns each `.entry` into a compact
//! program (registers as slot indices, immediates and special registers as pre-filled slots,
//! labels as instruction indices); `exec` runs CTAs one after another, each thread until it
//! blocks at a barrier or a warp-collective instruction, in a fixed order so results are
//! bit-identical every run. `numerics` holds the IEEE rounding, conversions and approximations.
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

pub use error::{Access, Error, Nearest, Site};
pub use memory::GlobalMemory;
pub use module::{ArgValue, Emulator, LaunchConfig, LaunchStats, Module};
