//! Loads ptxkit kernels on CUDA devices or the CPU emulator.
