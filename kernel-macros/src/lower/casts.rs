//! `as` conversions with Rust semantics.

use super::expr::*;
use super::value::*;
use super::Lowerer;
use crate::diag::{err, DResult};
use crate::dsl_type::{rust_name, scalar_of};
use kernel_dsl::builder::default_cvt_rounding;
use kernel_dsl::ir::{Imm, Operand};
use kernel_dsl::op::Op;
use kernel_dsl::ScalarType;

impl Lowerer<'_> {
    pub(crate) fn cast(&mut self, c: &syn::ExprCast) -> DResult<Value> {
        let to = scalar_of(&c.ty, &self.spec.types)?;
        let v = self.expr(&c.expr, None)?;
        let s = match v {
            Value::IntLit(i) if is_float(to) => return Ok(Value::Scalar(float_imm(i as f64, to))),
            Value::IntLit(i) if is_int(to) => {
                return Ok(Value::Scalar(Scalar {
                    op: Operand::Imm(Imm::Int(wrap_int(i, to))),
                    ty: to,
                }))
            }
            Value::FloatLit(f) if is_float(to) => return Ok(Value::Scalar(float_imm(f, to))),
            other => self.as_scalar(other, None, crate::diag::range(&c.expr))?,
        };
        if let (Some(i), true) = (s.const_int(), is_int(to) && is_int(s.ty)) {
            return Ok(Value::Scalar(Scalar {
                op: Operand::Imm(Imm::Int(wrap_int(i, to))),
                ty: to,
            }));
        }
        Ok(Value::Scalar(self.convert(s, to)?))
    }

    /// Converts a scalar to `to` with Rust `as` semantics.
    pub(crate) fn convert(&mut self, s: Scalar, to: ScalarType) -> DResult<Scalar> {
        let from = s.ty;
        if from == to {
            return Ok(s);
        }
        if to == ScalarType::Pred {
            return err(
                self.span,
                format!(
                    "`as bool` is not allowed: compare instead, e.g. `x != 0` for a `{}`",
                    rust_name(from)
                ),
            );
        }
        let src = self.materialize(&s);
        if from == ScalarType::Pred {
            let d = self.b.reg(to);
            let (one, zero) = if is_float(to) {
                (float_imm(1.0, to), float_imm(0.0, to))
            } else {
                (
                    Scalar {
                        op: Operand::Imm(Imm::Int(1)),
                        ty: to,
                    },
                    Scalar {
                        op: Operand::Imm(Imm::Int(0)),
                        ty: to,
                    },
                )
            };
            let (one, zero) = (self.src(&one), self.src(&zero));
            self.inst(
                Op::Selp { ty: to },
                vec![d.into()],
                vec![one, zero, src.into()],
            );
            return Ok(Scalar::reg(d));
        }
        if is_int(from) && is_int(to) && from.bits() == to.bits() {
            let d = self.b.reg(to);
            self.inst(
                Op::Mov { ty: bits_of(to) },
                vec![d.into()],
                vec![src.into()],
            );
            return Ok(Scalar::reg(d));
        }
        if from == ScalarType::Bf16 {
            // bf16 is the upper half of an f32: pack it above a zero half, which every
            // target can do (`cvt.f32.bf16` needs sm_90), and which ptxas folds into one mask
            // or shift of the word the value was unpacked from.
            let zero = self.b.reg(ScalarType::B16);
            self.inst(
                Op::Mov {
                    ty: ScalarType::B16,
                },
                vec![zero.into()],
                vec![Operand::Imm(Imm::Int(0))],
            );
            let f = self.b.reg(ScalarType::F32);
            self.inst(
                Op::Mov {
                    ty: ScalarType::B32,
                },
                vec![f.into()],
                vec![Operand::Vector(vec![zero.into(), src.into()])],
            );
            return self.convert(Scalar::reg(f), to);
        }
        if (to == ScalarType::Bf16 && from != ScalarType::F32)
            || (to == ScalarType::F16 && from == ScalarType::Bf16)
        {
            let f = self.convert(Scalar::reg(src), ScalarType::F32)?;
            return self.convert(f, to);
        }
        let d = self.b.reg(to);
        let rnd = default_cvt_rounding(to, from);
        self.inst(
            Op::Cvt {
                dst: to,
                src: from,
                rnd,
                ftz: false,
                sat: false,
                relu: false,
            },
            vec![d.into()],
            vec![src.into()],
        );
        if to == ScalarType::Bf16 && from == ScalarType::F32 {
            self.narrowed.insert(d, (src, self.b.region()));
        }
        Ok(Scalar::reg(d))
    }
}
