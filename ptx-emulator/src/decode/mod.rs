//! From the parser's AST to a [`Kernel`]: lay out parameters and memory, give every register
//! a slot, resolve labels, and decode each instruction.

mod arith;
mod bitops;
mod collectives;
mod compare;
mod control;
mod convert;
mod memory;
mod moves;
mod operands;
mod source_lines;
mod special;
mod suffix;
mod tensor_copy;
mod tensor_store;
mod text;

use crate::error::Error;
use crate::program::{Inst, Kernel, ParamInfo, SharedSymbol, NO_SLOT};
use operands::{Frame, Symbol};
use ptx_parser::{
    Block, Function, FunctionKind, Immediate, Initializer, Instruction, Module, Opcode, Param,
    RegName, StateSpace, StatementKind, Type, VarDecl,
};

pub(crate) use operands::Kind;

/// Alignment of the dynamic shared-memory window when no `.align` is declared.
const DYNAMIC_SHARED_ALIGN: u32 = 16;

/// Decodes the entry `func` of `module`.
pub(crate) fn decode_kernel(module: &Module, func: &Function) -> Result<Kernel, Error> {
    let mut frame = Frame::new(&func.name);
    let body = func
        .body
        .as_ref()
        .ok_or_else(|| frame.malformed("the entry has no body"))?;

    // Parameters.
    let mut params = Vec::new();
    let mut param_bytes = 0u32;
    for p in func.params.iter().flatten() {
        let elem = p.ty.size_bytes().unwrap_or(1);
        let lanes = p.vector.map_or(1, |v| v.lanes());
        let bytes = elem * lanes * p.array.unwrap_or(1) as u32;
        let align = p.align.unwrap_or(elem * lanes).max(1);
        let offset = param_bytes.div_ceil(align) * align;
        frame
            .symbols
            .insert(p.name.clone(), Symbol::Param { offset, bytes });
        params.push(ParamInfo {
            name: p.name.clone(),
            offset,
            bytes,
        });
        param_bytes = offset + bytes;
    }

    // Gather declarations, labels and instructions, flattening nested blocks: the entry first,
    // then every device function with a body, each in its own register and label scope, laid
    // out one after another in one code array.
    let mut units: Vec<(String, Gathered)> = Vec::new();
    frame.files = source_lines::Files::of(module);
    let mut gathered = Gathered::default();
    gather(&mut frame, body, &mut gathered)?;
    let mut next_pc = gathered.instructions.len() as u32 + 1;
    units.push((String::new(), gathered));
    for f in module.functions() {
        let (FunctionKind::Func, Some(fbody)) = (f.kind, f.body.as_ref()) else {
            continue;
        };
        frame.scope = format!("{}::", f.name);
        let mut g = Gathered {
            start: next_pc,
            ..Gathered::default()
        };
        g.returns = f.returns.clone().unwrap_or_default();
        g.params = f.params.clone().unwrap_or_default();
        gather(&mut frame, fbody, &mut g)?;
        next_pc += g.instructions.len() as u32 + 1;
        frame.functions.insert(f.name.clone(), g.start);
        units.push((f.name.clone(), g));
    }
    frame.scope.clear();
    let registers = frame.next;

    // Shared memory: module-level variables first, then the kernel's own.
    let mut layout = Layout::default();
    for v in module.variables() {
        match v.space {
            StateSpace::Shared | StateSpace::SharedCta => layout.shared(&mut frame, v),
            StateSpace::Const => layout.constant(&mut frame, v)?,
            StateSpace::Global => {
                frame.symbols.insert(v.name.clone(), Symbol::Global);
            }
            _ => {}
        }
    }
    for (_, unit) in &units {
        for v in &unit.vars {
            match v.space {
                StateSpace::Shared | StateSpace::SharedCta => layout.shared(&mut frame, v),
                StateSpace::Local | StateSpace::Param => layout.local(&mut frame, v),
                StateSpace::Const => layout.constant(&mut frame, v)?,
                _ => {}
            }
        }
        // A device function's parameters and return values live in per-thread memory: a call
        // copies the caller's `.param` variables into them, a return copies them back.
        for p in unit.params.iter().chain(&unit.returns) {
            layout.local_param(&mut frame, p);
        }
    }
    for (name, unit) in &units {
        let place = |frame: &Frame, ps: &[Param]| {
            ps.iter().filter_map(|p| frame.local_var(&p.name)).collect()
        };
        let callee = operands::CalleeParams {
            params: place(&frame, &unit.params),
            returns: place(&frame, &unit.returns),
        };
        frame.callee_params.insert(name.clone(), callee);
    }
    let dynamic_offset = layout.static_shared.div_ceil(layout.dynamic_align) * layout.dynamic_align;
    for name in &layout.dynamic_names {
        frame.symbols.insert(
            name.clone(),
            Symbol::Shared {
                offset: dynamic_offset,
            },
        );
        layout.symbols.push(SharedSymbol {
            name: name.clone(),
            offset: dynamic_offset,
            bytes: None,
        });
    }

    // A cluster shape given at compile time is how every launch of the kernel runs.
    let mut cluster = [1u32; 3];
    for d in &func.directives {
        if let ptx_parser::FunctionDirectiveKind::Reqnctapercluster(dims) = &d.kind {
            if dims.is_empty() || dims.len() > 3 || dims.contains(&0) {
                return Err(frame.malformed(format!(
                    "`.reqnctapercluster` takes one to three non-zero extents, not {dims:?}"
                )));
            }
            for (k, &n) in dims.iter().enumerate() {
                cluster[k] = n;
            }
        }
    }
    let total: usize = units.iter().map(|(_, u)| u.instructions.len() + 1).sum();
    let mut code = Vec::with_capacity(total);
    let mut text = Vec::with_capacity(total);
    let mut source = Vec::with_capacity(total);
    let mut collectives = Vec::new();
    let mut calls = Vec::new();
    for (name, unit) in &units {
        frame.scope = if name.is_empty() {
            String::new()
        } else {
            format!("{name}::")
        };
        frame.function = name.clone();
        for (inst, loc) in unit.instructions.iter().zip(&unit.sources) {
            source.push(loc.clone());
            frame.text = text::instruction_text(inst);
            frame.opcode = inst.opcode.as_str().to_string();
            let (guard, negate) = match &inst.guard {
                Some(g) => (frame.reg(&g.reg)?, g.negated),
                None => (NO_SLOT, false),
            };
            let op = decode_instruction(&mut frame, inst, &mut collectives, &mut calls)?;
            code.push(Inst { guard, negate, op });
            text.push(frame.text.clone());
        }
        // Falling off the end of a body returns.
        code.push(Inst {
            guard: NO_SLOT,
            negate: false,
            op: crate::program::Op::Ret,
        });
        source.push(None);
        text.push(if name.is_empty() {
            "ret; (end of kernel)".to_string()
        } else {
            format!("ret; (end of `{name}`)")
        });
    }

    Ok(Kernel {
        name: func.name.clone(),
        code,
        text,
        source,
        collectives,
        slots: frame.next,
        registers,
        constants: frame.constants,
        specials: frame.special_list,
        params,
        param_bytes,
        static_shared: layout.static_shared,
        dynamic_offset,
        shared_symbols: layout.symbols,
        local_bytes: layout.local_bytes,
        const_data: layout.const_data,
        links: frame.links,
        calls,
        bar_reds: frame.bar_reds,
        tensor_copies: frame.tensor_copies,
        tensor_stores: frame.tensor_stores,
        cluster,
    })
}

#[derive(Default)]
struct Gathered<'a> {
    /// Index of the unit's first instruction in the kernel's code.
    start: u32,
    instructions: Vec<&'a Instruction>,
    /// Each instruction's Rust source location, from the `.loc` before it.
    sources: Vec<Option<String>>,
    /// The location the last `.loc` named.
    loc: Option<String>,
    vars: Vec<&'a VarDecl>,
    params: Vec<Param>,
    returns: Vec<Param>,
}

fn gather<'a>(frame: &mut Frame, block: &'a Block, out: &mut Gathered<'a>) -> Result<(), Error> {
    for (k, st) in block.statements.iter().enumerate() {
        match &st.kind {
            StatementKind::Instruction(i) => {
                out.instructions.push(i);
                out.sources.push(out.loc.clone());
            }
            StatementKind::Directive(d) if d.name == "loc" => {
                let next = block.statements.get(k + 1).and_then(|s| s.leading.clone());
                out.loc = frame.files.describe(&d.body, &next);
            }
            StatementKind::Label(name) => {
                frame
                    .labels
                    .insert(name.clone(), out.instructions.len() as u32);
            }
            StatementKind::Reg(decl) => {
                for name in &decl.names {
                    match name {
                        RegName::Single(n) => frame.declare(n),
                        RegName::Range { prefix, count } => {
                            for i in 0..*count {
                                frame.declare(&format!("{prefix}{i}"));
                            }
                        }
                    }
                }
            }
            StatementKind::Variable(v) => out.vars.push(v),
            StatementKind::Block(inner) => gather(frame, inner, out)?,
            StatementKind::Pragma(_) | StatementKind::Directive(_) => {}
        }
    }
    Ok(())
}

struct Layout {
    static_shared: u32,
    dynamic_align: u32,
    dynamic_names: Vec<String>,
    symbols: Vec<SharedSymbol>,
    local_bytes: u32,
    const_data: Vec<u8>,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            static_shared: 0,
            dynamic_align: DYNAMIC_SHARED_ALIGN,
            dynamic_names: Vec::new(),
            symbols: Vec::new(),
            local_bytes: 0,
            const_data: Vec::new(),
        }
    }
}

fn var_size(v: &VarDecl) -> (u32, u32, bool) {
    let elem = v.ty.size_bytes().unwrap_or(1) * v.vector.map_or(1, |w| w.lanes());
    let mut count = 1u64;
    let mut unsized_array = false;
    for d in &v.array {
        match d {
            Some(n) => count *= n,
            None => unsized_array = true,
        }
    }
    let align = v.align.unwrap_or(elem).max(1);
    ((elem as u64 * count) as u32, align, unsized_array)
}

impl Layout {
    fn shared(&mut self, frame: &mut Frame, v: &VarDecl) {
        let (bytes, align, unsized_array) = var_size(v);
        if unsized_array {
            self.dynamic_align = self.dynamic_align.max(align);
            self.dynamic_names.push(v.name.clone());
            return;
        }
        let offset = self.static_shared.div_ceil(align) * align;
        self.static_shared = offset + bytes;
        frame
            .symbols
            .insert(v.name.clone(), Symbol::Shared { offset });
        self.symbols.push(SharedSymbol {
            name: v.name.clone(),
            offset,
            bytes: Some(bytes),
        });
    }

    fn local(&mut self, frame: &mut Frame, v: &VarDecl) {
        let (bytes, align, _) = var_size(v);
        self.local_named(frame, &v.name, bytes, align);
    }

    fn local_param(&mut self, frame: &mut Frame, p: &Param) {
        let elem = p.ty.size_bytes().unwrap_or(1) * p.vector.map_or(1, |v| v.lanes());
        let bytes = elem * p.array.unwrap_or(1) as u32;
        self.local_named(frame, &p.name, bytes, p.align.unwrap_or(elem).max(1));
    }

    /// Places `name` in local memory; a name declared again (call sequences reuse `param0`)
    /// keeps its place when it fits.
    fn local_named(&mut self, frame: &mut Frame, name: &str, bytes: u32, align: u32) {
        if let Some(&(offset, size)) = frame.local_vars.get(name) {
            if size >= bytes && offset % align == 0 {
                return;
            }
        }
        let offset = self.local_bytes.div_ceil(align) * align;
        self.local_bytes = offset + bytes;
        frame.local_vars.insert(name.to_string(), (offset, bytes));
        frame
            .symbols
            .insert(name.to_string(), Symbol::Local { offset });
    }

    fn constant(&mut self, frame: &mut Frame, v: &VarDecl) -> Result<(), Error> {
        let (bytes, align, _) = var_size(v);
        let offset = (self.const_data.len() as u32).div_ceil(align) * align;
        frame
            .symbols
            .insert(v.name.clone(), Symbol::Const { offset });
        let init = initial_bytes(frame, v, bytes as usize)?;
        self.const_data.resize(offset as usize, 0);
        self.const_data.extend_from_slice(&init);
        Ok(())
    }
}

/// The bytes a variable starts with: its initializer, zero-filled to its size.
pub(crate) fn initial_bytes(frame: &Frame, v: &VarDecl, bytes: usize) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; bytes];
    if let Some(init) = &v.init {
        let elem = v.ty.size_bytes().unwrap_or(1) as usize;
        let mut values = Vec::new();
        flatten_init(init, &mut values);
        let kind = match v.ty {
            Type::F32 => Kind::F32,
            Type::F64 => Kind::F64,
            _ => Kind::Int(crate::program::W::B64),
        };
        for (i, imm) in values.iter().enumerate() {
            let bits = frame.imm_bits(imm, kind)?;
            let at = i * elem;
            if at + elem <= out.len() {
                out[at..at + elem].copy_from_slice(&bits.to_le_bytes()[..elem]);
            }
        }
    }
    Ok(out)
}

/// Module-level `.global` variables: name, initial bytes. Each [`crate::GlobalMemory`] gets
/// its own copy on the first launch that needs it.
pub(crate) fn module_globals(module: &Module) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let frame = Frame::new("");
    let mut out = Vec::new();
    for v in module.variables() {
        if v.space == StateSpace::Global {
            let (bytes, _, _) = var_size(v);
            out.push((v.name.clone(), initial_bytes(&frame, v, bytes as usize)?));
        }
    }
    Ok(out)
}

fn flatten_init(init: &Initializer, out: &mut Vec<Immediate>) {
    match init {
        Initializer::Imm(i) => out.push(*i),
        Initializer::List(items) => items.iter().for_each(|i| flatten_init(i, out)),
        Initializer::Symbol { .. } | Initializer::Generic(_) => {}
    }
}

fn decode_instruction(
    frame: &mut Frame,
    inst: &Instruction,
    collectives: &mut Vec<crate::program::Collective>,
    calls: &mut Vec<crate::program::CallSite>,
) -> Result<crate::program::Op, Error> {
    use crate::program::Op;
    match &inst.opcode {
        Opcode::Mov => moves::mov(frame, inst),
        Opcode::Add
        | Opcode::Sub
        | Opcode::Mul
        | Opcode::Mad
        | Opcode::Fma
        | Opcode::Div
        | Opcode::Rem
        | Opcode::Min
        | Opcode::Max
        | Opcode::Abs
        | Opcode::Neg
        | Opcode::Addc
        | Opcode::Subc
        | Opcode::Madc
        | Opcode::Mul24
        | Opcode::Mad24
        | Opcode::Sad
        | Opcode::Copysign => arith::arith(frame, inst),
        Opcode::And
        | Opcode::Or
        | Opcode::Xor
        | Opcode::Not
        | Opcode::Cnot
        | Opcode::Shl
        | Opcode::Shr
        | Opcode::Popc
        | Opcode::Clz
        | Opcode::Brev
        | Opcode::Bfe
        | Opcode::Bfi
        | Opcode::Bfind
        | Opcode::Prmt
        | Opcode::Lop3
        | Opcode::Shf
        | Opcode::Dp4a => bitops::bits(frame, inst),
        Opcode::Setp | Opcode::Set => compare::setp(frame, inst),
        Opcode::Selp | Opcode::Slct => compare::select(frame, inst),
        Opcode::Cvt => convert::cvt(frame, inst),
        Opcode::Ex2
        | Opcode::Lg2
        | Opcode::Rsqrt
        | Opcode::Rcp
        | Opcode::Sqrt
        | Opcode::Sin
        | Opcode::Cos
        | Opcode::Tanh => special::transcendental(frame, inst),
        Opcode::Testp => special::testp(frame, inst),
        Opcode::Ld | Opcode::Ldu | Opcode::St => memory::load_store(frame, inst),
        Opcode::Atom | Opcode::Red => memory::atomic(frame, inst),
        Opcode::Cvta => memory::cvta(frame, inst),
        Opcode::Isspacep => memory::isspacep(frame, inst),
        Opcode::CpAsync => memory::cp_async(frame, inst),
        Opcode::CpAsyncCommitGroup => Ok(Op::CpAsyncCommit),
        Opcode::CpAsyncBulk => memory::bulk_copy(frame, inst),
        Opcode::CpAsyncBulkTensor => tensor_copy::tensor_copy(frame, inst),
        Opcode::CpReduceAsyncBulk => Err(frame.unsupported(
            "reductions into global memory (`cp.reduce.async.bulk`); only copies are emulated",
        )),
        // Bulk copies complete when issued, so their groups have nothing to wait for.
        Opcode::CpAsyncBulkCommitGroup | Opcode::CpAsyncBulkWaitGroup => Ok(Op::Nop),
        Opcode::CpAsyncWaitAll => Ok(Op::CpAsyncWait { n: u32::MAX }),
        Opcode::CpAsyncWaitGroup => memory::cp_async_wait(frame, inst),
        Opcode::Membar
        | Opcode::Fence
        | Opcode::Prefetch
        | Opcode::Prefetchu
        | Opcode::Pmevent
        | Opcode::Griddepcontrol
        | Opcode::Setmaxnreg => Ok(Op::Nop),
        Opcode::Nanosleep => Ok(Op::Nanosleep),
        Opcode::Call => control::call(frame, inst, calls),
        Opcode::MbarrierInit
        | Opcode::MbarrierInval
        | Opcode::MbarrierArrive
        | Opcode::MbarrierArriveDrop
        | Opcode::MbarrierExpectTx
        | Opcode::MbarrierTestWait
        | Opcode::MbarrierTryWait
        | Opcode::CpAsyncMbarrierArrive => memory::mbarrier(frame, inst),
        Opcode::Other(w) if w == "mbarrier" => memory::mbarrier(frame, inst),
        Opcode::Other(w) if w == "mapa" => memory::mapa(frame, inst),
        Opcode::Bra | Opcode::Ret | Opcode::Exit | Opcode::Trap | Opcode::Bar | Opcode::Barrier => {
            control::control(frame, inst)
        }
        Opcode::Shfl
        | Opcode::Vote
        | Opcode::Redux
        | Opcode::Match
        | Opcode::BarWarpSync
        | Opcode::Mma
        | Opcode::Ldmatrix
        | Opcode::Stmatrix
        | Opcode::ElectSync
        | Opcode::WgmmaMmaAsync => collectives::collective(frame, inst, collectives),
        // wgmma runs synchronously when the whole warpgroup reaches it, so its fences and
        // group waits have nothing left to order.
        Opcode::WgmmaFence | Opcode::WgmmaCommitGroup | Opcode::WgmmaWaitGroup => Ok(Op::Nop),
        Opcode::Activemask => {
            let d = frame.dst(
                inst.operands
                    .first()
                    .ok_or_else(|| frame.malformed("missing operand"))?,
            )?;
            collectives.push(crate::program::Collective::Activemask { d });
            Ok(Op::Collective(collectives.len() as u32 - 1))
        }
        _ => Err(frame.unsupported("")),
    }
}
