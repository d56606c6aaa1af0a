//! Numeric literals: integers of every radix, raw-bits floats, decimal floats.

use super::Parser;
use crate::ast::{Immediate, IntLit, Radix};
use crate::error::Error;
use crate::lexer::{Tok, Token};

const NUMBER_HELP: &str =
    "write integers as 42, -7, 0x2A, 0b101 or 052, floats as 0f3F800000, 0d3FF0000000000000 or 1.5";

impl Parser<'_> {
    /// An optionally negative literal.
    pub(super) fn immediate(&mut self) -> Result<Immediate, Error> {
        let negative = self.eat_punct('-');
        let token = self.peek();
        if token.kind != Tok::Number {
            return Err(self.error("a number", NUMBER_HELP));
        }
        self.advance();
        let value = self.number_value(token)?;
        Ok(if negative { negate(value) } else { value })
    }

    /// An optionally negative integer literal.
    pub(super) fn int_lit(&mut self) -> Result<IntLit, Error> {
        let start = self.peek();
        match self.immediate()? {
            Immediate::Int(i) => Ok(i),
            _ => Err(self.error_at(start, "an integer", NUMBER_HELP)),
        }
    }

    /// A non-negative integer that fits in `u32` (alignments, counts, versions' parts).
    pub(super) fn u32_value(&mut self, what: &str) -> Result<u32, Error> {
        let start = self.peek();
        let lit = self.int_lit()?;
        if lit.negative && lit.magnitude != 0 {
            return Err(self.error_at(start, what, "use a non-negative number here"));
        }
        u32::try_from(lit.magnitude)
            .map_err(|_| self.error_at(start, what, "use a number below 4294967296 here"))
    }

    /// A signed byte offset in an address or initializer.
    pub(super) fn offset_value(&mut self) -> Result<i64, Error> {
        let start = self.peek();
        let lit = self.int_lit()?;
        let magnitude = i64::try_from(lit.magnitude).ok();
        match (lit.negative, magnitude) {
            (false, Some(m)) => Ok(m),
            (true, Some(m)) => Ok(-m),
            (true, None) if lit.magnitude == 1 << 63 => Ok(i64::MIN),
            _ => Err(self.error_at(
                start,
                "an offset between -2^63 and 2^63-1",
                "use a smaller offset",
            )),
        }
    }

    fn number_value(&self, token: Token<'_>) -> Result<Immediate, Error> {
        parse_number(token.text).ok_or_else(|| self.error_at(token, "a valid number", NUMBER_HELP))
    }
}

fn negate(value: Immediate) -> Immediate {
    match value {
        Immediate::Int(mut i) => {
            i.negative = !i.negative;
            Immediate::Int(i)
        }
        Immediate::F32(bits) => Immediate::F32(bits ^ 0x8000_0000),
        Immediate::F64(bits) => Immediate::F64(bits ^ 0x8000_0000_0000_0000),
        Immediate::Float(v) => Immediate::Float(-v),
    }
}

/// Reads the text of a number token.
fn parse_number(text: &str) -> Option<Immediate> {
    let lower = text.get(..2).map(str::to_ascii_lowercase);
    match lower.as_deref() {
        Some("0f") => {
            let digits = &text[2..];
            (digits.len() == 8)
                .then(|| u32::from_str_radix(digits, 16).ok())
                .flatten()
                .map(Immediate::F32)
        }
        Some("0d") => {
            let digits = &text[2..];
            (digits.len() == 16)
                .then(|| u64::from_str_radix(digits, 16).ok())
                .flatten()
                .map(Immediate::F64)
        }
        _ => {
            let (body, unsigned_suffix) = match text.strip_suffix('U') {
                Some(body) => (body, true),
                None => (text, false),
            };
            let lower = body.to_ascii_lowercase();
            let (radix, digits, base) = if let Some(d) = lower.strip_prefix("0x") {
                (Radix::Hex, d, 16)
            } else if let Some(d) = lower.strip_prefix("0b") {
                (Radix::Binary, d, 2)
            } else if lower.contains(['.', 'e']) {
                if unsigned_suffix {
                    return None;
                }
                let v: f64 = lower.parse().ok()?;
                return v.is_finite().then_some(Immediate::Float(v));
            } else if lower.len() > 1 && lower.starts_with('0') {
                (Radix::Octal, &lower[1..], 8)
            } else {
                (Radix::Decimal, lower.as_str(), 10)
            };
            let magnitude = u64::from_str_radix(digits, base).ok()?;
            Some(Immediate::Int(IntLit {
                negative: false,
                magnitude,
                radix,
                unsigned_suffix,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_literal_form_reads_to_its_value() {
        let int = |magnitude, radix| {
            Some(Immediate::Int(IntLit {
                negative: false,
                magnitude,
                radix,
                unsigned_suffix: false,
            }))
        };
        assert_eq!(parse_number("42"), int(42, Radix::Decimal));
        assert_eq!(parse_number("0x2a"), int(42, Radix::Hex));
        assert_eq!(parse_number("052"), int(42, Radix::Octal));
        assert_eq!(parse_number("0b101010"), int(42, Radix::Binary));
        assert_eq!(
            parse_number("0f3F800000"),
            Some(Immediate::F32(0x3F80_0000))
        );
        assert_eq!(
            parse_number("0d3FF0000000000000"),
            Some(Immediate::F64(0x3FF0_0000_0000_0000))
        );
        assert_eq!(parse_number("1.5e2"), Some(Immediate::Float(150.0)));
    }

    #[test]
    fn malformed_literals_are_refused() {
        for bad in ["0f3F80", "08", "18446744073709551616", "1e999", "1.5U"] {
            assert_eq!(parse_number(bad), None, "{bad}");
        }
    }
}
