use crate::builder::KernelBuilder;
use crate::ir::{Dim, Kernel};
use crate::op::Cmp;
use crate::scalar::{F32, U32};

/// `c[i] = a[i] + b[i]` for `i < n`, one element per thread.
pub fn vector_add() -> Kernel {
    let mut b = KernelBuilder::new("vector_add");
    let a = b.param_slice::<F32>("a");
    let x = b.param_slice::<F32>("b");
    let c = b.param_slice_mut::<F32>("c");
    let n = b.param::<U32>("n");
    let i = b.global_index(Dim::X);
    let inside = b.setp(Cmp::Lt, i, n);
    b.if_(inside, |b| {
        let va = b.ld_global(&a, i);
        let vb = b.ld_global(&x, i);
        let sum = b.add(va, vb);
        b.st_global(&c, i, sum);
    });
    b.finish()
}
