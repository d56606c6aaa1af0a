//! A global buffer parameter whose [`FloatType`] (f32, bf16, f16) is chosen when the kernel is built;
//! loads widen to f32 and stores round to nearest even, one element or one 16-byte vector
//! (4 × f32 or 8 × 16-bit) at a time.

use super::{bf16, fresh, half};
use crate::FloatType;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::ir::{AddrBase, Operand, ParamType};
use kernel_dsl::op::{MulMode, Op};
use kernel_dsl::scalar::{F32, U16, U32, U64};
use kernel_dsl::{ScalarType, StateSpace};

/// Bytes moved by one vector access.
pub const VECTOR_BYTES: u32 = 16;

/// How a kernel specialization touches memory: one element per access, or one 16-byte vector
/// (which needs every accessed run to start 16-byte aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Scalar,
    Vector,
}

impl Access {
    /// Elements per access for `ty`.
    pub const fn width(self, ty: FloatType) -> u32 {
        match self {
            Access::Scalar => 1,
            Access::Vector => ty.per_vector(),
        }
    }

    /// Suffix used in entry names.
    pub const fn tag(self) -> &'static str {
        match self {
            Access::Scalar => "x1",
            Access::Vector => "v16b",
        }
    }
}

/// A global buffer parameter of a kernel under construction.
#[derive(Clone, Copy, Debug)]
pub struct Tensor {
    base: Value<U64>,
    format: FloatType,
    writable: bool,
}

/// Declares a buffer parameter `name` of `format` elements and loads its global address.
/// Read-only buffers load through the non-coherent path.
pub fn tensor_param(
    b: &mut KernelBuilder,
    name: &str,
    format: FloatType,
    writable: bool,
) -> Tensor {
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
    Tensor {
        base,
        format,
        writable,
    }
}

impl Tensor {
    pub fn format(&self) -> FloatType {
        self.format
    }

    /// Byte address of element `index` (64-bit, so any u32 index is in range).
    pub fn address(&self, b: &mut KernelBuilder, index: Value<U32>) -> Value<U64> {
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
            vec![index.reg().into(), bf16::imm(self.format.bytes() as i64)],
        );
        b.add(self.base, off)
    }

    /// Whether loads go through the non-coherent (read-only) path.
    pub fn nc(&self) -> bool {
        !self.writable
    }

    /// Loads element `index` as f32.
    pub fn load(&self, b: &mut KernelBuilder, index: Value<U32>) -> Value<F32> {
        let addr = self.address(b, index);
        match self.format {
            FloatType::F32 => b.load::<F32>(StateSpace::Global, addr.reg(), 0, self.nc()),
            FloatType::Bf16 => {
                let h = b.load::<U16>(StateSpace::Global, addr.reg(), 0, self.nc());
                bf16::widen(b, h)
            }
            FloatType::F16 => {
                let h = b.load::<U16>(StateSpace::Global, addr.reg(), 0, self.nc());
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

    /// Loads the `access.width()` elements starting at `index` (aligned for vectors).
    pub fn load_n(
        &self,
        b: &mut KernelBuilder,
        index: Value<U32>,
        access: Access,
    ) -> Vec<Value<F32>> {
        if access == Access::Scalar {
            return vec![self.load(b, index)];
        }
        let addr = self.address(b, index);
        match self.format {
            FloatType::F32 => b
                .load_v4::<F32>(StateSpace::Global, addr.reg(), 0, self.nc())
                .to_vec(),
            FloatType::Bf16 => {
                let words = b.load_v4::<U32>(StateSpace::Global, addr.reg(), 0, self.nc());
                words.iter().flat_map(|&w| bf16::unpack2(b, w)).collect()
            }
            FloatType::F16 => {
                let words = b.load_v4::<U32>(StateSpace::Global, addr.reg(), 0, self.nc());
                words.iter().flat_map(|&w| half::unpack2(b, w)).collect()
            }
        }
    }

    /// Stores `vals` (`access.width()` of them) starting at `index`.
    pub fn store_n(
        &self,
        b: &mut KernelBuilder,
        index: Value<U32>,
        access: Access,
        vals: &[Value<F32>],
    ) {
        if access == Access::Scalar {
            self.store(b, index, vals[0]);
            return;
        }
        let addr = self.address(b, index);
        match self.format {
            FloatType::F32 => {
                b.store_v4(
                    StateSpace::Global,
                    addr.reg(),
                    0,
                    [vals[0], vals[1], vals[2], vals[3]],
                );
            }
            FloatType::Bf16 | FloatType::F16 => {
                let pack = if self.format == FloatType::Bf16 {
                    bf16::pack2
                } else {
                    half::pack2
                };
                let w: Vec<Value<U32>> = vals.chunks(2).map(|p| pack(b, p[0], p[1])).collect();
                b.store_v4(StateSpace::Global, addr.reg(), 0, [w[0], w[1], w[2], w[3]]);
            }
        }
    }

    /// Like [`Tensor::load_n`], but only where `active`; elsewhere the values are zero.
    pub fn load_n_or_zero(
        &self,
        b: &mut KernelBuilder,
        index: Value<U32>,
        access: Access,
        active: Value<kernel_dsl::scalar::Pred>,
    ) -> Vec<Value<F32>> {
        let zero = b.const_f32(0.0);
        let vars: Vec<Value<F32>> = (0..access.width(self.format))
            .map(|_| b.var(zero))
            .collect();
        b.if_(active, |b| {
            let vals = self.load_n(b, index, access);
            for (var, v) in vars.iter().zip(vals) {
                b.assign(*var, v);
            }
        });
        vars
    }

    /// `v` as storing and reloading it would give (rounded to bf16 for bf16 storage).
    pub fn round(&self, b: &mut KernelBuilder, v: Value<F32>) -> Value<F32> {
        match self.format {
            FloatType::F32 => v,
            FloatType::Bf16 => bf16::round(b, v),
            FloatType::F16 => half::round(b, v),
        }
    }
}
