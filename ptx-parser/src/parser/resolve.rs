//! Names read as symbols are relabelled once a body is complete: a name defined as a label in
//! the function becomes [`Operand::Label`], and a name declared with `.reg` (without `%`)
//! becomes [`Operand::Reg`]. Labels may be used before they are defined, so this is a second
//! pass.

use crate::ast::{AddressBase, Block, Instruction, Operand, RegName, StatementKind};
use std::collections::HashSet;

#[derive(Default)]
struct Names {
    labels: HashSet<String>,
    regs: HashSet<String>,
    ranges: Vec<(String, u32)>,
}

impl Names {
    fn collect(&mut self, block: &Block) {
        for statement in &block.statements {
            match &statement.kind {
                StatementKind::Label(name) => {
                    self.labels.insert(name.clone());
                }
                StatementKind::Reg(decl) => {
                    for name in &decl.names {
                        match name {
                            RegName::Single(n) if !n.starts_with('%') => {
                                self.regs.insert(n.clone());
                            }
                            RegName::Range { prefix, count } if !prefix.starts_with('%') => {
                                self.ranges.push((prefix.clone(), *count));
                            }
                            _ => {}
                        }
                    }
                }
                StatementKind::Block(inner) => self.collect(inner),
                _ => {}
            }
        }
    }

    fn is_reg(&self, name: &str) -> bool {
        self.regs.contains(name)
            || self.ranges.iter().any(|(prefix, count)| {
                name.strip_prefix(prefix.as_str())
                    .filter(|digits| {
                        !digits.is_empty()
                            && digits.bytes().all(|b| b.is_ascii_digit())
                            && (digits.len() == 1 || !digits.starts_with('0'))
                    })
                    .and_then(|digits| digits.parse::<u32>().ok())
                    .is_some_and(|index| index < *count)
            })
    }

    fn operand(&self, operand: &mut Operand) {
        match operand {
            Operand::Symbol(name) if self.labels.contains(name.as_str()) => {
                *operand = Operand::Label(std::mem::take(name));
            }
            Operand::Symbol(name) if self.is_reg(name) => {
                *operand = Operand::Reg(std::mem::take(name));
            }
            Operand::Address(address) => {
                if let AddressBase::Symbol(name) = &mut address.base {
                    if self.is_reg(name) {
                        address.base = AddressBase::Reg(std::mem::take(name));
                    }
                }
            }
            Operand::Vector(items) | Operand::List(items) => {
                items.iter_mut().for_each(|item| self.operand(item));
            }
            Operand::Not(inner) => self.operand(inner),
            Operand::TensorCoords { coords, .. } => {
                coords.iter_mut().for_each(|item| self.operand(item));
            }
            _ => {}
        }
    }

    fn block(&self, block: &mut Block) {
        for statement in &mut block.statements {
            match &mut statement.kind {
                StatementKind::Instruction(instruction) => self.instruction(instruction),
                StatementKind::Block(inner) => self.block(inner),
                _ => {}
            }
            // The copy kept with the source text must match, or the text would look stale.
            if let Some(kept) = statement.verbatim.0.as_deref_mut() {
                if let StatementKind::Instruction(instruction) = &mut kept.0 {
                    self.instruction(instruction);
                }
            }
        }
    }

    fn instruction(&self, instruction: &mut Instruction) {
        instruction
            .operands
            .iter_mut()
            .for_each(|operand| self.operand(operand));
    }
}

/// Relabels the operands of a function body.
pub(super) fn resolve_body(body: &mut Block) {
    let mut names = Names::default();
    names.collect(body);
    if names.labels.is_empty() && names.regs.is_empty() && names.ranges.is_empty() {
        return;
    }
    names.block(body);
}
