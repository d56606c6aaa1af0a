//! Splits PTX text into tokens, keeping the whitespace and comments before each.
