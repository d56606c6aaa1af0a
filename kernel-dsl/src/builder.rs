//! Writes kernel IR. Two layers: typed values ([`Value<T>`], [`GlobalSlice`], [`SharedArray`])
//! for hand-written kernels, where an ill-typed kernel does not compile; and raw methods
//! ([`KernelBuilder::reg`], [`KernelBuilder::push`], `open_*`/`close`) for generators such as
//! `#[kernel]`, whose own type checker runs first and whose output the verifier checks again.
//!
//! A value of one type cannot be stored through a buffer of another without a visible
//! conversion:
//!
//! ```compile_fail
//! use kernel_dsl::builder::KernelBuilder;
//! use kernel_dsl::scalar::U32;
//! let mut b = KernelBuilder::new("k");
//! let out = b.param_slice_mut::<U32>("out");
//! let i = b.const_u32(0);
//! let v = b.const_f32(1.5);
//! b.st_global(&out, i, v); // an f32 into a u32 buffer
//! ```
//!
//! ```
//! use kernel_dsl::builder::KernelBuilder;
//! use kernel_dsl::scalar::U32;
//! let mut b = KernelBuilder::new("k");
//! let out = b.param_slice_mut::<U32>("out");
//! let i = b.const_u32(0);
//! let v = b.const_f32(1.5);
//! let v = b.cvt::<U32, _>(v); // cvt.rzi.u32.f32
//! b.st_global(&out, i, v);
//! ```
//!
//! and a read-only buffer offers no store:
//!
//! ```compile_fail
//! use kernel_dsl::builder::KernelBuilder;
//! use kernel_dsl::scalar::F32;
//! let mut b = KernelBuilder::new("k");
//! let x = b.param_slice::<F32>("x");
//! let i = b.const_u32(0);
//! let v = b.const_f32(1.5);
//! b.st_global(&x, i, v);
//! ```

use crate::ir::{
    AddrBase, Dim, Guard, Imm, Inst, Kernel, Operand, Param, ParamType, PerfDirectives, Reg,
    SharedArray as SharedDecl, SpecialReg, Stmt,
};
use crate::op::{
    ApproxFn, AtomOp, BarRedOp, Cmp, CvtRounding, DivMode, MatrixCount, MmaShape, MulMode, Op,
    ReduxOp, Rounding, ShflMode, VoteMode,
};
use crate::scalar::{Arith, Float, Int, Pred, Scalar, Word32, B32, F32, U32, U64};
use crate::source_map::{SourceLoc, SourceMap};
use crate::types::{ScalarType, StateSpace, VecWidth};
use std::marker::PhantomData;

/// A typed virtual register.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Value<T> {
    reg: Reg,
    _ty: PhantomData<T>,
}

impl<T> Clone for Value<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Value<T> {}

impl<T: Scalar> Value<T> {
    pub fn reg(self) -> Reg {
        self.reg
    }

    /// Wraps a raw register whose declared type is `T`; `None` if it is not.
    pub fn from_reg(reg: Reg) -> Option<Value<T>> {
        (reg.ty == T::TY).then_some(Value {
            reg,
            _ty: PhantomData,
        })
    }
}

/// A global-memory buffer passed as a kernel parameter: its converted global address.
/// `MUT` is false for read-only buffers, which load through the non-coherent path and offer no
/// stores.
#[derive(Debug)]
pub struct GlobalSlice<T, const MUT: bool> {
    base: Value<U64>,
    _ty: PhantomData<T>,
}

impl<T, const M: bool> Clone for GlobalSlice<T, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const M: bool> Copy for GlobalSlice<T, M> {}

impl<T, const M: bool> GlobalSlice<T, M> {
    /// The buffer's global address.
    pub fn base(&self) -> Value<U64> {
        self.base
    }
}

/// A shared-memory array (static, or the dynamic `extern` array).
#[derive(Clone, Debug)]
pub struct SharedArray<T> {
    name: String,
    _ty: PhantomData<T>,
}

impl<T> SharedArray<T> {
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A place in the innermost open block, taken by [`KernelBuilder::mark`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    region: u64,
    len: usize,
}

/// Whether `o` names `r` (a vector's lanes, an address's base, a tensor map and its
/// coordinates).
fn operand_names(o: &Operand, r: &Reg) -> bool {
    match o {
        Operand::Reg(x) => x == r,
        Operand::Vector(v) => v.iter().any(|o| operand_names(o, r)),
        Operand::Addr {
            base: AddrBase::Reg(x),
            ..
        } => x == r,
        Operand::TensorCoords { map, coords } => {
            map == r || coords.iter().any(|o| operand_names(o, r))
        }
        _ => false,
    }
}

enum Frame {
    Block(Vec<Stmt>),
    Then {
        cond: Reg,
        body: Vec<Stmt>,
    },
    Else {
        cond: Reg,
        then_body: Vec<Stmt>,
        body: Vec<Stmt>,
    },
    LoopBody {
        body: Vec<Stmt>,
    },
    LoopLatch {
        body: Vec<Stmt>,
        latch: Vec<Stmt>,
    },
}

impl Frame {
    fn stmts(&mut self) -> &mut Vec<Stmt> {
        match self {
            Frame::Block(b) | Frame::Then { body: b, .. } | Frame::Else { body: b, .. } => b,
            Frame::LoopBody { body } => body,
            Frame::LoopLatch { latch, .. } => latch,
        }
    }
}

/// Builds one kernel.
///
/// ```
/// use kernel_dsl::builder::KernelBuilder;
/// use kernel_dsl::scalar::{F32, U32};
/// use kernel_dsl::ir::Dim;
/// use kernel_dsl::op::Cmp;
///
/// let mut b = KernelBuilder::new("scale");
/// let x = b.param_slice_mut::<F32>("x");
/// let s = b.param::<F32>("s");
/// let n = b.param::<U32>("n");
/// let i = b.global_index(Dim::X);
/// let inside = b.setp(Cmp::Lt, i, n);
/// b.if_(inside, |b| {
///     let v = b.ld_global(&x, i);
///     let v = b.mul(v, s);
///     b.st_global(&x, i, v);
/// });
/// let kernel = b.finish();
/// assert_eq!(kernel.params.len(), 3);
/// ```
pub struct KernelBuilder {
    kernel: Kernel,
    frames: Vec<Frame>,
    /// Counts structure changes (each `open_*` and `close`), so that a generator can tell
    /// whether two instructions are in one straight-line run.
    region: u64,
    /// The source location given to instructions pushed from now on.
    loc: Option<SourceLoc>,
}

impl KernelBuilder {
    pub fn new(name: impl Into<String>) -> KernelBuilder {
        KernelBuilder {
            kernel: Kernel {
                name: name.into(),
                params: Vec::new(),
                regs: Vec::new(),
                shared: Vec::new(),
                dynamic_shared: None,
                dynamic_shared_min_bytes: 0,
                perf: PerfDirectives::default(),
                body: Vec::new(),
                source: SourceMap::default(),
            },
            frames: vec![Frame::Block(Vec::new())],
            region: 0,
            loc: None,
        }
    }

    /// Changes whenever a block opens or closes: two instructions pushed under the same value
    /// run one after the other, with nothing that branches between them.
    pub fn region(&self) -> u64 {
        self.region
    }

    /// Closes the kernel. Blocks left open (an `open_if` without `close`) are closed in order.
    pub fn finish(mut self) -> Kernel {
        while self.frames.len() > 1 {
            self.close();
        }
        if let Some(Frame::Block(body)) = self.frames.pop() {
            self.kernel.body = body;
        }
        self.kernel
    }

    // ----- raw layer -------------------------------------------------------------------

    /// A fresh register of type `ty`.
    pub fn reg(&mut self, ty: ScalarType) -> Reg {
        let id = self.kernel.regs.len() as u32;
        self.kernel.regs.push(ty);
        Reg { id, ty }
    }

    /// Where the innermost open block stands now, for [`KernelBuilder::forward_results`].
    pub fn mark(&mut self) -> Mark {
        Mark {
            region: self.region,
            len: self.current().len(),
        }
    }

    /// Makes the last instruction write `to` where it writes `from`, so that `to = from` needs
    /// no copy: a load lands in the variable that carries it around a loop, and a predicated
    /// load into it keeps its old value where the predicate is false. Only where every
    /// statement since `mark` ran in this block unbroken, the last one is an instruction whose
    /// results are exactly `from` (one register, or one vector of them, in order), and no
    /// other statement since `mark` names a register of `from`, nor the last one a register of
    /// `to` among its sources; otherwise nothing changes and it returns false.
    pub fn forward_results(&mut self, mark: Mark, from: &[Reg], to: &[Reg]) -> bool {
        if mark.region != self.region || from.len() != to.len() || from.is_empty() {
            return false;
        }
        if from.iter().zip(to).any(|(f, t)| f.ty != t.ty || f == t) {
            return false;
        }
        let stmts = self.current();
        if stmts.len() <= mark.len {
            return false;
        }
        let (last, earlier) = stmts[mark.len..]
            .split_last_mut()
            .expect("at least one statement since the mark");
        let names = |i: &Inst, r: &Reg| {
            i.dsts.iter().chain(&i.srcs).any(|o| operand_names(o, r))
                || i.guard.is_some_and(|g| g.pred == *r)
        };
        let untouched = earlier.iter().all(|s| match s {
            Stmt::Inst(i) => !from.iter().any(|r| names(i, r)),
            Stmt::Comment(_) => true,
            _ => false,
        });
        let Stmt::Inst(last) = last else {
            return false;
        };
        let exact = match last.dsts.as_slice() {
            [Operand::Reg(r)] => from == [*r],
            [Operand::Vector(lanes)] => {
                lanes.len() == from.len()
                    && lanes.iter().zip(from).all(|(o, f)| *o == Operand::Reg(*f))
            }
            _ => false,
        };
        let reads_to = to.iter().any(|r| {
            last.srcs.iter().any(|o| operand_names(o, r))
                || last.guard.is_some_and(|g| g.pred == *r)
        });
        if !untouched || !exact || reads_to {
            return false;
        }
        last.dsts = match last.dsts.as_slice() {
            [Operand::Reg(_)] => vec![Operand::Reg(to[0])],
            _ => vec![Operand::Vector(
                to.iter().map(|&r| Operand::Reg(r)).collect(),
            )],
        };
        true
    }

    /// Appends a statement to the innermost open block; an instruction without a location
    /// takes the one set by [`KernelBuilder::set_loc`].
    pub fn push(&mut self, mut stmt: Stmt) {
        if let Stmt::Inst(i) = &mut stmt {
            i.loc = i.loc.or(self.loc);
        }
        self.current().push(stmt);
    }

    /// Sets the source location of the instructions pushed next (`None`: no location).
    pub fn set_loc(&mut self, loc: Option<SourceLoc>) {
        self.loc = loc;
    }

    /// The kernel's source map, where a generator interns the files, inline sites and texts
    /// its locations point to.
    pub fn source_map(&mut self) -> &mut SourceMap {
        &mut self.kernel.source
    }

    /// Appends an unguarded instruction.
    pub fn inst(&mut self, op: Op, dsts: Vec<Operand>, srcs: Vec<Operand>) {
        self.push(Stmt::Inst(Inst {
            op,
            guard: None,
            dsts,
            srcs,
            loc: None,
        }));
    }

    /// Appends an instruction executed only where `pred` is true (`negated`: false).
    pub fn inst_guarded(&mut self, guard: Guard, op: Op, dsts: Vec<Operand>, srcs: Vec<Operand>) {
        self.push(Stmt::Inst(Inst {
            op,
            guard: Some(guard),
            dsts,
            srcs,
            loc: None,
        }));
    }

    fn current(&mut self) -> &mut Vec<Stmt> {
        self.frames
            .last_mut()
            .expect("the kernel frame is never popped before finish")
            .stmts()
    }

    /// Opens the then-branch of an `if` on a predicate register.
    pub fn open_if(&mut self, cond: Reg) {
        self.region += 1;
        self.frames.push(Frame::Then {
            cond,
            body: Vec::new(),
        });
    }

    /// Switches the innermost open `if` to its else-branch. Returns false if no `if` is open.
    pub fn open_else(&mut self) -> bool {
        self.region += 1;
        match self.frames.pop() {
            Some(Frame::Then { cond, body }) => {
                self.frames.push(Frame::Else {
                    cond,
                    then_body: body,
                    body: Vec::new(),
                });
                true
            }
            Some(other) => {
                self.frames.push(other);
                false
            }
            None => false,
        }
    }

    /// Opens a loop body; leave it with `break_`.
    pub fn open_loop(&mut self) {
        self.region += 1;
        self.frames.push(Frame::LoopBody { body: Vec::new() });
    }

    /// Switches the innermost open loop to its latch (run after the body and on `continue`).
    pub fn open_latch(&mut self) -> bool {
        self.region += 1;
        match self.frames.pop() {
            Some(Frame::LoopBody { body }) => {
                self.frames.push(Frame::LoopLatch {
                    body,
                    latch: Vec::new(),
                });
                true
            }
            Some(other) => {
                self.frames.push(other);
                false
            }
            None => false,
        }
    }

    /// Closes the innermost open `if` or loop. Does nothing at kernel level.
    pub fn close(&mut self) {
        self.region += 1;
        if self.frames.len() <= 1 {
            return;
        }
        let stmt = match self.frames.pop() {
            Some(Frame::Then { cond, body }) => Stmt::If {
                cond,
                then_body: body,
                else_body: Vec::new(),
            },
            Some(Frame::Else {
                cond,
                then_body,
                body,
            }) => Stmt::If {
                cond,
                then_body,
                else_body: body,
            },
            Some(Frame::LoopBody { body }) => Stmt::Loop {
                body,
                latch: Vec::new(),
            },
            Some(Frame::LoopLatch { body, latch }) => Stmt::Loop { body, latch },
            Some(Frame::Block(b)) => Stmt::Loop {
                body: b,
                latch: Vec::new(),
            },
            None => return,
        };
        self.push(stmt);
    }

    /// Adds a raw parameter and returns its PTX symbol.
    pub fn raw_param(&mut self, name: impl Into<String>, ty: ParamType) -> String {
        self.kernel.params.push(Param {
            name: name.into(),
            ty,
        });
        self.kernel.param_symbol(self.kernel.params.len() - 1)
    }

    pub fn perf_mut(&mut self) -> &mut PerfDirectives {
        &mut self.kernel.perf
    }

    /// Requires exactly this block shape (`.reqntid`).
    pub fn reqntid(&mut self, shape: [u32; 3]) -> &mut Self {
        self.kernel.perf.reqntid = Some(shape);
        self
    }

    /// Declares a static shared array by raw element type; returns its symbol.
    pub fn raw_shared(&mut self, name: impl Into<String>, elem: ScalarType, len: u32) -> String {
        let name = name.into();
        self.kernel.shared.push(SharedDecl {
            name: name.clone(),
            elem,
            len,
            align: 16,
        });
        name
    }

    /// Declares the dynamic (`extern`) shared array; returns its symbol.
    pub fn raw_dynamic_shared(&mut self, name: impl Into<String>) -> String {
        let name = name.into();
        self.kernel.dynamic_shared = Some(name.clone());
        name
    }

    /// Records that the kernel indexes at least `bytes` of dynamic shared memory, so a launch
    /// giving fewer is refused; the largest of several calls holds.
    ///
    /// ```
    /// use kernel_dsl::builder::KernelBuilder;
    /// let mut b = KernelBuilder::new("k");
    /// b.raw_dynamic_shared("dyn_smem");
    /// b.dynamic_shared_at_least(1024);
    /// b.dynamic_shared_at_least(16);
    /// assert_eq!(b.finish().dynamic_shared_min_bytes, 1024);
    /// ```
    pub fn dynamic_shared_at_least(&mut self, bytes: u32) {
        let k = &mut self.kernel;
        k.dynamic_shared_min_bytes = k.dynamic_shared_min_bytes.max(bytes);
    }

    pub fn comment(&mut self, text: impl Into<String>) {
        self.push(Stmt::Comment(text.into()));
    }

    // ----- typed layer: declarations ----------------------------------------------------

    fn value<T: Scalar>(&mut self) -> Value<T> {
        Value {
            reg: self.reg(T::TY),
            _ty: PhantomData,
        }
    }

    /// A by-value parameter, loaded into a register where this is called.
    pub fn param<T: Scalar>(&mut self, name: &str) -> Value<T> {
        let sym = self.raw_param(name, ParamType::Scalar(T::TY));
        let v = self.value::<T>();
        let ty = crate::emit::param_type(T::TY);
        self.inst(
            Op::Ld {
                space: StateSpace::Param,
                ty,
                vec: None,
                nc: false,
                cache: None,
            },
            vec![v.reg.into()],
            vec![Operand::Addr {
                base: AddrBase::Symbol(sym),
                offset: 0,
            }],
        );
        v
    }

    fn slice_param<T: Scalar, const M: bool>(&mut self, name: &str) -> GlobalSlice<T, M> {
        let sym = self.raw_param(
            name,
            ParamType::GlobalPtr {
                elem: T::TY,
                mutable: M,
            },
        );
        let generic = self.value::<U64>();
        self.inst(
            Op::Ld {
                space: StateSpace::Param,
                ty: ScalarType::U64,
                vec: None,
                nc: false,
                cache: None,
            },
            vec![generic.reg.into()],
            vec![Operand::Addr {
                base: AddrBase::Symbol(sym),
                offset: 0,
            }],
        );
        let base = self.value::<U64>();
        self.inst(
            Op::Cvta {
                space: StateSpace::Global,
                to_generic: false,
            },
            vec![base.reg.into()],
            vec![generic.reg.into()],
        );
        GlobalSlice {
            base,
            _ty: PhantomData,
        }
    }

    /// A tensor-map parameter (`.param .align 64 .b8 name[128]`), returning its address, which
    /// `cp.async.bulk.tensor` takes ([`Operand::TensorCoords`]). The map stays in the parameter space: copying it
    /// elsewhere would need a proxy fence before the copy engine could read it.
    pub fn param_tensor_map(&mut self, name: &str) -> Value<U64> {
        let sym = self.raw_param(name, ParamType::TensorMap);
        let param = self.value::<U64>();
        self.inst(
            Op::Mov {
                ty: ScalarType::U64,
            },
            vec![param.reg.into()],
            vec![Operand::Symbol(sym)],
        );
        // The copy engine takes a generic address; `mov` gives the parameter-space one.
        let generic = self.value::<U64>();
        self.inst(
            Op::Cvta {
                space: StateSpace::Param,
                to_generic: true,
            },
            vec![generic.reg.into()],
            vec![param.reg.into()],
        );
        generic
    }

    /// A read-only buffer parameter (`&[T]`).
    pub fn param_slice<T: Scalar>(&mut self, name: &str) -> GlobalSlice<T, false> {
        self.slice_param(name)
    }

    /// A writable buffer parameter (`&mut [T]`).
    pub fn param_slice_mut<T: Scalar>(&mut self, name: &str) -> GlobalSlice<T, true> {
        self.slice_param(name)
    }

    /// A static shared array of `len` elements, 16-byte aligned.
    pub fn shared_array<T: Scalar>(&mut self, name: &str, len: u32) -> SharedArray<T> {
        let name = self.raw_shared(name, T::TY, len);
        SharedArray {
            name,
            _ty: PhantomData,
        }
    }

    /// The dynamic shared array, sized at launch.
    pub fn dynamic_shared<T: Scalar>(&mut self, name: &str) -> SharedArray<T> {
        let name = self.raw_dynamic_shared(name);
        self.dynamic_shared_at_least(T::TY.bytes());
        SharedArray {
            name,
            _ty: PhantomData,
        }
    }

    // ----- typed layer: values ------------------------------------------------------------

    /// Reads a special register.
    pub fn special(&mut self, s: SpecialReg) -> Value<U32> {
        let v = self.value::<U32>();
        self.inst(
            Op::Mov {
                ty: ScalarType::U32,
            },
            vec![v.reg.into()],
            vec![Operand::Special(s)],
        );
        v
    }

    pub fn tid(&mut self, d: Dim) -> Value<U32> {
        self.special(SpecialReg::Tid(d))
    }
    pub fn ntid(&mut self, d: Dim) -> Value<U32> {
        self.special(SpecialReg::Ntid(d))
    }
    pub fn ctaid(&mut self, d: Dim) -> Value<U32> {
        self.special(SpecialReg::Ctaid(d))
    }
    pub fn nctaid(&mut self, d: Dim) -> Value<U32> {
        self.special(SpecialReg::Nctaid(d))
    }
    pub fn lane_id(&mut self) -> Value<U32> {
        self.special(SpecialReg::LaneId)
    }

    /// `ctaid * ntid + tid` along `d`.
    pub fn global_index(&mut self, d: Dim) -> Value<U32> {
        let c = self.ctaid(d);
        let n = self.ntid(d);
        let t = self.tid(d);
        self.mad(c, n, t)
    }

    /// Total threads of the grid along `d` (the grid-stride step).
    pub fn grid_stride(&mut self, d: Dim) -> Value<U32> {
        let n = self.ntid(d);
        let g = self.nctaid(d);
        self.mul(n, g)
    }

    /// A register holding an integer constant.
    pub fn const_int<T: Int>(&mut self, v: i64) -> Value<T> {
        let r = self.value::<T>();
        self.inst(
            Op::Mov { ty: T::TY },
            vec![r.reg.into()],
            vec![Operand::Imm(Imm::Int(v))],
        );
        r
    }

    pub fn const_u32(&mut self, v: u32) -> Value<U32> {
        self.const_int(v as i64)
    }

    pub fn const_f32(&mut self, v: f32) -> Value<F32> {
        let r = self.value::<F32>();
        self.inst(
            Op::Mov {
                ty: ScalarType::F32,
            },
            vec![r.reg.into()],
            vec![Operand::Imm(Imm::f32(v))],
        );
        r
    }

    /// A mutable variable initialised from `init`; update it with [`KernelBuilder::assign`].
    pub fn var<T: Scalar>(&mut self, init: Value<T>) -> Value<T> {
        let v = self.value::<T>();
        self.assign(v, init);
        v
    }

    /// `dst = src` (a register move).
    pub fn assign<T: Scalar>(&mut self, dst: Value<T>, src: Value<T>) {
        self.inst(
            Op::Mov {
                ty: mov_type(T::TY),
            },
            vec![dst.reg.into()],
            vec![src.reg.into()],
        );
    }

    fn binary<T: Scalar>(&mut self, op: Op, a: Value<T>, b: Value<T>) -> Value<T> {
        let d = self.value::<T>();
        self.inst(op, vec![d.reg.into()], vec![a.reg.into(), b.reg.into()]);
        d
    }

    fn unary<T: Scalar>(&mut self, op: Op, a: Value<T>) -> Value<T> {
        let d = self.value::<T>();
        self.inst(op, vec![d.reg.into()], vec![a.reg.into()]);
        d
    }

    pub fn add<T: Arith>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        let rnd = T::TY.is_float().then_some(Rounding::Rn);
        self.binary(
            Op::Add {
                ty: T::TY,
                rnd,
                ftz: false,
                sat: false,
            },
            a,
            b,
        )
    }

    pub fn sub<T: Arith>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        let rnd = T::TY.is_float().then_some(Rounding::Rn);
        self.binary(
            Op::Sub {
                ty: T::TY,
                rnd,
                ftz: false,
                sat: false,
            },
            a,
            b,
        )
    }

    /// Multiply; integers keep the low half.
    pub fn mul<T: Arith>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        let (mode, rnd) = if T::TY.is_float() {
            (None, Some(Rounding::Rn))
        } else {
            (Some(MulMode::Lo), None)
        };
        self.binary(
            Op::Mul {
                ty: T::TY,
                mode,
                rnd,
                ftz: false,
                sat: false,
            },
            a,
            b,
        )
    }

    /// `a * b` widened from u32 to u64.
    pub fn mul_wide_u32(&mut self, a: Value<U32>, b: Value<U32>) -> Value<U64> {
        let d = self.value::<U64>();
        self.inst(
            Op::Mul {
                ty: ScalarType::U32,
                mode: Some(MulMode::Wide),
                rnd: None,
                ftz: false,
                sat: false,
            },
            vec![d.reg.into()],
            vec![a.reg.into(), b.reg.into()],
        );
        d
    }

    /// Integer `a * b + c`, low half.
    pub fn mad<T: Int>(&mut self, a: Value<T>, b: Value<T>, c: Value<T>) -> Value<T> {
        let d = self.value::<T>();
        self.inst(
            Op::Mad {
                ty: T::TY,
                mode: MulMode::Lo,
            },
            vec![d.reg.into()],
            vec![a.reg.into(), b.reg.into(), c.reg.into()],
        );
        d
    }

    /// Fused `a * b + c`, rounded once to nearest even.
    pub fn fma<T: Float>(&mut self, a: Value<T>, b: Value<T>, c: Value<T>) -> Value<T> {
        let d = self.value::<T>();
        self.inst(
            Op::Fma {
                ty: T::TY,
                rnd: Rounding::Rn,
                ftz: false,
                sat: false,
            },
            vec![d.reg.into()],
            vec![a.reg.into(), b.reg.into(), c.reg.into()],
        );
        d
    }

    /// Division: IEEE round-to-nearest for floats, truncating for integers.
    pub fn div<T: Arith>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        let mode = if T::TY.is_float() {
            DivMode::Ieee(Rounding::Rn)
        } else {
            DivMode::Int
        };
        self.binary(
            Op::Div {
                ty: T::TY,
                mode,
                ftz: false,
            },
            a,
            b,
        )
    }

    pub fn rem<T: Int>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        self.binary(Op::Rem { ty: T::TY }, a, b)
    }

    pub fn min<T: Arith>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        self.binary(
            Op::Min {
                ty: T::TY,
                ftz: false,
                nan: false,
            },
            a,
            b,
        )
    }

    pub fn max<T: Arith>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        self.binary(
            Op::Max {
                ty: T::TY,
                ftz: false,
                nan: false,
            },
            a,
            b,
        )
    }

    pub fn abs<T: Arith>(&mut self, a: Value<T>) -> Value<T> {
        self.unary(
            Op::Abs {
                ty: T::TY,
                ftz: false,
            },
            a,
        )
    }

    pub fn neg<T: Arith>(&mut self, a: Value<T>) -> Value<T> {
        self.unary(
            Op::Neg {
                ty: T::TY,
                ftz: false,
            },
            a,
        )
    }

    pub fn and<T: Int>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        self.binary(Op::And { ty: bits_of(T::TY) }, a, b)
    }

    pub fn or<T: Int>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        self.binary(Op::Or { ty: bits_of(T::TY) }, a, b)
    }

    pub fn xor<T: Int>(&mut self, a: Value<T>, b: Value<T>) -> Value<T> {
        self.binary(Op::Xor { ty: bits_of(T::TY) }, a, b)
    }

    /// `a << n`.
    pub fn shl<T: Int>(&mut self, a: Value<T>, n: u32) -> Value<T> {
        let d = self.value::<T>();
        self.inst(
            Op::Shl { ty: bits_of(T::TY) },
            vec![d.reg.into()],
            vec![a.reg.into(), Operand::Imm(Imm::Int(n as i64))],
        );
        d
    }

    /// `a >> n`, arithmetic for signed types.
    pub fn shr<T: Int>(&mut self, a: Value<T>, n: u32) -> Value<T> {
        let d = self.value::<T>();
        self.inst(
            Op::Shr { ty: T::TY },
            vec![d.reg.into()],
            vec![a.reg.into(), Operand::Imm(Imm::Int(n as i64))],
        );
        d
    }

    /// Compares two values into a predicate. Unsigned types use the unsigned comparisons.
    pub fn setp<T: Arith>(&mut self, cmp: Cmp, a: Value<T>, b: Value<T>) -> Value<Pred> {
        let p = self.value::<Pred>();
        self.inst(
            Op::Setp {
                cmp,
                ty: T::TY,
                ftz: false,
            },
            vec![p.reg.into()],
            vec![a.reg.into(), b.reg.into()],
        );
        p
    }

    /// `p ? a : b`.
    pub fn selp<T: Arith>(&mut self, p: Value<Pred>, a: Value<T>, b: Value<T>) -> Value<T> {
        let d = self.value::<T>();
        self.inst(
            Op::Selp { ty: T::TY },
            vec![d.reg.into()],
            vec![a.reg.into(), b.reg.into(), p.reg.into()],
        );
        d
    }

    /// Converts between types with the conventional rounding: float to integer truncates
    /// (`.rzi`), narrowing float and integer to float round to nearest even (`.rn`),
    /// widening needs none.
    pub fn cvt<To: Scalar, From: Scalar>(&mut self, v: Value<From>) -> Value<To> {
        let rnd = default_cvt_rounding(To::TY, From::TY);
        self.cvt_with(v, rnd)
    }

    /// Converts with an explicit rounding.
    pub fn cvt_with<To: Scalar, From: Scalar>(
        &mut self,
        v: Value<From>,
        rnd: Option<CvtRounding>,
    ) -> Value<To> {
        let d = self.value::<To>();
        self.inst(
            Op::Cvt {
                dst: To::TY,
                src: From::TY,
                rnd,
                ftz: false,
                sat: false,
                relu: false,
            },
            vec![d.reg.into()],
            vec![v.reg.into()],
        );
        d
    }

    /// Packs two f32 values into one `bf16x2` (first argument in the upper half, as PTX does).
    pub fn pack_bf16x2(&mut self, hi: Value<F32>, lo: Value<F32>) -> Value<B32> {
        let d = self.value::<B32>();
        self.inst(
            Op::Cvt {
                dst: ScalarType::Bf16x2,
                src: ScalarType::F32,
                rnd: Some(CvtRounding::Rn),
                ftz: false,
                sat: false,
                relu: false,
            },
            vec![d.reg.into()],
            vec![hi.reg.into(), lo.reg.into()],
        );
        d
    }

    /// An approximate special function (`ex2.approx.f32` …).
    pub fn approx(&mut self, func: ApproxFn, v: Value<F32>) -> Value<F32> {
        self.unary(
            Op::Approx {
                func,
                ty: ScalarType::F32,
                ftz: false,
            },
            v,
        )
    }

    // ----- typed layer: memory ----------------------------------------------------------

    /// Byte address of element `index` of a global buffer.
    pub fn element_address<T: Scalar, const M: bool>(
        &mut self,
        s: &GlobalSlice<T, M>,
        index: Value<U32>,
    ) -> Value<U64> {
        let off = self.value::<U64>();
        self.inst(
            Op::Mul {
                ty: ScalarType::U32,
                mode: Some(MulMode::Wide),
                rnd: None,
                ftz: false,
                sat: false,
            },
            vec![off.reg.into()],
            vec![
                index.reg.into(),
                Operand::Imm(Imm::Int(T::TY.bytes() as i64)),
            ],
        );
        self.add(s.base, off)
    }

    /// Loads element `index` (read-only buffers go through the non-coherent path).
    pub fn ld_global<T: Scalar, const M: bool>(
        &mut self,
        s: &GlobalSlice<T, M>,
        index: Value<U32>,
    ) -> Value<T> {
        let addr = self.element_address(s, index);
        let v = self.value::<T>();
        self.inst(
            Op::Ld {
                space: StateSpace::Global,
                ty: T::TY,
                vec: None,
                nc: !M,
                cache: None,
            },
            vec![v.reg.into()],
            vec![Operand::Addr {
                base: AddrBase::Reg(addr.reg),
                offset: 0,
            }],
        );
        v
    }

    /// Loads four consecutive elements starting at `index` (which must be a multiple of four
    /// for the 16-byte access to be aligned).
    pub fn ld_global_v4<T: Word32, const M: bool>(
        &mut self,
        s: &GlobalSlice<T, M>,
        index: Value<U32>,
    ) -> [Value<T>; 4] {
        let addr = self.element_address(s, index);
        let vals = [
            self.value::<T>(),
            self.value::<T>(),
            self.value::<T>(),
            self.value::<T>(),
        ];
        self.inst(
            Op::Ld {
                space: StateSpace::Global,
                ty: T::TY,
                vec: Some(VecWidth::V4),
                nc: !M,
                cache: None,
            },
            vec![Operand::Vector(vals.iter().map(|v| v.reg.into()).collect())],
            vec![Operand::Addr {
                base: AddrBase::Reg(addr.reg),
                offset: 0,
            }],
        );
        vals
    }

    /// Stores `v` to element `index` of a writable buffer.
    pub fn st_global<T: Scalar>(
        &mut self,
        s: &GlobalSlice<T, true>,
        index: Value<U32>,
        v: Value<T>,
    ) {
        let addr = self.element_address(s, index);
        self.inst(
            Op::St {
                space: StateSpace::Global,
                ty: T::TY,
                vec: None,
                cache: None,
            },
            vec![],
            vec![
                Operand::Addr {
                    base: AddrBase::Reg(addr.reg),
                    offset: 0,
                },
                v.reg.into(),
            ],
        );
    }

    /// Stores four consecutive elements starting at `index`.
    pub fn st_global_v4<T: Word32>(
        &mut self,
        s: &GlobalSlice<T, true>,
        index: Value<U32>,
        v: [Value<T>; 4],
    ) {
        let addr = self.element_address(s, index);
        self.inst(
            Op::St {
                space: StateSpace::Global,
                ty: T::TY,
                vec: Some(VecWidth::V4),
                cache: None,
            },
            vec![],
            vec![
                Operand::Addr {
                    base: AddrBase::Reg(addr.reg),
                    offset: 0,
                },
                Operand::Vector(v.iter().map(|x| x.reg.into()).collect()),
            ],
        );
    }

    /// Atomically adds `v` to element `index`, returning the old value.
    pub fn atom_add_global<T: Arith>(
        &mut self,
        s: &GlobalSlice<T, true>,
        index: Value<U32>,
        v: Value<T>,
    ) -> Value<T> {
        let addr = self.element_address(s, index);
        let old = self.value::<T>();
        self.inst(
            Op::Atom {
                space: StateSpace::Global,
                op: AtomOp::Add,
                ty: T::TY,
            },
            vec![old.reg.into()],
            vec![
                Operand::Addr {
                    base: AddrBase::Reg(addr.reg),
                    offset: 0,
                },
                v.reg.into(),
            ],
        );
        old
    }

    /// The shared-window address of element `index` of a shared array (32-bit).
    pub fn shared_address<T: Scalar>(
        &mut self,
        a: &SharedArray<T>,
        index: Value<U32>,
    ) -> Value<U32> {
        let base = self.shared_base(a);
        let d = self.value::<U32>();
        self.inst(
            Op::Mad {
                ty: ScalarType::U32,
                mode: MulMode::Lo,
            },
            vec![d.reg.into()],
            vec![
                index.reg.into(),
                Operand::Imm(Imm::Int(T::TY.bytes() as i64)),
                base.reg.into(),
            ],
        );
        d
    }

    pub fn ld_shared<T: Scalar>(&mut self, a: &SharedArray<T>, index: Value<U32>) -> Value<T> {
        let addr = self.shared_address(a, index);
        let v = self.value::<T>();
        self.inst(
            Op::Ld {
                space: StateSpace::Shared,
                ty: T::TY,
                vec: None,
                nc: false,
                cache: None,
            },
            vec![v.reg.into()],
            vec![Operand::Addr {
                base: AddrBase::Reg(addr.reg),
                offset: 0,
            }],
        );
        v
    }

    pub fn st_shared<T: Scalar>(&mut self, a: &SharedArray<T>, index: Value<U32>, v: Value<T>) {
        let addr = self.shared_address(a, index);
        self.inst(
            Op::St {
                space: StateSpace::Shared,
                ty: T::TY,
                vec: None,
                cache: None,
            },
            vec![],
            vec![
                Operand::Addr {
                    base: AddrBase::Reg(addr.reg),
                    offset: 0,
                },
                v.reg.into(),
            ],
        );
    }

    /// Loads a `T` from `[addr+offset]` in `space`.
    pub fn load<T: Scalar>(
        &mut self,
        space: StateSpace,
        addr: Reg,
        offset: i64,
        nc: bool,
    ) -> Value<T> {
        let v = self.value::<T>();
        self.inst(
            Op::Ld {
                space,
                ty: T::TY,
                vec: None,
                nc,
                cache: None,
            },
            vec![v.reg.into()],
            vec![Operand::Addr {
                base: AddrBase::Reg(addr),
                offset,
            }],
        );
        v
    }

    /// Stores `v` to `[addr+offset]` in `space`.
    pub fn store<T: Scalar>(&mut self, space: StateSpace, addr: Reg, offset: i64, v: Value<T>) {
        self.inst(
            Op::St {
                space,
                ty: T::TY,
                vec: None,
                cache: None,
            },
            vec![],
            vec![
                Operand::Addr {
                    base: AddrBase::Reg(addr),
                    offset,
                },
                v.reg.into(),
            ],
        );
    }

    /// Loads 16 bytes as four 32-bit words from `[addr+offset]` in `space`.
    pub fn load_v4<T: Word32>(
        &mut self,
        space: StateSpace,
        addr: Reg,
        offset: i64,
        nc: bool,
    ) -> [Value<T>; 4] {
        let vals = [
            self.value::<T>(),
            self.value::<T>(),
            self.value::<T>(),
            self.value::<T>(),
        ];
        self.inst(
            Op::Ld {
                space,
                ty: T::TY,
                vec: Some(VecWidth::V4),
                nc,
                cache: None,
            },
            vec![Operand::Vector(vals.iter().map(|v| v.reg.into()).collect())],
            vec![Operand::Addr {
                base: AddrBase::Reg(addr),
                offset,
            }],
        );
        vals
    }

    /// Stores four 32-bit words to `[addr+offset]` in `space`.
    pub fn store_v4<T: Word32>(
        &mut self,
        space: StateSpace,
        addr: Reg,
        offset: i64,
        v: [Value<T>; 4],
    ) {
        self.inst(
            Op::St {
                space,
                ty: T::TY,
                vec: Some(VecWidth::V4),
                cache: None,
            },
            vec![],
            vec![
                Operand::Addr {
                    base: AddrBase::Reg(addr),
                    offset,
                },
                Operand::Vector(v.iter().map(|x| x.reg.into()).collect()),
            ],
        );
    }

    /// The shared-window address of a shared array's first byte.
    pub fn shared_base<T: Scalar>(&mut self, a: &SharedArray<T>) -> Value<U32> {
        let base = self.value::<U32>();
        self.inst(
            Op::Mov {
                ty: ScalarType::U32,
            },
            vec![base.reg.into()],
            vec![Operand::Symbol(a.name.clone())],
        );
        base
    }

    // ----- typed layer: synchronisation and warps --------------------------------------

    /// `bar.sync 0`: every thread of the CTA must reach it (the verifier checks the control
    /// flow around it is CTA-uniform).
    pub fn bar_sync(&mut self) {
        self.inst(Op::BarSync, vec![], vec![Operand::Imm(Imm::Int(0))]);
    }

    /// `bar.red.or.pred d, 0, p`: a `bar.sync 0` that also tells every thread whether `p`
    /// holds in any thread of the CTA. The result is CTA-uniform.
    pub fn bar_red_or(&mut self, p: Value<Pred>) -> Value<Pred> {
        self.bar_red(BarRedOp::Or, p)
    }

    /// `bar.red.and.pred d, 0, p`: whether `p` holds in every thread of the CTA.
    pub fn bar_red_and(&mut self, p: Value<Pred>) -> Value<Pred> {
        self.bar_red(BarRedOp::And, p)
    }

    /// `bar.red.popc.u32 d, 0, p`: how many threads of the CTA hold `p`.
    pub fn bar_red_popc(&mut self, p: Value<Pred>) -> Value<U32> {
        self.bar_red(BarRedOp::Popc, p)
    }

    fn bar_red<T: Scalar>(&mut self, op: BarRedOp, p: Value<Pred>) -> Value<T> {
        debug_assert_eq!(T::TY, op.result());
        let d = self.value::<T>();
        self.inst(
            Op::BarRed { op },
            vec![d.reg.into()],
            vec![Operand::Imm(Imm::Int(0)), p.reg.into()],
        );
        d
    }

    /// A full-warp shuffle. `lane` is the source lane (idx), the delta (up/down) or the xor
    /// mask (bfly).
    pub fn shfl<T: Word32>(&mut self, mode: ShflMode, v: Value<T>, lane: u32) -> Value<T> {
        let d = self.value::<T>();
        let clamp = match mode {
            ShflMode::Up => 0,
            _ => 31,
        };
        self.inst(
            Op::Shfl { mode },
            vec![d.reg.into()],
            vec![
                v.reg.into(),
                Operand::Imm(Imm::Int(lane as i64)),
                Operand::Imm(Imm::Int(clamp)),
                Operand::Imm(Imm::Int(-1)),
            ],
        );
        d
    }

    /// `vote.sync.ballot.b32` over the full warp.
    pub fn ballot(&mut self, p: Value<Pred>) -> Value<B32> {
        let d = self.value::<B32>();
        self.inst(
            Op::Vote {
                mode: VoteMode::Ballot,
            },
            vec![d.reg.into()],
            vec![p.reg.into(), Operand::Imm(Imm::Int(-1))],
        );
        d
    }

    /// `redux.sync` over the full warp (sm_80+).
    pub fn redux<T: Int + Word32>(&mut self, op: ReduxOp, v: Value<T>) -> Value<T> {
        let d = self.value::<T>();
        self.inst(
            Op::Redux { op, ty: T::TY },
            vec![d.reg.into()],
            vec![v.reg.into(), Operand::Imm(Imm::Int(-1))],
        );
        d
    }

    // ----- typed layer: tensor cores and async copies ----------------------------------

    /// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`: `acc += a × b` for one warp.
    pub fn mma_m16n8k16_bf16(
        &mut self,
        a: [Value<B32>; 4],
        b: [Value<B32>; 2],
        acc: [Value<F32>; 4],
    ) -> [Value<F32>; 4] {
        let d = [
            self.value::<F32>(),
            self.value::<F32>(),
            self.value::<F32>(),
            self.value::<F32>(),
        ];
        let vec_of =
            |regs: &[Reg]| Operand::Vector(regs.iter().map(|r| Operand::Reg(*r)).collect());
        self.inst(
            Op::Mma {
                shape: MmaShape::M16n8k16,
                d: ScalarType::F32,
                a: ScalarType::Bf16,
                b: ScalarType::Bf16,
                c: ScalarType::F32,
            },
            vec![vec_of(&d.map(|v| v.reg))],
            vec![
                vec_of(&a.map(|v| v.reg)),
                vec_of(&b.map(|v| v.reg)),
                vec_of(&acc.map(|v| v.reg)),
            ],
        );
        d
    }

    /// `ldmatrix.sync.aligned.m8n8.x4.shared.b16` from a shared-window address.
    pub fn ldmatrix_x4(&mut self, addr: Value<U32>, trans: bool) -> [Value<B32>; 4] {
        let d = [
            self.value::<B32>(),
            self.value::<B32>(),
            self.value::<B32>(),
            self.value::<B32>(),
        ];
        self.inst(
            Op::Ldmatrix {
                count: MatrixCount::X4,
                trans,
            },
            vec![Operand::Vector(d.iter().map(|v| v.reg.into()).collect())],
            vec![Operand::Addr {
                base: AddrBase::Reg(addr.reg),
                offset: 0,
            }],
        );
        d
    }

    /// `ldmatrix…x2` from a shared-window address.
    pub fn ldmatrix_x2(&mut self, addr: Value<U32>, trans: bool) -> [Value<B32>; 2] {
        let d = [self.value::<B32>(), self.value::<B32>()];
        self.inst(
            Op::Ldmatrix {
                count: MatrixCount::X2,
                trans,
            },
            vec![Operand::Vector(d.iter().map(|v| v.reg.into()).collect())],
            vec![Operand::Addr {
                base: AddrBase::Reg(addr.reg),
                offset: 0,
            }],
        );
        d
    }

    /// Starts a 16-byte asynchronous copy from global to shared memory.
    pub fn cp_async_16(&mut self, dst_shared: Value<U32>, src_global: Value<U64>) {
        self.inst(
            Op::CpAsync {
                cache: crate::op::CacheOp::Cg,
                bytes: 16,
                zero_fill: false,
            },
            vec![],
            vec![
                Operand::Addr {
                    base: AddrBase::Reg(dst_shared.reg),
                    offset: 0,
                },
                Operand::Addr {
                    base: AddrBase::Reg(src_global.reg),
                    offset: 0,
                },
                Operand::Imm(Imm::Int(16)),
            ],
        );
    }

    pub fn cp_async_commit(&mut self) {
        self.inst(Op::CpAsyncCommit, vec![], vec![]);
    }

    /// Waits until at most `pending` committed groups are still in flight.
    pub fn cp_async_wait(&mut self, pending: u32) {
        self.inst(
            Op::CpAsyncWait,
            vec![],
            vec![Operand::Imm(Imm::Int(pending as i64))],
        );
    }

    // ----- typed layer: control flow --------------------------------------------------

    pub fn if_(&mut self, cond: Value<Pred>, then: impl FnOnce(&mut Self)) {
        self.open_if(cond.reg);
        then(self);
        self.close();
    }

    pub fn if_else(
        &mut self,
        cond: Value<Pred>,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        self.open_if(cond.reg);
        then(self);
        self.open_else();
        otherwise(self);
        self.close();
    }

    /// An unbounded loop; leave it with [`KernelBuilder::break_`].
    pub fn loop_(&mut self, body: impl FnOnce(&mut Self)) {
        self.open_loop();
        body(self);
        self.close();
    }

    /// `for i in (start..end).step_by(step)` over u32; `continue_` inside runs the increment.
    pub fn for_range(
        &mut self,
        start: Value<U32>,
        end: Value<U32>,
        step: Value<U32>,
        body: impl FnOnce(&mut Self, Value<U32>),
    ) {
        let i = self.var(start);
        self.open_loop();
        let done = self.setp(Cmp::Ge, i, end);
        self.if_(done, |b| b.break_());
        body(self, i);
        self.open_latch();
        let next = self.add(i, step);
        self.assign(i, next);
        self.close();
    }

    pub fn break_(&mut self) {
        self.push(Stmt::Break);
    }

    pub fn continue_(&mut self) {
        self.push(Stmt::Continue);
    }

    pub fn ret(&mut self) {
        self.push(Stmt::Return);
    }
}

/// `mov` on floats and integers uses the value's own type; packed types move as bits.
fn mov_type(t: ScalarType) -> ScalarType {
    match t {
        ScalarType::F16x2 | ScalarType::Bf16x2 | ScalarType::Tf32 => ScalarType::B32,
        ScalarType::F16 | ScalarType::Bf16 => ScalarType::B16,
        ScalarType::U8 | ScalarType::S8 => ScalarType::B16,
        other => other,
    }
}

/// Bit operations take untyped `b` types of the same size.
fn bits_of(t: ScalarType) -> ScalarType {
    match t.bits() {
        16 => ScalarType::B16,
        32 => ScalarType::B32,
        64 => ScalarType::B64,
        _ => t,
    }
}

/// The rounding a plain `as`-style conversion uses.
pub fn default_cvt_rounding(to: ScalarType, from: ScalarType) -> Option<CvtRounding> {
    match (to.is_float(), from.is_float()) {
        (false, true) => Some(CvtRounding::Rzi),
        (true, false) => Some(CvtRounding::Rn),
        (true, true) if to.bits() < from.bits() => Some(CvtRounding::Rn),
        (true, true) if to == ScalarType::Tf32 => Some(CvtRounding::Rna),
        _ => None,
    }
}
