//! Functions: headers, performance directives, bodies and their statements.

use super::Parser;
use crate::ast::{
    Block, Function, FunctionDirective, FunctionDirectiveKind, FunctionKind, Linkage, Param,
    Statement, StatementKind, Verbatim,
};
use crate::error::Error;
use crate::lexer::Tok;

impl Parser<'_> {
    /// `.entry`/`.func` header, directives, and a body or `;` (linkage already read).
    /// `first` is the index of the header's first token, for its verbatim text.
    pub(super) fn function(
        &mut self,
        linkage: Option<Linkage>,
        first: usize,
    ) -> Result<Function, Error> {
        let kind = if self.eat_dot("entry") {
            FunctionKind::Entry
        } else if self.eat_dot("func") {
            FunctionKind::Func
        } else {
            return Err(self.error(
                "`.entry` or `.func`",
                "declare a function with .entry or .func",
            ));
        };
        let returns = if kind == FunctionKind::Func && self.peek().is_punct('(') {
            Some(self.param_list()?.0)
        } else {
            None
        };
        let name = self
            .expect_ident("a function name", "name the function after .entry or .func")?
            .text
            .to_string();
        let (params, params_closing) = if self.peek().is_punct('(') {
            let (params, closing) = self.param_list()?;
            (Some(params), closing)
        } else {
            (None, None)
        };
        let mut directives = Vec::new();
        while let Some(directive) = self.function_directive()? {
            directives.push(directive);
        }
        let header_text = self.text_since(first);
        let (body, decl_end) = if self.peek().is_punct(';') {
            let end = self.advance();
            (None, Some(end.trivia.to_string()))
        } else if self.peek().is_punct('{') {
            let mut body = self.block()?;
            super::resolve::resolve_body(&mut body);
            (Some(body), None)
        } else {
            return Err(self.error(
                "`{` opening the function body, or `;` ending a declaration",
                "follow the header with a { } body",
            ));
        };
        let mut function = Function {
            linkage,
            kind,
            returns,
            name,
            params,
            params_closing,
            directives,
            body,
            decl_end,
            header_verbatim: Verbatim::none(),
        };
        function.header_verbatim = Verbatim::new(function.header(), header_text);
        Ok(function)
    }

    /// `( param, param )`, returning the params and the trivia before `)`.
    fn param_list(&mut self) -> Result<(Vec<Param>, Option<String>), Error> {
        self.expect_punct('(', "open the parameter list with `(`")?;
        let mut params = Vec::new();
        if !self.peek().is_punct(')') {
            loop {
                let leading = self.leading();
                params.push(self.param(leading)?);
                if !self.eat_punct(',') {
                    break;
                }
            }
        }
        let closing = self.peek().trivia.to_string();
        self.expect_punct(
            ')',
            "separate parameters with `,` and close the list with `)`",
        )?;
        Ok((params, Some(closing)))
    }

    fn function_directive(&mut self) -> Result<Option<FunctionDirective>, Error> {
        let token = self.peek();
        if token.kind != Tok::Dot {
            return Ok(None);
        }
        let leading = self.leading();
        let list = |p: &mut Self| -> Result<Vec<u32>, Error> {
            let mut values = vec![p.u32_value("a thread or block count")?];
            while values.len() < 3 && p.eat_punct(',') {
                values.push(p.u32_value("a thread or block count")?);
            }
            Ok(values)
        };
        let word = &token.text[1..];
        let known = matches!(
            word,
            "reqntid"
                | "maxntid"
                | "maxnreg"
                | "minnctapersm"
                | "maxnctapersm"
                | "reqnctapercluster"
                | "maxclusterrank"
                | "explicitcluster"
                | "noreturn"
                | "pragma"
        );
        if !known {
            return Ok(None);
        }
        self.advance();
        let kind = match word {
            "reqntid" => FunctionDirectiveKind::Reqntid(list(self)?),
            "maxntid" => FunctionDirectiveKind::Maxntid(list(self)?),
            "reqnctapercluster" => FunctionDirectiveKind::Reqnctapercluster(list(self)?),
            "maxnreg" => FunctionDirectiveKind::Maxnreg(self.u32_value("a register count")?),
            "minnctapersm" => FunctionDirectiveKind::Minnctapersm(self.u32_value("a block count")?),
            "maxnctapersm" => FunctionDirectiveKind::Maxnctapersm(self.u32_value("a block count")?),
            "maxclusterrank" => {
                FunctionDirectiveKind::Maxclusterrank(self.u32_value("a cluster rank")?)
            }
            "explicitcluster" => FunctionDirectiveKind::Explicitcluster,
            "noreturn" => FunctionDirectiveKind::Noreturn,
            _ => FunctionDirectiveKind::Pragma(self.pragma_strings()?),
        };
        Ok(Some(FunctionDirective { leading, kind }))
    }

    /// `"a", "b";` after `.pragma`, returning the strings without quotes.
    fn pragma_strings(&mut self) -> Result<Vec<String>, Error> {
        let mut strings = Vec::new();
        loop {
            let token = self.peek();
            if token.kind != Tok::Str {
                return Err(self.error("a quoted string", "write `.pragma \"nounroll\";`"));
            }
            self.advance();
            strings.push(token.text[1..token.text.len() - 1].to_string());
            if !self.eat_punct(',') {
                break;
            }
        }
        self.expect_punct(';', "end the pragma with `;`")?;
        Ok(strings)
    }

    /// `{ statements }`.
    pub(super) fn block(&mut self) -> Result<Block, Error> {
        let leading = self.leading();
        let open = self.expect_punct('{', "open the block with `{`")?;
        self.enter()?;
        let mut statements = Vec::new();
        loop {
            let token = self.peek();
            if token.is_punct('}') {
                self.advance();
                self.leave();
                return Ok(Block {
                    leading,
                    statements,
                    closing: Some(token.trivia.to_string()),
                });
            }
            if token.kind == Tok::Eof {
                return Err(self.error(
                    "`}`",
                    &format!(
                        "close the block opened at line {}, column {}",
                        open.line, open.column
                    ),
                ));
            }
            let leading = self.leading();
            let first = self.pos;
            let kind = self.statement()?;
            let verbatim = match &kind {
                StatementKind::Block(_) => Verbatim::none(),
                other => Verbatim::new(other.clone(), self.text_since(first)),
            };
            statements.push(Statement {
                leading,
                kind,
                verbatim,
            });
        }
    }

    fn statement(&mut self) -> Result<StatementKind, Error> {
        let token = self.peek();
        match token.kind {
            Tok::Punct('{') => self.block().map(StatementKind::Block),
            Tok::Punct('@') => self.instruction().map(StatementKind::Instruction),
            Tok::Ident if self.peek_at(1).is_punct(':') => {
                self.advance();
                self.advance();
                Ok(StatementKind::Label(token.text.to_string()))
            }
            Tok::Ident => self.instruction().map(StatementKind::Instruction),
            Tok::Dot => {
                let word = &token.text[1..];
                if word == "reg" {
                    self.advance();
                    return self.reg_decl().map(StatementKind::Reg);
                }
                if word == "pragma" {
                    self.advance();
                    return self.pragma_strings().map(StatementKind::Pragma);
                }
                if let Some(link) = super::module::linkage(word) {
                    self.advance();
                    return self.var_decl(Some(link)).map(StatementKind::Variable);
                }
                if super::decl::is_var_space(word) {
                    return self.var_decl(None).map(StatementKind::Variable);
                }
                self.raw_directive().map(StatementKind::Directive)
            }
            _ => Err(self.error(
                "an instruction, a label, a declaration or `}`",
                "each statement is `opcode operands;`, `label:`, or a directive",
            )),
        }
    }
}
