//! Top-level items: header directives, variables, functions, other directives.

use super::Parser;
use crate::ast::{
    Item, ItemKind, Linkage, Module, RawDirective, TargetDirective, Verbatim, Version,
};
use crate::error::Error;
use crate::lexer::Tok;

impl Parser<'_> {
    pub(super) fn module(&mut self) -> Result<Module, Error> {
        let mut items = Vec::new();
        loop {
            let token = self.peek();
            if token.kind == Tok::Eof {
                return Ok(Module {
                    items,
                    trailing: Some(token.trivia.to_string()),
                });
            }
            let leading = self.leading();
            let first = self.pos;
            let kind = self.item(first)?;
            let verbatim = match &kind {
                ItemKind::Function(_) => Verbatim::none(),
                other => Verbatim::new(other.clone(), self.text_since(first)),
            };
            items.push(Item {
                leading,
                kind,
                verbatim,
            });
        }
    }

    fn item(&mut self, first: usize) -> Result<ItemKind, Error> {
        let token = self.peek();
        if token.kind != Tok::Dot {
            return Err(self.error(
                "a directive such as `.version`, `.target`, `.global` or `.entry`",
                "every top-level line of PTX starts with a directive",
            ));
        }
        match &token.text[1..] {
            "version" => {
                self.advance();
                self.version().map(ItemKind::Version)
            }
            "target" => {
                self.advance();
                self.target().map(ItemKind::Target)
            }
            "address_size" => {
                self.advance();
                let bits = self.u32_value("an address size (32 or 64)")?;
                Ok(ItemKind::AddressSize(bits))
            }
            "entry" | "func" => self.function(None, first).map(ItemKind::Function),
            word => match linkage(word) {
                Some(link) => {
                    self.advance();
                    if self.at_dot("entry") || self.at_dot("func") {
                        self.function(Some(link), first).map(ItemKind::Function)
                    } else {
                        self.var_decl(Some(link)).map(ItemKind::Variable)
                    }
                }
                None if super::decl::is_var_space(word) => {
                    self.var_decl(None).map(ItemKind::Variable)
                }
                None => self.raw_directive().map(ItemKind::Directive),
            },
        }
    }

    fn version(&mut self) -> Result<Version, Error> {
        let token = self.peek();
        let parsed = (token.kind == Tok::Number)
            .then(|| token.text.split_once('.'))
            .flatten()
            .and_then(|(major, minor)| {
                let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                if !all_digits(major) || !all_digits(minor) {
                    return None;
                }
                Some(Version {
                    major: major.parse().ok()?,
                    minor: minor.parse().ok()?,
                })
            });
        match parsed {
            Some(version) => {
                self.advance();
                Ok(version)
            }
            None => Err(self.error(
                "a PTX ISA version such as `7.8`",
                "write the version as major.minor",
            )),
        }
    }

    fn target(&mut self) -> Result<TargetDirective, Error> {
        let mut names = Vec::new();
        loop {
            let name = self.expect_ident(
                "a target name such as `sm_90a`",
                "write `.target sm_XX` with optional `, texmode_independent` or `, debug`",
            )?;
            names.push(name.text.to_string());
            if !self.eat_punct(',') {
                return Ok(TargetDirective { names });
            }
        }
    }

    /// A directive kept as tokens: `.file`/`.loc` end at the end of their line, `.section` at
    /// the end of its `{ }` block, everything else at `;`.
    pub(super) fn raw_directive(&mut self) -> Result<RawDirective, Error> {
        let start = self.advance();
        let name = start.text[1..].to_string();
        let mut body = String::new();
        // Tokens keep their order; whitespace between them becomes one newline (where the
        // input broke the line) or one space, so multi-line `.section` blocks stay readable.
        let mut push = |token: crate::lexer::Token<'_>| {
            if !body.is_empty() && !token.adjacent() {
                body.push(if token.trivia.contains('\n') {
                    '\n'
                } else {
                    ' '
                });
            }
            body.push_str(token.text);
        };
        let mut semicolon = false;
        match name.as_str() {
            "file" | "loc" => loop {
                let token = self.peek();
                if token.kind == Tok::Eof || token.trivia.contains('\n') {
                    break;
                }
                self.advance();
                push(token);
            },
            _ => {
                let mut depth = 0usize;
                loop {
                    let token = self.peek();
                    if token.kind == Tok::Eof {
                        return Err(self.error(
                            "`;` ending this directive",
                            &format!("end the `.{name}` directive with `;`"),
                        ));
                    }
                    if depth == 0 && token.is_punct(';') {
                        self.advance();
                        semicolon = true;
                        break;
                    }
                    if depth == 0 && token.is_punct('}') {
                        return Err(self.error(
                            "`;` ending this directive",
                            &format!("end the `.{name}` directive with `;`"),
                        ));
                    }
                    self.advance();
                    push(token);
                    if token.is_punct('{') || token.is_punct('(') {
                        depth += 1;
                    } else if token.is_punct('}') || token.is_punct(')') {
                        depth = depth.saturating_sub(1);
                        if depth == 0 && token.is_punct('}') && name == "section" {
                            break;
                        }
                    }
                }
            }
        }
        Ok(RawDirective {
            name,
            body,
            semicolon,
        })
    }
}

pub(super) fn linkage(word: &str) -> Option<Linkage> {
    match word {
        "visible" => Some(Linkage::Visible),
        "extern" => Some(Linkage::Extern),
        "weak" => Some(Linkage::Weak),
        "common" => Some(Linkage::Common),
        _ => None,
    }
}
