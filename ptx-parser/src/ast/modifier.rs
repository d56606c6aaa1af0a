//! The dotted words after an opcode (`.global`, `.f32`, `.rn`, `.v4` ...), typed by role.

use crate::keyword::keyword_enum;
use std::fmt;

keyword_enum! {
    /// A PTX data type: in instruction suffixes, declarations and parameters.
    pub enum Type {
        Pred => "pred",
        B1 => "b1",
        B8 => "b8",
        B16 => "b16",
        B32 => "b32",
        B64 => "b64",
        B128 => "b128",
        U4 => "u4",
        U8 => "u8",
        U16 => "u16",
        U32 => "u32",
        U64 => "u64",
        S4 => "s4",
        S8 => "s8",
        S16 => "s16",
        S32 => "s32",
        S64 => "s64",
        U16x2 => "u16x2",
        S16x2 => "s16x2",
        F16 => "f16",
        F16x2 => "f16x2",
        Bf16 => "bf16",
        Bf16x2 => "bf16x2",
        Tf32 => "tf32",
        F32 => "f32",
        F32x2 => "f32x2",
        F64 => "f64",
        E4m3 => "e4m3",
        E5m2 => "e5m2",
        E4m3x2 => "e4m3x2",
        E5m2x2 => "e5m2x2",
        E2m1 => "e2m1",
        E2m1x2 => "e2m1x2",
        E2m3 => "e2m3",
        E2m3x2 => "e2m3x2",
        E3m2 => "e3m2",
        E3m2x2 => "e3m2x2",
        Ue8m0 => "ue8m0",
        Ue8m0x2 => "ue8m0x2",
        Texref => "texref",
        Samplerref => "samplerref",
        Surfref => "surfref",
    }
}

impl Type {
    /// Size in bytes of one value; `None` for opaque handles and sub-byte types.
    ///
    /// ```
    /// use ptx_parser::Type;
    /// assert_eq!(Type::F16x2.size_bytes(), Some(4));
    /// ```
    pub fn size_bytes(self) -> Option<u32> {
        use Type::*;
        Some(match self {
            Pred => 1,
            B8 | U8 | S8 | E4m3 | E5m2 | E2m1x2 | E2m3 | E3m2 | Ue8m0 | E2m1 => 1,
            B16 | U16 | S16 | F16 | Bf16 | E4m3x2 | E5m2x2 | E2m3x2 | E3m2x2 | Ue8m0x2 => 2,
            B32 | U32 | S32 | F32 | F16x2 | Bf16x2 | Tf32 | U16x2 | S16x2 => 4,
            B64 | U64 | S64 | F64 | F32x2 => 8,
            B128 => 16,
            B1 | U4 | S4 | Texref | Samplerref | Surfref => return None,
        })
    }
}

keyword_enum! {
    /// A state space: where a variable lives or which memory an instruction touches.
    pub enum StateSpace {
        Reg => "reg",
        Sreg => "sreg",
        Const => "const",
        Global => "global",
        Local => "local",
        Param => "param",
        ParamEntry => "param::entry",
        ParamFunc => "param::func",
        Shared => "shared",
        SharedCta => "shared::cta",
        SharedCluster => "shared::cluster",
        Tex => "tex",
    }
}

keyword_enum! {
    /// Vector width of a load, store, move or declaration.
    pub enum VectorWidth {
        V2 => "v2",
        V4 => "v4",
        V8 => "v8",
    }
}

impl VectorWidth {
    /// Number of lanes.
    ///
    /// ```
    /// assert_eq!(ptx_parser::VectorWidth::V4.lanes(), 4);
    /// ```
    pub fn lanes(self) -> u32 {
        match self {
            VectorWidth::V2 => 2,
            VectorWidth::V4 => 4,
            VectorWidth::V8 => 8,
        }
    }
}

keyword_enum! {
    /// Floating-point and float-to-integer rounding modes.
    pub enum Rounding {
        Rn => "rn",
        Rz => "rz",
        Rm => "rm",
        Rp => "rp",
        Rna => "rna",
        Rs => "rs",
        Rni => "rni",
        Rzi => "rzi",
        Rmi => "rmi",
        Rpi => "rpi",
    }
}

keyword_enum! {
    /// Comparison of `setp` and `set` (the `u` forms are true on NaN).
    pub enum CmpOp {
        Eq => "eq",
        Ne => "ne",
        Lt => "lt",
        Le => "le",
        Gt => "gt",
        Ge => "ge",
        Lo => "lo",
        Ls => "ls",
        Hi => "hi",
        Hs => "hs",
        Equ => "equ",
        Neu => "neu",
        Ltu => "ltu",
        Leu => "leu",
        Gtu => "gtu",
        Geu => "geu",
        Num => "num",
        Nan => "nan",
    }
}

keyword_enum! {
    /// How `setp`/`set` combine the comparison with a predicate operand.
    pub enum BoolOp {
        And => "and",
        Or => "or",
        Xor => "xor",
    }
}

keyword_enum! {
    /// The operation of `atom`, `red`, `redux` and `bar.red`.
    pub enum AtomicOp {
        And => "and",
        Or => "or",
        Xor => "xor",
        Cas => "cas",
        Exch => "exch",
        Add => "add",
        Inc => "inc",
        Dec => "dec",
        Min => "min",
        Max => "max",
        Popc => "popc",
    }
}

keyword_enum! {
    /// Cache operators of loads and stores.
    pub enum CacheOp {
        Ca => "ca",
        Cg => "cg",
        Cs => "cs",
        Lu => "lu",
        Cv => "cv",
        Wb => "wb",
        Wt => "wt",
    }
}

keyword_enum! {
    /// Memory ordering of loads, stores, atomics and fences.
    pub enum MemOrder {
        Weak => "weak",
        Relaxed => "relaxed",
        Acquire => "acquire",
        Release => "release",
        AcqRel => "acq_rel",
        Sc => "sc",
        Volatile => "volatile",
        Mmio => "mmio",
    }
}

keyword_enum! {
    /// Scope of a memory operation or fence.
    pub enum Scope {
        Cta => "cta",
        Cluster => "cluster",
        Gpu => "gpu",
        Sys => "sys",
    }
}

keyword_enum! {
    /// Modifiers that are plain switches.
    pub enum Flag {
        Ftz => "ftz",
        Sat => "sat",
        Satfinite => "satfinite",
        Relu => "relu",
        Approx => "approx",
        Full => "full",
        Wide => "wide",
        Hi => "hi",
        Lo => "lo",
        Uni => "uni",
        Sync => "sync",
        Aligned => "aligned",
        Arrive => "arrive",
        Red => "red",
        Nc => "nc",
        To => "to",
        Row => "row",
        Col => "col",
        Trans => "trans",
        X1 => "x1",
        X2 => "x2",
        X4 => "x4",
        Up => "up",
        Down => "down",
        Bfly => "bfly",
        Idx => "idx",
        All => "all",
        Any => "any",
        Ballot => "ballot",
        Clamp => "clamp",
        Wrap => "wrap",
        L => "l",
        R => "r",
        Shiftamt => "shiftamt",
        Abs => "abs",
        NaN => "NaN",
        Xorsign => "xorsign",
        Cc => "cc",
        Noftz => "noftz",
        Parity => "parity",
        Proxy => "proxy",
        Async => "async",
    }
}

/// The shape of a matrix instruction: `.m16n8k16`, `.m8n8`, `.m64n128k16`.
///
/// ```
/// use ptx_parser::Shape;
/// let s = Shape { m: 16, n: 8, k: Some(16) };
/// assert_eq!(s.to_string(), "m16n8k16");
/// assert_eq!(Shape::from_word("m16n8k16"), Some(s));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Rows of the result.
    pub m: u32,
    /// Columns of the result.
    pub n: u32,
    /// The reduction depth, absent for `ldmatrix`-style shapes.
    pub k: Option<u32>,
}

impl Shape {
    /// Reads `m<M>n<N>[k<K>]`, digits without leading zeros.
    pub fn from_word(word: &str) -> Option<Shape> {
        let rest = word.strip_prefix('m')?;
        let (m, rest) = split_number(rest)?;
        let rest = rest.strip_prefix('n')?;
        let (n, rest) = split_number(rest)?;
        if rest.is_empty() {
            return Some(Shape { m, n, k: None });
        }
        let rest = rest.strip_prefix('k')?;
        let (k, rest) = split_number(rest)?;
        rest.is_empty().then_some(Shape { m, n, k: Some(k) })
    }
}

fn split_number(s: &str) -> Option<(u32, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let digits = &s[..end];
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    Some((digits.parse().ok()?, &s[end..]))
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m{}n{}", self.m, self.n)?;
        if let Some(k) = self.k {
            write!(f, "k{k}")?;
        }
        Ok(())
    }
}

/// One dotted word after an opcode, typed by its role.
///
/// Words whose role depends on the opcode are read in its context: `.lo` is
/// [`CmpOp::Lo`] after `setp`/`set` and [`Flag::Lo`] after `mul`; `.add` is an
/// [`AtomicOp`] after `atom`/`red`/`redux`/`bar`, and an `.and` after `setp` is a [`BoolOp`].
///
/// ```
/// use ptx_parser::{Modifier, Type};
/// assert_eq!(Modifier::Type(Type::F32).to_string(), "f32");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Modifier {
    /// A data type such as `.f32`.
    Type(Type),
    /// A state space such as `.global` or `.shared::cta`.
    Space(StateSpace),
    /// A vector width such as `.v4`.
    Vector(VectorWidth),
    /// A rounding mode such as `.rn`.
    Rounding(Rounding),
    /// A comparison of `setp`/`set`.
    Cmp(CmpOp),
    /// The predicate combination of `setp`/`set`.
    Bool(BoolOp),
    /// The operation of `atom`/`red`/`redux`/`bar.red`.
    Atomic(AtomicOp),
    /// A cache operator such as `.cg`.
    Cache(CacheOp),
    /// A memory ordering such as `.acquire`.
    Order(MemOrder),
    /// A scope such as `.gpu`.
    Scope(Scope),
    /// A matrix shape such as `.m16n8k16`.
    Shape(Shape),
    /// A switch such as `.ftz` or `.approx`.
    Flag(Flag),
    /// Any other word, as written without the leading dot (e.g. `L2::cache_hint`, `2d`).
    Other(String),
}

impl fmt::Display for Modifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Modifier::Type(t) => t.fmt(f),
            Modifier::Space(s) => s.fmt(f),
            Modifier::Vector(v) => v.fmt(f),
            Modifier::Rounding(r) => r.fmt(f),
            Modifier::Cmp(c) => c.fmt(f),
            Modifier::Bool(b) => b.fmt(f),
            Modifier::Atomic(a) => a.fmt(f),
            Modifier::Cache(c) => c.fmt(f),
            Modifier::Order(o) => o.fmt(f),
            Modifier::Scope(s) => s.fmt(f),
            Modifier::Shape(s) => s.fmt(f),
            Modifier::Flag(x) => x.fmt(f),
            Modifier::Other(w) => f.write_str(w),
        }
    }
}
