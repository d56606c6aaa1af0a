//! Builder conveniences for the Hopper copy pipeline: `mbarrier` objects in shared memory and
//! the bulk tensor copy (TMA) that completes on them.

use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{AddrBase, Imm, Operand};
use kernel_dsl::op::{MbarrierOp, Op};
use kernel_dsl::scalar::{Pred, U32, U64};
use kernel_dsl::ScalarType;

fn at(addr: Value<U32>) -> Operand {
    Operand::Addr {
        base: AddrBase::Reg(addr.reg()),
        offset: 0,
    }
}

/// `mbarrier.init`: the barrier at shared address `bar` completes a phase after `count`
/// arrivals (and every announced transaction byte).
pub fn init(b: &mut KernelBuilder, bar: Value<U32>, count: u32) {
    b.inst(
        Op::Mbarrier {
            op: MbarrierOp::Init,
        },
        vec![],
        vec![at(bar), Operand::Imm(Imm::Int(count as i64))],
    );
}

/// Arrives on `bar` and announces `bytes` that bulk copies will deliver to it.
pub fn arrive_expect_tx(b: &mut KernelBuilder, bar: Value<U32>, bytes: u32) {
    b.inst(
        Op::Mbarrier {
            op: MbarrierOp::ArriveExpectTx,
        },
        vec![Operand::Sink],
        vec![at(bar), Operand::Imm(Imm::Int(bytes as i64))],
    );
}

/// Arrives on `bar` once.
pub fn arrive(b: &mut KernelBuilder, bar: Value<U32>) {
    b.inst(
        Op::Mbarrier {
            op: MbarrierOp::Arrive,
        },
        vec![Operand::Sink],
        vec![at(bar)],
    );
}

/// Waits until the phase of `bar` with parity `parity` (0 or 1) has completed.
pub fn wait(b: &mut KernelBuilder, bar: Value<U32>, parity: Value<U32>) {
    b.loop_(|b| {
        let done = b.reg(ScalarType::Pred);
        b.inst(
            Op::Mbarrier {
                op: MbarrierOp::TryWaitParity,
            },
            vec![done.into()],
            vec![at(bar), parity.reg().into()],
        );
        let done = Value::<Pred>::from_reg(done).expect("a predicate register");
        b.if_(done, |b| b.break_());
    });
}

/// Copies the box at `coords` (innermost first) of the tensor map at `map` to shared address
/// `dst`, completing its bytes on `bar`.
pub fn tensor_load(
    b: &mut KernelBuilder,
    dst: Value<U32>,
    map: Value<U64>,
    coords: &[Value<U32>],
    bar: Value<U32>,
) {
    b.inst(
        Op::CpAsyncBulkTensor {
            dims: coords.len() as u8,
        },
        vec![],
        vec![
            at(dst),
            Operand::TensorCoords {
                map: map.reg(),
                coords: coords.iter().map(|c| Operand::Reg(c.reg())).collect(),
            },
            at(bar),
        ],
    );
}

/// `setmaxnreg`: this warpgroup's register budget rises (or falls) to `count` per thread.
pub fn set_max_registers(b: &mut KernelBuilder, increase: bool, count: u32) {
    b.inst(
        Op::Setmaxnreg { increase, count },
        vec![],
        vec![Operand::Imm(Imm::Int(count as i64))],
    );
}
