//! The softmax forward's view of its input: chunk `c` of a row as base-2 scores
//! `t = x · scale · log₂e`, −∞ past the row's limit (the causal mask and the row's end alike).
//!
//! Loading and scaling are two steps so that a thread issues the loads of every chunk it is
//! about to use before it waits on any of them (see `codegen::guarded`).

use crate::codegen::guarded::{load_if, RawChunk};
use crate::codegen::tensor::Tensor;
use crate::rowwise::index::{chunk_start, chunks, element};
use crate::rowwise::spec::RowSpec;
use kernel_dsl::builder::{KernelBuilder, Value};
use kernel_dsl::dtype::{Pred, F32, S32, U32};
use kernel_dsl::op::Cmp;

/// One chunk's load in flight, the column it starts at, and whether it was read.
pub(super) struct Pending {
    raw: RawChunk,
    col0: Value<U32>,
    seen: Value<Pred>,
}

/// The last column a row sees, and the chunk holding it.
#[derive(Clone, Copy)]
pub(super) struct Limit {
    col: Value<U32>,
    chunk: Value<U32>,
}

/// A row-major input read chunk by chunk.
pub(super) struct Scores<'a> {
    pub x: &'a Tensor,
    pub spec: RowSpec,
    pub scale_log2: Value<F32>,
}

impl Scores<'_> {
    /// The last column row `row` sees (`j ≤ row mod queries + offset`) and its chunk.
    pub fn limit(
        &self,
        b: &mut KernelBuilder,
        row: Value<U32>,
        queries: Value<U32>,
        offset: Value<U32>,
    ) -> Limit {
        let q = b.rem(row, queries);
        let col = b.add(q, offset);
        let width = self.spec.access.width(self.spec.storage);
        let chunk = chunks(b, col, width);
        Limit { col, chunk }
    }

    /// Issues the load of chunk `c` of the row starting at element `base`. Chunks wholly past
    /// the limit are not read: a causal mask skips about half of the scores, and the limit
    /// lies inside the row, so every read does too.
    pub fn load(
        &self,
        b: &mut KernelBuilder,
        base: Value<U32>,
        c: Value<U32>,
        limit: Limit,
    ) -> Pending {
        let width = self.spec.access.width(self.spec.storage);
        let seen = b.setp(Cmp::Le, c, limit.chunk);
        let idx = element(b, base, c, width);
        let col0 = chunk_start(b, c, width);
        let raw = load_if(b, self.x, idx, self.spec.access, seen);
        Pending { raw, col0, seen }
    }

    /// The scores of chunks `slots` of the row starting at element `base`, chunk by chunk:
    /// every load is issued before any is used.
    pub fn read(
        &self,
        b: &mut KernelBuilder,
        base: Value<U32>,
        slots: &[(Value<U32>, Value<Pred>)],
        limit: Limit,
    ) -> Vec<Vec<Value<F32>>> {
        let pending: Vec<Pending> = slots
            .iter()
            .map(|&(c, _)| self.load(b, base, c, limit))
            .collect();
        pending.iter().map(|p| self.scale(b, p, limit)).collect()
    }

    /// The scores of a loaded chunk: `x · scale_log2`, or −∞ for columns past the limit.
    pub fn scale(&self, b: &mut KernelBuilder, p: &Pending, limit: Limit) -> Vec<Value<F32>> {
        let ninf = b.const_f32(f32::NEG_INFINITY);
        let xs = p.raw.widen(b);
        // Elements `k ≤ room` of the chunk are inside; a chunk that was not read has none.
        // (For one that was, `limit − col0` lies in 0 ..= cols − 1.)
        let gap = b.sub(limit.col, p.col0);
        let gap = b.cvt::<S32, U32>(gap);
        let none = b.const_int::<S32>(-1);
        let room = b.selp(p.seen, gap, none);
        xs.into_iter()
            .enumerate()
            .map(|(k, v)| {
                let k = b.const_int::<S32>(k as i64);
                let inside = b.setp(Cmp::Le, k, room);
                let t = b.mul(v, self.scale_log2);
                b.selp(inside, t, ninf)
            })
            .collect()
    }
}
