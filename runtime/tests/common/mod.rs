//! Test kernels (PTX and cubins checked in under tests/fixtures) as `static` artifacts, the way
//! `#[kernel]` emits them.

#![allow(dead_code)]

use kernel_dsl::{
    BlockContract, KernelArtifacts, KernelMeta, ParamKind, ParamMeta, Ptx, ScalarType, Target,
};
use std::borrow::Cow;

pub const PTX_SM80: &str = include_str!("../fixtures/test_kernels.sm_80.ptx");
pub const PTX_SM90: &str = include_str!("../fixtures/test_kernels.sm_90.ptx");
pub const PTX_SM90A: &str = include_str!("../fixtures/test_kernels.sm_90a.ptx");
pub const CUBIN_SM80: &[u8] = include_bytes!("../fixtures/test_kernels.sm_80.cubin");
pub const CUBIN_SM90: &[u8] = include_bytes!("../fixtures/test_kernels.sm_90.cubin");

const fn slice(name: &'static str, mutable: bool) -> ParamMeta {
    ParamMeta {
        name: Cow::Borrowed(name),
        kind: ParamKind::Slice {
            elem: ScalarType::F32,
            mutable,
        },
    }
}

const fn scalar(name: &'static str, ty: ScalarType) -> ParamMeta {
    ParamMeta {
        name: Cow::Borrowed(name),
        kind: ParamKind::Scalar(ty),
    }
}

pub const VECTOR_ADD_PARAMS: &[ParamMeta] = &[
    slice("a", false),
    slice("b", false),
    slice("c", true),
    scalar("n", ScalarType::U32),
];
pub const AXPY_PARAMS: &[ParamMeta] = &[
    scalar("a", ScalarType::F32),
    slice("x", false),
    slice("y", true),
    scalar("n", ScalarType::U32),
];
const REVERSE_PARAMS: &[ParamMeta] = &[slice("x", false), slice("y", true)];

pub const fn meta(entry: &'static str, params: &'static [ParamMeta], dynamic: bool) -> KernelMeta {
    KernelMeta {
        entry: Cow::Borrowed(entry),
        params: Cow::Borrowed(params),
        block: BlockContract::AtMost(1024),
        static_shared_bytes: 0,
        uses_dynamic_shared: dynamic,
        min_dynamic_shared_bytes: 0,
        waits_on_prior_grid: false,
        cluster: None,
    }
}

const PTX_ALL: &[(Target, Ptx)] = &[
    (Target::Sm80, Ptx::Text(PTX_SM80)),
    (Target::Sm90, Ptx::Text(PTX_SM90)),
];
const CUBINS_ALL: &[(Target, &[u8])] = &[(Target::Sm80, CUBIN_SM80), (Target::Sm90, CUBIN_SM90)];

/// PTX only: the driver JIT-compiles at load.
pub static VECTOR_ADD: KernelArtifacts = KernelArtifacts {
    meta: meta("vector_add", VECTOR_ADD_PARAMS, false),
    ptx: Cow::Borrowed(PTX_ALL),
    cubins: Cow::Borrowed(&[]),
    emit: None,
    ir: None,
};

pub static AXPY: KernelArtifacts = KernelArtifacts {
    meta: meta("axpy", AXPY_PARAMS, false),
    ptx: Cow::Borrowed(PTX_ALL),
    cubins: Cow::Borrowed(&[]),
    emit: None,
    ir: None,
};

pub static REVERSE: KernelArtifacts = KernelArtifacts {
    meta: meta("reverse_in_block", REVERSE_PARAMS, true),
    ptx: Cow::Borrowed(PTX_ALL),
    cubins: Cow::Borrowed(&[]),
    emit: None,
    ir: None,
};

/// PTX and cubins: the cubin wins where it matches the device.
pub static VECTOR_ADD_CUBIN: KernelArtifacts = KernelArtifacts {
    meta: meta("vector_add", VECTOR_ADD_PARAMS, false),
    ptx: Cow::Borrowed(PTX_ALL),
    cubins: Cow::Borrowed(CUBINS_ALL),
    emit: None,
    ir: None,
};

/// Only the sm_90a module: loads on a 9.0 device as sm_90a.
pub static VECTOR_ADD_SM90A_ONLY: KernelArtifacts = KernelArtifacts {
    meta: meta("vector_add", VECTOR_ADD_PARAMS, false),
    ptx: Cow::Borrowed(&[(Target::Sm90a, Ptx::Text(PTX_SM90A))]),
    cubins: Cow::Borrowed(&[]),
    emit: None,
    ir: None,
};

/// Seeded xorshift values in [-8, 8), never all zero.
pub fn random_f32s(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 16.0 - 8.0
        })
        .collect()
}
