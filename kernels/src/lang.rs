//! Where `#[kernel]` finds the crates its generated code names. The library cannot depend on
//! the `ptxkit` facade (the facade depends on it), so its kernels say
//! `#[kernel(crate = crate::lang)]`.

pub use kernel_dsl as dsl;
#[allow(unused_imports)]
pub use kernel_macros::__kernel_expand;
pub use kernel_runtime as runtime;
