//! Thread-block clusters (sm_90+): the block's rank in its cluster, the cluster-wide barrier,
//! distributed shared memory (another block's shared array, reached through `mapa`), the
//! remote mbarrier arrive and the multicast bulk tensor copy. What each needs from the target
//! is its instructions' catalog rows, checked as for every intrinsic.

use super::expr::memory_type;
use super::value::{Scalar, SharedRef, Value};
use super::Lowerer;
use crate::diag::{err, range, DResult};
use crate::dsl_type::rust_name;
use kernel_dsl::ir::{AddrBase, Operand, Reg, SpecialReg};
use kernel_dsl::op::{MbarrierOp, Op};
use kernel_dsl::ScalarType;
use syn::{Expr, ExprCall};

/// The names lowered here.
pub const CLUSTER: &[&str] = &[
    "cluster_ctarank",
    "cluster_nctarank",
    "cluster_sync",
    "dsmem_load",
    "dsmem_store",
    "mbarrier_arrive_cluster",
    "tma_load_multicast",
];

impl Lowerer<'_> {
    pub(crate) fn cluster_call(&mut self, name: &str, c: &ExprCall) -> DResult<Value> {
        let args: Vec<&Expr> = c.args.iter().collect();
        let span = range(&c);
        match name {
            "cluster_ctarank" | "cluster_nctarank" => {
                let reg = if name == "cluster_ctarank" {
                    SpecialReg::ClusterCtaRank
                } else {
                    SpecialReg::ClusterNctaRank
                };
                let d = self.b.reg(ScalarType::U32);
                self.span = span;
                self.inst(Op::ClusterReg, vec![d.into()], vec![Operand::Special(reg)]);
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            "cluster_sync" => {
                self.span = span;
                self.inst(Op::ClusterBarrier { wait: false }, vec![], vec![]);
                self.inst(Op::ClusterBarrier { wait: true }, vec![], vec![]);
                Ok(Value::Unit)
            }
            "dsmem_load" => {
                let tile = self.cluster_shared(args[0])?;
                let at = self.remote_address(&tile, args[1], args[2], span)?;
                let d = self.b.reg(tile.elem);
                self.inst(
                    Op::LdCluster {
                        ty: memory_type(tile.elem),
                    },
                    vec![d.into()],
                    vec![at],
                );
                Ok(Value::Scalar(Scalar::reg(d)))
            }
            "dsmem_store" => {
                let tile = self.cluster_shared(args[0])?;
                let v = self.expr_as(args[3], tile.elem)?;
                let v = self.check_type(v, tile.elem, range(&args[3]))?;
                let v = self.materialize(&v);
                let at = self.remote_address(&tile, args[1], args[2], span)?;
                self.inst(
                    Op::StCluster {
                        ty: memory_type(tile.elem),
                    },
                    vec![],
                    vec![at, v.into()],
                );
                Ok(Value::Unit)
            }
            "mbarrier_arrive_cluster" => {
                let bars = self.cluster_shared(args[0])?;
                if bars.elem != ScalarType::U64 {
                    return err(
                        range(&args[0]),
                        format!(
                            "an mbarrier is a `u64` in shared memory: give a `shared_array::<u64, N>()`, not an array of `{}`",
                            rust_name(bars.elem)
                        ),
                    );
                }
                let at = self.remote_address(&bars, args[1], args[2], span)?;
                self.inst(
                    Op::Mbarrier {
                        op: MbarrierOp::ArriveCluster,
                    },
                    vec![Operand::Sink],
                    vec![at],
                );
                Ok(Value::Unit)
            }
            "tma_load_multicast" => {
                let mask = self.expr_as(args[6], ScalarType::U16)?;
                let mask = self.materialize(&mask);
                self.tma_copy(&args[..6], Some(mask), span)
            }
            other => err(span, format!("`{other}` is not implemented")),
        }
    }

    fn cluster_shared(&mut self, e: &Expr) -> DResult<SharedRef> {
        match self.expr(e, None)? {
            Value::Shared(s) => Ok(s),
            other => err(
                range(&e),
                format!(
                    "distributed shared memory is a shared array (`shared_array::<T, N>()`) of every block of the cluster, found {}",
                    other.describe()
                ),
            ),
        }
    }

    /// `[mapa(&tile[index], rank)]`: element `index` of `tile` in the shared memory of block
    /// `rank` of the cluster, the same offset as in this block.
    fn remote_address(
        &mut self,
        tile: &SharedRef,
        index: &Expr,
        rank: &Expr,
        span: crate::diag::SpanRange,
    ) -> DResult<Operand> {
        let idx = self.index_scalar(index)?;
        let local = self.shared_address(tile, &idx, range(&index))?;
        let rank = self.expr_as(rank, ScalarType::U32)?;
        let rank = self.src(&rank);
        let local = self.addr_reg(local);
        let remote: Reg = self.b.reg(ScalarType::U32);
        self.span = span;
        self.inst(Op::Mapa, vec![remote.into()], vec![local.into(), rank]);
        Ok(Operand::Addr {
            base: AddrBase::Reg(remote),
            offset: 0,
        })
    }
}
