//! Instructions: guard, opcode, modifiers, operands.

use super::Parser;
use crate::ast::{
    Address, AddressBase, AtomicOp, BoolOp, CacheOp, CmpOp, Dim, Flag, Guard, Instruction,
    MemOrder, Modifier, Opcode, Operand, Rounding, Scope, Shape, SpecialReg, SpecialScalar,
    SpecialVector, StateSpace, Type, VectorWidth,
};
use crate::error::Error;
use crate::lexer::Tok;

/// Longest compound opcode, in dotted words (`cp.async.bulk.commit_group`).
const MAX_OPCODE_WORDS: usize = 4;

/// Which words an opcode's modifiers may mean besides the common ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Compare,
    Atomic,
    Plain,
}

fn context(opcode: &Opcode) -> Context {
    match opcode {
        Opcode::Setp | Opcode::Set => Context::Compare,
        Opcode::Atom
        | Opcode::Red
        | Opcode::Redux
        | Opcode::Bar
        | Opcode::Barrier
        | Opcode::CpReduceAsyncBulk => Context::Atomic,
        _ => Context::Plain,
    }
}

/// Types a modifier word in the context of its opcode.
fn classify(word: &str, context: Context) -> Modifier {
    if let Some(t) = Type::from_word(word) {
        return Modifier::Type(t);
    }
    if let Some(s) = StateSpace::from_word(word) {
        return Modifier::Space(s);
    }
    if let Some(v) = VectorWidth::from_word(word) {
        return Modifier::Vector(v);
    }
    if let Some(r) = Rounding::from_word(word) {
        return Modifier::Rounding(r);
    }
    match context {
        Context::Compare => {
            if let Some(c) = CmpOp::from_word(word) {
                return Modifier::Cmp(c);
            }
            if let Some(b) = BoolOp::from_word(word) {
                return Modifier::Bool(b);
            }
        }
        Context::Atomic => {
            if let Some(a) = AtomicOp::from_word(word) {
                return Modifier::Atomic(a);
            }
        }
        Context::Plain => {}
    }
    if let Some(c) = CacheOp::from_word(word) {
        return Modifier::Cache(c);
    }
    if let Some(o) = MemOrder::from_word(word) {
        return Modifier::Order(o);
    }
    if let Some(s) = Scope::from_word(word) {
        return Modifier::Scope(s);
    }
    if let Some(s) = Shape::from_word(word) {
        return Modifier::Shape(s);
    }
    if let Some(f) = Flag::from_word(word) {
        return Modifier::Flag(f);
    }
    Modifier::Other(word.to_string())
}

impl Parser<'_> {
    pub(super) fn instruction(&mut self) -> Result<Instruction, Error> {
        let guard = if self.eat_punct('@') {
            let negated = self.eat_punct('!');
            let reg = self.expect_ident(
                "a predicate register",
                "guard an instruction with @%p1 or @!%p1",
            )?;
            Some(Guard {
                negated,
                reg: reg.text.to_string(),
            })
        } else {
            None
        };
        let head = self.expect_ident("an opcode", "write an instruction as `opcode operands;`")?;
        let mut words = vec![head.text];
        while self.peek().kind == Tok::Dot && self.peek().adjacent() {
            words.push(&self.advance().text[1..]);
        }
        let taken = (2..=words.len().min(MAX_OPCODE_WORDS))
            .rev()
            .find(|&n| Opcode::is_known(&words[..n].join(".")))
            .unwrap_or(1);
        let opcode = Opcode::from_word(&words[..taken].join("."));
        let ctx = context(&opcode);
        let modifiers = words[taken..].iter().map(|w| classify(w, ctx)).collect();
        let gap = Some(self.peek().trivia.to_string());
        let mut operands = Vec::new();
        if !self.peek().is_punct(';') {
            loop {
                operands.push(self.operand()?);
                if !self.eat_punct(',') {
                    break;
                }
            }
        }
        self.expect_punct(
            ';',
            "separate operands with `,` and end the instruction with `;`",
        )?;
        Ok(Instruction {
            guard,
            opcode,
            modifiers,
            gap,
            operands,
        })
    }

    fn operand(&mut self) -> Result<Operand, Error> {
        let token = self.peek();
        match token.kind {
            Tok::Punct('{') => self.operand_list('{', '}').map(Operand::Vector),
            Tok::Punct('(') => self.operand_list('(', ')').map(Operand::List),
            Tok::Punct('[') => self.address(),
            Tok::Punct('!') => {
                self.advance();
                self.enter()?;
                let inner = self.operand()?;
                self.leave();
                Ok(Operand::Not(Box::new(inner)))
            }
            Tok::Punct('-') | Tok::Number => self.immediate().map(Operand::Imm),
            Tok::Ident => {
                self.advance();
                if let Some(special) = self.special_reg(token.text) {
                    return Ok(Operand::Special(special));
                }
                if self.eat_punct('|') {
                    let second = self.expect_ident(
                        "a second destination register after `|`",
                        "write a paired destination as %r1|%p1",
                    )?;
                    return Ok(Operand::PredPair(
                        token.text.to_string(),
                        second.text.to_string(),
                    ));
                }
                if token.text == "_" {
                    Ok(Operand::Sink)
                } else if token.text.starts_with('%') {
                    Ok(Operand::Reg(token.text.to_string()))
                } else {
                    Ok(Operand::Symbol(token.text.to_string()))
                }
            }
            _ => Err(self.error(
                "an operand",
                "operands are registers, numbers, [addresses], {vectors} or names",
            )),
        }
    }

    /// Reads `%tid.x`-style special registers (the name already read).
    fn special_reg(&mut self, name: &str) -> Option<SpecialReg> {
        let word = name.strip_prefix('%')?;
        if let Some(vector) = SpecialVector::from_word(word) {
            let next = self.peek();
            let dim = (next.kind == Tok::Dot && next.adjacent())
                .then(|| Dim::from_word(&next.text[1..]))
                .flatten()?;
            self.advance();
            return Some(SpecialReg::Vector(vector, dim));
        }
        SpecialScalar::from_word(word).map(SpecialReg::Scalar)
    }

    fn operand_list(&mut self, open: char, close: char) -> Result<Vec<Operand>, Error> {
        self.advance();
        self.enter()?;
        let mut items = Vec::new();
        if !self.peek().is_punct(close) {
            loop {
                items.push(self.operand()?);
                if !self.eat_punct(',') {
                    break;
                }
            }
        }
        if items.is_empty() && open == '{' {
            return Err(self.error("an operand", "a vector operand holds at least one register"));
        }
        self.expect_punct(
            close,
            &format!("separate the operands with `,` and close the `{open}` with `{close}`"),
        )?;
        self.leave();
        Ok(items)
    }

    /// `[base]`, `[base+offset]`, `[base-offset]`, or a tensor map with coordinates
    /// `[map, {c0, c1}]`.
    fn address(&mut self) -> Result<Operand, Error> {
        self.advance();
        let token = self.peek();
        let base = match token.kind {
            Tok::Ident => {
                self.advance();
                if token.text.starts_with('%') {
                    AddressBase::Reg(token.text.to_string())
                } else {
                    AddressBase::Symbol(token.text.to_string())
                }
            }
            Tok::Number => AddressBase::Imm(self.int_lit()?),
            _ => {
                return Err(self.error(
                    "a register, a name or a number inside `[ ]`",
                    "write an address as [%rd1], [%rd1+16] or [name]",
                ))
            }
        };
        if let (true, AddressBase::Reg(map) | AddressBase::Symbol(map)) =
            (self.peek().is_punct(','), &base)
        {
            let map = map.clone();
            self.advance();
            if !self.peek().is_punct('{') {
                return Err(self.error(
                    "`{` opening the tensor coordinates",
                    "write a tensor address as [%rd1, {%r1, %r2}]",
                ));
            }
            let coords = self.operand_list('{', '}')?;
            self.expect_punct(']', "close the tensor address with `]`")?;
            return Ok(Operand::TensorCoords { map, coords });
        }
        let offset = if self.eat_punct('+') || self.peek().is_punct('-') {
            Some(self.offset_value()?)
        } else {
            None
        };
        self.expect_punct(']', "close the address with `]`")?;
        Ok(Operand::Address(Address { base, offset }))
    }
}
