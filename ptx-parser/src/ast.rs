//! The typed syntax tree of a PTX module.
//!
//! Every node that starts a line carries `leading`: the whitespace and comments the parser saw
//! before it (`None` on hand-built nodes, which print with the default layout). Keeping it is
//! what lets a module print back byte-for-byte; consumers that only execute code ignore it.
//! Line-level nodes also keep the exact text they were read from (a [`Verbatim`]), so unchanged
//! nodes print back exactly, whatever their inner spacing; [`Verbatim`] never affects equality.

mod modifier;
mod opcode;
mod operand;
mod verbatim;

pub use modifier::{
    AtomicOp, BoolOp, CacheOp, CmpOp, Flag, MemOrder, Modifier, Rounding, Scope, Shape, StateSpace,
    Type, VectorWidth,
};
pub use opcode::Opcode;
pub use operand::{
    Address, AddressBase, Dim, Immediate, IntLit, Operand, Radix, SpecialReg, SpecialScalar,
    SpecialVector,
};
pub use verbatim::Verbatim;

/// Whitespace and comments before a node, as written; `None` means "use the default layout".
pub type Trivia = Option<String>;

/// A whole PTX module: its top-level items in source order.
///
/// ```
/// let m = ptx_parser::parse_module(".version 7.8\n.target sm_89\n.address_size 64\n").unwrap();
/// assert_eq!(m.version(), Some(ptx_parser::Version { major: 7, minor: 8 }));
/// ```
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    /// Items in source order.
    pub items: Vec<Item>,
    /// Whitespace and comments after the last item.
    pub trailing: Trivia,
}

impl Module {
    /// The `.version` directive's value, if present.
    pub fn version(&self) -> Option<Version> {
        self.items.iter().find_map(|item| match &item.kind {
            ItemKind::Version(v) => Some(*v),
            _ => None,
        })
    }

    /// The `.target` directive, if present.
    pub fn target(&self) -> Option<&TargetDirective> {
        self.items.iter().find_map(|item| match &item.kind {
            ItemKind::Target(t) => Some(t),
            _ => None,
        })
    }

    /// The `.address_size` value, if present.
    pub fn address_size(&self) -> Option<u32> {
        self.items.iter().find_map(|item| match &item.kind {
            ItemKind::AddressSize(bits) => Some(*bits),
            _ => None,
        })
    }

    /// Every `.entry` and `.func`, declarations included, in source order.
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        self.items.iter().filter_map(|item| match &item.kind {
            ItemKind::Function(f) => Some(f),
            _ => None,
        })
    }

    /// The function (with a body) called `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions()
            .find(|f| f.name == name && f.body.is_some())
    }

    /// Forgets the source text of every node, so the whole module prints in the canonical
    /// layout (trivia between nodes is kept).
    pub fn clear_verbatim(&mut self) {
        fn block(b: &mut Block) {
            for s in &mut b.statements {
                s.verbatim = Verbatim::none();
                if let StatementKind::Block(inner) = &mut s.kind {
                    block(inner);
                }
            }
        }
        for item in &mut self.items {
            item.verbatim = Verbatim::none();
            if let ItemKind::Function(f) = &mut item.kind {
                f.header_verbatim = Verbatim::none();
                if let Some(b) = &mut f.body {
                    block(b);
                }
            }
        }
    }

    /// Module-level variables in source order.
    pub fn variables(&self) -> impl Iterator<Item = &VarDecl> {
        self.items.iter().filter_map(|item| match &item.kind {
            ItemKind::Variable(v) => Some(v),
            _ => None,
        })
    }
}

/// One top-level item with the trivia before it.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Whitespace and comments before the item.
    pub leading: Trivia,
    /// The item.
    pub kind: ItemKind,
    /// The item's text as read (functions keep theirs in [`Function::header_verbatim`]).
    pub verbatim: Verbatim<ItemKind>,
}

/// A top-level item.
#[derive(Clone, Debug, PartialEq)]
pub enum ItemKind {
    /// `.version 7.8`
    Version(Version),
    /// `.target sm_90a, debug`
    Target(TargetDirective),
    /// `.address_size 64`
    AddressSize(u32),
    /// A module-level variable such as `.global .align 4 .b8 x[16];`.
    Variable(VarDecl),
    /// An `.entry` or `.func`, defined or declared.
    Function(Function),
    /// Any other directive, kept as tokens (`.file`, `.section`, `.pragma`, ...).
    Directive(RawDirective),
}

/// A PTX ISA version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

/// `.target` with its names: the SM first (`sm_90a`), then options (`texmode_independent`,
/// `debug`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetDirective {
    /// The names as written, in order.
    pub names: Vec<String>,
}

/// A directive this crate keeps without interpreting: its name and the tokens up to its end
/// (`;`, end of line for `.file`/`.loc`, or a balanced `{ }` block for `.section`).
#[derive(Clone, Debug, PartialEq)]
pub struct RawDirective {
    /// The directive name without the dot, e.g. `file`, `loc`, `section`.
    pub name: String,
    /// The tokens after the name, as written, separated by a newline where the input broke the
    /// line between them, by one space where it had other whitespace, and by nothing where
    /// they touched.
    pub body: String,
    /// Whether the directive ended with `;`.
    pub semicolon: bool,
}

/// Linkage of a function or module-level variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Linkage {
    /// `.visible`
    Visible,
    /// `.extern`
    Extern,
    /// `.weak`
    Weak,
    /// `.common`
    Common,
}

impl Linkage {
    /// The directive word without the dot.
    pub fn as_str(self) -> &'static str {
        match self {
            Linkage::Visible => "visible",
            Linkage::Extern => "extern",
            Linkage::Weak => "weak",
            Linkage::Common => "common",
        }
    }
}

/// Whether a function is a kernel entry point or a device function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FunctionKind {
    /// `.entry`
    Entry,
    /// `.func`
    Func,
}

/// An `.entry` or `.func`.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// `.visible`, `.extern`, `.weak`, if written.
    pub linkage: Option<Linkage>,
    /// Entry or device function.
    pub kind: FunctionKind,
    /// Return parameters of a `.func`: `.func (.param .b32 retval) f(...)`. `None` when the
    /// function has no return list.
    pub returns: Option<Vec<Param>>,
    /// The function name.
    pub name: String,
    /// Parameters; `None` when the header has no parentheses at all.
    pub params: Option<Vec<Param>>,
    /// Whitespace before the `)` closing the parameter list.
    pub params_closing: Trivia,
    /// Performance directives and other attributes between the header and the body.
    pub directives: Vec<FunctionDirective>,
    /// The body; `None` for a declaration ending in `;`.
    pub body: Option<Block>,
    /// Whitespace before the `;` of a declaration.
    pub decl_end: Trivia,
    /// The header's text as read, from the linkage (or `.entry`/`.func`) to the last directive,
    /// with the header as parsed (its `body` and `decl_end` left empty).
    pub header_verbatim: Verbatim<FunctionHeader>,
}

/// The parts of a [`Function`] its header text covers, for [`Function::header_verbatim`].
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionHeader {
    /// See [`Function::linkage`].
    pub linkage: Option<Linkage>,
    /// See [`Function::kind`].
    pub kind: FunctionKind,
    /// See [`Function::returns`].
    pub returns: Option<Vec<Param>>,
    /// See [`Function::name`].
    pub name: String,
    /// See [`Function::params`].
    pub params: Option<Vec<Param>>,
    /// See [`Function::params_closing`].
    pub params_closing: Trivia,
    /// See [`Function::directives`].
    pub directives: Vec<FunctionDirective>,
}

impl Function {
    /// A copy of the header fields.
    pub fn header(&self) -> FunctionHeader {
        FunctionHeader {
            linkage: self.linkage,
            kind: self.kind,
            returns: self.returns.clone(),
            name: self.name.clone(),
            params: self.params.clone(),
            params_closing: self.params_closing.clone(),
            directives: self.directives.clone(),
        }
    }

    /// Whether the header still equals `h`.
    fn header_is(&self, h: &FunctionHeader) -> bool {
        self.linkage == h.linkage
            && self.kind == h.kind
            && self.returns == h.returns
            && self.name == h.name
            && self.params == h.params
            && self.params_closing == h.params_closing
            && self.directives == h.directives
    }

    /// The header's source text, if the header is unchanged since it was parsed.
    pub fn header_text_if_unchanged(&self) -> Option<&str> {
        self.header_verbatim
            .0
            .as_deref()
            .filter(|(parsed, _)| self.header_is(parsed))
            .map(|(_, text)| text.as_str())
    }
}

/// A parameter of an `.entry` or `.func` (or a `.func` return value).
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Whitespace and comments before the parameter.
    pub leading: Trivia,
    /// `.param`, or `.reg` for register parameters of a `.func`.
    pub space: StateSpace,
    /// `.align N` written before the type.
    pub align: Option<u32>,
    /// Vector width written before the type.
    pub vector: Option<VectorWidth>,
    /// The parameter type.
    pub ty: Type,
    /// `.ptr.global.align 16`: what a pointer parameter points to.
    pub ptr: Option<PtrAttr>,
    /// The parameter name.
    pub name: String,
    /// `[16]`: the parameter is a byte array of that many elements.
    pub array: Option<u64>,
}

/// The `.ptr` attribute of a kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PtrAttr {
    /// The state space pointed to (`.global`, `.shared`, `.const`, `.local`).
    pub space: Option<StateSpace>,
    /// The alignment promised, in bytes.
    pub align: Option<u32>,
}

/// A directive between a function header and its body.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDirective {
    /// Whitespace and comments before the directive.
    pub leading: Trivia,
    /// The directive.
    pub kind: FunctionDirectiveKind,
}

/// Performance tuning and attribute directives of a function.
#[derive(Clone, Debug, PartialEq)]
pub enum FunctionDirectiveKind {
    /// `.reqntid x, y, z` (1 to 3 numbers)
    Reqntid(Vec<u32>),
    /// `.maxntid x, y, z`
    Maxntid(Vec<u32>),
    /// `.maxnreg n`
    Maxnreg(u32),
    /// `.minnctapersm n`
    Minnctapersm(u32),
    /// `.maxnctapersm n`
    Maxnctapersm(u32),
    /// `.reqnctapercluster x, y, z`
    Reqnctapercluster(Vec<u32>),
    /// `.maxclusterrank n`
    Maxclusterrank(u32),
    /// `.explicitcluster`
    Explicitcluster,
    /// `.noreturn`
    Noreturn,
    /// `.pragma "a", "b";`
    Pragma(Vec<String>),
}

/// A `{ }` block of statements.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Block {
    /// Whitespace and comments before the `{` (a nested block is placed by its statement's
    /// `leading` instead; printing ignores this field there).
    pub leading: Trivia,
    /// Statements in order.
    pub statements: Vec<Statement>,
    /// Whitespace and comments before the `}`.
    pub closing: Trivia,
}

/// One statement with the trivia before it.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// Whitespace and comments before the statement.
    pub leading: Trivia,
    /// The statement.
    pub kind: StatementKind,
    /// The statement's text as read (none for nested blocks, whose statements keep their own).
    pub verbatim: Verbatim<StatementKind>,
}

/// A statement in a function body.
#[derive(Clone, Debug, PartialEq)]
pub enum StatementKind {
    /// An instruction.
    Instruction(Instruction),
    /// A label definition `name:`.
    Label(String),
    /// `.reg .b32 %r<5>;`
    Reg(RegDecl),
    /// A variable: `.shared .align 16 .b8 tile[4352];`, `.local`, `.param` (call sequences).
    Variable(VarDecl),
    /// A nested `{ }` block.
    Block(Block),
    /// `.pragma "nounroll";`
    Pragma(Vec<String>),
    /// Any other directive, e.g. `.loc 1 5 3`.
    Directive(RawDirective),
}

/// A register declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct RegDecl {
    /// Vector width, for vector registers.
    pub vector: Option<VectorWidth>,
    /// The register type.
    pub ty: Type,
    /// Whitespace between the type and the first name (the emitter writes `" \t"`).
    pub gap: Trivia,
    /// The declared names.
    pub names: Vec<RegName>,
}

/// A name in a `.reg` declaration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegName {
    /// One register: `%p`.
    Single(String),
    /// `%r<5>`: registers `%r0` to `%r4`.
    Range {
        /// The prefix, including `%`.
        prefix: String,
        /// How many registers.
        count: u32,
    },
}

/// A variable declaration, module-level or in a body.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    /// `.extern`, `.visible`, `.weak`, `.common`.
    pub linkage: Option<Linkage>,
    /// `.global`, `.shared`, `.const`, `.local`, `.param`.
    pub space: StateSpace,
    /// `.align N`.
    pub align: Option<u32>,
    /// Vector width.
    pub vector: Option<VectorWidth>,
    /// Element type.
    pub ty: Type,
    /// Variable name.
    pub name: String,
    /// Array dimensions in order; `None` for an unsized `[]`.
    pub array: Vec<Option<u64>>,
    /// `= value` initializer.
    pub init: Option<Initializer>,
}

/// The value of a variable initializer.
#[derive(Clone, Debug, PartialEq)]
pub enum Initializer {
    /// A literal.
    Imm(Immediate),
    /// The address of a symbol, plus an optional offset: `foo`, `foo+8`.
    Symbol {
        /// The symbol.
        name: String,
        /// The byte offset after it.
        offset: Option<i64>,
    },
    /// `generic(foo)`: the generic address of a symbol.
    Generic(String),
    /// `{a, b, c}`.
    List(Vec<Initializer>),
}

/// A guard predicate: `@%p1` or `@!%p1`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    /// `@!`: the instruction runs when the predicate is false.
    pub negated: bool,
    /// The predicate register.
    pub reg: String,
}

/// An instruction: guard, opcode, modifiers and operands.
///
/// ```
/// use ptx_parser::{Flag, Modifier, Opcode, StatementKind, Type};
/// let m = ptx_parser::parse_module(
///     ".version 7.8\n.target sm_89\n.address_size 64\n.entry k()\n{\n\tmul.wide.u32 \t%rd1, %r1, 4;\n}\n",
/// ).unwrap();
/// let body = m.function("k").unwrap().body.as_ref().unwrap();
/// let StatementKind::Instruction(i) = &body.statements[0].kind else { panic!() };
/// assert_eq!(i.opcode, Opcode::Mul);
/// assert_eq!(i.modifiers, vec![Modifier::Flag(Flag::Wide), Modifier::Type(Type::U32)]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// The guard predicate, if any.
    pub guard: Option<Guard>,
    /// The opcode.
    pub opcode: Opcode,
    /// The dotted words after the opcode, in order.
    pub modifiers: Vec<Modifier>,
    /// Whitespace between the opcode (with modifiers) and the first operand (the emitter
    /// writes `" \t"`).
    pub gap: Trivia,
    /// Operands in order.
    pub operands: Vec<Operand>,
}

impl Instruction {
    /// The first type modifier, if any (`.f32` in `add.rn.f32`).
    pub fn ty(&self) -> Option<Type> {
        self.modifiers.iter().find_map(|m| match m {
            Modifier::Type(t) => Some(*t),
            _ => None,
        })
    }

    /// The first state-space modifier, if any (`.global` in `ld.global.f32`).
    pub fn space(&self) -> Option<StateSpace> {
        self.modifiers.iter().find_map(|m| match m {
            Modifier::Space(s) => Some(*s),
            _ => None,
        })
    }

    /// Whether the instruction carries `flag`.
    pub fn has_flag(&self, flag: Flag) -> bool {
        self.modifiers.contains(&Modifier::Flag(flag))
    }
}
