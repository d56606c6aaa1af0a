//! Builds the AST from tokens: a recursive-descent parser over [`crate::lexer`]'s output.
//!
//! The submodules follow the grammar from the outside in: [`module`] (top-level items),
//! [`function`] (headers, bodies, statements), [`decl`] (variables, parameters, registers),
//! [`instruction`] (opcodes, modifiers, operands), [`literal`] (numbers), [`resolve`]
//! (telling labels and registers from other names once a body is read).

mod decl;
mod function;
mod instruction;
mod literal;
mod module;
mod resolve;

use crate::ast::Module;
use crate::error::Error;
use crate::lexer::{tokenize, Tok, Token};

/// Nesting deeper than this is refused, so hostile input cannot overflow the stack.
const MAX_DEPTH: usize = 64;

/// Parses a whole PTX module.
///
/// ```
/// let m = ptx_parser::parse_module(".version 8.0\n.target sm_90a\n.address_size 64\n").unwrap();
/// assert_eq!(m.target().unwrap().names, vec!["sm_90a".to_string()]);
///
/// let err = ptx_parser::parse_module(".version 8.0\n.target sm_90a\n.address_size\n").unwrap_err();
/// assert!(err.to_string().contains("line 4, column 1"));
/// ```
pub fn parse_module(text: &str) -> Result<Module, Error> {
    let tokens = tokenize(text)?;
    let mut parser = Parser {
        src: text,
        tokens,
        pos: 0,
        depth: 0,
    };
    parser.module()
}

pub(crate) struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token<'a>>,
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    /// The current token (the final `Eof` once input runs out).
    fn peek(&self) -> Token<'a> {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> Token<'a> {
        let last = self.tokens.len().saturating_sub(1);
        self.tokens[(self.pos + ahead).min(last)]
    }

    fn advance(&mut self) -> Token<'a> {
        let token = self.peek();
        if token.kind != Tok::Eof {
            self.pos += 1;
        }
        token
    }

    /// The source text from token `first` to the last token consumed, for a node's verbatim.
    fn text_since(&self, first: usize) -> String {
        let (Some(a), Some(b)) = (
            self.tokens.get(first),
            self.tokens.get(self.pos.wrapping_sub(1)),
        ) else {
            return String::new();
        };
        let end = b.start + b.text.len();
        self.src.get(a.start..end).unwrap_or_default().to_string()
    }

    /// The trivia before the current token, owned, for a node's `leading`.
    fn leading(&self) -> Option<String> {
        Some(self.peek().trivia.to_string())
    }

    fn error_at(&self, token: Token<'_>, expected: &str, help: &str) -> Error {
        Error::Syntax {
            line: token.line,
            column: token.column,
            expected: expected.to_string(),
            found: token.describe(),
            help: help.to_string(),
        }
    }

    fn error(&self, expected: &str, help: &str) -> Error {
        self.error_at(self.peek(), expected, help)
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.peek().is_punct(c) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char, help: &str) -> Result<Token<'a>, Error> {
        if self.peek().is_punct(c) {
            Ok(self.advance())
        } else {
            Err(self.error(&format!("`{c}`"), help))
        }
    }

    /// The current token if it is the dotted word `word` (given without its dot).
    fn at_dot(&self, word: &str) -> bool {
        let t = self.peek();
        t.kind == Tok::Dot && &t.text[1..] == word
    }

    fn eat_dot(&mut self, word: &str) -> bool {
        if self.at_dot(word) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_ident(&mut self, what: &str, help: &str) -> Result<Token<'a>, Error> {
        if self.peek().kind == Tok::Ident {
            Ok(self.advance())
        } else {
            Err(self.error(what, help))
        }
    }

    /// Enters one level of nesting, refusing input nested absurdly deep.
    fn enter(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(
                "at most 64 levels of nesting",
                "flatten the nested blocks or lists",
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}
