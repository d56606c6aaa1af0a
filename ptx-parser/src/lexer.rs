//! Splits PTX text into tokens, keeping the whitespace and comments before each.

use crate::error::Error;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// `name`, `%r1`, `$L__BB0_1`, `_`.
    Ident,
    /// `.word`, text includes the dot; may contain `::` (`.shared::cta`).
    Dot,
    /// A numeric literal, without sign.
    Number,
    /// `"text"`, quotes included.
    Str,
    /// One punctuation character.
    Punct(char),
    /// End of input.
    Eof,
}

/// One token with its source position and the trivia before it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token<'a> {
    pub kind: Tok,
    pub text: &'a str,
    /// Whitespace and comments between the previous token and this one.
    pub trivia: &'a str,
    /// 1-based line.
    pub line: usize,
    /// 1-based column in characters.
    pub column: usize,
    /// Byte offset of the token's first character.
    pub start: usize,
}

impl Token<'_> {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self.kind {
            Tok::Eof => "end of input".to_string(),
            _ => format!("`{}`", self.text),
        }
    }

    pub fn is_punct(&self, c: char) -> bool {
        self.kind == Tok::Punct(c)
    }

    /// Whether the token directly follows the previous one, with nothing between.
    pub fn adjacent(&self) -> bool {
        self.trivia.is_empty()
    }
}

const PUNCT: &str = ",;:(){}[]<>+-!@|=";

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%')
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$')
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line: usize,
    column: usize,
}

impl<'a> Lexer<'a> {
    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.pos + ahead).copied().unwrap_or(0)
    }

    /// Advances one character (UTF-8 aware, so columns count characters).
    fn bump(&mut self) {
        let Some(c) = self.src[self.pos..].chars().next() else {
            return;
        };
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
    }

    fn error(
        &self,
        line: usize,
        column: usize,
        expected: &str,
        found: String,
        help: &str,
    ) -> Error {
        Error::Syntax {
            line,
            column,
            expected: expected.to_string(),
            found,
            help: help.to_string(),
        }
    }

    fn skip_trivia(&mut self) -> Result<(), Error> {
        loop {
            match (self.peek(0), self.peek(1)) {
                (b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c, _) => self.bump(),
                (b'/', b'/') => {
                    while self.pos < self.bytes.len() && self.peek(0) != b'\n' {
                        self.bump();
                    }
                }
                (b'/', b'*') => {
                    let (line, column) = (self.line, self.column);
                    self.bump();
                    self.bump();
                    loop {
                        if self.pos >= self.bytes.len() {
                            return Err(self.error(
                                line,
                                column,
                                "`*/` closing this comment",
                                "end of input".into(),
                                "close the block comment with `*/`",
                            ));
                        }
                        if self.peek(0) == b'*' && self.peek(1) == b'/' {
                            self.bump();
                            self.bump();
                            break;
                        }
                        self.bump();
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn number(&mut self) -> Result<(), Error> {
        let (line, column) = (self.line, self.column);
        let start = self.pos;
        let prefix = (self.peek(0), self.peek(1).to_ascii_lowercase());
        match prefix {
            (b'0', b'x' | b'f' | b'd' | b'b') => {
                self.bump();
                self.bump();
                let digits_start = self.pos;
                let is_digit = |c: u8| {
                    if prefix.1 == b'b' {
                        matches!(c, b'0' | b'1')
                    } else {
                        c.is_ascii_hexdigit()
                    }
                };
                while is_digit(self.peek(0)) {
                    self.bump();
                }
                if self.pos == digits_start {
                    return Err(self.error(
                        line,
                        column,
                        "digits after the number prefix",
                        format!("`{}`", &self.src[start..self.pos]),
                        "write hex as 0x1F, floats as 0f3F800000 / 0d3FF0000000000000, binary as 0b101",
                    ));
                }
            }
            _ => {
                while self.peek(0).is_ascii_digit() {
                    self.bump();
                }
                if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
                    self.bump();
                    while self.peek(0).is_ascii_digit() {
                        self.bump();
                    }
                }
                let exp_digit = |c: u8| c.is_ascii_digit();
                if matches!(self.peek(0), b'e' | b'E')
                    && (exp_digit(self.peek(1))
                        || (matches!(self.peek(1), b'+' | b'-') && exp_digit(self.peek(2))))
                {
                    self.bump();
                    self.bump();
                    while self.peek(0).is_ascii_digit() {
                        self.bump();
                    }
                }
            }
        }
        if self.peek(0) == b'U' {
            self.bump();
        }
        if is_ident_char(self.peek(0)) || self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
            while is_ident_char(self.peek(0)) || self.peek(0) == b'.' {
                self.bump();
            }
            return Err(self.error(
                line,
                column,
                "a number",
                format!("`{}`", &self.src[start..self.pos]),
                "separate the number from the next word, or fix its digits",
            ));
        }
        Ok(())
    }

    fn next_token(&mut self) -> Result<Token<'a>, Error> {
        let trivia_start = self.pos;
        self.skip_trivia()?;
        let trivia = &self.src[trivia_start..self.pos];
        let (line, column) = (self.line, self.column);
        let start = self.pos;
        let c = self.peek(0);
        let kind = if self.pos >= self.bytes.len() {
            Tok::Eof
        } else if is_ident_start(c) {
            self.bump();
            while is_ident_char(self.peek(0)) {
                self.bump();
            }
            if self.pos - start == 1 && c == b'%' {
                return Err(self.error(
                    line,
                    column,
                    "a register name after `%`",
                    "`%`".into(),
                    "write a register as %r1 or a special register as %tid.x",
                ));
            }
            Tok::Ident
        } else if c == b'.' && is_ident_char(self.peek(1)) {
            self.bump();
            loop {
                if is_ident_char(self.peek(0)) {
                    self.bump();
                } else if self.peek(0) == b':'
                    && self.peek(1) == b':'
                    && is_ident_char(self.peek(2))
                {
                    self.bump();
                    self.bump();
                } else {
                    break;
                }
            }
            Tok::Dot
        } else if c.is_ascii_digit() {
            self.number()?;
            Tok::Number
        } else if c == b'"' {
            self.bump();
            loop {
                match self.peek(0) {
                    b'"' => {
                        self.bump();
                        break;
                    }
                    b'\\' => {
                        self.bump();
                        self.bump();
                    }
                    b'\n' | 0 if self.pos >= self.bytes.len() || self.peek(0) == b'\n' => {
                        return Err(self.error(
                            line,
                            column,
                            "`\"` closing this string",
                            "the end of the line".into(),
                            "close the string on the line it starts",
                        ));
                    }
                    _ => self.bump(),
                }
            }
            Tok::Str
        } else if PUNCT.as_bytes().contains(&c) {
            self.bump();
            Tok::Punct(c as char)
        } else {
            let ch = self.src[self.pos..].chars().next().unwrap_or('?');
            return Err(self.error(
                line,
                column,
                "a PTX token",
                format!("`{}`", ch.escape_debug()),
                "remove the stray character",
            ));
        };
        Ok(Token {
            kind,
            text: &self.src[start..self.pos],
            trivia,
            line,
            column,
            start,
        })
    }
}

/// Splits `src` into tokens; the last token is always [`Tok::Eof`], whose trivia is whatever
/// follows the last real token.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token<'_>>, Error> {
    let mut lexer = Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        line: 1,
        column: 1,
    };
    let mut tokens = Vec::new();
    loop {
        let token = lexer.next_token()?;
        let done = token.kind == Tok::Eof;
        tokens.push(token);
        if done {
            return Ok(tokens);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Tok, String)> {
        tokenize(src)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, t.text.to_string()))
            .collect()
    }

    #[test]
    fn dotted_words_split_at_each_dot_and_keep_double_colons() {
        let toks = kinds("ld.shared::cta.v4.f32");
        assert_eq!(
            toks,
            vec![
                (Tok::Ident, "ld".into()),
                (Tok::Dot, ".shared::cta".into()),
                (Tok::Dot, ".v4".into()),
                (Tok::Dot, ".f32".into()),
                (Tok::Eof, "".into()),
            ]
        );
    }

    #[test]
    fn numbers_of_every_radix_are_single_tokens() {
        for n in [
            "0f3F800000",
            "0d3FF0000000000000",
            "0x1f",
            "0b101",
            "017",
            "42",
            "1.5e-3",
            "7U",
        ] {
            assert_eq!(kinds(n)[0], (Tok::Number, n.to_string()), "{n}");
        }
    }

    #[test]
    fn comments_become_trivia_of_the_next_token() {
        let toks = tokenize("a /* x */ // y\n b").unwrap();
        assert_eq!(toks[1].trivia, " /* x */ // y\n ");
        assert_eq!((toks[1].line, toks[1].column), (2, 2));
    }

    #[test]
    fn unterminated_block_comment_reports_where_it_starts() {
        let err = tokenize("a\n  /* open").unwrap_err();
        assert_eq!(err.position(), (2, 3));
    }

    #[test]
    fn malformed_number_is_an_error_not_two_tokens() {
        assert!(tokenize("12abc").is_err());
        assert!(tokenize("0x").is_err());
    }
}
