//! Fixtures for the unit tests: the test kernels' PTX, artifacts built around them, and a mock
//! engine that runs those kernels natively so the emulator path can be tested end to end
//! without the PTX executor.

use crate::config::LaunchConfig;
use crate::emulator::{EmuArg, Engine, HostMemory, ModuleId};
use kernel_dsl::{
    BlockContract, KernelArtifacts, KernelMeta, ParamKind, ParamMeta, ScalarType, Target,
};
use std::borrow::Cow;

pub(crate) const VECTOR_ADD_SM80: &str = include_str!("../tests/fixtures/test_kernels.sm_80.ptx");
pub(crate) const VECTOR_ADD_SM90: &str = include_str!("../tests/fixtures/test_kernels.sm_90.ptx");
pub(crate) const VECTOR_ADD_SM90A: &str = include_str!("../tests/fixtures/test_kernels.sm_90a.ptx");

fn slice(name: &'static str, elem: ScalarType, mutable: bool) -> ParamMeta {
    ParamMeta {
        name: Cow::Borrowed(name),
        kind: ParamKind::Slice { elem, mutable },
    }
}

fn scalar(name: &'static str, ty: ScalarType) -> ParamMeta {
    ParamMeta {
        name: Cow::Borrowed(name),
        kind: ParamKind::Scalar(ty),
    }
}

pub(crate) fn vector_add_meta() -> KernelMeta {
    KernelMeta {
        entry: Cow::Borrowed("vector_add"),
        params: Cow::Owned(vec![
            slice("a", ScalarType::F32, false),
            slice("b", ScalarType::F32, false),
            slice("c", ScalarType::F32, true),
            scalar("n", ScalarType::U32),
        ]),
        block: BlockContract::AtMost(1024),
        static_shared_bytes: 0,
        uses_dynamic_shared: false,
        min_dynamic_shared_bytes: 0,
        waits_on_prior_grid: false,
        cluster: None,
    }
}

pub(crate) fn axpy_meta() -> KernelMeta {
    KernelMeta {
        entry: Cow::Borrowed("axpy"),
        params: Cow::Owned(vec![
            scalar("a", ScalarType::F32),
            slice("x", ScalarType::F32, false),
            slice("y", ScalarType::F32, true),
            scalar("n", ScalarType::U32),
        ]),
        block: BlockContract::Any,
        static_shared_bytes: 0,
        uses_dynamic_shared: false,
        min_dynamic_shared_bytes: 0,
        waits_on_prior_grid: false,
        cluster: None,
    }
}

pub(crate) fn reverse_meta() -> KernelMeta {
    KernelMeta {
        entry: Cow::Borrowed("reverse_in_block"),
        params: Cow::Owned(vec![
            slice("x", ScalarType::F32, false),
            slice("y", ScalarType::F32, true),
        ]),
        block: BlockContract::Any,
        static_shared_bytes: 1024,
        uses_dynamic_shared: true,
        min_dynamic_shared_bytes: 4,
        waits_on_prior_grid: false,
        cluster: None,
    }
}

/// Artifacts for `vector_add` with the given modules, leaked to be `'static` as the macro's are.
pub(crate) fn artifacts_with(
    ptx: &[(Target, &'static str)],
    cubins: &[(Target, &'static [u8])],
    emit: Option<kernel_dsl::artifact::EmitFn>,
) -> &'static KernelArtifacts {
    artifacts_for(vector_add_meta(), ptx, cubins, emit)
}

pub(crate) fn artifacts_for(
    meta: KernelMeta,
    ptx: &[(Target, &'static str)],
    cubins: &[(Target, &'static [u8])],
    emit: Option<kernel_dsl::artifact::EmitFn>,
) -> &'static KernelArtifacts {
    Box::leak(Box::new(KernelArtifacts {
        meta,
        ptx: Cow::Owned(
            ptx.iter()
                .map(|&(t, p)| (t, kernel_dsl::Ptx::Text(p)))
                .collect(),
        ),
        cubins: Cow::Owned(cubins.to_vec()),
        emit,
        ir: None,
    }))
}

/// Runs the three test kernels natively; counts module loads so tests can see JIT-like work.
#[derive(Default)]
pub(crate) struct MockEngine {
    memory: HostMemory,
    modules: Vec<Vec<String>>,
    pub launches: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl MockEngine {
    fn f32s(&self, addr: u64, n: usize) -> Result<Vec<f32>, String> {
        let mut bytes = vec![0u8; n * 4];
        self.memory.read(addr, &mut bytes)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn store(&mut self, addr: u64, v: &[f32]) -> Result<(), String> {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.memory.write(addr, &bytes)
    }
}

fn threads(cfg: &LaunchConfig) -> usize {
    (cfg.grid[0] * cfg.block[0]) as usize
}

impl Engine for MockEngine {
    fn load(&mut self, ptx: &str) -> Result<ModuleId, String> {
        let entries = ptx
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".visible .entry "))
            .map(|l| l.trim_end_matches('(').to_string())
            .collect();
        self.modules.push(entries);
        Ok(ModuleId(self.modules.len() - 1))
    }

    fn entries(&self, module: ModuleId) -> Vec<String> {
        self.modules.get(module.0).cloned().unwrap_or_default()
    }

    fn launch(
        &mut self,
        _: ModuleId,
        entry: &str,
        cfg: &LaunchConfig,
        args: &[EmuArg],
    ) -> Result<(), String> {
        self.launches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = threads(cfg);
        // The mock reads buffers by address and leaves bounds to the real emulator.
        let args: Vec<EmuArg> = args
            .iter()
            .map(|a| match a {
                EmuArg::View(v) => EmuArg::Ptr(v.addr),
                other => other.clone(),
            })
            .collect();
        let args = &args[..];
        match (entry, args) {
            ("vector_add", &[EmuArg::Ptr(a), EmuArg::Ptr(b), EmuArg::Ptr(c), EmuArg::U32(n)]) => {
                let n = (n as usize).min(t);
                let (a, b) = (self.f32s(a, n)?, self.f32s(b, n)?);
                let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
                self.store(c, &sum)
            }
            ("axpy", &[EmuArg::F32(alpha), EmuArg::Ptr(x), EmuArg::Ptr(y), EmuArg::U32(n)]) => {
                let n = (n as usize).min(t);
                let (x, y) = (self.f32s(x, n)?, self.f32s(y, n)?);
                let out: Vec<f32> = x
                    .iter()
                    .zip(&y)
                    .map(|(x, y)| alpha.mul_add(*x, *y))
                    .collect();
                self.store(y_addr(args), &out)
            }
            ("reverse_in_block", &[EmuArg::Ptr(x), EmuArg::Ptr(y)]) => {
                let b = cfg.block[0] as usize;
                let x = self.f32s(x, t)?;
                let out: Vec<f32> = x.chunks(b).flat_map(|c| c.iter().rev().copied()).collect();
                self.store(y, &out)
            }
            _ => Err(format!("mock engine cannot run `{entry}` with {args:?}")),
        }
    }

    fn alloc(&mut self, bytes: usize) -> u64 {
        self.memory.alloc(bytes)
    }
    fn free(&mut self, addr: u64) {
        self.memory.free(addr)
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.memory.write(addr, data)
    }
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        self.memory.read(addr, out)
    }
}

fn y_addr(args: &[EmuArg]) -> u64 {
    match args.get(2) {
        Some(EmuArg::Ptr(p)) => *p,
        _ => 0,
    }
}

/// Seeded xorshift values in [-8, 8), never all zero.
pub(crate) fn random_f32s(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 16.0 - 8.0
        })
        .collect()
}
