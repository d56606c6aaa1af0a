//! Each PTX construct the parser supports reads into the typed AST it should, and prints back.

use ptx_parser::*;

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

fn parse(text: &str) -> Module {
    let module = parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(print_module(&module), text);
    let mut canonical = module.clone();
    canonical.clear_verbatim();
    let printed = print_module(&canonical);
    let again = parse_module(&printed).unwrap_or_else(|e| panic!("reparse: {e}\n{printed}"));
    assert_eq!(module, again, "print -> parse changed the AST:\n{printed}");
    module
}

/// Statements of the body of the only function in `body_text` wrapped in an entry.
fn body(body_text: &str) -> Vec<StatementKind> {
    let text = format!("{HEADER}.entry k()\n{{\n{body_text}\n}}\n");
    let module = parse(&text);
    let f = module.function("k").expect("function k");
    f.body
        .as_ref()
        .expect("body")
        .statements
        .iter()
        .map(|s| s.kind.clone())
        .collect()
}

fn instruction(text: &str) -> Instruction {
    match body(text).into_iter().next() {
        Some(StatementKind::Instruction(i)) => i,
        other => panic!("not an instruction: {other:?}"),
    }
}

fn reg(name: &str) -> Operand {
    Operand::Reg(name.to_string())
}

#[test]
fn module_header_directives_read_with_target_options() {
    let m = parse(".version 7.8\n.target sm_90a, texmode_independent\n.address_size 64\n");
    assert_eq!(m.version(), Some(Version { major: 7, minor: 8 }));
    assert_eq!(
        m.target().map(|t| t.names.clone()),
        Some(vec![
            "sm_90a".to_string(),
            "texmode_independent".to_string()
        ])
    );
    assert_eq!(m.address_size(), Some(64));
}

#[test]
fn module_variables_keep_align_arrays_initializers_and_linkage() {
    let m = parse(&format!(
        "{HEADER}.global .align 4 .b8 table[8] = {{1, 2, 0x3, -4, 5, 6, 7, 8}};\n\
         .const .f32 pi = 0f40490FDB;\n\
         .extern .shared .align 16 .b8 dyn[];\n\
         .visible .global .u64 ptrs[2] = {{table, generic(table)}};\n\
         .shared .v2 .f32 pair[3][4];\n"
    ));
    let vars: Vec<&VarDecl> = m.variables().collect();
    assert_eq!(vars.len(), 5);
    assert_eq!(vars[0].space, StateSpace::Global);
    assert_eq!(vars[0].align, Some(4));
    assert_eq!(vars[0].ty, Type::B8);
    assert_eq!(vars[0].array, vec![Some(8)]);
    let Some(Initializer::List(values)) = &vars[0].init else {
        panic!("list initializer")
    };
    assert_eq!(values.len(), 8);
    assert_eq!(values[3], Initializer::Imm(Immediate::Int(IntLit::new(-4))));
    assert_eq!(
        vars[1].init,
        Some(Initializer::Imm(Immediate::F32(0x4049_0FDB)))
    );
    assert_eq!(vars[2].linkage, Some(Linkage::Extern));
    assert_eq!(vars[2].array, vec![None]);
    assert_eq!(vars[3].linkage, Some(Linkage::Visible));
    assert_eq!(
        vars[3].init,
        Some(Initializer::List(vec![
            Initializer::Symbol {
                name: "table".into(),
                offset: None
            },
            Initializer::Generic("table".into()),
        ]))
    );
    assert_eq!(vars[4].vector, Some(VectorWidth::V2));
    assert_eq!(vars[4].array, vec![Some(3), Some(4)]);
}

#[test]
fn entry_params_keep_ptr_attributes_alignment_and_arrays() {
    let m = parse(&format!(
        "{HEADER}.visible .entry k(\n\t.param .u64 k_p0,\n\t.param .align 8 .b8 k_p1[16],\n\
         \t.param .u64 .ptr.global.align 16 k_p2,\n\t.param .u64 .ptr .shared .align 4 k_p3\n)\n{{\n\tret;\n}}\n"
    ));
    let f = m.function("k").unwrap();
    assert_eq!(f.linkage, Some(Linkage::Visible));
    assert_eq!(f.kind, FunctionKind::Entry);
    let params = f.params.as_ref().unwrap();
    assert_eq!(params.len(), 4);
    assert_eq!((params[0].ty, params[0].name.as_str()), (Type::U64, "k_p0"));
    assert_eq!((params[1].align, params[1].array), (Some(8), Some(16)));
    let global16 = PtrAttr {
        space: Some(StateSpace::Global),
        align: Some(16),
    };
    assert_eq!(params[2].ptr, Some(global16));
    let shared4 = PtrAttr {
        space: Some(StateSpace::Shared),
        align: Some(4),
    };
    assert_eq!(params[3].ptr, Some(shared4));
}

#[test]
fn func_with_return_params_and_declarations_read() {
    let m = parse(&format!(
        "{HEADER}.extern .func (.param .b32 r) ext(.param .b32 a);\n\
         .weak .func (.param .b32 r, .param .b32 r2) f(.reg .b32 a)\n.noreturn\n{{\n\tret;\n}}\n"
    ));
    let fs: Vec<&Function> = m.functions().collect();
    assert_eq!(fs[0].linkage, Some(Linkage::Extern));
    assert!(fs[0].body.is_none());
    assert_eq!(fs[0].returns.as_ref().map(Vec::len), Some(1));
    assert_eq!(fs[1].linkage, Some(Linkage::Weak));
    assert_eq!(fs[1].returns.as_ref().map(Vec::len), Some(2));
    assert_eq!(fs[1].params.as_ref().unwrap()[0].space, StateSpace::Reg);
    assert_eq!(fs[1].directives[0].kind, FunctionDirectiveKind::Noreturn);
}

#[test]
fn performance_directives_read_in_order() {
    let m = parse(&format!(
        "{HEADER}.entry k()\n.reqntid 256, 1, 1\n.maxntid 128\n.maxnreg 64\n.minnctapersm 2\n\
         .pragma \"nounroll\";\n{{\n\tret;\n}}\n"
    ));
    let kinds: Vec<FunctionDirectiveKind> = m
        .function("k")
        .unwrap()
        .directives
        .iter()
        .map(|d| d.kind.clone())
        .collect();
    assert_eq!(
        kinds,
        vec![
            FunctionDirectiveKind::Reqntid(vec![256, 1, 1]),
            FunctionDirectiveKind::Maxntid(vec![128]),
            FunctionDirectiveKind::Maxnreg(64),
            FunctionDirectiveKind::Minnctapersm(2),
            FunctionDirectiveKind::Pragma(vec!["nounroll".into()]),
        ]
    );
}

#[test]
fn register_declarations_read_ranges_and_single_names() {
    let stmts = body(".reg .f32 %f<12>;\n.reg .pred %p, %q;\n.reg .v2 .b32 %v<2>;");
    let StatementKind::Reg(first) = &stmts[0] else {
        panic!()
    };
    assert_eq!(first.ty, Type::F32);
    assert_eq!(
        first.names,
        vec![RegName::Range {
            prefix: "%f".into(),
            count: 12
        }]
    );
    let StatementKind::Reg(second) = &stmts[1] else {
        panic!()
    };
    assert_eq!(
        second.names,
        vec![RegName::Single("%p".into()), RegName::Single("%q".into())]
    );
    let StatementKind::Reg(third) = &stmts[2] else {
        panic!()
    };
    assert_eq!(third.vector, Some(VectorWidth::V2));
}

#[test]
fn local_shared_and_local_declarations_are_variables_in_the_body() {
    let stmts = body(
        ".shared .align 16 .b8 tile[4352];\n.local .align 8 .b8 depot[64];\n.pragma \"nounroll\";",
    );
    let StatementKind::Variable(tile) = &stmts[0] else {
        panic!()
    };
    assert_eq!(
        (tile.space, tile.align, tile.array.clone()),
        (StateSpace::Shared, Some(16), vec![Some(4352)])
    );
    let StatementKind::Variable(depot) = &stmts[1] else {
        panic!()
    };
    assert_eq!(depot.space, StateSpace::Local);
    assert_eq!(stmts[2], StatementKind::Pragma(vec!["nounroll".into()]));
}

#[test]
fn labels_nested_blocks_and_branch_targets_resolve() {
    let stmts =
        body("bra.uni $L__end;\n{\n\t.reg .b32 %t;\n\t{ mov.u32 %t, 1; }\n}\n$L__end:\n\tret;");
    let StatementKind::Instruction(bra) = &stmts[0] else {
        panic!()
    };
    assert_eq!(bra.opcode, Opcode::Bra);
    assert_eq!(bra.modifiers, vec![Modifier::Flag(Flag::Uni)]);
    assert_eq!(bra.operands, vec![Operand::Label("$L__end".into())]);
    let StatementKind::Block(outer) = &stmts[1] else {
        panic!()
    };
    assert!(matches!(outer.statements[1].kind, StatementKind::Block(_)));
    assert_eq!(stmts[2], StatementKind::Label("$L__end".into()));
}

#[test]
fn guards_read_plain_and_negated() {
    let i = instruction("@%p1 bra $L;\n$L:\n\tret;");
    assert_eq!(
        i.guard,
        Some(Guard {
            negated: false,
            reg: "%p1".into()
        })
    );
    let i = instruction("@!%p2 ret;");
    assert_eq!(
        i.guard,
        Some(Guard {
            negated: true,
            reg: "%p2".into()
        })
    );
}

#[test]
fn modifiers_are_typed_by_role() {
    let i = instruction("ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4+16];");
    assert_eq!(i.opcode, Opcode::Ld);
    assert_eq!(
        i.modifiers,
        vec![
            Modifier::Space(StateSpace::Global),
            Modifier::Flag(Flag::Nc),
            Modifier::Vector(VectorWidth::V4),
            Modifier::Type(Type::F32),
        ]
    );
    assert_eq!(i.ty(), Some(Type::F32));
    assert_eq!(i.space(), Some(StateSpace::Global));

    let i = instruction(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1}, {%r1}, {%r2}, {%f1};",
    );
    assert_eq!(
        i.modifiers[2],
        Modifier::Shape(Shape {
            m: 16,
            n: 8,
            k: Some(16)
        })
    );
    assert_eq!(i.modifiers[5], Modifier::Type(Type::F32));
    assert_eq!(i.modifiers[6], Modifier::Type(Type::Bf16));

    let i = instruction("cvt.rn.f32.s32 %f1, %r1;");
    assert_eq!(i.modifiers[0], Modifier::Rounding(Rounding::Rn));

    let i = instruction("ld.shared::cta.L2::cache_hint.b32 %r1, [%r2];");
    assert_eq!(i.modifiers[0], Modifier::Space(StateSpace::SharedCta));
    assert_eq!(i.modifiers[1], Modifier::Other("L2::cache_hint".into()));
}

#[test]
fn ambiguous_modifier_words_read_by_opcode() {
    let setp = instruction("setp.lo.and.u32 %p1, %r1, %r2, !%p2;");
    assert_eq!(setp.modifiers[0], Modifier::Cmp(CmpOp::Lo));
    assert_eq!(setp.modifiers[1], Modifier::Bool(BoolOp::And));
    assert_eq!(setp.operands[3], Operand::Not(Box::new(reg("%p2"))));
    let mul = instruction("mul.lo.s32 %r1, %r2, %r3;");
    assert_eq!(mul.modifiers[0], Modifier::Flag(Flag::Lo));
    let atom = instruction("atom.global.add.f32 %f1, [%rd1], %f2;");
    assert_eq!(atom.modifiers[1], Modifier::Atomic(AtomicOp::Add));
    let red = instruction("red.release.gpu.global.max.u32 [%rd1], %r2;");
    assert_eq!(red.modifiers[0], Modifier::Order(MemOrder::Release));
    assert_eq!(red.modifiers[1], Modifier::Scope(Scope::Gpu));
    assert_eq!(red.modifiers[3], Modifier::Atomic(AtomicOp::Max));
}

#[test]
fn compound_opcodes_take_the_longest_known_prefix() {
    assert_eq!(
        instruction("cp.async.cg.shared.global [%r1], [%rd1], 16;").opcode,
        Opcode::CpAsync
    );
    assert_eq!(
        instruction("cp.async.commit_group;").opcode,
        Opcode::CpAsyncCommitGroup
    );
    assert_eq!(
        instruction("cp.async.wait_group 0;").opcode,
        Opcode::CpAsyncWaitGroup
    );
    assert_eq!(instruction("bar.warp.sync -1;").opcode, Opcode::BarWarpSync);
    let w = instruction(
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1}, %rd1, %rd2, 1, 1, 1, 0, 0;",
    );
    assert_eq!(w.opcode, Opcode::WgmmaMmaAsync);
    let unknown = instruction("frob.x.y %r1;");
    assert_eq!(unknown.opcode, Opcode::Other("frob".into()));
    assert_eq!(
        unknown.modifiers,
        vec![Modifier::Other("x".into()), Modifier::Other("y".into())]
    );
}

#[test]
fn nanosleep_reads_a_register_or_an_immediate_duration() {
    let i = instruction("nanosleep.u32 %r1;");
    assert_eq!(i.opcode, Opcode::Nanosleep);
    assert_eq!(i.modifiers, vec![Modifier::Type(Type::U32)]);
    assert_eq!(i.operands, vec![reg("%r1")]);
    let i = instruction("nanosleep.u32 100;");
    assert_eq!(i.opcode, Opcode::Nanosleep);
    assert_eq!(
        i.operands,
        vec![Operand::Imm(Immediate::Int(IntLit::new(100)))]
    );
}

#[test]
fn immediates_of_every_form_read_to_their_values() {
    let i = instruction("mov.b32 %r1, 0x7FFFFFFF;");
    let Operand::Imm(Immediate::Int(hex)) = i.operands[1] else {
        panic!()
    };
    assert_eq!((hex.magnitude, hex.radix), (0x7FFF_FFFF, Radix::Hex));
    let i = instruction("add.s32 %r1, %r2, -5;");
    assert_eq!(i.operands[2], Operand::Imm(Immediate::Int(IntLit::new(-5))));
    let i = instruction("mov.f32 %f1, 0f3F800000;");
    assert_eq!(
        i.operands[1],
        Operand::Imm(Immediate::F32(1.0f32.to_bits()))
    );
    let i = instruction("mov.f64 %fd1, 0d3FF0000000000000;");
    assert_eq!(
        i.operands[1],
        Operand::Imm(Immediate::F64(1.0f64.to_bits()))
    );
    let i = instruction("mov.f32 %f1, -0f3F800000;");
    assert_eq!(
        i.operands[1],
        Operand::Imm(Immediate::F32((-1.0f32).to_bits()))
    );
    let i = instruction("mov.f64 %fd1, 2.5;");
    assert_eq!(i.operands[1], Operand::Imm(Immediate::Float(2.5)));
}

#[test]
fn addresses_read_register_symbol_and_offset_forms() {
    let addr = |text: &str| match &instruction(text).operands[1] {
        Operand::Address(a) => a.clone(),
        other => panic!("not an address: {other:?}"),
    };
    assert_eq!(
        addr("ld.u32 %r1, [%rd1+16];"),
        Address {
            base: AddressBase::Reg("%rd1".into()),
            offset: Some(16)
        }
    );
    assert_eq!(
        addr("ld.u32 %r1, [%rd1+-12];"),
        Address {
            base: AddressBase::Reg("%rd1".into()),
            offset: Some(-12)
        }
    );
    assert_eq!(
        addr("ld.u32 %r1, [%rd1-12];"),
        Address {
            base: AddressBase::Reg("%rd1".into()),
            offset: Some(-12)
        }
    );
    assert_eq!(
        addr("ld.param.u32 %r1, [name];"),
        Address {
            base: AddressBase::Symbol("name".into()),
            offset: None
        }
    );
    assert_eq!(
        addr("ld.param.u32 %r1, [name+4];"),
        Address {
            base: AddressBase::Symbol("name".into()),
            offset: Some(4)
        }
    );
}

#[test]
fn special_registers_sink_and_symbols_read_typed() {
    let i = instruction("mov.u32 %r1, %ctaid.y;");
    assert_eq!(
        i.operands[1],
        Operand::Special(SpecialReg::Vector(SpecialVector::Ctaid, Dim::Y))
    );
    let i = instruction("mov.u32 %r1, %laneid;");
    assert_eq!(
        i.operands[1],
        Operand::Special(SpecialReg::Scalar(SpecialScalar::Laneid))
    );
    let i = instruction("mov.u64 %rd1, %clock64;");
    assert_eq!(
        i.operands[1],
        Operand::Special(SpecialReg::Scalar(SpecialScalar::Clock64))
    );
    let i = instruction("mov.u64 %rd1, table;");
    assert_eq!(i.operands[1], Operand::Symbol("table".into()));
    let i = instruction("shfl.sync.bfly.b32 %r1|%p1, %r2, 16, 31, -1;");
    assert_eq!(i.operands[0], Operand::PredPair("%r1".into(), "%p1".into()));
    let i = instruction("mov.b64 {%r1, _}, %rd1;");
    assert_eq!(
        i.operands[0],
        Operand::Vector(vec![reg("%r1"), Operand::Sink])
    );
}

#[test]
fn registers_declared_without_percent_read_as_registers() {
    let stmts = body(".reg .b32 r<3>, acc;\nadd.s32 acc, r2, r3;");
    let StatementKind::Instruction(add) = &stmts[1] else {
        panic!()
    };
    // `r3` is outside `r<3>` (r0..r2), so it stays a symbol.
    assert_eq!(
        add.operands,
        vec![reg("acc"), reg("r2"), Operand::Symbol("r3".into())]
    );
}

#[test]
fn call_syntax_reads_return_list_target_and_arguments() {
    let i = instruction("call.uni (retval0), addf, (param0, param1);");
    assert_eq!(i.opcode, Opcode::Call);
    assert_eq!(
        i.operands,
        vec![
            Operand::List(vec![Operand::Symbol("retval0".into())]),
            Operand::Symbol("addf".into()),
            Operand::List(vec![
                Operand::Symbol("param0".into()),
                Operand::Symbol("param1".into())
            ]),
        ]
    );
    let i = instruction("call.uni\n\t(retval0),\n\taddf,\n\t(\n\tparam0\n\t);");
    assert_eq!(i.operands.len(), 3);
}

#[test]
fn comments_of_both_kinds_are_kept_as_trivia() {
    let text =
        format!("// head\n{HEADER}/* block\n comment */ .entry k()\n{{\n\tret; // tail\n}}\n");
    let m = parse(&text);
    assert_eq!(print_module(&m), text);
    assert_eq!(
        m.items[3].leading.as_deref(),
        Some("\n/* block\n comment */ ")
    );
}

#[test]
fn hand_built_modules_print_in_the_emitter_layout() {
    let mut m = parse(&format!(
        "{HEADER}.visible .entry k(\n\t.param .u64 k_p0\n)\n{{\n\tret;\n}}\n"
    ));
    fn clear(m: &mut Module) {
        m.trailing = None;
        for item in &mut m.items {
            item.leading = None;
            if let ItemKind::Function(f) = &mut item.kind {
                f.params_closing = None;
                f.params.iter_mut().flatten().for_each(|p| p.leading = None);
                if let Some(b) = &mut f.body {
                    b.leading = None;
                    b.closing = None;
                    for s in &mut b.statements {
                        s.leading = None;
                        if let StatementKind::Instruction(i) = &mut s.kind {
                            i.gap = None;
                        }
                    }
                }
            }
        }
    }
    clear(&mut m);
    m.clear_verbatim();
    assert_eq!(
        print_module(&m),
        format!("{HEADER}.visible .entry k(\n\t.param .u64 k_p0\n)\n{{\n\tret;\n}}\n")
    );
}

#[test]
fn paired_destinations_accept_a_sink() {
    let i = instruction("setp.eq.s32 _|%p1, %r1, 0;");
    assert_eq!(i.operands[0], Operand::PredPair("_".into(), "%p1".into()));
}

#[test]
fn instructions_and_operands_display_as_one_line_of_ptx() {
    let i = instruction("@%p1 ld.global.nc.v2.f32 \t{%f1, %f2}, [%rd4+-8];");
    assert_eq!(
        i.to_string(),
        "@%p1 ld.global.nc.v2.f32 {%f1, %f2}, [%rd4+-8];"
    );
    assert_eq!(instruction("ret;").to_string(), "ret;");
}

#[test]
fn tensor_map_addresses_read_with_their_coordinates() {
    let i = instruction(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];",
    );
    assert_eq!(i.opcode, Opcode::CpAsyncBulkTensor);
    assert_eq!(
        i.operands[1],
        Operand::TensorCoords {
            map: "%rd1".into(),
            coords: vec![reg("%r2"), reg("%r3")]
        }
    );
    assert_eq!(i.modifiers[1], Modifier::Space(StateSpace::SharedCluster));
    assert_eq!(
        i.modifiers[4],
        Modifier::Other("mbarrier::complete_tx::bytes".into())
    );
}

#[test]
fn an_edited_statement_prints_canonically_while_the_rest_keeps_its_text() {
    let text =
        format!("{HEADER}.entry k()\n{{\n\tadd.s32   %r1,%r2,1;\n\tmov.u32  %r3 ,%r1;\n}}\n");
    let mut m = parse_module(&text).unwrap();
    let Some(ItemKind::Function(f)) = m.items.last_mut().map(|i| &mut i.kind) else {
        panic!("function last")
    };
    let body = f.body.as_mut().unwrap();
    let StatementKind::Instruction(add) = &mut body.statements[0].kind else {
        panic!()
    };
    add.operands[2] = Operand::Imm(Immediate::Int(IntLit::new(2)));
    let printed = print_module(&m);
    assert!(printed.contains("\tadd.s32   %r1, %r2, 2;\n"), "{printed}");
    assert!(printed.contains("\tmov.u32  %r3 ,%r1;\n"), "{printed}");
}

#[test]
fn an_edited_function_header_prints_canonically() {
    let text =
        format!("{HEADER}.visible .entry  k (\n\t.param .u64 a\n)\n.maxntid 64\n{{\n\tret;\n}}\n");
    let mut m = parse_module(&text).unwrap();
    assert_eq!(print_module(&m), text);
    let Some(ItemKind::Function(f)) = m.items.last_mut().map(|i| &mut i.kind) else {
        panic!("function last")
    };
    f.name = "renamed".into();
    let printed = print_module(&m);
    assert!(
        printed.contains(".visible .entry renamed(\n\t.param .u64 a\n)\n.maxntid 64\n{"),
        "{printed}"
    );
}
