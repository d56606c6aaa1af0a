//! The verifier's rules, each shown by a kernel that breaks it and one that keeps it.

use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{Dim, Imm, Operand, Stmt};
use kernel_dsl::op::{Cmp, MulMode, Op};
use kernel_dsl::scalar::{Pred, F32, U32};
use kernel_dsl::types::ScalarType;
use kernel_dsl::{verify::verify, Error, Target};

fn detail(e: Error) -> String {
    e.to_string()
}

#[test]
fn a_barrier_under_a_thread_dependent_branch_is_rejected() {
    let mut b = KernelBuilder::new("k");
    let tid = b.tid(Dim::X);
    let sixteen = b.const_u32(16);
    let low = b.setp(Cmp::Lt, tid, sixteen);
    b.if_(low, |b| b.bar_sync());
    let err = verify(&b.finish(), Target::Sm80).unwrap_err();
    assert!(detail(err).contains("`bar.sync` is under control flow that differs between threads"));
}

#[test]
fn a_barrier_under_a_parameter_dependent_branch_is_accepted() {
    let mut b = KernelBuilder::new("k");
    let n = b.param::<U32>("n");
    let blk = b.ctaid(Dim::X);
    let active = b.setp(Cmp::Lt, blk, n);
    b.if_(active, |b| b.bar_sync());
    verify(&b.finish(), Target::Sm80).unwrap();
}

#[test]
fn a_barrier_after_a_thread_dependent_return_is_rejected() {
    let mut b = KernelBuilder::new("k");
    let n = b.param::<U32>("n");
    let tid = b.tid(Dim::X);
    let outside = b.setp(Cmp::Ge, tid, n);
    b.if_(outside, |b| b.ret());
    b.bar_sync();
    assert!(verify(&b.finish(), Target::Sm80).is_err());
}

#[test]
fn a_barrier_after_a_loop_with_a_thread_dependent_exit_is_accepted() {
    let mut b = KernelBuilder::new("k");
    let n = b.param::<U32>("n");
    let start = b.tid(Dim::X);
    let step = b.ntid(Dim::X);
    b.for_range(start, n, step, |_, _| {});
    b.bar_sync();
    verify(&b.finish(), Target::Sm80).unwrap();
}

#[test]
fn a_barrier_inside_a_loop_with_a_thread_dependent_trip_count_is_rejected() {
    let mut b = KernelBuilder::new("k");
    let n = b.param::<U32>("n");
    let start = b.tid(Dim::X);
    let step = b.ntid(Dim::X);
    b.for_range(start, n, step, |b, _| b.bar_sync());
    assert!(verify(&b.finish(), Target::Sm80).is_err());
}

#[test]
fn a_value_loaded_from_writable_memory_is_not_uniform() {
    let mut b = KernelBuilder::new("k");
    let x = b.param_slice_mut::<U32>("x");
    let zero = b.const_u32(0);
    let v = b.ld_global(&x, zero);
    let p = b.setp(Cmp::Eq, v, zero);
    b.if_(p, |b| b.bar_sync());
    assert!(verify(&b.finish(), Target::Sm80).is_err());
}

#[test]
fn a_read_only_value_at_a_uniform_address_is_uniform() {
    let mut b = KernelBuilder::new("k");
    let x = b.param_slice::<U32>("x");
    let zero = b.const_u32(0);
    let blk = b.ctaid(Dim::X);
    let v = b.ld_global(&x, blk);
    let p = b.setp(Cmp::Eq, v, zero);
    b.if_(p, |b| b.bar_sync());
    verify(&b.finish(), Target::Sm80).unwrap();
}

#[test]
fn a_read_only_value_at_a_thread_dependent_address_is_not_uniform() {
    let mut b = KernelBuilder::new("k");
    let x = b.param_slice::<U32>("x");
    let zero = b.const_u32(0);
    let tid = b.tid(Dim::X);
    let v = b.ld_global(&x, tid);
    let p = b.setp(Cmp::Eq, v, zero);
    b.if_(p, |b| b.bar_sync());
    assert!(verify(&b.finish(), Target::Sm80).is_err());
}

#[test]
fn a_value_assigned_under_divergent_control_is_not_uniform() {
    let mut b = KernelBuilder::new("k");
    let zero = b.const_u32(0);
    let flag = b.var(zero);
    let tid = b.tid(Dim::X);
    let odd = b.setp(Cmp::Ne, tid, zero);
    b.if_(odd, |b| {
        let one = b.const_u32(1);
        b.assign(flag, one);
    });
    let p = b.setp(Cmp::Eq, flag, zero);
    b.if_(p, |b| b.bar_sync());
    assert!(verify(&b.finish(), Target::Sm80).is_err());
}

/// `while more { bar.sync; more = f(ticket[0] < n) }` with the ticket read from shared
/// memory: `f` decides whether the loop, and the barrier in it, is CTA-uniform.
fn ticket_loop(
    condition: impl Fn(&mut KernelBuilder, Value<Pred>) -> Value<Pred>,
) -> Result<(), Error> {
    let mut b = KernelBuilder::new("k");
    let n = b.param::<U32>("n");
    let ticket = b.shared_array::<U32>("ticket", 1);
    let zero = b.const_u32(0);
    let yes = b.setp(Cmp::Eq, zero, zero);
    let more = b.var(yes);
    b.loop_(|b| {
        b.if_else(more, |_| {}, |b| b.break_());
        b.bar_sync();
        let t = b.ld_shared(&ticket, zero);
        let left = b.setp(Cmp::Lt, t, n);
        let next = condition(b, left);
        b.assign(more, next);
    });
    verify(&b.finish(), Target::Sm80)
}

#[test]
fn a_loop_ended_by_a_block_wide_or_may_hold_a_barrier() {
    ticket_loop(|b, left| b.bar_red_or(left)).unwrap();
    ticket_loop(|b, left| b.bar_red_and(left)).unwrap();
    ticket_loop(|b, left| {
        let count = b.bar_red_popc(left);
        let zero = b.const_u32(0);
        b.setp(Cmp::Ne, count, zero)
    })
    .unwrap();
}

#[test]
fn a_loop_ended_by_a_shared_memory_value_may_not_hold_a_barrier() {
    let err = ticket_loop(|_, left| left).unwrap_err();
    assert!(detail(err).contains("`bar.sync` is under control flow that differs between threads"));
}

#[test]
fn a_block_wide_reduction_under_a_thread_dependent_branch_is_rejected_by_name() {
    let mut b = KernelBuilder::new("k");
    let tid = b.tid(Dim::X);
    let sixteen = b.const_u32(16);
    let low = b.setp(Cmp::Lt, tid, sixteen);
    b.if_(low, |b| {
        b.bar_red_popc(low);
    });
    let err = verify(&b.finish(), Target::Sm80).unwrap_err();
    assert!(detail(err)
        .contains("`bar.red.popc.u32` is under control flow that differs between threads"));
}

#[test]
fn break_outside_a_loop_is_rejected() {
    let mut b = KernelBuilder::new("k");
    b.break_();
    assert!(detail(verify(&b.finish(), Target::Sm80).unwrap_err()).contains("outside a loop"));
}

#[test]
fn reading_a_register_before_any_write_is_rejected() {
    let mut b = KernelBuilder::new("k");
    let r = b.reg(ScalarType::U32);
    let d = b.reg(ScalarType::U32);
    b.inst(
        Op::Mov {
            ty: ScalarType::U32,
        },
        vec![d.into()],
        vec![r.into()],
    );
    let msg = detail(verify(&b.finish(), Target::Sm80).unwrap_err());
    assert!(msg.contains("before anything writes it"), "{msg}");
}

#[test]
fn an_f32_register_in_an_integer_add_is_rejected_with_the_fix() {
    let mut b = KernelBuilder::new("k");
    let f = b.const_f32(1.0);
    let d = b.reg(ScalarType::U32);
    b.inst(
        Op::Add {
            ty: ScalarType::U32,
            rnd: None,
            ftz: false,
            sat: false,
        },
        vec![d.into()],
        vec![f.reg().into(), Operand::Imm(Imm::Int(1))],
    );
    let msg = detail(verify(&b.finish(), Target::Sm80).unwrap_err());
    assert!(
        msg.contains("is a f32 register but the instruction takes u32") && msg.contains("cvt"),
        "{msg}"
    );
}

#[test]
fn a_wide_multiply_must_write_a_register_twice_as_wide() {
    let mut b = KernelBuilder::new("k");
    let a = b.const_u32(3);
    let d = b.reg(ScalarType::U32);
    b.inst(
        Op::Mul {
            ty: ScalarType::U32,
            mode: Some(MulMode::Wide),
            rnd: None,
            ftz: false,
            sat: false,
        },
        vec![d.into()],
        vec![a.reg().into(), a.reg().into()],
    );
    assert!(verify(&b.finish(), Target::Sm80).is_err());
}

#[test]
fn a_register_used_with_another_type_than_declared_is_rejected() {
    let mut b = KernelBuilder::new("k");
    let r = b.const_u32(1);
    let forged = kernel_dsl::ir::Reg {
        id: r.reg().id,
        ty: ScalarType::F32,
    };
    let d = b.reg(ScalarType::F32);
    b.inst(
        Op::Mov {
            ty: ScalarType::F32,
        },
        vec![d.into()],
        vec![forged.into()],
    );
    assert!(detail(verify(&b.finish(), Target::Sm80).unwrap_err()).contains("declared u32"));
}

#[test]
fn param_loads_must_name_a_parameter_and_global_addresses_must_be_64_bit() {
    let mut b = KernelBuilder::new("k");
    let d = b.reg(ScalarType::U32);
    b.inst(
        Op::Ld {
            space: kernel_dsl::StateSpace::Param,
            ty: ScalarType::U32,
            vec: None,
            nc: false,
            cache: None,
        },
        vec![d.into()],
        vec![Operand::Addr {
            base: kernel_dsl::ir::AddrBase::Symbol("nope".into()),
            offset: 0,
        }],
    );
    assert!(verify(&b.finish(), Target::Sm80).is_err());

    let mut b = KernelBuilder::new("k");
    let a = b.const_u32(0);
    let d = b.reg(ScalarType::F32);
    b.inst(
        Op::Ld {
            space: kernel_dsl::StateSpace::Global,
            ty: ScalarType::F32,
            vec: None,
            nc: false,
            cache: None,
        },
        vec![d.into()],
        vec![Operand::Addr {
            base: kernel_dsl::ir::AddrBase::Reg(a.reg()),
            offset: 0,
        }],
    );
    let msg = detail(verify(&b.finish(), Target::Sm80).unwrap_err());
    assert!(msg.contains("64-bit"), "{msg}");
}

#[test]
fn duplicate_names_and_oversized_shared_memory_are_rejected() {
    let mut b = KernelBuilder::new("k");
    b.param::<U32>("n");
    b.param::<U32>("n");
    assert!(detail(verify(&b.finish(), Target::Sm80).unwrap_err()).contains("declared twice"));

    let mut b = KernelBuilder::new("k");
    b.shared_array::<F32>("big", 13 * 1024);
    let msg = detail(verify(&b.finish(), Target::Sm80).unwrap_err());
    assert!(msg.contains("53248 bytes of static shared memory"), "{msg}");
}

#[test]
fn a_block_shape_over_1024_threads_is_rejected() {
    let mut b = KernelBuilder::new("k");
    b.reqntid([1024, 2, 1]);
    assert!(verify(&b.finish(), Target::Sm80).is_err());
}

#[test]
fn an_if_on_a_non_predicate_is_rejected() {
    let mut b = KernelBuilder::new("k");
    let r = b.const_u32(1);
    b.push(Stmt::If {
        cond: r.reg(),
        then_body: vec![],
        else_body: vec![],
    });
    assert!(verify(&b.finish(), Target::Sm80).is_err());
}

#[test]
fn every_sample_verifies_for_its_minimum_target() {
    for s in kernel_dsl::samples::all() {
        verify(&s.kernel, s.min_target).unwrap_or_else(|e| panic!("{}: {e}", s.kernel.name));
    }
    let _ = F32;
}

/// `mov.b32 {parts}, w` with the given part types, `w` a fresh u32.
fn unpack_into(parts: &[ScalarType]) -> Result<(), Error> {
    let mut b = KernelBuilder::new("k");
    let w = b.tid(Dim::X).reg();
    let regs: Vec<Operand> = parts.iter().map(|&t| b.reg(t).into()).collect();
    b.inst(
        Op::Mov {
            ty: ScalarType::B32,
        },
        vec![Operand::Vector(regs)],
        vec![w.into()],
    );
    verify(&b.finish(), Target::Sm80)
}

#[test]
fn an_unpacking_move_must_split_exactly_the_sources_bits() {
    unpack_into(&[ScalarType::Bf16, ScalarType::Bf16]).unwrap();
    let err = unpack_into(&[ScalarType::Bf16, ScalarType::F32]).unwrap_err();
    assert!(detail(err).contains("unpacks a b32 value into 48 bits"));
}
