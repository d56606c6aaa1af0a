//! `#[kernel]`: Rust functions lowered to kernel-dsl IR and PTX at build time.
//!
//! ```ignore
//! use ptxkit::prelude::*;
//!
//! #[kernel]
//! pub fn saxpy(a: f32, x: &[f32], y: &mut [f32], n: u32) {
//!     let i = block_idx().x * block_dim().x + thread_idx().x;
//!     if i < n {
//!         y[i] = a * x[i] + y[i];
//!     }
//! }
//! ```
//!
//! The macro parses the function, type-checks and lowers it to kernel-dsl IR (`lower/`),
//! emits PTX for every target ptxkit knows (`targets.rs`), and generates (`codegen.rs`):
//!
//! - `pub static SAXPY: KernelArtifacts`: metadata (parameters, block contract, shared
//!   memory), the PTX of each **enabled** target, cubins where ptxas was found, and the IR
//!   with an `emit` function so the runtime can emit for a target that was not built in;
//! - `pub fn saxpy(stream, cfg, a: f32, x: &Buffer<f32>, y: &mut Buffer<f32>, n: u32)`: the
//!   typed launcher. A `&[T]` parameter takes `&Buffer<T>` or a `&BufferView` of part of one,
//!   `&mut [T]` takes `&mut Buffer<T>` or a `&mut BufferViewMut` (the runtime's `SliceArg` and
//!   `SliceArgMut`), scalars go by value, so a wrong buffer or scalar type does not compile (a
//!   view's element type is checked at launch).
//!
//! # Where things are
//!
//! In the order an expansion meets them: `expand.rs` (the pipeline, `#[device]` resolution),
//! `attr.rs` (arguments), `instance.rs` (specializations and entry names), `lower/` (type
//! checking and lowering: `mod.rs` parameters and scopes, `stmt.rs` statements and loops,
//! `expr.rs` literals, names, typing and `if` values, `operators.rs`, `casts.rs`, `places.rs`
//! (indexing, loads, stores), `calls.rs` intrinsics lowered by hand and helpers, `chain.rs`
//! the intrinsics `kernel_dsl::intrinsics` lowers generically, `methods.rs` method syntax,
//! `value.rs` typed values), `targets.rs` (per-target emission and capability
//! errors), `cubin.rs` (ptxas), `codegen.rs` (generated items), `diag.rs` (errors with spans),
//! `dsl_type.rs` (Rust types to PTX types), `known.rs` (the helpers, `#[device] const`s and
//! kernels expanded so far).
//!
//! # Targets: cargo features, no build script
//!
//! A proc-macro cannot see the features of the crate it expands in, so the macro emits PTX for
//! all targets and gates each constant with `#[cfg(feature = "sm_XX")]`: the crate being built
//! keeps exactly the targets it enables. The crate must declare the features it uses
//! (`sm_70`, `sm_75`, `sm_80`, `sm_86`, `sm_89`, `sm_90`, `sm_90a`, `sm_100`, `sm_100a`,
//! `sm_120`, `sm_121`). With none enabled it builds for **sm_80**. Where a kernel uses an
//! instruction above a target, the macro emits `#[cfg(feature = "sm_75")] compile_error!(..)`
//! at the span of the call that needs it, so enabling that feature fails the build at that
//! line, naming the instruction, its minimum and the target.
//!
//! Cubins need the enabled set at expansion time: a crate that wants them adds a build script
//! that forwards its features, `println!("cargo:rustc-env=PTXKIT_TARGETS=sm_89,sm_121")`
//! (ptxkit's own `build.rs` shows the loop), and ptxas is taken from `PTXKIT_PTXAS`,
//! `CUDA_HOME/bin/ptxas` or `PATH`.
//!
//! # Paths
//!
//! Generated code names items as `::ptxkit::dsl::…` and `::ptxkit::runtime::…`. A crate that
//! cannot depend on `ptxkit` (the workspace's own `kernels`) writes
//! `#[kernel(crate = crate::paths)]` where `paths` re-exports `dsl` (kernel-dsl), `runtime`
//! (kernel-runtime) and `__kernel_expand` (this crate).
//!
//! # Specialization
//!
//! ```ignore
//! #[kernel(instances(<f32, 256>, <bf16, 256>), block = BLOCK)]
//! pub fn scale<T: Element, const BLOCK: u32>(x: &[T], y: &mut [T], s: f32, n: u32) { … }
//! ```
//!
//! `block = N` (or `(x, y, z)`) requires that exact block shape (`.reqntid`); `max_threads = N`
//! bounds it instead (`.maxntid`); both may name const parameters. The example
//! builds `scale__f32_256` and `scale__bf16_256` (statics `SCALE__F32_256`, …, launchers of the
//! same names, and `SCALE_INSTANCES` for pre-warming). Problem sizes stay parameters.
//!
//! # The language
//!
//! Parameters: `u32 i32 u64 i64 f32 f64 f16 bf16 bool`, `&[T]`, `&mut [T]`. Bodies: `let`
//! (types inferred from literals, parameters and intrinsics), arithmetic, comparison, logical
//! and bit operators, compound assignment, `as`, `if`/`else` (also as a value), `while`, `loop`,
//! `for i in a..b` and `(a..b).step_by(k)`, `break`/`continue`/`return`, slice indexing,
//! local arrays `[0.0f32; 8]` indexed by constants (constant-bound `for` loops over them are
//! unrolled), `shared_array::<T, N>()`, `dynamic_shared::<T>()`, and the intrinsics of
//! `ptxkit::prelude`, which are the rows of `kernel_dsl::intrinsics::INTRINSICS`. Deviations from Rust: indices are `u32` (or `i32`/`u64`), not `usize`;
//! an unsuffixed float literal with no other type information is `f32`.
//!
//! # Diagnostics
//!
//! Every unsupported construct, type error, missing cast, write through `&[T]`, unknown name,
//! wrong arity and capability error is a `compile_error!` at the offending tokens; the
//! function's signature is kept beside it (with a body that never runs), so the rest of the
//! crate still resolves its name.

mod attr;
mod codegen;
mod cubin;
mod diag;
mod dispatch;
mod dsl_type;
mod expand;
#[cfg(test)]
mod front_end_fuzz;
mod instance;
mod known;
mod line_info;
mod lower;
mod targets;

use proc_macro::TokenStream;

/// Compiles a Rust function to a GPU kernel; see the crate documentation.
///
/// ```
/// # mod paths { pub use kernel_dsl as dsl; pub use kernel_runtime as runtime; }
/// use kernel_macros::kernel;
///
/// // Outside this workspace, `use ptxkit::prelude::*;` and a plain `#[kernel]`.
/// #[kernel(crate = paths)]
/// pub fn scale(x: &[f32], y: &mut [f32], s: f32, n: u32) {
///     let i = block_idx().x * block_dim().x + thread_idx().x;
///     if i < n {
///         y[i] = x[i] * s;
///     }
/// }
///
/// assert_eq!(SCALE.meta.entry, "scale");
/// let ptx = (SCALE.emit.unwrap())(kernel_dsl::Target::Sm90).unwrap();
/// assert!(ptx.contains(".target sm_90") && ptx.contains("ld.global.nc.f32"));
/// ```
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::kernel(attr.into(), item.into()).into()
}

/// Marks a helper function that kernels may call; it is inlined into each caller. Define it
/// before the kernels that call it, in the same module or an enclosing one.
///
/// ```
/// # mod paths {
/// #     pub use kernel_dsl as dsl;
/// #     pub use kernel_macros::__kernel_expand;
/// #     pub use kernel_runtime as runtime;
/// # }
/// use kernel_macros::{device, kernel};
///
/// #[device(crate = paths)]
/// fn square(v: f32) -> f32 {
///     v * v
/// }
///
/// #[kernel(crate = paths)]
/// pub fn squares(x: &[f32], y: &mut [f32], n: u32) {
///     let i = block_idx().x * block_dim().x + thread_idx().x;
///     if i < n {
///         y[i] = square(x[i]);
///     }
/// }
///
/// let ptx = (SQUARES.emit.unwrap())(kernel_dsl::Target::Sm80).unwrap();
/// assert!(ptx.contains("mul.rn.f32"));
/// ```
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::device(attr.into(), item.into()).into()
}

/// Internal: a kernel together with the `#[device]` helpers it calls.
#[doc(hidden)]
#[proc_macro]
pub fn __kernel_expand(input: TokenStream) -> TokenStream {
    expand::kernel_with_devices(input.into()).into()
}
