//! Declarations: variables, parameters, registers, initializers.

use super::Parser;
use crate::ast::{
    Initializer, Linkage, Param, PtrAttr, RegDecl, RegName, StateSpace, Type, VarDecl, VectorWidth,
};
use crate::error::Error;
use crate::lexer::Tok;

const TYPE_HELP: &str = "name a PTX type such as .b32, .u64, .f32 or .pred";

/// Whether `word` starts a variable declaration.
pub(super) fn is_var_space(word: &str) -> bool {
    matches!(word, "global" | "shared" | "const" | "local" | "param")
}

impl Parser<'_> {
    /// `.align N`, if present.
    fn align(&mut self) -> Result<Option<u32>, Error> {
        if self.eat_dot("align") {
            Ok(Some(self.u32_value("an alignment in bytes")?))
        } else {
            Ok(None)
        }
    }

    fn vector(&mut self) -> Option<VectorWidth> {
        let token = self.peek();
        let width = (token.kind == Tok::Dot)
            .then(|| VectorWidth::from_word(&token.text[1..]))
            .flatten();
        if width.is_some() {
            self.advance();
        }
        width
    }

    pub(super) fn ty(&mut self) -> Result<Type, Error> {
        let token = self.peek();
        let ty = (token.kind == Tok::Dot)
            .then(|| Type::from_word(&token.text[1..]))
            .flatten();
        match ty {
            Some(ty) => {
                self.advance();
                Ok(ty)
            }
            None => Err(self.error("a type", TYPE_HELP)),
        }
    }

    fn state_space(&mut self) -> Result<StateSpace, Error> {
        let token = self.peek();
        let space = (token.kind == Tok::Dot)
            .then(|| StateSpace::from_word(&token.text[1..]))
            .flatten();
        match space {
            Some(space) => {
                self.advance();
                Ok(space)
            }
            None => Err(self.error(
                "a state space",
                "name a state space such as .global, .shared, .const, .local or .param",
            )),
        }
    }

    /// `.align` and vector width in either order, then the type.
    fn align_vector_type(&mut self) -> Result<(Option<u32>, Option<VectorWidth>, Type), Error> {
        let mut align = self.align()?;
        let vector = self.vector();
        if align.is_none() {
            align = self.align()?;
        }
        Ok((align, vector, self.ty()?))
    }

    /// `[linkage] .space [.align N] [.vN] .type name[dims] [= init];` (linkage already read).
    pub(super) fn var_decl(&mut self, linkage: Option<Linkage>) -> Result<VarDecl, Error> {
        let space = self.state_space()?;
        let (align, vector, ty) = self.align_vector_type()?;
        let name = self
            .expect_ident("a variable name", "name the variable after its type")?
            .text
            .to_string();
        let mut array = Vec::new();
        while self.eat_punct('[') {
            if self.eat_punct(']') {
                array.push(None);
                continue;
            }
            let start = self.peek();
            let lit = self.int_lit()?;
            if lit.negative {
                return Err(self.error_at(start, "an array length", "use a positive length"));
            }
            array.push(Some(lit.magnitude));
            self.expect_punct(']', "close the array length with `]`")?;
        }
        let init = if self.eat_punct('=') {
            Some(self.initializer()?)
        } else {
            None
        };
        self.expect_punct(';', "end the declaration with `;`")?;
        Ok(VarDecl {
            linkage,
            space,
            align,
            vector,
            ty,
            name,
            array,
            init,
        })
    }

    fn initializer(&mut self) -> Result<Initializer, Error> {
        let token = self.peek();
        if token.is_punct('{') {
            self.advance();
            self.enter()?;
            let mut items = Vec::new();
            if !self.peek().is_punct('}') {
                loop {
                    items.push(self.initializer()?);
                    if !self.eat_punct(',') {
                        break;
                    }
                }
            }
            self.expect_punct(
                '}',
                "separate initializer values with `,` and close with `}`",
            )?;
            self.leave();
            return Ok(Initializer::List(items));
        }
        if token.kind == Tok::Ident {
            self.advance();
            if token.text == "generic" && self.eat_punct('(') {
                let name = self.expect_ident("a symbol name", "write generic(symbol)")?;
                self.expect_punct(')', "close generic( with `)`")?;
                return Ok(Initializer::Generic(name.text.to_string()));
            }
            let offset = if self.eat_punct('+') || self.peek().is_punct('-') {
                Some(self.offset_value()?)
            } else {
                None
            };
            return Ok(Initializer::Symbol {
                name: token.text.to_string(),
                offset,
            });
        }
        if token.is_punct('-') || token.kind == Tok::Number {
            return Ok(Initializer::Imm(self.immediate()?));
        }
        Err(self.error(
            "an initializer value",
            "initialize with a number, a symbol, generic(symbol) or a {...} list",
        ))
    }

    /// `.param [.align N] .type [.ptr[.space][.align N]] name[[N]]`, or `.reg .type name`.
    pub(super) fn param(&mut self, leading: Option<String>) -> Result<Param, Error> {
        let space = if self.eat_dot("param") {
            StateSpace::Param
        } else if self.eat_dot("reg") {
            StateSpace::Reg
        } else {
            return Err(self.error(
                "`.param` or `.reg`",
                "declare each parameter as `.param .type name`",
            ));
        };
        let (align, vector, ty) = self.align_vector_type()?;
        let ptr = if self.eat_dot("ptr") {
            let mut attr = PtrAttr {
                space: None,
                align: None,
            };
            let token = self.peek();
            if token.kind == Tok::Dot && !self.at_dot("align") {
                attr.space = Some(self.state_space()?);
            }
            attr.align = self.align()?;
            Some(attr)
        } else {
            None
        };
        let name = self
            .expect_ident("a parameter name", "name the parameter after its type")?
            .text
            .to_string();
        let array = if self.eat_punct('[') {
            let start = self.peek();
            let lit = self.int_lit()?;
            if lit.negative {
                return Err(self.error_at(start, "an array length", "use a positive length"));
            }
            self.expect_punct(']', "close the array length with `]`")?;
            Some(lit.magnitude)
        } else {
            None
        };
        Ok(Param {
            leading,
            space,
            align,
            vector,
            ty,
            ptr,
            name,
            array,
        })
    }

    /// `.reg [.vN] .type names;` (the `.reg` already read).
    pub(super) fn reg_decl(&mut self) -> Result<RegDecl, Error> {
        let vector = self.vector();
        let ty = self.ty()?;
        let gap = Some(self.peek().trivia.to_string());
        let mut names = Vec::new();
        loop {
            let name = self
                .expect_ident("a register name", "declare registers as %r<N> or %name")?
                .text
                .to_string();
            if self.peek().is_punct('<') {
                self.advance();
                let count = self.u32_value("a register count")?;
                self.expect_punct('>', "close the register count with `>`")?;
                names.push(RegName::Range {
                    prefix: name,
                    count,
                });
            } else {
                names.push(RegName::Single(name));
            }
            if !self.eat_punct(',') {
                break;
            }
        }
        self.expect_punct(';', "end the register declaration with `;`")?;
        Ok(RegDecl {
            vector,
            ty,
            gap,
            names,
        })
    }
}
