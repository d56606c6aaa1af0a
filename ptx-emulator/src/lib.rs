//! Executes parsed PTX kernels on the CPU.
