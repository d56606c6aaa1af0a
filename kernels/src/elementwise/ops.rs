//! The elementwise ops as data: the names of their inputs, outputs and scalars, which the
//! shape checks and the bench use.

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
}
