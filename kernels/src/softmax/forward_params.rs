//! The parameters both softmax forward kernels (held rows and streamed rows) declare, in the
//! order the launcher passes them: `x, y, rows, cols, scale_log2, queries, offset`. Column `j`
//! of row `r` takes part when `j ≤ r mod queries + offset` (no mask: `queries = 1`,
//! `offset = cols − 1`).

use super::scores::Scores;
use crate::codegen::tensor::{tensor_param, Tensor};
use crate::rowwise::spec::RowSpec;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{F32, U32};

pub(super) struct ForwardParams {
    pub x: Tensor,
    pub y: Tensor,
    pub rows: Value<U32>,
    pub cols: Value<U32>,
    pub scale_log2: Value<F32>,
    pub queries: Value<U32>,
    pub offset: Value<U32>,
}

impl ForwardParams {
    pub fn declare(b: &mut KernelBuilder, spec: RowSpec) -> ForwardParams {
        ForwardParams {
            x: tensor_param(b, "x", spec.storage, false),
            y: tensor_param(b, "y", spec.storage, true),
            rows: b.param::<U32>("rows"),
            cols: b.param::<U32>("cols"),
            scale_log2: b.param::<F32>("scale_log2"),
            queries: b.param::<U32>("queries"),
            offset: b.param::<U32>("offset"),
        }
    }

    /// The input read as base-2 scores.
    pub fn scores(&self, spec: RowSpec) -> Scores<'_> {
        Scores {
            x: &self.x,
            spec,
            scale_log2: self.scale_log2,
        }
    }
}
