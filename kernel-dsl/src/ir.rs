//! The typed IR: virtual registers with declared types, typed instructions, and structured
//! control flow. Labels do not exist here; the emitter lowers `If`/`Loop` to uniquely named
//! labels, so IR cannot contain a branch to a label that is missing or defined twice.

use crate::artifact::BlockContract;
use crate::op::Op;
use crate::source_map::{SourceLoc, SourceMap};
use crate::types::{ScalarType, StateSpace};
use serde::{Deserialize, Serialize};

/// A virtual register: an index into [`Kernel::regs`] plus its declared type, carried so that
/// an operand's type can be checked without a table lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Reg {
    pub id: u32,
    pub ty: ScalarType,
}

/// A grid dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dim {
    X,
    Y,
    Z,
}

impl Dim {
    pub const fn ptx(self) -> &'static str {
        match self {
            Dim::X => "x",
            Dim::Y => "y",
            Dim::Z => "z",
        }
    }
}

/// A special register (read with `mov`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SpecialReg {
    Tid(Dim),
    Ntid(Dim),
    Ctaid(Dim),
    Nctaid(Dim),
    LaneId,
    WarpId,
    NWarpId,
    SmId,
    Clock,
    Clock64,
    GlobalTimer,
    /// `%dynamic_smem_size`: bytes of dynamic shared memory this launch received.
    DynamicSmemSize,
    /// `%cluster_ctarank`: the CTA's rank in its cluster (sm_90+).
    ClusterCtaRank,
    /// `%cluster_nctarank`: how many CTAs its cluster holds (sm_90+).
    ClusterNctaRank,
}

impl SpecialReg {
    pub fn ptx(self) -> String {
        match self {
            SpecialReg::Tid(d) => format!("%tid.{}", d.ptx()),
            SpecialReg::Ntid(d) => format!("%ntid.{}", d.ptx()),
            SpecialReg::Ctaid(d) => format!("%ctaid.{}", d.ptx()),
            SpecialReg::Nctaid(d) => format!("%nctaid.{}", d.ptx()),
            SpecialReg::LaneId => "%laneid".into(),
            SpecialReg::WarpId => "%warpid".into(),
            SpecialReg::NWarpId => "%nwarpid".into(),
            SpecialReg::SmId => "%smid".into(),
            SpecialReg::Clock => "%clock".into(),
            SpecialReg::Clock64 => "%clock64".into(),
            SpecialReg::GlobalTimer => "%globaltimer".into(),
            SpecialReg::DynamicSmemSize => "%dynamic_smem_size".into(),
            SpecialReg::ClusterCtaRank => "%cluster_ctarank".into(),
            SpecialReg::ClusterNctaRank => "%cluster_nctarank".into(),
        }
    }

    pub const fn ty(self) -> ScalarType {
        match self {
            SpecialReg::Clock64 | SpecialReg::GlobalTimer => ScalarType::U64,
            _ => ScalarType::U32,
        }
    }

    /// Whether every thread of a CTA reads the same value (used by the barrier-uniformity rule).
    pub const fn is_cta_uniform(self) -> bool {
        matches!(
            self,
            SpecialReg::Ntid(_)
                | SpecialReg::Ctaid(_)
                | SpecialReg::Nctaid(_)
                | SpecialReg::NWarpId
                | SpecialReg::SmId
                | SpecialReg::DynamicSmemSize
                | SpecialReg::ClusterCtaRank
                | SpecialReg::ClusterNctaRank
        )
    }
}

/// An immediate operand. Floats are kept as bits so that IR compares, hashes and serializes
/// exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Imm {
    Int(i64),
    F32Bits(u32),
    F64Bits(u64),
}

impl Imm {
    pub fn f32(v: f32) -> Imm {
        Imm::F32Bits(v.to_bits())
    }
    pub fn f64(v: f64) -> Imm {
        Imm::F64Bits(v.to_bits())
    }
}

/// What an address is relative to.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AddrBase {
    Reg(Reg),
    /// A parameter, shared array or module variable, by its IR name.
    Symbol(String),
}

/// An instruction operand.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Operand {
    Reg(Reg),
    Imm(Imm),
    /// A brace-enclosed register tuple: `{%f1, %f2, %f3, %f4}`.
    Vector(Vec<Operand>),
    /// `[base+offset]`.
    Addr {
        base: AddrBase,
        offset: i64,
    },
    Special(SpecialReg),
    /// The address of a symbol (a shared array) used as a value: `mov.u64 %rd1, tile;`.
    Symbol(String),
    /// The sink `_`, for results an instruction must name but the kernel discards.
    Sink,
    /// A tensor-map address with coordinates, `[%rd1, {%r1, %r2}]` (bulk tensor copies).
    TensorCoords {
        map: Reg,
        coords: Vec<Operand>,
    },
}

impl From<Reg> for Operand {
    fn from(r: Reg) -> Operand {
        Operand::Reg(r)
    }
}

/// An instruction, optionally guarded by a predicate (`@%p1` or `@!%p1`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Inst {
    pub op: Op,
    pub guard: Option<Guard>,
    pub dsts: Vec<Operand>,
    pub srcs: Vec<Operand>,
    /// Where in the kernel's Rust source the instruction came from (`#[kernel]` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loc: Option<SourceLoc>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Guard {
    pub pred: Reg,
    pub negated: bool,
}

/// Structured statements. `Break` and `Continue` refer to the innermost enclosing `Loop`;
/// `Continue` runs the loop's `latch` (the increment of a counted loop) before the next
/// iteration, as falling off the end of the body does.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Stmt {
    Inst(Inst),
    If {
        cond: Reg,
        then_body: Vec<Stmt>,
        else_body: Vec<Stmt>,
    },
    Loop {
        body: Vec<Stmt>,
        latch: Vec<Stmt>,
    },
    Break,
    Continue,
    Return,
    /// A comment carried into the PTX (for readability of generated code).
    Comment(String),
}

/// How a kernel parameter is declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ParamType {
    /// Passed by value.
    Scalar(ScalarType),
    /// A 64-bit address of global memory holding `elem`s; `mutable` is false for read-only
    /// buffers (which may then be loaded through the non-coherent path).
    GlobalPtr { elem: ScalarType, mutable: bool },
    /// A 128-byte tensor map (the driver's `CUtensorMap`) passed by value, 64-byte aligned, so
    /// a captured graph keeps it with the launch; bulk tensor copies read it through its
    /// address.
    TensorMap,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub ty: ParamType,
}

/// A statically sized shared-memory array.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SharedArray {
    pub name: String,
    pub elem: ScalarType,
    pub len: u32,
    pub align: u32,
}

impl SharedArray {
    pub fn bytes(&self) -> u32 {
        self.elem.bytes() * self.len
    }
}

/// Performance directives printed after the entry's parameter list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct PerfDirectives {
    pub reqntid: Option<[u32; 3]>,
    pub maxntid: Option<[u32; 3]>,
    pub maxnreg: Option<u32>,
    pub minnctapersm: Option<u32>,
    /// `.reqnctapercluster x, y, z`: the kernel launches in thread-block clusters of this
    /// shape (sm_90+).
    #[serde(default)]
    pub reqnctapercluster: Option<[u32; 3]>,
}

impl PerfDirectives {
    /// The block contract these directives promise the launcher.
    pub fn block_contract(&self) -> BlockContract {
        match (self.reqntid, self.maxntid) {
            (Some(shape), _) => BlockContract::Exactly(shape),
            (None, Some(m)) => BlockContract::AtMost(m[0] * m[1] * m[2]),
            (None, None) => BlockContract::Any,
        }
    }

    /// The CTAs of one cluster, 1 for a kernel without a cluster shape.
    pub fn cluster_ctas(&self) -> u32 {
        self.reqnctapercluster.map_or(1, |[x, y, z]| x * y * z)
    }
}

/// One kernel (`.entry`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Kernel {
    /// The entry name.
    pub name: String,
    pub params: Vec<Param>,
    /// Declared type of every virtual register, indexed by `Reg::id`.
    pub regs: Vec<ScalarType>,
    pub shared: Vec<SharedArray>,
    /// The name of the `extern .shared` array if the kernel uses dynamic shared memory.
    pub dynamic_shared: Option<String>,
    /// The fewest bytes of dynamic shared memory the kernel's declarations show it indexes
    /// (one element of each `dynamic_shared::<T>()`, or the `N` of `dynamic_shared::<T, N>()`):
    /// a launch giving fewer is refused before anything runs.
    #[serde(default)]
    pub dynamic_shared_min_bytes: u32,
    pub perf: PerfDirectives,
    pub body: Vec<Stmt>,
    /// What the instructions' source locations point into; empty for builder kernels.
    #[serde(default, skip_serializing_if = "SourceMap::is_empty")]
    pub source: SourceMap,
}

impl Kernel {
    /// Symbol of the i-th parameter in the emitted PTX.
    pub fn param_symbol(&self, index: usize) -> String {
        format!("{}_param_{}", self.name, index)
    }

    pub fn static_shared_bytes(&self) -> u32 {
        self.shared.iter().fold(0u32, |acc, s| {
            acc.next_multiple_of(s.align.max(1)) + s.bytes()
        })
    }

    /// Whether the kernel waits for the grid launched before it (`griddepcontrol.wait`), so
    /// that the runtime may start it while that grid finishes (programmatic dependent launch).
    pub fn waits_on_prior_grid(&self) -> bool {
        let mut waits = false;
        self.for_each_inst(&mut |inst| {
            waits |= matches!(
                inst.op,
                crate::op::Op::GridDep {
                    kind: crate::op::GridDepControl::Wait
                }
            );
        });
        waits
    }

    /// Visits every instruction in program order.
    pub fn for_each_inst<'a>(&'a self, f: &mut impl FnMut(&'a Inst)) {
        fn walk<'a>(stmts: &'a [Stmt], f: &mut impl FnMut(&'a Inst)) {
            for s in stmts {
                match s {
                    Stmt::Inst(i) => f(i),
                    Stmt::If {
                        then_body,
                        else_body,
                        ..
                    } => {
                        walk(then_body, f);
                        walk(else_body, f);
                    }
                    Stmt::Loop { body, latch } => {
                        walk(body, f);
                        walk(latch, f);
                    }
                    Stmt::Break | Stmt::Continue | Stmt::Return | Stmt::Comment(_) => {}
                }
            }
        }
        walk(&self.body, f);
    }

    /// The state space a symbol lives in, if the kernel declares it.
    /// True when `name` is the symbol of a tensor-map parameter.
    pub fn is_tensor_map(&self, name: &str) -> bool {
        self.params
            .iter()
            .enumerate()
            .any(|(i, p)| p.ty == ParamType::TensorMap && self.param_symbol(i) == name)
    }

    pub fn symbol_space(&self, name: &str) -> Option<StateSpace> {
        if self.shared.iter().any(|s| s.name == name)
            || self.dynamic_shared.as_deref() == Some(name)
        {
            return Some(StateSpace::Shared);
        }
        if (0..self.params.len()).any(|i| self.param_symbol(i) == name) {
            return Some(StateSpace::Param);
        }
        None
    }
}

impl Kernel {
    /// Serializes the kernel, so a build can embed it and the runtime can emit PTX for a
    /// target that was not built in.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("kernel IR holds only serializable plain data")
    }

    /// The kernel's JSON, deflated: what `#[kernel]` embeds in a binary (about a tenth of the
    /// text, which repeats its field names on every instruction).
    ///
    /// ```
    /// let k = kernel_dsl::samples::vector_add();
    /// assert_eq!(kernel_dsl::ir::Kernel::from_packed(&k.to_packed()).unwrap(), k);
    /// ```
    pub fn to_packed(&self) -> Vec<u8> {
        miniz_oxide::deflate::compress_to_vec(self.to_json().as_bytes(), 9)
    }

    /// Reads a kernel written by [`Kernel::to_packed`].
    pub fn from_packed(bytes: &[u8]) -> Result<Kernel, crate::error::Error> {
        let text = miniz_oxide::inflate::decompress_to_vec(bytes).map_err(|e| {
            crate::error::Error::Verify {
                kernel: "<embedded IR>".into(),
                detail: format!("the embedded IR does not inflate ({e}); rebuild the crate that embedded it with this version of ptxkit"),
            }
        })?;
        let text = String::from_utf8(text).map_err(|e| crate::error::Error::Verify {
            kernel: "<embedded IR>".into(),
            detail: format!("the embedded IR is not UTF-8 ({e}); rebuild the crate that embedded it with this version of ptxkit"),
        })?;
        Kernel::from_json(&text)
    }

    /// Reads a kernel written by [`Kernel::to_json`].
    pub fn from_json(text: &str) -> Result<Kernel, crate::error::Error> {
        serde_json::from_str(text).map_err(|e| crate::error::Error::Verify {
            kernel: "<embedded IR>".into(),
            detail: format!("the embedded IR does not parse ({e}); rebuild the crate that embedded it with this version of ptxkit"),
        })
    }
}
