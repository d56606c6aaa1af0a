//! The op library: the memory-bound training and inference ops, forward and backward, for f32
//! and bf16 storage, each a typed function over runtime buffers with its CPU reference.
//!
//! Every op takes its problem sizes at run time (rows, hidden size, heads, positions, theta,
//! eps); only storage type, vector width and block size are compile-time specializations, each
//! an [`OpKernel`]. Shapes that do not fit the buffers are an [`Error`] before anything is
//! launched, and nothing is written on error. [`all_kernels`] lists every specialization, so
//! the PTX goldens, the ptxas sweep and pre-warm cover them all.

mod error;
mod float;
mod lang;
mod op_kernel;
// `#[device]` helpers, before the op modules whose kernels call them.
#[macro_use]
mod activation;
#[macro_use]
mod row_group;
mod rowwise;

pub mod argmax;
pub mod attention;
pub mod cast;
pub mod clip;
pub mod cross_entropy;
pub mod elementwise;
pub mod embedding;
pub mod gemm;
pub mod layout;
pub mod norm;
pub mod optim;
pub mod quant;
pub mod rope;
pub mod softmax;

pub use error::{check_len, Error};
pub use float::Float;
pub use kernels_gen::FloatType;
pub use op_kernel::OpKernel;

/// Every kernel specialization the library ships, in a fixed order.
pub fn all_kernels() -> Vec<&'static OpKernel> {
    [
        elementwise::KERNELS,
        norm::KERNELS,
        softmax::KERNELS,
        rope::KERNELS,
        layout::KERNELS,
        cast::KERNELS,
        embedding::KERNELS,
        cross_entropy::KERNELS,
        optim::KERNELS,
        clip::KERNELS,
        argmax::KERNELS,
        gemm::KERNELS,
        attention::KERNELS,
        quant::nf4::KERNELS,
        quant::gguf::KERNELS,
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    /// Entry names are module and golden names: two kernels sharing one would share a golden
    /// and could not be told apart in a profile.
    #[test]
    fn every_library_kernel_has_its_own_name() {
        let mut seen = std::collections::HashMap::new();
        for k in super::all_kernels() {
            let name = k.kernel().name;
            let count = seen.entry(name.clone()).or_insert(0);
            *count += 1;
            assert_eq!(*count, 1, "two library kernels are named `{name}`");
        }
    }
}
