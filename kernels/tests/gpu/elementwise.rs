//! The elementwise ops on the GPU at real shapes.

use crate::common_tensor::*;
use kernel_runtime::{Bf16, Stream};
use kernels::elementwise::{self as ew, reference as ew_ref};
use kernels::Float;

fn elementwise<T: Float>(s: &Stream) {
    for n in [1, 4097, (1 << 22) + 3] {
        let mut rng = Rng::new(n as u64);
        let (a, ah) = upload::<T>(s, &rng.vec(n, -6.0, 6.0));
        let (b, bh) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
        let (d, dh) = upload::<T>(s, &rng.vec(n, -1.0, 1.0));
        let (mut o, mut o2) = (poisoned::<T>(s, n), poisoned::<T>(s, n));
        let tol = tol_for::<T>();
        let each = |f: &dyn Fn(usize) -> f64| (0..n).map(f).collect::<Vec<f64>>();
        ew::add(s, &a, &b, &mut o).unwrap();
        assert_close("add", &download(s, &o), &each(&|i| ah[i] + bh[i]), tol);
        ew::gelu_tanh(s, &a, &mut o).unwrap();
        assert_close(
            "gelu",
            &download(s, &o),
            &each(&|i| ew_ref::gelu_tanh(ah[i])),
            tol,
        );
        ew::silu(s, &a, &mut o).unwrap();
        assert_close(
            "silu",
            &download(s, &o),
            &each(&|i| ew_ref::silu(ah[i])),
            tol,
        );
        ew::swiglu(s, &a, &b, &mut o).unwrap();
        assert_close(
            "swiglu",
            &download(s, &o),
            &each(&|i| ew_ref::swiglu(ah[i], bh[i])),
            tol,
        );
        ew::swiglu_backward(s, &a, &b, &d, &mut o, &mut o2).unwrap();
        let w = each(&|i| ew_ref::swiglu_backward(ah[i], bh[i], dh[i]).0);
        assert_close("dgate", &download(s, &o), &w, tol);
        let w = each(&|i| ew_ref::swiglu_backward(ah[i], bh[i], dh[i]).1);
        assert_close("dup", &download(s, &o2), &w, tol);
    }
}

#[test]
fn gpu_elementwise_ops_match_reference() {
    let Some(s) = gpu() else { return };
    elementwise::<f32>(&s);
    elementwise::<Bf16>(&s);
}
