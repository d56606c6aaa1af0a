//! `#[kernel]`: Rust kernels lowered to PTX at build time (filled by the macro work).
