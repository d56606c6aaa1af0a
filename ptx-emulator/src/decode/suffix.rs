//! What an instruction's dotted words say: type classes, rounding modes, operand counts.

use super::operands::{Frame, Kind};
use crate::error::Error;
use crate::numerics::{FloatMode, Half, Rounding as R};
use crate::program::W;
use ptx_parser::{Flag, Instruction, Modifier, Operand, Rounding, Type};

/// What a type suffix says about how to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Int { w: W, signed: bool },
    Pred,
    F32,
    F64,
    Half { kind: Half, pairs: bool },
}

pub(crate) fn classify(t: Type) -> Option<Class> {
    use Type::*;
    Some(match t {
        Pred => Class::Pred,
        B8 | U8 => Class::Int {
            w: W::B8,
            signed: false,
        },
        S8 => Class::Int {
            w: W::B8,
            signed: true,
        },
        B16 | U16 => Class::Int {
            w: W::B16,
            signed: false,
        },
        S16 => Class::Int {
            w: W::B16,
            signed: true,
        },
        B32 | U32 => Class::Int {
            w: W::B32,
            signed: false,
        },
        S32 => Class::Int {
            w: W::B32,
            signed: true,
        },
        B64 | U64 => Class::Int {
            w: W::B64,
            signed: false,
        },
        S64 => Class::Int {
            w: W::B64,
            signed: true,
        },
        F32 => Class::F32,
        F64 => Class::F64,
        F16 => Class::Half {
            kind: Half::F16,
            pairs: false,
        },
        F16x2 => Class::Half {
            kind: Half::F16,
            pairs: true,
        },
        Bf16 => Class::Half {
            kind: Half::Bf16,
            pairs: false,
        },
        Bf16x2 => Class::Half {
            kind: Half::Bf16,
            pairs: true,
        },
        _ => return None,
    })
}

pub(crate) fn kind_of(class: Class) -> Kind {
    match class {
        Class::Int { w, .. } => Kind::Int(w),
        Class::Pred => Kind::Int(W::B32),
        Class::F32 => Kind::F32,
        Class::F64 => Kind::F64,
        Class::Half { pairs: true, .. } => Kind::Int(W::B32),
        Class::Half { pairs: false, .. } => Kind::Int(W::B16),
    }
}

pub(crate) fn types(inst: &Instruction) -> Vec<Type> {
    inst.modifiers
        .iter()
        .filter_map(|m| match m {
            Modifier::Type(t) => Some(*t),
            _ => None,
        })
        .collect()
}

pub(crate) fn rounding(inst: &Instruction) -> Option<Rounding> {
    inst.modifiers.iter().find_map(|m| match m {
        Modifier::Rounding(r) => Some(*r),
        _ => None,
    })
}

pub(crate) fn other_word(inst: &Instruction) -> Option<&str> {
    inst.modifiers.iter().find_map(|m| match m {
        Modifier::Other(w) => Some(w.as_str()),
        _ => None,
    })
}

pub(crate) fn operands<'a>(
    frame: &Frame,
    inst: &'a Instruction,
    n: usize,
) -> Result<&'a [Operand], Error> {
    if inst.operands.len() < n {
        return Err(frame.malformed(format!(
            "expected {n} operands, found {}",
            inst.operands.len()
        )));
    }
    Ok(&inst.operands)
}

pub(crate) fn main_class(frame: &Frame, inst: &Instruction) -> Result<Class, Error> {
    let t = inst
        .ty()
        .ok_or_else(|| frame.malformed("the instruction has no type suffix"))?;
    classify(t).ok_or_else(|| frame.unsupported(format!("type .{t}")))
}

pub(crate) fn float_rounding(frame: &Frame, r: Option<Rounding>) -> Result<R, Error> {
    Ok(match r {
        None | Some(Rounding::Rn) => R::NearestEven,
        Some(Rounding::Rz) => R::Zero,
        Some(Rounding::Rm) => R::Down,
        Some(Rounding::Rp) => R::Up,
        Some(Rounding::Rna) => R::NearestAway,
        Some(other) => return Err(frame.unsupported(format!("rounding .{other}"))),
    })
}

pub(crate) fn float_mode(frame: &Frame, inst: &Instruction) -> Result<FloatMode, Error> {
    Ok(FloatMode {
        rounding: float_rounding(frame, rounding(inst))?,
        ftz: inst.has_flag(Flag::Ftz),
        sat: inst.has_flag(Flag::Sat),
    })
}
