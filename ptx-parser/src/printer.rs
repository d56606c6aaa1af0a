//! Prints the AST back to PTX text.
//!
//! Trivia kept by the parser is written back verbatim; nodes built by hand (trivia `None`) get
//! the emitter's layout: one item or statement per line, statements indented by a tab, a tab
//! between opcode and operands.

use crate::ast::{
    Block, Function, FunctionDirectiveKind, FunctionKind, Initializer, Instruction, Item, ItemKind,
    Module, Operand, Param, RawDirective, RegDecl, RegName, StatementKind, VarDecl,
};
use std::fmt::{self, Write};

/// Prints a module as PTX text.
///
/// ```
/// let text = ".version 7.8\n.target sm_89\n.address_size 64\n";
/// let m = ptx_parser::parse_module(text).unwrap();
/// assert_eq!(ptx_parser::print_module(&m), text);
/// assert_eq!(m.to_string(), text);
/// ```
pub fn print_module(module: &Module) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_module(&mut out, module);
    out
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_module(f, self)
    }
}

/// One line of PTX for the instruction, with a single space before the operands (its layout
/// gap is not used), as in error messages.
///
/// ```
/// let m = ptx_parser::parse_module(
///     ".version 7.8\n.target sm_89\n.address_size 64\n.entry k()\n{\n\t@!%p1 add.s32 \t%r1, %r2, -4;\n}\n",
/// ).unwrap();
/// let body = m.function("k").unwrap().body.as_ref().unwrap();
/// let ptx_parser::StatementKind::Instruction(i) = &body.statements[0].kind else { panic!() };
/// assert_eq!(i.to_string(), "@!%p1 add.s32 %r1, %r2, -4;");
/// ```
impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one_line = Instruction {
            gap: Some(if self.operands.is_empty() { "" } else { " " }.to_string()),
            ..self.clone()
        };
        write_instruction(f, &one_line)
    }
}

/// The operand as PTX text.
///
/// ```
/// use ptx_parser::Operand;
/// let v = Operand::Vector(vec![Operand::Reg("%f1".into()), Operand::Sink]);
/// assert_eq!(v.to_string(), "{%f1, _}");
/// ```
impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_operand(f, self)
    }
}

fn trivia<'t>(t: &'t Option<String>, default: &'t str) -> &'t str {
    t.as_deref().unwrap_or(default)
}

fn write_module(out: &mut impl Write, module: &Module) -> fmt::Result {
    for (i, item) in module.items.iter().enumerate() {
        let default = if i == 0 { "" } else { "\n" };
        out.write_str(trivia(&item.leading, default))?;
        match item.verbatim.text_if_unchanged(&item.kind) {
            Some(text) => out.write_str(text)?,
            None => write_item(out, item)?,
        }
    }
    out.write_str(trivia(&module.trailing, "\n"))
}

fn write_item(out: &mut impl Write, item: &Item) -> fmt::Result {
    match &item.kind {
        ItemKind::Version(v) => write!(out, ".version {}.{}", v.major, v.minor),
        ItemKind::Target(t) => write!(out, ".target {}", t.names.join(", ")),
        ItemKind::AddressSize(bits) => write!(out, ".address_size {bits}"),
        ItemKind::Variable(v) => write_var(out, v),
        ItemKind::Function(f) => write_function(out, f),
        ItemKind::Directive(d) => write_raw(out, d),
    }
}

fn write_raw(out: &mut impl Write, d: &RawDirective) -> fmt::Result {
    write!(out, ".{}", d.name)?;
    if !d.body.is_empty() {
        write!(out, " {}", d.body)?;
    }
    if d.semicolon {
        out.write_str(";")?;
    }
    Ok(())
}

fn write_var(out: &mut impl Write, v: &VarDecl) -> fmt::Result {
    if let Some(link) = v.linkage {
        write!(out, ".{} ", link.as_str())?;
    }
    write!(out, ".{}", v.space)?;
    if let Some(align) = v.align {
        write!(out, " .align {align}")?;
    }
    if let Some(vector) = v.vector {
        write!(out, " .{vector}")?;
    }
    write!(out, " .{} {}", v.ty, v.name)?;
    for dim in &v.array {
        match dim {
            Some(n) => write!(out, "[{n}]")?,
            None => out.write_str("[]")?,
        }
    }
    if let Some(init) = &v.init {
        out.write_str(" = ")?;
        write_init(out, init)?;
    }
    out.write_str(";")
}

fn write_init(out: &mut impl Write, init: &Initializer) -> fmt::Result {
    match init {
        Initializer::Imm(imm) => write!(out, "{imm}"),
        Initializer::Symbol { name, offset } => {
            out.write_str(name)?;
            if let Some(off) = offset {
                write!(out, "+{off}")?;
            }
            Ok(())
        }
        Initializer::Generic(name) => write!(out, "generic({name})"),
        Initializer::List(items) => {
            out.write_str("{")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_str(", ")?;
                }
                write_init(out, item)?;
            }
            out.write_str("}")
        }
    }
}

fn write_param(out: &mut impl Write, p: &Param) -> fmt::Result {
    write!(out, ".{}", p.space)?;
    if let Some(align) = p.align {
        write!(out, " .align {align}")?;
    }
    if let Some(vector) = p.vector {
        write!(out, " .{vector}")?;
    }
    write!(out, " .{}", p.ty)?;
    if let Some(ptr) = p.ptr {
        out.write_str(" .ptr")?;
        if let Some(space) = ptr.space {
            write!(out, ".{space}")?;
        }
        if let Some(align) = ptr.align {
            write!(out, ".align {align}")?;
        }
    }
    write!(out, " {}", p.name)?;
    if let Some(n) = p.array {
        write!(out, "[{n}]")?;
    }
    Ok(())
}

fn write_function(out: &mut impl Write, f: &Function) -> fmt::Result {
    match f.header_text_if_unchanged() {
        Some(text) => out.write_str(text)?,
        None => write_header(out, f)?,
    }
    match &f.body {
        Some(body) => write_block(out, body, 0),
        None => {
            out.write_str(trivia(&f.decl_end, ""))?;
            out.write_str(";")
        }
    }
}

fn write_header(out: &mut impl Write, f: &Function) -> fmt::Result {
    if let Some(link) = f.linkage {
        write!(out, ".{} ", link.as_str())?;
    }
    out.write_str(match f.kind {
        FunctionKind::Entry => ".entry ",
        FunctionKind::Func => ".func ",
    })?;
    if let Some(returns) = &f.returns {
        out.write_str("(")?;
        for (i, p) in returns.iter().enumerate() {
            if i > 0 {
                out.write_str(",")?;
            }
            out.write_str(trivia(&p.leading, if i == 0 { "" } else { " " }))?;
            write_param(out, p)?;
        }
        out.write_str(") ")?;
    }
    out.write_str(&f.name)?;
    if let Some(params) = &f.params {
        out.write_str("(")?;
        for (i, p) in params.iter().enumerate() {
            if i > 0 {
                out.write_str(",")?;
            }
            out.write_str(trivia(&p.leading, "\n\t"))?;
            write_param(out, p)?;
        }
        let closing = if params.is_empty() { "" } else { "\n" };
        out.write_str(trivia(&f.params_closing, closing))?;
        out.write_str(")")?;
    }
    for d in &f.directives {
        out.write_str(trivia(&d.leading, "\n"))?;
        write_function_directive(out, &d.kind)?;
    }
    Ok(())
}

fn write_counts(out: &mut impl Write, name: &str, values: &[u32]) -> fmt::Result {
    write!(out, ".{name} ")?;
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.write_str(", ")?;
        }
        write!(out, "{v}")?;
    }
    Ok(())
}

fn write_function_directive(out: &mut impl Write, d: &FunctionDirectiveKind) -> fmt::Result {
    match d {
        FunctionDirectiveKind::Reqntid(v) => write_counts(out, "reqntid", v),
        FunctionDirectiveKind::Maxntid(v) => write_counts(out, "maxntid", v),
        FunctionDirectiveKind::Reqnctapercluster(v) => write_counts(out, "reqnctapercluster", v),
        FunctionDirectiveKind::Maxnreg(n) => write!(out, ".maxnreg {n}"),
        FunctionDirectiveKind::Minnctapersm(n) => write!(out, ".minnctapersm {n}"),
        FunctionDirectiveKind::Maxnctapersm(n) => write!(out, ".maxnctapersm {n}"),
        FunctionDirectiveKind::Maxclusterrank(n) => write!(out, ".maxclusterrank {n}"),
        FunctionDirectiveKind::Explicitcluster => out.write_str(".explicitcluster"),
        FunctionDirectiveKind::Noreturn => out.write_str(".noreturn"),
        FunctionDirectiveKind::Pragma(strings) => write_pragma(out, strings),
    }
}

fn write_pragma(out: &mut impl Write, strings: &[String]) -> fmt::Result {
    out.write_str(".pragma ")?;
    for (i, s) in strings.iter().enumerate() {
        if i > 0 {
            out.write_str(", ")?;
        }
        write!(out, "\"{s}\"")?;
    }
    out.write_str(";")
}

/// `depth` 0 is a function body; a nested block is placed by its statement's trivia.
fn write_block(out: &mut impl Write, block: &Block, depth: usize) -> fmt::Result {
    let close = if depth == 0 { "\n" } else { "\n\t" };
    if depth == 0 {
        out.write_str(trivia(&block.leading, "\n"))?;
    }
    out.write_str("{")?;
    for s in &block.statements {
        let default = match s.kind {
            StatementKind::Label(_) => "\n",
            _ => "\n\t",
        };
        out.write_str(trivia(&s.leading, default))?;
        if let Some(text) = s.verbatim.text_if_unchanged(&s.kind) {
            out.write_str(text)?;
            continue;
        }
        match &s.kind {
            StatementKind::Instruction(i) => write_instruction(out, i)?,
            StatementKind::Label(name) => write!(out, "{name}:")?,
            StatementKind::Reg(r) => write_reg(out, r)?,
            StatementKind::Variable(v) => write_var(out, v)?,
            // The statement's trivia already placed the nested block.
            StatementKind::Block(b) => write_block(out, b, depth + 1)?,
            StatementKind::Pragma(strings) => write_pragma(out, strings)?,
            StatementKind::Directive(d) => write_raw(out, d)?,
        }
    }
    out.write_str(trivia(&block.closing, close))?;
    out.write_str("}")
}

fn write_reg(out: &mut impl Write, r: &RegDecl) -> fmt::Result {
    out.write_str(".reg")?;
    if let Some(vector) = r.vector {
        write!(out, " .{vector}")?;
    }
    write!(out, " .{}", r.ty)?;
    out.write_str(trivia(&r.gap, " \t"))?;
    for (i, name) in r.names.iter().enumerate() {
        if i > 0 {
            out.write_str(", ")?;
        }
        match name {
            RegName::Single(n) => out.write_str(n)?,
            RegName::Range { prefix, count } => write!(out, "{prefix}<{count}>")?,
        }
    }
    out.write_str(";")
}

fn write_instruction(out: &mut impl Write, i: &Instruction) -> fmt::Result {
    if let Some(guard) = &i.guard {
        let bang = if guard.negated { "!" } else { "" };
        write!(out, "@{bang}{} ", guard.reg)?;
    }
    out.write_str(i.opcode.as_str())?;
    for m in &i.modifiers {
        write!(out, ".{m}")?;
    }
    let default_gap = if i.operands.is_empty() { "" } else { " \t" };
    out.write_str(trivia(&i.gap, default_gap))?;
    write_operand_list(out, &i.operands)?;
    out.write_str(";")
}

fn write_operand_list(out: &mut impl Write, operands: &[Operand]) -> fmt::Result {
    for (n, op) in operands.iter().enumerate() {
        if n > 0 {
            out.write_str(", ")?;
        }
        write_operand(out, op)?;
    }
    Ok(())
}

fn write_operand(out: &mut impl Write, op: &Operand) -> fmt::Result {
    match op {
        Operand::Reg(name) | Operand::Symbol(name) | Operand::Label(name) => out.write_str(name),
        Operand::Special(s) => write!(out, "{s}"),
        Operand::Imm(imm) => write!(out, "{imm}"),
        Operand::Address(a) => write!(out, "{a}"),
        Operand::Vector(items) => {
            out.write_str("{")?;
            write_operand_list(out, items)?;
            out.write_str("}")
        }
        Operand::List(items) => {
            out.write_str("(")?;
            write_operand_list(out, items)?;
            out.write_str(")")
        }
        Operand::Sink => out.write_str("_"),
        Operand::Not(inner) => {
            out.write_str("!")?;
            write_operand(out, inner)
        }
        Operand::PredPair(a, b) => write!(out, "{a}|{b}"),
        Operand::TensorCoords { map, coords } => {
            write!(out, "[{map}, {{")?;
            write_operand_list(out, coords)?;
            out.write_str("}]")
        }
    }
}
