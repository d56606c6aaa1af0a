//! Reads PTX text into a typed AST and prints it back.
//!
//! [`parse_module`] turns text into a [`Module`]; [`print_module`] (or `Display`) turns it back.
//! Any module prints back byte-for-byte while unchanged: every line-level node keeps the
//! whitespace and comments before it and the text it was read from ([`Verbatim`]). A changed
//! node (or a module after [`Module::clear_verbatim`]) prints in the canonical layout, which is
//! the ptxkit emitter's: emitter output prints back byte-for-byte from the AST alone, and other
//! PTX prints to text that parses to an equal AST. Errors carry line and column; no input makes
//! the parser panic.
//!
//! ```
//! let text = ".version 7.8\n.target sm_89\n.address_size 64\n";
//! let module = ptx_parser::parse_module(text).unwrap();
//! assert_eq!(ptx_parser::print_module(&module), text);
//! ```
//!
//! # Reading the AST
//!
//! A [`Module`] is a list of [`Item`]s (header directives, variables, functions); a
//! [`Function`]'s body is a [`Block`] of [`Statement`]s. An [`Instruction`] is an
//! [`Opcode`] (compound opcodes such as `cp.async` are one variant), a list of [`Modifier`]s
//! typed by role (types, state spaces, rounding, comparisons, vector widths, shapes, flags) and
//! [`Operand`]s. Names are classified once the body is read: `%` names and names declared with
//! `.reg` are registers, names defined as labels in the function are [`Operand::Label`]s, the
//! rest are [`Operand::Symbol`]s. Directives the crate does not interpret (`.file`, `.loc`,
//! `.section`, ...) are kept as [`RawDirective`]s.
//!
//! # Where the code is
//!
//! [`ast`] holds the types (`ast/opcode.rs`, `ast/modifier.rs`, `ast/operand.rs` for the word
//! tables); `lexer.rs` splits text into tokens with their trivia; `parser.rs` and its
//! submodules build the AST; `printer.rs` writes it back; [`error`] is the one error type.

#![warn(missing_docs)]

pub mod ast;
pub mod error;
mod keyword;
mod lexer;
mod parser;
mod printer;

pub use ast::*;
pub use error::Error;
pub use parser::parse_module;
pub use printer::print_module;
