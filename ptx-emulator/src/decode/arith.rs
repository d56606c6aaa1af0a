//! Decoding of register-to-register instructions: moves, integer and floating-point
//! arithmetic, bit manipulation, comparisons, selects, conversions and transcendentals.

use super::operands::{Frame, Kind};
use crate::error::Error;
use crate::numerics::Fp8;
use crate::numerics::{
    Approx, CvtMode, CvtRounding, CvtType, FloatMode, Half, PrmtMode, RoundedOp, Rounding as R,
};
use crate::program::{BoolCombine, Cmp, CmpTy, FloatOp, HalfOp, IntOp, Op, Slot, Testp, W};
use ptx_parser::{
    BoolOp, CmpOp, Flag, Instruction, Modifier, Opcode, Operand, Rounding, SpecialReg,
    SpecialScalar, Type,
};

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

fn float_rounding(frame: &Frame, r: Option<Rounding>) -> Result<R, Error> {
    Ok(match r {
        None | Some(Rounding::Rn) => R::NearestEven,
        Some(Rounding::Rz) => R::Zero,
        Some(Rounding::Rm) => R::Down,
        Some(Rounding::Rp) => R::Up,
        Some(Rounding::Rna) => R::NearestAway,
        Some(other) => return Err(frame.unsupported(format!("rounding .{other}"))),
    })
}

fn float_mode(frame: &Frame, inst: &Instruction) -> Result<FloatMode, Error> {
    Ok(FloatMode {
        rounding: float_rounding(frame, rounding(inst))?,
        ftz: inst.has_flag(Flag::Ftz),
        sat: inst.has_flag(Flag::Sat),
    })
}

pub(crate) fn mov(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let class = main_class(frame, inst)?;
    let bits_total = match class {
        Class::Int { w, .. } => w.bits(),
        Class::F32 => 32,
        Class::F64 => 64,
        Class::Pred => 1,
        Class::Half { pairs, .. } => {
            if pairs {
                32
            } else {
                16
            }
        }
    };
    match (&ops[0], &ops[1]) {
        (Operand::Vector(parts), src) => {
            let n = parts.len();
            if !(2..=4).contains(&n) {
                return Err(frame.malformed("a vector must have 2 to 4 parts"));
            }
            let s = frame.src(src, Kind::Int(W::B64))?;
            let mut regs = [0; 4];
            for (r, p) in regs.iter_mut().zip(parts) {
                *r = frame.dst(p)?;
            }
            Ok(Op::Unpack {
                s,
                parts: regs,
                n: n as u8,
                bits: (bits_total / n as u32) as u8,
            })
        }
        (d, Operand::Vector(parts)) => {
            let n = parts.len();
            if !(2..=4).contains(&n) {
                return Err(frame.malformed("a vector must have 2 to 4 parts"));
            }
            let bits = bits_total / n as u32;
            let w = match bits {
                8 => W::B8,
                16 => W::B16,
                32 => W::B32,
                _ => W::B64,
            };
            let mut regs = [0; 4];
            for (r, p) in regs.iter_mut().zip(parts) {
                *r = frame.src(p, Kind::Int(w))?;
            }
            Ok(Op::Pack {
                d: frame.dst(d)?,
                parts: regs,
                n: n as u8,
                bits: bits as u8,
            })
        }
        (d, Operand::Special(SpecialReg::Scalar(s))) if is_clock(*s) => {
            let wide = matches!(s, SpecialScalar::Clock64 | SpecialScalar::Globaltimer);
            Ok(Op::Clock {
                d: frame.dst(d)?,
                wide,
            })
        }
        (d, a) => {
            let a = frame.src(a, kind_of(class))?;
            Ok(Op::Mov {
                d: frame.dst(d)?,
                a,
            })
        }
    }
}

fn is_clock(s: SpecialScalar) -> bool {
    matches!(
        s,
        SpecialScalar::Clock
            | SpecialScalar::ClockHi
            | SpecialScalar::Clock64
            | SpecialScalar::Globaltimer
            | SpecialScalar::GlobaltimerLo
            | SpecialScalar::GlobaltimerHi
    )
}

fn wider(w: W) -> W {
    match w {
        W::B8 => W::B16,
        W::B16 => W::B32,
        _ => W::B64,
    }
}

/// Sources `a, b, c` of `ops[1..]` (missing ones become a zero constant).
fn srcs(frame: &mut Frame, ops: &[Operand], kinds: [Kind; 3]) -> Result<[Slot; 3], Error> {
    let mut out = [0; 3];
    for (i, kind) in kinds.into_iter().enumerate() {
        out[i] = match ops.get(i + 1) {
            Some(op) => frame.src(op, kind)?,
            None => frame.konst(0),
        };
    }
    Ok(out)
}

pub(crate) fn arith(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let class = main_class(frame, inst)?;
    let d = frame.dst(&ops[0])?;
    match class {
        Class::Int { w, signed } => int_arith(frame, inst, ops, d, w, signed),
        Class::Pred => Err(frame.unsupported("arithmetic on predicates")),
        Class::F32 | Class::F64 => float_arith(frame, inst, ops, d, class == Class::F64),
        Class::Half { kind, pairs } => {
            let k = kind_of(class);
            let [a, b, c] = srcs(frame, ops, [k, k, k])?;
            let mode = float_mode(frame, inst)?;
            let nan = inst.has_flag(Flag::NaN);
            let op = match inst.opcode {
                Opcode::Add => HalfOp::Rounded(RoundedOp::Add),
                Opcode::Sub => HalfOp::Rounded(RoundedOp::Sub),
                Opcode::Mul => HalfOp::Rounded(RoundedOp::Mul),
                Opcode::Fma | Opcode::Mad => HalfOp::Rounded(RoundedOp::Fma),
                Opcode::Min => HalfOp::Min { nan },
                Opcode::Max => HalfOp::Max { nan },
                Opcode::Neg => HalfOp::Neg,
                Opcode::Abs => HalfOp::Abs,
                _ => return Err(frame.unsupported("this operation on f16/bf16")),
            };
            Ok(Op::Half {
                kind,
                pairs,
                op,
                mode,
                d,
                a,
                b,
                c,
            })
        }
    }
}

fn int_arith(
    frame: &mut Frame,
    inst: &Instruction,
    ops: &[Operand],
    d: Slot,
    w: W,
    signed: bool,
) -> Result<Op, Error> {
    let cc = inst.has_flag(Flag::Cc);
    let hi = inst.has_flag(Flag::Hi);
    let wide = inst.has_flag(Flag::Wide);
    let sat = inst.has_flag(Flag::Sat);
    let k = Kind::Int(w);
    let op = match inst.opcode {
        Opcode::Add if cc => IntOp::AddCc,
        Opcode::Add if sat => IntOp::AddSat,
        Opcode::Add => IntOp::Add,
        Opcode::Sub if cc => IntOp::SubCc,
        Opcode::Sub if sat => IntOp::SubSat,
        Opcode::Sub => IntOp::Sub,
        Opcode::Addc => IntOp::AddC { cc },
        Opcode::Subc => IntOp::SubC { cc },
        Opcode::Mul if wide => IntOp::MulWide,
        Opcode::Mul if hi => IntOp::MulHi,
        Opcode::Mul => IntOp::MulLo,
        Opcode::Mul24 if hi => IntOp::Mul24Hi,
        Opcode::Mul24 => IntOp::Mul24Lo,
        Opcode::Mad24 if hi => return Err(frame.unsupported("mad24.hi")),
        Opcode::Mad24 => IntOp::Mad24Lo,
        Opcode::Mad if wide => IntOp::MadWide,
        Opcode::Mad if cc && hi => IntOp::MadHiCc {
            carry_in: false,
            carry_out: true,
        },
        Opcode::Mad if cc => IntOp::MadLoCc {
            carry_in: false,
            carry_out: true,
        },
        Opcode::Mad if hi => IntOp::MadHi,
        Opcode::Mad => IntOp::MadLo,
        Opcode::Madc if hi => IntOp::MadHiCc {
            carry_in: true,
            carry_out: cc,
        },
        Opcode::Madc => IntOp::MadLoCc {
            carry_in: true,
            carry_out: cc,
        },
        Opcode::Div => IntOp::Div,
        Opcode::Rem => IntOp::Rem,
        Opcode::Min => IntOp::Min,
        Opcode::Max => IntOp::Max,
        Opcode::Abs => IntOp::Abs,
        Opcode::Neg => IntOp::Neg,
        Opcode::Sad => IntOp::Sad,
        _ => return Err(frame.unsupported("this operation on integers")),
    };
    let c_kind = if op == IntOp::MadWide {
        Kind::Int(wider(w))
    } else {
        k
    };
    let [a, b, c] = srcs(frame, ops, [k, k, c_kind])?;
    let e = frame.konst(0);
    Ok(Op::Int {
        op,
        w,
        signed,
        d,
        a,
        b,
        c,
        e,
    })
}

fn float_arith(
    frame: &mut Frame,
    inst: &Instruction,
    ops: &[Operand],
    d: Slot,
    is_f64: bool,
) -> Result<Op, Error> {
    let k = if is_f64 { Kind::F64 } else { Kind::F32 };
    let mut mode = float_mode(frame, inst)?;
    let approx = inst.has_flag(Flag::Approx) || inst.has_flag(Flag::Full);
    if approx {
        // div.approx and div.full are within 2 ulp of IEEE division; the emulator divides exactly.
        mode.rounding = R::NearestEven;
    }
    let rounded = match inst.opcode {
        Opcode::Add => Some(RoundedOp::Add),
        Opcode::Sub => Some(RoundedOp::Sub),
        Opcode::Mul => Some(RoundedOp::Mul),
        Opcode::Fma | Opcode::Mad => Some(RoundedOp::Fma),
        Opcode::Div => Some(RoundedOp::Div),
        _ => None,
    };
    let [a, b, c] = srcs(frame, ops, [k, k, k])?;
    if let Some(rop) = rounded {
        if mode.is_native() {
            let op = match rop {
                RoundedOp::Add => FloatOp::Add,
                RoundedOp::Sub => FloatOp::Sub,
                RoundedOp::Mul => FloatOp::Mul,
                RoundedOp::Fma => FloatOp::Fma,
                _ => FloatOp::Div,
            };
            return Ok(if is_f64 {
                Op::F64 { op, d, a, b, c }
            } else {
                Op::F32 { op, d, a, b, c }
            });
        }
        return Ok(if is_f64 {
            Op::F64Mode {
                op: rop,
                mode,
                d,
                a,
                b,
                c,
            }
        } else {
            Op::F32Mode {
                op: rop,
                mode,
                d,
                a,
                b,
                c,
            }
        });
    }
    let nan = inst.has_flag(Flag::NaN);
    let op = match inst.opcode {
        Opcode::Min if nan => FloatOp::MinNaN,
        Opcode::Max if nan => FloatOp::MaxNaN,
        Opcode::Min => FloatOp::Min,
        Opcode::Max => FloatOp::Max,
        Opcode::Abs => FloatOp::Abs,
        Opcode::Neg => FloatOp::Neg,
        Opcode::Copysign => FloatOp::Copysign,
        _ => return Err(frame.unsupported("this operation on floats")),
    };
    if inst.has_flag(Flag::Xorsign) {
        return Err(frame.unsupported("min/max .xorsign.abs"));
    }
    if is_f64 {
        Ok(Op::F64 { op, d, a, b, c })
    } else if mode.ftz {
        Ok(Op::F32Ftz { op, d, a, b })
    } else {
        Ok(Op::F32 { op, d, a, b, c })
    }
}

pub(crate) fn bits(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let tys = types(inst);
    let class = main_class(frame, inst)?;
    let d = frame.dst(&ops[0])?;
    let (w, signed) = match class {
        Class::Int { w, signed } => (w, signed),
        Class::Pred => (W::B32, false),
        Class::F32 | Class::Half { .. } => (W::B32, false),
        Class::F64 => (W::B64, false),
    };
    let k = Kind::Int(w);
    let u32k = Kind::Int(W::B32);
    let op = match inst.opcode {
        Opcode::Not if class == Class::Pred => IntOp::PredNot,
        Opcode::And => IntOp::And,
        Opcode::Or => IntOp::Or,
        Opcode::Xor => IntOp::Xor,
        Opcode::Not => IntOp::Not,
        Opcode::Cnot => IntOp::Cnot,
        Opcode::Shl => IntOp::Shl,
        Opcode::Shr => IntOp::Shr,
        Opcode::Popc => IntOp::Popc,
        Opcode::Clz => IntOp::Clz,
        Opcode::Brev => IntOp::Brev,
        Opcode::Bfe => IntOp::Bfe,
        Opcode::Bfi => IntOp::Bfi,
        Opcode::Bfind => IntOp::Bfind {
            shift_amount: inst.has_flag(Flag::Shiftamt),
        },
        Opcode::Prmt => IntOp::Prmt(match other_word(inst) {
            None => PrmtMode::Generic,
            Some("f4e") => PrmtMode::F4e,
            Some("b4e") => PrmtMode::B4e,
            Some("rc8") => PrmtMode::Rc8,
            Some("ecl") => PrmtMode::Ecl,
            Some("ecr") => PrmtMode::Ecr,
            Some("rc16") => PrmtMode::Rc16,
            Some(other) => return Err(frame.unsupported(format!("prmt mode .{other}"))),
        }),
        Opcode::Lop3 => IntOp::Lop3,
        Opcode::Shf => IntOp::Shf {
            left: inst.has_flag(Flag::L),
            clamp: inst.has_flag(Flag::Clamp),
        },
        Opcode::Dp4a => {
            let a_signed = tys.first() == Some(&Type::S32);
            let b_signed = tys.get(1) == Some(&Type::S32);
            IntOp::Dp4a { a_signed, b_signed }
        }
        _ => return Err(frame.unsupported("")),
    };
    let kinds = match op {
        IntOp::Shl | IntOp::Shr => [k, u32k, u32k],
        IntOp::Bfe => [k, u32k, u32k],
        IntOp::Bfi => [k, k, u32k],
        _ => [k, k, k],
    };
    let [a, b, c] = srcs(frame, ops, kinds)?;
    let e = match ops.get(4) {
        Some(op) => frame.src(op, u32k)?,
        None => frame.konst(0),
    };
    Ok(Op::Int {
        op,
        w,
        signed,
        d,
        a,
        b,
        c,
        e,
    })
}

fn cmp_of(frame: &Frame, op: CmpOp, class: Class) -> Result<(Cmp, CmpTy), Error> {
    let ty = match class {
        Class::Int { w, signed } => {
            if signed {
                CmpTy::Signed(w)
            } else {
                CmpTy::Unsigned(w)
            }
        }
        Class::Pred => CmpTy::Unsigned(W::B32),
        Class::F32 => CmpTy::F32,
        Class::F64 => CmpTy::F64,
        Class::Half { kind, pairs: false } => CmpTy::Half(kind),
        Class::Half { pairs: true, .. } => return Err(frame.unsupported("packed comparisons")),
    };
    let cmp = match op {
        CmpOp::Eq => Cmp::Eq,
        CmpOp::Ne => Cmp::Ne,
        CmpOp::Lt | CmpOp::Lo => Cmp::Lt,
        CmpOp::Le | CmpOp::Ls => Cmp::Le,
        CmpOp::Gt | CmpOp::Hi => Cmp::Gt,
        CmpOp::Ge | CmpOp::Hs => Cmp::Ge,
        CmpOp::Equ => Cmp::Equ,
        CmpOp::Neu => Cmp::Neu,
        CmpOp::Ltu => Cmp::Ltu,
        CmpOp::Leu => Cmp::Leu,
        CmpOp::Gtu => Cmp::Gtu,
        CmpOp::Geu => Cmp::Geu,
        CmpOp::Num => Cmp::Num,
        CmpOp::Nan => Cmp::Nan,
    };
    // lo/ls/hi/hs compare unsigned whatever the type says.
    let ty = match (op, ty) {
        (CmpOp::Lo | CmpOp::Ls | CmpOp::Hi | CmpOp::Hs, CmpTy::Signed(w)) => CmpTy::Unsigned(w),
        (_, ty) => ty,
    };
    Ok((cmp, ty))
}

pub(crate) fn setp(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 3)?;
    let cmp_op = inst
        .modifiers
        .iter()
        .find_map(|m| match m {
            Modifier::Cmp(c) => Some(*c),
            _ => None,
        })
        .ok_or_else(|| frame.malformed("missing comparison"))?;
    let combine = inst.modifiers.iter().find_map(|m| match m {
        Modifier::Bool(b) => Some(*b),
        _ => None,
    });
    let tys = types(inst);
    let src_ty = if inst.opcode == Opcode::Set {
        tys.get(1).copied()
    } else {
        tys.first().copied()
    };
    let src_ty = src_ty.ok_or_else(|| frame.malformed("missing operand type"))?;
    let class = classify(src_ty).ok_or_else(|| frame.unsupported(format!("type .{src_ty}")))?;
    let (cmp, ty) = cmp_of(frame, cmp_op, class)?;
    let ty = if ty == CmpTy::F32 && inst.has_flag(Flag::Ftz) {
        CmpTy::F32Ftz
    } else {
        ty
    };
    let k = kind_of(class);
    let a = frame.src(&ops[1], k)?;
    let b = frame.src(&ops[2], k)?;
    if inst.opcode == Opcode::Set {
        if combine.is_some() {
            return Err(frame.unsupported("set with a predicate combination"));
        }
        let float_result = tys.first() == Some(&Type::F32);
        let d = frame.dst(&ops[0])?;
        return Ok(Op::Set {
            cmp,
            ty,
            float_result,
            d,
            a,
            b,
        });
    }
    let (p, q) = match &ops[0] {
        Operand::PredPair(p, q) => (frame.reg(p)?, frame.reg(q)?),
        other => (frame.dst(other)?, frame.sink()),
    };
    let (combine, c, c_negated) = match combine {
        None => (BoolCombine::And, frame.konst(1), false),
        Some(b) => {
            let (c, neg) = frame.pred(
                ops.get(3)
                    .ok_or_else(|| frame.malformed("missing predicate operand"))?,
            )?;
            let combine = match b {
                BoolOp::And => BoolCombine::And,
                BoolOp::Or => BoolCombine::Or,
                BoolOp::Xor => BoolCombine::Xor,
            };
            (combine, c, neg)
        }
    };
    Ok(Op::Setp {
        cmp,
        ty,
        combine,
        c_negated,
        p,
        q,
        a,
        b,
        c,
    })
}

pub(crate) fn select(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 4)?;
    let tys = types(inst);
    let class = main_class(frame, inst)?;
    let k = kind_of(class);
    let d = frame.dst(&ops[0])?;
    let a = frame.src(&ops[1], k)?;
    let b = frame.src(&ops[2], k)?;
    if inst.opcode == Opcode::Selp {
        let (p, neg) = frame.pred(&ops[3])?;
        return Ok(if neg {
            Op::Selp { d, a: b, b: a, p }
        } else {
            Op::Selp { d, a, b, p }
        });
    }
    let float_c = tys.get(1) == Some(&Type::F32);
    let c = frame.src(
        &ops[3],
        if float_c {
            Kind::F32
        } else {
            Kind::Int(W::B32)
        },
    )?;
    Ok(Op::Slct {
        d,
        a,
        b,
        c,
        float_c,
    })
}

fn cvt_type(frame: &Frame, t: Type) -> Result<CvtType, Error> {
    use Type::*;
    Ok(match t {
        U8 | B8 => CvtType::U8,
        U16 | B16 => CvtType::U16,
        U32 | B32 => CvtType::U32,
        U64 | B64 => CvtType::U64,
        S8 => CvtType::S8,
        S16 => CvtType::S16,
        S32 => CvtType::S32,
        S64 => CvtType::S64,
        F16 => CvtType::F16,
        Bf16 => CvtType::Bf16,
        Tf32 => CvtType::Tf32,
        F32 => CvtType::F32,
        F64 => CvtType::F64,
        other => return Err(frame.unsupported(format!("conversion with .{other}"))),
    })
}

fn cvt_kind(t: CvtType) -> Kind {
    match t {
        CvtType::F32 | CvtType::Tf32 => Kind::F32,
        CvtType::F64 => Kind::F64,
        CvtType::U8 | CvtType::S8 => Kind::Int(W::B8),
        CvtType::U16 | CvtType::S16 | CvtType::F16 | CvtType::Bf16 => Kind::Int(W::B16),
        CvtType::U32 | CvtType::S32 => Kind::Int(W::B32),
        CvtType::U64 | CvtType::S64 => Kind::Int(W::B64),
    }
}

pub(crate) fn cvt(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let tys = types(inst);
    if tys.len() != 2 {
        return Err(frame.malformed("cvt needs a destination and a source type"));
    }
    let rounding = match rounding(inst) {
        None => CvtRounding::Default,
        Some(r @ (Rounding::Rn | Rounding::Rz | Rounding::Rm | Rounding::Rp | Rounding::Rna)) => {
            CvtRounding::Float(float_rounding(frame, Some(r))?)
        }
        Some(Rounding::Rni) => CvtRounding::Integer(R::NearestEven),
        Some(Rounding::Rzi) => CvtRounding::Integer(R::Zero),
        Some(Rounding::Rmi) => CvtRounding::Integer(R::Down),
        Some(Rounding::Rpi) => CvtRounding::Integer(R::Up),
        Some(other) => return Err(frame.unsupported(format!("rounding .{other}"))),
    };
    let mode = CvtMode {
        rounding,
        ftz: inst.has_flag(Flag::Ftz),
        sat: inst.has_flag(Flag::Sat),
        relu: inst.has_flag(Flag::Relu),
        satfinite: inst.has_flag(Flag::Satfinite),
    };
    let d = frame.dst(&ops[0])?;
    let fp8 = |t: Type| match t {
        Type::E4m3x2 => Some(Fp8::E4m3),
        Type::E5m2x2 => Some(Fp8::E5m2),
        _ => None,
    };
    if let Some(to) = fp8(tys[0]) {
        return match tys[1] {
            Type::F32 => {
                let ops = operands(frame, inst, 3)?;
                let a = frame.src(&ops[1], Kind::F32)?;
                let b = frame.src(&ops[2], Kind::F32)?;
                Ok(Op::CvtToFp8Pair {
                    to,
                    satfinite: mode.satfinite,
                    relu: mode.relu,
                    d,
                    a,
                    b,
                })
            }
            Type::F16x2 => {
                let a = frame.src(&ops[1], Kind::Int(W::B32))?;
                Ok(Op::CvtHalf2ToFp8Pair {
                    to,
                    satfinite: mode.satfinite,
                    relu: mode.relu,
                    d,
                    a,
                })
            }
            other => Err(frame.unsupported(format!("conversion from .{other} to fp8"))),
        };
    }
    if let (Type::F16x2, Some(from)) = (tys[0], fp8(tys[1])) {
        let a = frame.src(&ops[1], Kind::Int(W::B16))?;
        return Ok(Op::CvtFp8PairToHalf2 {
            from,
            relu: mode.relu,
            d,
            a,
        });
    }
    if matches!(tys[0], Type::F16x2 | Type::Bf16x2) {
        if tys[1] != Type::F32 {
            return Err(frame.unsupported("packed conversion from a type other than f32"));
        }
        let to = if tys[0] == Type::F16x2 {
            CvtType::F16
        } else {
            CvtType::Bf16
        };
        let ops = operands(frame, inst, 3)?;
        let a = frame.src(&ops[1], Kind::F32)?;
        let b = frame.src(&ops[2], Kind::F32)?;
        return Ok(Op::CvtPack { to, mode, d, a, b });
    }
    let to = cvt_type(frame, tys[0])?;
    let from = cvt_type(frame, tys[1])?;
    let a = frame.src(&ops[1], cvt_kind(from))?;
    Ok(Op::Cvt {
        from,
        to,
        mode,
        d,
        a,
    })
}

pub(crate) fn transcendental(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let class = main_class(frame, inst)?;
    let d = frame.dst(&ops[0])?;
    let a = frame.src(&ops[1], kind_of(class))?;
    let approx = inst.has_flag(Flag::Approx);
    let func = match inst.opcode {
        Opcode::Ex2 => Approx::Ex2,
        Opcode::Lg2 => Approx::Lg2,
        Opcode::Rsqrt => Approx::Rsqrt,
        Opcode::Rcp => Approx::Rcp,
        Opcode::Sqrt => Approx::Sqrt,
        Opcode::Sin => Approx::Sin,
        Opcode::Cos => Approx::Cos,
        _ => Approx::Tanh,
    };
    let mode = float_mode(frame, inst)?;
    match class {
        Class::F32 if approx => Ok(Op::Approx32 {
            func,
            ftz: mode.ftz,
            d,
            a,
        }),
        Class::F32 => {
            let op = match func {
                Approx::Sqrt => RoundedOp::Sqrt,
                Approx::Rcp => RoundedOp::Rcp,
                _ => return Err(frame.malformed("this function exists only as .approx")),
            };
            let zero = frame.konst(0);
            Ok(Op::F32Mode {
                op,
                mode,
                d,
                a,
                b: zero,
                c: zero,
            })
        }
        Class::F64 if approx => Ok(Op::Approx64 { func, d, a }),
        Class::F64 => {
            let op = match func {
                Approx::Sqrt => RoundedOp::Sqrt,
                Approx::Rcp => RoundedOp::Rcp,
                _ => return Err(frame.malformed("this function exists only as .approx")),
            };
            let zero = frame.konst(0);
            Ok(Op::F64Mode {
                op,
                mode,
                d,
                a,
                b: zero,
                c: zero,
            })
        }
        Class::Half { kind, pairs } => {
            let op = match func {
                Approx::Ex2 => HalfOp::Ex2,
                Approx::Tanh => HalfOp::Tanh,
                _ => return Err(frame.unsupported("this function on f16/bf16")),
            };
            Ok(Op::Half {
                kind,
                pairs,
                op,
                mode,
                d,
                a,
                b: a,
                c: a,
            })
        }
        _ => Err(frame.unsupported("this type")),
    }
}

pub(crate) fn testp(frame: &mut Frame, inst: &Instruction) -> Result<Op, Error> {
    let ops = operands(frame, inst, 2)?;
    let class = main_class(frame, inst)?;
    let test = match other_word(inst) {
        Some("finite") => Testp::Finite,
        Some("infinite") => Testp::Infinite,
        Some("number") => Testp::Number,
        Some("notanumber") => Testp::NotANumber,
        Some("normal") => Testp::Normal,
        Some("subnormal") => Testp::Subnormal,
        _ => return Err(frame.unsupported("testp mode")),
    };
    let d = frame.dst(&ops[0])?;
    let a = frame.src(&ops[1], kind_of(class))?;
    Ok(Op::Testp {
        test,
        f64: class == Class::F64,
        d,
        a,
    })
}
