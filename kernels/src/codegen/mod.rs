//! Builder conveniences shared by the op kernels: vector access, bf16 packing, reductions.
