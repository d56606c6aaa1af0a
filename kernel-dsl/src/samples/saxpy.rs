use crate::builder::KernelBuilder;
use crate::ir::{Dim, Kernel};
use crate::scalar::{F32, U32};

/// `y[i] = a * x[i] + y[i]` over a grid-stride loop, so any grid covers any `n`.
pub fn saxpy() -> Kernel {
    let mut b = KernelBuilder::new("saxpy");
    let a = b.param::<F32>("a");
    let x = b.param_slice::<F32>("x");
    let y = b.param_slice_mut::<F32>("y");
    let n = b.param::<U32>("n");
    let start = b.global_index(Dim::X);
    let stride = b.grid_stride(Dim::X);
    b.for_range(start, n, stride, |b, i| {
        let xi = b.ld_global(&x, i);
        let yi = b.ld_global(&y, i);
        let r = b.fma(a, xi, yi);
        b.st_global(&y, i, r);
    });
    b.finish()
}
