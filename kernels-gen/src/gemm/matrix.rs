//! Kernel-side access to one matrix of a (batched) operand: its base address with the batch
//! offset applied, element loads that widen to f32 and stores that round to the storage type.

use crate::codegen::{bf16, fresh, half};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{AddrBase, Operand, ParamType};
use kernel_dsl::op::{MulMode, Op};
use kernel_dsl::scalar::{F32, U16, U32, U64};
use kernel_dsl::{ScalarType, StateSpace};

/// A global buffer parameter, before the batch offset is applied.
#[derive(Clone, Copy)]
pub struct MatParam {
    base: Value<U64>,
    format: FloatType,
    writable: bool,
}

/// Declares a buffer parameter of `format` elements and loads its global address.
pub fn mat_param(b: &mut KernelBuilder, name: &str, format: FloatType, writable: bool) -> MatParam {
    let sym = b.raw_param(
        name,
        ParamType::GlobalPtr {
            elem: format.scalar(),
            mutable: writable,
        },
    );
    let generic = fresh::<U64>(b);
    b.inst(
        Op::Ld {
            space: StateSpace::Param,
            ty: ScalarType::U64,
            vec: None,
            nc: false,
            cache: None,
        },
        vec![generic.reg().into()],
        vec![Operand::Addr {
            base: AddrBase::Symbol(sym),
            offset: 0,
        }],
    );
    let base = fresh::<U64>(b);
    b.inst(
        Op::Cvta {
            space: StateSpace::Global,
            to_generic: false,
        },
        vec![base.reg().into()],
        vec![generic.reg().into()],
    );
    MatParam {
        base,
        format,
        writable,
    }
}

/// `count · bytes` as a 64-bit byte offset (`mul.wide.u32`).
pub fn wide_bytes(b: &mut KernelBuilder, count: Value<U32>, bytes: u32) -> Value<U64> {
    let off = fresh::<U64>(b);
    b.inst(
        Op::Mul {
            ty: ScalarType::U32,
            mode: Some(MulMode::Wide),
            rnd: None,
            ftz: false,
            sat: false,
        },
        vec![off.reg().into()],
        vec![count.reg().into(), bf16::imm(bytes as i64)],
    );
    off
}

impl MatParam {
    /// Matrix `batch` of the operand, `stride` elements apart (the byte offset is 64-bit).
    pub fn batch(&self, b: &mut KernelBuilder, batch: Value<U32>, stride: Value<U32>) -> Mat {
        let elems = b.mul_wide_u32(batch, stride);
        let k = b.const_u32(self.format.bytes() as u32);
        let k64 = b.cvt::<U64, U32>(k);
        let off = b.mul(elems, k64);
        Mat {
            base: b.add(self.base, off),
            format: self.format,
            nc: !self.writable,
        }
    }

    /// The parameter itself, without a batch offset (vectors shared by every batch).
    pub fn whole(&self) -> Mat {
        Mat {
            base: self.base,
            format: self.format,
            nc: !self.writable,
        }
    }
}

/// One matrix in global memory, addressed by a u32 element index.
#[derive(Clone, Copy)]
pub struct Mat {
    pub base: Value<U64>,
    pub format: FloatType,
    nc: bool,
}

impl Mat {
    /// Byte address of element `index`.
    pub fn address(&self, b: &mut KernelBuilder, index: Value<U32>) -> Value<U64> {
        let off = wide_bytes(b, index, self.format.bytes() as u32);
        b.add(self.base, off)
    }

    /// Loads element `index` widened to f32.
    pub fn load(&self, b: &mut KernelBuilder, index: Value<U32>) -> Value<F32> {
        let addr = self.address(b, index);
        match self.format {
            FloatType::F32 => b.load::<F32>(StateSpace::Global, addr.reg(), 0, self.nc),
            FloatType::Bf16 => {
                let h = b.load::<U16>(StateSpace::Global, addr.reg(), 0, self.nc);
                bf16::widen(b, h)
            }
            FloatType::F16 => {
                let h = b.load::<U16>(StateSpace::Global, addr.reg(), 0, self.nc);
                half::widen(b, h)
            }
        }
    }

    /// Stores `v` to element `index`, rounded to the storage type.
    pub fn store(&self, b: &mut KernelBuilder, index: Value<U32>, v: Value<F32>) {
        let addr = self.address(b, index);
        match self.format {
            FloatType::F32 => b.store(StateSpace::Global, addr.reg(), 0, v),
            FloatType::Bf16 => {
                let h = bf16::narrow(b, v);
                b.store(StateSpace::Global, addr.reg(), 0, h);
            }
            FloatType::F16 => {
                let h = half::narrow(b, v);
                b.store(StateSpace::Global, addr.reg(), 0, h);
            }
        }
    }
}
