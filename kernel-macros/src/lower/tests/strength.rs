//! Unsigned division and remainder by a power of two are a shift and a mask; ptxas would
//! otherwise emit its whole division sequence for them. Signed ones keep `div`/`rem`, whose
//! rounding toward zero a shift does not give.

use super::{lower_ok, ops};
use kernel_dsl::op::Op;

#[test]
fn unsigned_division_and_remainder_by_a_power_of_two_are_a_shift_and_a_mask() {
    let l = lower_ok(syn::parse_quote! {
        fn split(x: &[u32], y: &mut [u32], w: &[u64], z: &mut [u64]) {
            let i = thread_idx().x;
            y[i] = x[i] / 8 + x[i] % 16;
            z[i] = w[i] / 4;
        }
    });
    let ops = ops(&l);
    assert!(!ops
        .iter()
        .any(|o| matches!(o, Op::Div { .. } | Op::Rem { .. })));
    assert_eq!(
        ops.iter().filter(|o| matches!(o, Op::Shr { .. })).count(),
        2
    );
}

#[test]
fn signed_and_non_power_of_two_divisions_stay_divisions() {
    let l = lower_ok(syn::parse_quote! {
        fn split(x: &[i32], y: &mut [i32], u: &[u32], v: &mut [u32]) {
            let i = thread_idx().x;
            y[i] = x[i] / 8 + x[i] % 8;
            v[i] = u[i] / 6;
        }
    });
    let ops = ops(&l);
    assert_eq!(
        ops.iter().filter(|o| matches!(o, Op::Div { .. })).count(),
        2
    );
    assert_eq!(
        ops.iter().filter(|o| matches!(o, Op::Rem { .. })).count(),
        1
    );
}
