//! A value `if` whose arms are pure becomes a select, without branches; one that reads memory
//! stays a branch, so a guarded load stays guarded.

use super::{lower_ok, ops};
use kernel_dsl::ir::Stmt;
use kernel_dsl::op::Op;

fn ifs(stmts: &[Stmt]) -> usize {
    stmts
        .iter()
        .map(|s| match s {
            Stmt::If {
                then_body,
                else_body,
                ..
            } => 1 + ifs(then_body) + ifs(else_body),
            Stmt::Loop { body, latch } => ifs(body) + ifs(latch),
            _ => 0,
        })
        .sum()
}

/// The `if`s left in the lowered kernel, and its selects.
fn branches_and_selects(f: syn::ItemFn) -> (usize, usize) {
    let l = lower_ok(f);
    let selects = ops(&l)
        .iter()
        .filter(|o| matches!(o, Op::Selp { .. }))
        .count();
    (ifs(&l.kernel.body), selects)
}

#[test]
fn register_array_elements_and_scalar_math_select_without_branches() {
    let (branches, selects) = branches_and_selects(syn::parse_quote! {
        fn masked(x: &[f32], y: &mut [f32], limit: u32) {
            let i = thread_idx().x * 4;
            let v = x.load_vec::<4>(i);
            let mut t = [0.0f32; 4];
            for k in 0..4 {
                t[k] = if i + k <= limit { (v[k] * 2.0).ex2_approx_ftz() } else { f32::NEG_INFINITY };
            }
            y.store_vec::<4>(i, t);
        }
    });
    assert_eq!((branches, selects), (0, 4));
}

#[test]
fn an_arm_that_reads_a_buffer_stays_a_branch() {
    let (branches, selects) = branches_and_selects(syn::parse_quote! {
        fn guarded(x: &[f32], y: &mut [f32], n: u32) {
            let i = thread_idx().x;
            y[i] = if i < n { x[i] } else { 0.0 };
        }
    });
    assert!(branches > 0, "the load must stay under its guard");
    assert_eq!(selects, 0);
}
