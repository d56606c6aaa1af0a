//! (Not yet written: the ops of this module land with the kernel library work.)

use crate::OpKernel;

/// Every specialization this module ships.
pub static KERNELS: &[&OpKernel] = &[];
