//! Reads PTX text into a typed AST and prints it back.
