//! The read-modify-write of `atom` and `red`.

use crate::numerics::{flush_f32, half_op, FloatMode, Half, RoundedOp};
use crate::program::{AtomOp, AtomTy};

pub(crate) fn atom_apply(op: AtomOp, ty: AtomTy, old: u64, b: u64, c: u64) -> u64 {
    let signed = matches!(ty, AtomTy::S32 | AtomTy::S64);
    let wide = ty.bytes() == 8;
    let mask = match ty.bytes() {
        8 => u64::MAX,
        2 => 0xffff,
        _ => 0xffff_ffff,
    };
    let (o, bb) = (old & mask, b & mask);
    let sx = |v: u64| {
        if wide {
            v as i64
        } else {
            v as u32 as i32 as i64
        }
    };
    match (op, ty) {
        (AtomOp::Add, AtomTy::F32) => {
            let r = flush_f32(
                flush_f32(f32::from_bits(o as u32)) + flush_f32(f32::from_bits(bb as u32)),
            );
            r.to_bits() as u64
        }
        (AtomOp::Add, AtomTy::F64) => (f64::from_bits(o) + f64::from_bits(bb)).to_bits(),
        (AtomOp::Add, AtomTy::F16x2 | AtomTy::Bf16x2 | AtomTy::F16 | AtomTy::Bf16) => {
            let kind = if matches!(ty, AtomTy::F16x2 | AtomTy::F16) {
                Half::F16
            } else {
                Half::Bf16
            };
            let add = |x: u64, y: u64| {
                half_op(
                    kind,
                    RoundedOp::Add,
                    FloatMode::NEAREST,
                    x as u16,
                    y as u16,
                    0,
                ) as u64
            };
            let lo = add(o, bb);
            if matches!(ty, AtomTy::F16 | AtomTy::Bf16) {
                lo
            } else {
                (add(o >> 16, bb >> 16) << 16) | lo
            }
        }
        (AtomOp::Add, _) => o.wrapping_add(bb) & mask,
        (AtomOp::Min, _) => {
            if signed {
                sx(o).min(sx(bb)) as u64 & mask
            } else {
                o.min(bb)
            }
        }
        (AtomOp::Max, _) => {
            if signed {
                sx(o).max(sx(bb)) as u64 & mask
            } else {
                o.max(bb)
            }
        }
        (AtomOp::Exch, _) => bb,
        (AtomOp::Cas, _) => {
            if o == bb {
                c & mask
            } else {
                o
            }
        }
        (AtomOp::And, _) => o & bb,
        (AtomOp::Or, _) => o | bb,
        (AtomOp::Xor, _) => o ^ bb,
        (AtomOp::Inc, _) => {
            if o >= bb {
                0
            } else {
                o + 1
            }
        }
        (AtomOp::Dec, _) => {
            if o == 0 || o > bb {
                bb
            } else {
                o - 1
            }
        }
    }
}
