//! The elementwise ops as data: names of inputs, outputs and scalars, and the f32 body one
//! element runs.

use crate::codegen::map::{map_kernel, MapSig};
use crate::codegen::math::{self, GELU_K0, GELU_K1};
use crate::codegen::tensor::Format;
use crate::Storage;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::F32;
use kernel_dsl::ir::Kernel;

/// One elementwise op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapOp {
    Add,
    Mul,
    Scale,
    Silu,
    SiluBackward,
    GeluTanh,
    GeluTanhBackward,
    Swiglu,
    SwigluBackward,
}

impl MapOp {
    pub const ALL: [MapOp; 9] = [
        MapOp::Add,
        MapOp::Mul,
        MapOp::Scale,
        MapOp::Silu,
        MapOp::SiluBackward,
        MapOp::GeluTanh,
        MapOp::GeluTanhBackward,
        MapOp::Swiglu,
        MapOp::SwigluBackward,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            MapOp::Add => "add",
            MapOp::Mul => "mul",
            MapOp::Scale => "scale",
            MapOp::Silu => "silu",
            MapOp::SiluBackward => "silu_backward",
            MapOp::GeluTanh => "gelu_tanh",
            MapOp::GeluTanhBackward => "gelu_tanh_backward",
            MapOp::Swiglu => "swiglu",
            MapOp::SwigluBackward => "swiglu_backward",
        }
    }

    pub(crate) const fn inputs(self) -> &'static [&'static str] {
        match self {
            MapOp::Add | MapOp::Mul => &["a", "b"],
            MapOp::Scale | MapOp::Silu | MapOp::GeluTanh => &["x"],
            MapOp::SiluBackward | MapOp::GeluTanhBackward => &["x", "dy"],
            MapOp::Swiglu => &["gate", "up"],
            MapOp::SwigluBackward => &["gate", "up", "dout"],
        }
    }

    pub(crate) const fn outputs(self) -> &'static [&'static str] {
        match self {
            MapOp::SiluBackward | MapOp::GeluTanhBackward => &["dx"],
            MapOp::SwigluBackward => &["dgate", "dup"],
            _ => &["out"],
        }
    }

    pub(crate) const fn scalars(self) -> &'static [&'static str] {
        match self {
            MapOp::Scale => &["s"],
            _ => &[],
        }
    }

    /// The element body: inputs and scalars (f32) to outputs.
    fn body(self, b: &mut KernelBuilder, x: &[Value<F32>], s: &[Value<F32>]) -> Vec<Value<F32>> {
        match self {
            MapOp::Add => vec![b.add(x[0], x[1])],
            MapOp::Mul => vec![b.mul(x[0], x[1])],
            MapOp::Scale => vec![b.mul(x[0], s[0])],
            MapOp::Silu => vec![silu(b, x[0])],
            MapOp::SiluBackward => {
                let d = silu_grad(b, x[0]);
                vec![b.mul(x[1], d)]
            }
            MapOp::GeluTanh => vec![gelu(b, x[0])],
            MapOp::GeluTanhBackward => {
                let d = gelu_grad(b, x[0]);
                vec![b.mul(x[1], d)]
            }
            MapOp::Swiglu => {
                let a = silu(b, x[0]);
                vec![b.mul(a, x[1])]
            }
            MapOp::SwigluBackward => {
                let (gate, up, dout) = (x[0], x[1], x[2]);
                let sg = math::sigmoid(b, gate);
                let a = b.mul(gate, sg);
                let d = silu_grad_from(b, gate, sg);
                let du = b.mul(dout, up);
                vec![b.mul(du, d), b.mul(dout, a)]
            }
        }
    }
}

/// `x·σ(x)`.
fn silu(b: &mut KernelBuilder, x: Value<F32>) -> Value<F32> {
    let s = math::sigmoid(b, x);
    b.mul(x, s)
}

/// `d silu / dx = σ(x)·(1 + x·(1 − σ(x)))`.
fn silu_grad(b: &mut KernelBuilder, x: Value<F32>) -> Value<F32> {
    let s = math::sigmoid(b, x);
    silu_grad_from(b, x, s)
}

/// [`silu_grad`] given `s = σ(x)`.
fn silu_grad_from(b: &mut KernelBuilder, x: Value<F32>, s: Value<F32>) -> Value<F32> {
    let one = b.const_f32(1.0);
    let om = b.sub(one, s);
    let t = b.fma(x, om, one);
    b.mul(s, t)
}

/// `u = k0·(x + k1·x³)` and `tanh(u)`.
fn gelu_inner(b: &mut KernelBuilder, x: Value<F32>) -> (Value<F32>, Value<F32>) {
    let k0 = b.const_f32(GELU_K0);
    let k1 = b.const_f32(GELU_K1);
    // x² is capped so the gradient's (1 − tanh²)·(1 + 3·k1·x²) is 0·finite, not 0·∞, for
    // |x| near f32's limit (tanh is ±1 long before the cap matters).
    let square = b.mul(x, x);
    let cap = b.const_f32(1e30);
    let x2 = b.min(square, cap);
    let one = b.const_f32(1.0);
    let poly = b.fma(k1, x2, one); // 1 + k1·x²
    let inner = b.mul(x, poly);
    let u = b.mul(k0, inner);
    let t = math::tanh(b, u);
    (x2, t)
}

/// `0.5·x·(1 + tanh(k0·(x + k1·x³)))`.
fn gelu(b: &mut KernelBuilder, x: Value<F32>) -> Value<F32> {
    let (_, t) = gelu_inner(b, x);
    let half = b.const_f32(0.5);
    let one = b.const_f32(1.0);
    let hx = b.mul(half, x);
    let p = b.add(one, t);
    b.mul(hx, p)
}

/// `0.5·(1 + t) + 0.5·x·(1 − t²)·k0·(1 + 3·k1·x²)`.
fn gelu_grad(b: &mut KernelBuilder, x: Value<F32>) -> Value<F32> {
    let (x2, t) = gelu_inner(b, x);
    let half = b.const_f32(0.5);
    let one = b.const_f32(1.0);
    let k0 = b.const_f32(GELU_K0);
    let k13 = b.const_f32(3.0 * GELU_K1);
    let p = b.add(one, t);
    let left = b.mul(half, p);
    let nt = b.neg(t);
    let sech2 = b.fma(nt, t, one);
    let dpoly = b.fma(k13, x2, one);
    let du = b.mul(k0, dpoly);
    let hx = b.mul(half, x);
    let r = b.mul(hx, sech2);
    b.fma(r, du, left)
}

/// Every (op, storage) specialization, in [`spec_index`] order.
pub(crate) const SPECS: [(MapOp, Storage); 18] = {
    let mut out = [(MapOp::Add, Storage::F32); 18];
    let mut i = 0;
    while i < 18 {
        let storage = if i % 2 == 0 {
            Storage::F32
        } else {
            Storage::Bf16
        };
        out[i] = (MapOp::ALL[i / 2], storage);
        i += 1;
    }
    out
};

pub(crate) fn spec_index(op: MapOp, storage: Storage) -> usize {
    let pos = MapOp::ALL.iter().position(|&o| o == op).unwrap_or(0);
    pos * 2 + matches!(storage, Storage::Bf16) as usize
}

/// Builds the kernel of one specialization.
pub(crate) fn build((op, storage): (MapOp, Storage)) -> Kernel {
    let fmt = Format::from(storage);
    let ins: Vec<(&str, Format)> = op.inputs().iter().map(|&n| (n, fmt)).collect();
    let outs: Vec<(&str, Format)> = op.outputs().iter().map(|&n| (n, fmt)).collect();
    let sig = MapSig {
        name: format!("{}_{}", op.name(), storage.suffix()),
        inputs: &ins,
        outputs: &outs,
        scalars: op.scalars(),
    };
    map_kernel(&sig, |b, x, s| op.body(b, x, s))
}
