//! The compact, pre-decoded form the interpreter executes: registers resolved to slot indices,
//! immediates and special registers turned into pre-filled slots, labels into instruction
//! indices, and every modifier folded into small enums. Nothing here holds a string that the
//! run loop looks at.

use crate::numerics::{Approx, CvtMode, CvtType, FloatMode, Fp8, Half, PrmtMode, RoundedOp};
use ptx_parser::SpecialReg;

/// Index of a 64-bit slot in a thread's register file.
pub(crate) type Slot = u32;

/// A slot that is never read: the target of `_` and of absent optional destinations.
pub(crate) const NO_SLOT: Slot = u32::MAX;

/// Width of an integer operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum W {
    B8,
    B16,
    B32,
    B64,
}

impl W {
    pub(crate) fn bits(self) -> u32 {
        match self {
            W::B8 => 8,
            W::B16 => 16,
            W::B32 => 32,
            W::B64 => 64,
        }
    }
    #[inline]
    pub(crate) fn mask(self) -> u64 {
        match self {
            W::B8 => 0xff,
            W::B16 => 0xffff,
            W::B32 => 0xffff_ffff,
            W::B64 => u64::MAX,
        }
    }
    /// Sign-extends the low `bits()` of `v` to 64 bits.
    #[inline]
    pub(crate) fn sext(self, v: u64) -> i64 {
        match self {
            W::B8 => v as i8 as i64,
            W::B16 => v as i16 as i64,
            W::B32 => v as i32 as i64,
            W::B64 => v as i64,
        }
    }
}

/// The integer operations, all run through one arm of the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntOp {
    Add,
    AddSat,
    Sub,
    SubSat,
    /// `add.cc`: writes the carry-out.
    AddCc,
    /// `addc{.cc}`: adds the carry-in; `.cc` writes the carry-out too.
    AddC {
        cc: bool,
    },
    SubCc,
    SubC {
        cc: bool,
    },
    MulLo,
    MulHi,
    MulWide,
    Mul24Lo,
    Mul24Hi,
    MadLo,
    MadHi,
    MadWide,
    Mad24Lo,
    /// `mad.lo.cc` and `madc.lo{.cc}` (extended-precision multiply-add).
    MadLoCc {
        carry_in: bool,
        carry_out: bool,
    },
    MadHiCc {
        carry_in: bool,
        carry_out: bool,
    },
    Div,
    Rem,
    Min,
    Max,
    Abs,
    Neg,
    And,
    Or,
    Xor,
    Not,
    Cnot,
    Shl,
    Shr,
    Popc,
    Clz,
    Brev,
    Bfe,
    Bfi,
    Bfind {
        shift_amount: bool,
    },
    Prmt(PrmtMode),
    Lop3,
    Shf {
        left: bool,
        clamp: bool,
    },
    Sad,
    /// `not.pred`: logical negation of a 0/1 predicate.
    PredNot,
    Dp4a {
        a_signed: bool,
        b_signed: bool,
    },
}

/// A comparison of `setp`/`set`, with its operand type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Float-only: true if either operand is NaN or the ordered comparison holds.
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpTy {
    Unsigned(W),
    Signed(W),
    F32,
    /// `.ftz.f32`: subnormal operands compare as zero.
    F32Ftz,
    F64,
    Half(Half),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoolCombine {
    And,
    Or,
    Xor,
}

/// f32 operations that round to nearest with no `.ftz`/`.sat` (the native fast path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloatOp {
    Add,
    Sub,
    Mul,
    Div,
    Fma,
    Min,
    Max,
    MinNaN,
    MaxNaN,
    Abs,
    Neg,
    Copysign,
}

/// Operations on f16/bf16 (scalar or packed pairs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HalfOp {
    Rounded(RoundedOp),
    Min { nan: bool },
    Max { nan: bool },
    Neg,
    Abs,
    Ex2,
    Tanh,
}

/// Memory a load or store addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Global,
    Shared,
    Local,
    /// Global, shared or local depending on which window the address falls in.
    Generic,
    /// Module `.const` data.
    Const,
    /// The launch's kernel parameters, read-only (reached through `cvta.param` addresses).
    Param,
}

/// Element of a load or store: size in bytes and whether a load sign-extends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elem {
    pub bytes: u8,
    pub signed: bool,
}

/// Register operands of a vector access (first `n` used).
pub(crate) type Regs4 = [Slot; 4];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemRef {
    pub space: Space,
    pub base: Slot,
    pub offset: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomOp {
    Add,
    Min,
    Max,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

/// The type an atomic operates on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomTy {
    U32,
    S32,
    U64,
    S64,
    F32,
    F64,
    F16x2,
    Bf16x2,
    F16,
    Bf16,
    /// 16-bit compare-and-swap / exchange.
    B16,
}

impl AtomTy {
    pub(crate) fn bytes(self) -> u32 {
        match self {
            AtomTy::U64 | AtomTy::S64 | AtomTy::F64 => 8,
            AtomTy::F16 | AtomTy::Bf16 | AtomTy::B16 => 2,
            _ => 4,
        }
    }
}

/// One decoded instruction with its guard.
#[derive(Debug, Clone)]
pub(crate) struct Inst {
    /// Predicate slot, or [`NO_SLOT`] for an unguarded instruction.
    pub guard: Slot,
    /// `@!p`: run when the predicate is false.
    pub negate: bool,
    pub op: Op,
}

#[derive(Debug, Clone)]
pub(crate) enum Op {
    Nop,
    Mov {
        d: Slot,
        a: Slot,
    },
    /// `mov.b64 d, {a, b}`: packs `n` parts of `bits` each, first part lowest.
    Pack {
        d: Slot,
        parts: Regs4,
        n: u8,
        bits: u8,
    },
    /// `mov.b64 {a, b}, s`: the reverse.
    Unpack {
        s: Slot,
        parts: Regs4,
        n: u8,
        bits: u8,
    },
    /// `e` is the fourth source of `bfi` (length) and `lop3` (lookup table).
    Int {
        op: IntOp,
        w: W,
        signed: bool,
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        e: Slot,
    },
    /// `setp.cmp{.bool}.ty p|q, a, b{, c}`: p = cmp(a,b) BOOL c, q = !cmp(a,b) BOOL c.
    Setp {
        cmp: Cmp,
        ty: CmpTy,
        combine: BoolCombine,
        c_negated: bool,
        p: Slot,
        q: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    /// `set.cmp.dty.sty d, a, b`: all ones (integers) or 1.0 (f32) when true.
    Set {
        cmp: Cmp,
        ty: CmpTy,
        float_result: bool,
        d: Slot,
        a: Slot,
        b: Slot,
    },
    Selp {
        d: Slot,
        a: Slot,
        b: Slot,
        p: Slot,
    },
    /// `slct.dty.s32 d, a, b, c`: `c >= 0 ? a : b` (f32 `c` when `float_c`).
    Slct {
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        float_c: bool,
    },
    F32 {
        op: FloatOp,
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    F32Mode {
        op: RoundedOp,
        mode: FloatMode,
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    /// `abs/neg/min/max.ftz.f32`.
    F32Ftz {
        op: FloatOp,
        d: Slot,
        a: Slot,
        b: Slot,
    },
    F64 {
        op: FloatOp,
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    F64Mode {
        op: RoundedOp,
        mode: FloatMode,
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    Approx32 {
        func: Approx,
        ftz: bool,
        d: Slot,
        a: Slot,
    },
    Approx64 {
        func: Approx,
        d: Slot,
        a: Slot,
    },
    Half {
        kind: Half,
        pairs: bool,
        op: HalfOp,
        mode: FloatMode,
        d: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
    },
    /// `testp.op.f32/f64`.
    Testp {
        test: Testp,
        f64: bool,
        d: Slot,
        a: Slot,
    },
    Cvt {
        from: CvtType,
        to: CvtType,
        mode: CvtMode,
        d: Slot,
        a: Slot,
    },
    /// `cvt.rn.f16x2.f32 d, a, b` and `bf16x2`.
    CvtPack {
        to: CvtType,
        mode: CvtMode,
        d: Slot,
        a: Slot,
        b: Slot,
    },
    /// `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b`: `a` to the high byte.
    CvtToFp8Pair {
        to: crate::numerics::Fp8,
        satfinite: bool,
        relu: bool,
        d: Slot,
        a: Slot,
        b: Slot,
    },
    /// `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2 d, a`.
    CvtHalf2ToFp8Pair {
        to: crate::numerics::Fp8,
        satfinite: bool,
        relu: bool,
        d: Slot,
        a: Slot,
    },
    /// `cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a`.
    CvtFp8PairToHalf2 {
        from: crate::numerics::Fp8,
        relu: bool,
        d: Slot,
        a: Slot,
    },
    /// `cvta{.to}.space`: adds (`to_generic`) or removes the space's window base.
    Cvta {
        to_generic: bool,
        space: Space,
        d: Slot,
        a: Slot,
    },
    /// `isspacep.space p, a`.
    Isspacep {
        space: Space,
        d: Slot,
        a: Slot,
    },
    Ld {
        at: MemRef,
        elem: Elem,
        n: u8,
        d: Regs4,
    },
    St {
        at: MemRef,
        elem: Elem,
        n: u8,
        s: Regs4,
    },
    /// `ld.param` of a kernel parameter at a byte offset.
    LdParam {
        offset: u32,
        elem: Elem,
        n: u8,
        d: Regs4,
    },
    Atom {
        at: MemRef,
        op: AtomOp,
        ty: AtomTy,
        d: Slot,
        b: Slot,
        c: Slot,
    },
    Bra {
        target: u32,
    },
    /// Ends the thread.
    Exit,
    /// Returns from a device function, or ends the thread in the entry.
    Ret,
    /// Calls a device function; the payload indexes the kernel's call sites.
    Call(u32),
    /// `bar.sync`/`barrier.sync` (`arrive` for `bar.arrive`): barrier id and optional thread
    /// count slots.
    Bar {
        arrive: bool,
        id: Slot,
        count: Slot,
        /// `bar.red`: index into the kernel's barrier reductions, or [`NO_SLOT`].
        red: u32,
    },
    /// A warp-collective instruction; the payload is an index into the kernel's collectives.
    Collective(u32),
    CpAsync {
        dst: MemRef,
        src: MemRef,
        bytes: u8,
        src_bytes: Slot,
    },
    CpAsyncCommit,
    /// `cp.async.bulk`: copies `size` bytes (a multiple of 16) between global and shared
    /// memory; with `mbar`, then completes that many transaction bytes on the mbarrier.
    BulkCopy {
        dst: MemRef,
        src: MemRef,
        size: Slot,
        mbar: Option<MemRef>,
    },
    /// `cp.async.bulk.tensor` from global to shared memory; the payload indexes the kernel's
    /// tensor copies.
    TensorCopy(u32),
    /// Index into the kernel's `tensor_stores`.
    TensorStore(u32),
    /// Waits until at most `n` committed groups are pending (`wait_all`: `u32::MAX`, which also
    /// completes copies not yet committed).
    CpAsyncWait {
        n: u32,
    },
    /// An `mbarrier` operation on the 8-byte barrier object at `at`.
    Mbarrier {
        op: MbarOp,
        at: MemRef,
        d: Slot,
        b: Slot,
    },
    Clock {
        d: Slot,
        wide: bool,
    },
    /// `nanosleep`: the thread gives way so that other threads, and other blocks, run before
    /// it polls again. The duration is ignored.
    Nanosleep,
    /// `barrier.cluster.arrive` (`wait: false`) or `barrier.cluster.wait`: the two halves of
    /// the barrier over every thread of the cluster.
    ClusterBarrier {
        wait: bool,
    },
    /// `mapa.shared::cluster.u32 d, a, rank`: the shared address `a` (of this CTA, or already
    /// mapped) mapped to CTA `rank` of the cluster, in the emulator's cluster-address form.
    Mapa {
        d: Slot,
        a: Slot,
        rank: Slot,
    },
    Trap,
}

/// Where a `cp.async.bulk.tensor` finds its 128-byte tensor map.
#[derive(Debug, Clone)]
pub(crate) enum MapSource {
    /// A kernel parameter, at this offset of the parameter buffer.
    Param { name: String, offset: u32 },
    /// A generic or global address held in this slot.
    Address(Slot),
}

/// A decoded `cp.async.bulk.tensor` (global to shared, tile mode, mbarrier completion).
#[derive(Debug, Clone)]
pub(crate) struct TensorCopy {
    /// The box's first byte in shared memory.
    pub dst: MemRef,
    pub map: MapSource,
    /// Signed 32-bit coordinates, innermost first; their count is the instruction's `.Nd`.
    pub coords: Vec<Slot>,
    /// The mbarrier that receives the box's bytes as completed transactions.
    pub mbar: MemRef,
    /// `.multicast::cluster`: the 16-bit mask of the cluster's CTAs that each receive the box
    /// at `dst` and its bytes on the mbarrier at `mbar`, both offsets in their own memory.
    pub multicast: Option<Slot>,
}

/// A decoded `cp.async.bulk.tensor` from shared to global memory (tile mode, bulk-group
/// completion).
#[derive(Debug, Clone)]
pub(crate) struct TensorStore {
    /// The box's first byte in shared memory.
    pub src: MemRef,
    pub map: MapSource,
    /// Signed 32-bit coordinates, innermost first; their count is the instruction's `.Nd`.
    pub coords: Vec<Slot>,
}

/// The `mbarrier` operations. `b` is the count, transaction bytes, state token or parity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MbarOp {
    Init,
    Inval,
    /// `arrive` (`drop`: `arrive_drop`, which also lowers the expected count); `d` = token.
    Arrive {
        drop: bool,
    },
    /// `arrive.expect_tx`: adds `b` transaction bytes, then arrives once.
    ArriveExpectTx,
    ExpectTx,
    CompleteTx,
    /// `test_wait`/`try_wait`, on a state token or (`parity`) a phase parity; `d` = done.
    Wait {
        parity: bool,
    },
    /// `cp.async.mbarrier.arrive`: completes the thread's copies, then arrives if `noinc`.
    CpAsyncArrive {
        noinc: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Testp {
    Finite,
    Infinite,
    Number,
    NotANumber,
    Normal,
    Subnormal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// The tensor-core shapes and operand types `mma.sync` supports here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MmaKind {
    /// m16n8k8 with f16 or bf16 inputs.
    M16N8K8Half(Half),
    /// m16n8k16 with f16 or bf16 inputs.
    M16N8K16Half(Half),
    /// m16n8k8 with tf32 inputs.
    M16N8K8Tf32,
    /// m16n8k4 with tf32 inputs.
    M16N8K4Tf32,
    /// m16n8k32 with s8/u8 inputs and an s32 accumulator.
    M16N8K32Int8 { a_signed: bool, b_signed: bool },
}

/// An input type of `wgmma.mma_async`: it fixes the element size and the K of one product
/// (32 bytes of K per row for every type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WgmmaInput {
    Half(Half),
    Tf32,
    Fp8(Fp8),
}

impl WgmmaInput {
    pub(crate) fn bytes(self) -> usize {
        match self {
            WgmmaInput::Half(_) => 2,
            WgmmaInput::Tf32 => 4,
            WgmmaInput::Fp8(_) => 1,
        }
    }

    /// K of one instruction: 16 for f16/bf16, 8 for tf32, 32 for fp8.
    pub(crate) fn k(self) -> usize {
        32 / self.bytes()
    }

    /// The value of one element from its little-endian bits; the tensor core reads the top
    /// 19 bits of a tf32 operand.
    pub(crate) fn value(self, bits: u32) -> f64 {
        match self {
            WgmmaInput::Half(h) => h.to_f64(bits as u16),
            WgmmaInput::Tf32 => f32::from_bits(bits & 0xffff_e000) as f64,
            WgmmaInput::Fp8(f) => f.to_f64(bits as u8),
        }
    }
}

/// Warp-collective instructions: executed once for all participating lanes together.
#[derive(Debug, Clone)]
pub(crate) enum Collective {
    Shfl {
        mode: ShflMode,
        d: Slot,
        p: Slot,
        a: Slot,
        b: Slot,
        c: Slot,
        mask: Slot,
    },
    Vote {
        mode: VoteMode,
        d: Slot,
        a: Slot,
        negated: bool,
        mask: Slot,
    },
    Redux {
        op: ReduxOp,
        signed: bool,
        d: Slot,
        a: Slot,
        mask: Slot,
    },
    /// `match.any/all.sync.b32/b64`.
    Match {
        all: bool,
        wide: bool,
        d: Slot,
        p: Slot,
        a: Slot,
        mask: Slot,
    },
    /// `bar.warp.sync mask`.
    WarpSync { mask: Slot },
    /// `activemask.b32 d`: the lanes that reached this instruction together (resolved once
    /// every lane of the warp has stopped somewhere).
    Activemask { d: Slot },
    /// `elect.sync d|p, mask`: the lowest participating lane is elected.
    Elect { d: Slot, p: Slot, mask: Slot },
    /// `d = a * b + c`; `f16_acc` when C and D are packed f16 pairs instead of f32.
    Mma {
        kind: MmaKind,
        f16_acc_c: bool,
        f16_acc_d: bool,
        /// `.satfinite` on integer MMA: clamp to the s32 range instead of wrapping.
        satfinite: bool,
        d: Vec<Slot>,
        a: Vec<Slot>,
        b: Vec<Slot>,
        c: Vec<Slot>,
    },
    /// `wgmma.mma_async` over the warpgroup (4 warps): `D = A*B (+ D if scale_d)`, A from
    /// registers (`a` non-empty) or a shared-memory descriptor, B from a descriptor.
    Wgmma {
        a_ty: WgmmaInput,
        b_ty: WgmmaInput,
        n: u32,
        d: Vec<Slot>,
        a: Vec<Slot>,
        a_desc: Slot,
        b_desc: Slot,
        scale_d: Slot,
        negate_a: bool,
        negate_b: bool,
        /// `imm-trans-a`/`imm-trans-b`: the operand is MN-major rather than K-major.
        trans_a: bool,
        trans_b: bool,
    },
    Ldmatrix {
        count: u8,
        trans: bool,
        d: Regs4,
        at: MemRef,
    },
    Stmatrix {
        count: u8,
        trans: bool,
        s: Regs4,
        at: MemRef,
    },
}

impl Collective {
    /// Whether all four warps of a warpgroup take part (`wgmma`), rather than one warp.
    pub(crate) fn is_warpgroup(&self) -> bool {
        matches!(self, Collective::Wgmma { .. })
    }

    /// The slot holding the member mask, for instructions that take one.
    pub(crate) fn mask(&self) -> Option<Slot> {
        match self {
            Collective::Shfl { mask, .. }
            | Collective::Vote { mask, .. }
            | Collective::Redux { mask, .. }
            | Collective::Match { mask, .. }
            | Collective::WarpSync { mask }
            | Collective::Elect { mask, .. } => (*mask != NO_SLOT).then_some(*mask),
            Collective::Mma { .. }
            | Collective::Ldmatrix { .. }
            | Collective::Stmatrix { .. }
            | Collective::Activemask { .. }
            | Collective::Wgmma { .. } => None,
        }
    }
}

/// One `call`: where to jump and which per-thread local bytes to copy (source offset,
/// destination offset, length) on the way in and on the way back.
#[derive(Debug, Clone)]
pub(crate) struct CallSite {
    pub target: u32,
    pub args: Vec<(u32, u32, u32)>,
    pub rets: Vec<(u32, u32, u32)>,
}

/// The reduction `bar.red` computes over the predicates of the threads it releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarRedOp {
    Popc,
    And,
    Or,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct BarRed {
    pub op: BarRedOp,
    pub d: Slot,
    pub c: Slot,
    pub negated: bool,
}

/// A kernel parameter's place in the parameter buffer.
#[derive(Debug, Clone)]
pub(crate) struct ParamInfo {
    pub name: String,
    pub offset: u32,
    pub bytes: u32,
}

/// A shared variable's place in the CTA's shared memory, for naming faulting addresses.
#[derive(Debug, Clone)]
pub(crate) struct SharedSymbol {
    pub name: String,
    pub offset: u32,
    /// `None` for the dynamic `.extern .shared` array.
    pub bytes: Option<u32>,
}

/// An entry point, decoded.
#[derive(Debug, Clone)]
pub(crate) struct Kernel {
    pub name: String,
    pub code: Vec<Inst>,
    /// The PTX text of each instruction, for error messages.
    pub text: Vec<String>,
    /// The Rust source location of each instruction, where its `.loc` named one.
    pub source: Vec<Option<String>>,
    pub collectives: Vec<Collective>,
    /// Slots per thread: declared registers first, then constants and special registers.
    pub slots: u32,
    /// Declared registers occupy `0..registers`.
    pub registers: u32,
    pub constants: Vec<(Slot, u64)>,
    pub specials: Vec<(Slot, SpecialReg)>,
    pub params: Vec<ParamInfo>,
    pub param_bytes: u32,
    /// Bytes of static shared memory; dynamic shared memory starts at `dynamic_offset`.
    pub static_shared: u32,
    pub dynamic_offset: u32,
    pub shared_symbols: Vec<SharedSymbol>,
    pub local_bytes: u32,
    /// Module `.const` data visible to this kernel.
    pub const_data: Vec<u8>,
    /// Slots that receive the address of a module `.global` variable at launch.
    pub links: Vec<(Slot, String)>,
    pub calls: Vec<CallSite>,
    pub bar_reds: Vec<BarRed>,
    pub tensor_copies: Vec<TensorCopy>,
    pub tensor_stores: Vec<TensorStore>,
    /// The thread-block cluster shape (`.reqnctapercluster`); `[1, 1, 1]` without one.
    pub cluster: [u32; 3],
}
