//! Reads PTX text into a typed AST and prints it back.
//!
//! [`parse_module`] turns text into a [`Module`]; [`print_module`] (or `Display`) turns it back.
//! Output of the ptxkit emitter prints back byte-for-byte, because every line-starting node keeps
//! the whitespace and comments before it; other PTX prints in a canonical layout that parses to
//! an equal AST. Errors carry line and column; no input makes the parser panic.
//!
//! ```
//! let text = ".version 7.8\n.target sm_89\n.address_size 64\n";
//! let module = ptx_parser::parse_module(text).unwrap();
//! assert_eq!(ptx_parser::print_module(&module), text);
//! ```

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
