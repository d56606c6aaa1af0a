//! Softmax backward: with `y = softmax(scale · x)`, `dx = scale · y ⊙ (dy − ⟨y, dy⟩)`.
//! Masked entries have `y = 0`, so they get `dx = 0` without the mask being passed again.

use crate::codegen::rows::{for_each_row, held, held_chunks, GroupSum, Row};
use crate::codegen::tensor::tensor_param;
use crate::rowwise::index::{chunks, element};
use crate::rowwise::spec::RowSpec;
use crate::rowwise::unroll::{for_chunk_groups, for_chunk_groups_rev, load_slots};
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, U32};
use kernel_dsl::ir::Kernel;

/// Parameters: `y, dy, dx, rows, cols, scale`.
pub(crate) fn softmax_backward(spec: RowSpec) -> Kernel {
    let storage = spec.storage;
    let access = spec.access;
    let mut b = KernelBuilder::new(format!("softmax_backward_{}", spec.suffix()));
    let y = tensor_param(&mut b, "y", storage, false);
    let dy = tensor_param(&mut b, "dy", storage, false);
    let dx = tensor_param(&mut b, "dx", storage, true);
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let scale = b.param::<F32>("scale");

    let width = access.width(storage);
    let count = held_chunks(storage, access);
    let nchunks = chunks(&mut b, cols, width);
    let summer = GroupSum::new(&mut b, spec.group, 1);

    for_each_row(&mut b, spec.group, rows, |b, row: Row| {
        let base = b.mul(row.row, cols);
        let zero = b.const_f32(0.0);
        let dot = b.var(zero);
        let slots = held(b, &row, nchunks, count);
        let mut kept = Vec::new();
        for &(c, active) in &slots {
            let idx = element(b, base, c, width);
            let ys: Vec<Value<F32>> = (0..width).map(|_| b.var(zero)).collect();
            let gs: Vec<Value<F32>> = (0..width).map(|_| b.var(zero)).collect();
            b.if_(active, |b| {
                let yv = y.load_n(b, idx, access);
                let gv = dy.load_n(b, idx, access);
                for k in 0..width as usize {
                    b.assign(ys[k], yv[k]);
                    b.assign(gs[k], gv[k]);
                }
            });
            for (&yk, &gk) in ys.iter().zip(&gs) {
                let t = b.fma(yk, gk, dot);
                b.assign(dot, t);
            }
            kept.push((active, idx, ys, gs));
        }
        // Each overflow chunk loads as `y` then `dy`, `2·width` values.
        let both = |b: &mut KernelBuilder, c| {
            let idx = element(b, base, c, width);
            let mut v = y.load_n(b, idx, access);
            v.extend(dy.load_n(b, idx, access));
            v
        };
        let w = width as usize;
        for_chunk_groups(b, &row, count, nchunks, 2 * width, |b, slots| {
            for vals in load_slots(b, slots, 2 * width, 0.0, both) {
                for k in 0..w {
                    let t = b.fma(vals[k], vals[w + k], dot);
                    b.assign(dot, t);
                }
            }
        });
        let total = summer.sum(b, &[dot])[0];

        let write = |b: &mut KernelBuilder, idx, ys: &[Value<F32>], gs: &[Value<F32>]| {
            let out: Vec<Value<F32>> = ys
                .iter()
                .zip(gs)
                .map(|(&yk, &gk)| {
                    let d = b.sub(gk, total);
                    let p = b.mul(yk, d);
                    b.mul(p, scale)
                })
                .collect();
            dx.store_n(b, idx, access, &out);
        };
        for (active, idx, ys, gs) in &kept {
            b.if_(*active, |b| write(b, *idx, ys, gs));
        }
        for_chunk_groups_rev(b, &row, count, nchunks, 2 * width, |b, slots| {
            let loaded = load_slots(b, slots, 2 * width, 0.0, both);
            for (&(c, active), vals) in slots.iter().zip(loaded) {
                b.if_(active, |b| {
                    let idx = element(b, base, c, width);
                    write(b, idx, &vals[..w], &vals[w..]);
                });
            }
        });
    });
    b.finish()
}
