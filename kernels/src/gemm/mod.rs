//! GEMM family (not yet written: lands with the GEMM work).

use crate::OpKernel;

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = &[];
