//! What a compiled kernel carries into the runtime: its metadata, its PTX per target, any
//! cubins, and a way to emit PTX for a target it was not built for. Every field is a `Cow` so
//! that `#[kernel]` can build these as `static` items and builder code can build them at run
//! time.

use crate::error::Error;
use crate::target::Target;
use crate::types::ScalarType;
use std::borrow::Cow;

/// How a kernel parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A value passed by value in the parameter space.
    Scalar(ScalarType),
    /// A device buffer of `elem`, passed as a 64-bit global address. `mutable` is false for
    /// `&[T]` (which the kernel only reads) and true for `&mut [T]`.
    Slice { elem: ScalarType, mutable: bool },
    /// A tensor map of [`TENSOR_MAP_BYTES`] bytes, passed by value.
    TensorMap,
}

/// Size of a tensor map parameter (the driver's `CUtensorMap`).
pub const TENSOR_MAP_BYTES: u32 = 128;
/// Alignment a tensor map parameter is declared with.
pub const TENSOR_MAP_ALIGN: u32 = 64;

/// One kernel parameter as the launcher sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamMeta {
    pub name: Cow<'static, str>,
    pub kind: ParamKind,
}

/// The block shapes a kernel accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum BlockContract {
    /// Any block the device allows.
    #[default]
    Any,
    /// Exactly this shape (`.reqntid`).
    Exactly([u32; 3]),
    /// At most this many threads in all (`.maxntid`).
    AtMost(u32),
}

impl BlockContract {
    /// Checks a launch's block shape against the contract.
    pub fn admits(&self, block: [u32; 3]) -> bool {
        match *self {
            BlockContract::Any => true,
            BlockContract::Exactly(shape) => shape == block,
            BlockContract::AtMost(n) => {
                block.iter().map(|&d| d as u64).product::<u64>() <= n as u64
            }
        }
    }
}

/// Everything the runtime needs to validate a launch before it reaches the driver.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelMeta {
    /// The `.entry` name, derived from the kernel and its specialization.
    pub entry: Cow<'static, str>,
    pub params: Cow<'static, [ParamMeta]>,
    pub block: BlockContract,
    pub static_shared_bytes: u32,
    /// Whether the kernel reads `extern .shared` memory sized at launch.
    pub uses_dynamic_shared: bool,
    /// The fewest bytes of dynamic shared memory its declarations show it indexes (0 where
    /// they show nothing): a launch giving fewer is refused.
    pub min_dynamic_shared_bytes: u32,
    /// Whether the kernel waits for the grid before it (`griddep_wait`) ahead of touching
    /// memory that grid uses, so a launch on sm_90 or newer may let it start while that grid
    /// finishes (programmatic dependent launch).
    pub waits_on_prior_grid: bool,
    /// The thread-block cluster shape the kernel is compiled for (`.reqnctapercluster`), if
    /// any: a launch's grid must be a multiple of it in every dimension.
    pub cluster: Option<[u32; 3]>,
}

/// A module's PTX as embedded: text, or deflated text (what a build embeds: PTX is wordy
/// and compresses about tenfold, and it is read only where no cubin serves the device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ptx {
    Text(&'static str),
    /// Raw deflate ([`deflate`]) of the UTF-8 text.
    Deflated(&'static [u8]),
}

impl Ptx {
    /// The text, inflated where it was deflated.
    pub fn text(&self) -> Result<Cow<'static, str>, Error> {
        match *self {
            Ptx::Text(t) => Ok(Cow::Borrowed(t)),
            Ptx::Deflated(bytes) => {
                let corrupt = |detail: String| Error::Verify {
                    kernel: "<embedded PTX>".into(),
                    detail: format!("{detail}; rebuild the crate that embedded it"),
                };
                let raw = miniz_oxide::inflate::decompress_to_vec(bytes)
                    .map_err(|e| corrupt(format!("the embedded PTX does not inflate ({e})")))?;
                String::from_utf8(raw)
                    .map(Cow::Owned)
                    .map_err(|e| corrupt(format!("the embedded PTX is not UTF-8 ({e})")))
            }
        }
    }
}

/// Deflates PTX text for [`Ptx::Deflated`].
pub fn deflate(text: &str) -> Vec<u8> {
    miniz_oxide::deflate::compress_to_vec(text.as_bytes(), 9)
}

/// A function that emits the kernel's PTX for a target it was not built for.
pub type EmitFn = fn(Target) -> Result<String, Error>;

/// A kernel as shipped: metadata plus artifacts.
#[derive(Clone, Debug)]
pub struct KernelArtifacts {
    pub meta: KernelMeta,
    /// PTX per target, as embedded at build time.
    pub ptx: Cow<'static, [(Target, Ptx)]>,
    /// Cubins per target, present where ptxas was found at build time.
    pub cubins: Cow<'static, [(Target, &'static [u8])]>,
    /// Emits PTX for any target from the kernel's IR.
    pub emit: Option<EmitFn>,
    /// The kernel's IR, packed ([`Kernel::to_packed`](crate::ir::Kernel::to_packed)), where it
    /// is embedded (`#[kernel]` embeds it), for tools that read the kernel itself (goldens, the
    /// ptxas sweep, `ptxkit emit`) and for emitting PTX for a target not built in.
    pub ir: Option<&'static [u8]>,
}

impl KernelArtifacts {
    /// Artifacts for a kernel built in this process: its metadata and its PTX for every target
    /// it can be emitted for (the text is kept for the life of the process). Callers keep the
    /// result in a `static` (a `OnceLock`) so the runtime sees one address per kernel.
    ///
    /// ```
    /// use kernel_dsl::{samples, KernelArtifacts, Target};
    /// let a = KernelArtifacts::from_kernel(&samples::mma_bf16_16x8x16());
    /// assert!(a.ptx_for(Target::Sm75).is_none());
    /// assert!(a.ptx_for(Target::Sm80).unwrap().contains(".target sm_80"));
    /// ```
    pub fn from_kernel(kernel: &crate::ir::Kernel) -> KernelArtifacts {
        let ptx: Vec<(Target, Ptx)> = Target::ALL
            .into_iter()
            .filter_map(|t| {
                crate::emit::emit(kernel, t)
                    .ok()
                    .map(|p| (t, Ptx::Text(Box::leak(p.into_boxed_str()))))
            })
            .collect();
        KernelArtifacts {
            meta: KernelMeta::from_kernel(kernel),
            ptx: Cow::Owned(ptx),
            cubins: Cow::Borrowed(&[]),
            emit: None,
            ir: None,
        }
    }

    /// The embedded IR, if any.
    pub fn kernel(&self) -> Option<Result<crate::ir::Kernel, Error>> {
        self.ir.map(crate::ir::Kernel::from_packed)
    }

    /// The PTX embedded for `target`, inflated if it was deflated. `None` where none was
    /// embedded, or where the embedded bytes do not inflate (then the runtime emits from the
    /// IR, as for a target not built in).
    pub fn ptx_for(&self, target: Target) -> Option<Cow<'static, str>> {
        let (_, p) = self.ptx.iter().find(|(t, _)| *t == target)?;
        p.text().ok()
    }

    pub fn cubin_for(&self, target: Target) -> Option<&'static [u8]> {
        self.cubins
            .iter()
            .find(|(t, _)| *t == target)
            .map(|(_, c)| *c)
    }

    /// The targets this kernel was built for, lowest first.
    pub fn embedded_targets(&self) -> Vec<Target> {
        let mut ts: Vec<Target> = self.ptx.iter().map(|(t, _)| *t).collect();
        ts.sort();
        ts.dedup();
        ts
    }
}

/// A content-derived identity for a module: the target plus a stable 64-bit hash of the
/// module's bytes (FNV-1a, so it is the same on every machine and every build).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleKey {
    pub target: Target,
    pub content_hash: u64,
}

impl ModuleKey {
    pub fn of(target: Target, bytes: &[u8]) -> ModuleKey {
        ModuleKey {
            target,
            content_hash: fnv1a64(bytes),
        }
    }
}

/// FNV-1a over bytes: stable across platforms and Rust versions, unlike `DefaultHasher`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl KernelMeta {
    /// The launch metadata of a kernel, derived from its IR so that it cannot disagree with
    /// the PTX emitted from the same IR.
    ///
    /// ```
    /// use kernel_dsl::{samples, BlockContract, KernelMeta, ParamKind, ScalarType};
    /// let meta = KernelMeta::from_kernel(&samples::block_reduce_sum());
    /// assert_eq!(meta.entry, "block_reduce_sum");
    /// assert_eq!(meta.block, BlockContract::Exactly([256, 1, 1]));
    /// assert_eq!(meta.params[1].kind, ParamKind::Slice { elem: ScalarType::F32, mutable: true });
    /// ```
    pub fn from_kernel(kernel: &crate::ir::Kernel) -> KernelMeta {
        use crate::ir::ParamType;
        let params: Vec<ParamMeta> = kernel
            .params
            .iter()
            .map(|p| ParamMeta {
                name: Cow::Owned(p.name.clone()),
                kind: match p.ty {
                    ParamType::Scalar(t) => ParamKind::Scalar(t),
                    ParamType::GlobalPtr { elem, mutable } => ParamKind::Slice { elem, mutable },
                    ParamType::TensorMap => ParamKind::TensorMap,
                },
            })
            .collect();
        KernelMeta {
            entry: Cow::Owned(kernel.name.clone()),
            params: Cow::Owned(params),
            block: kernel.perf.block_contract(),
            static_shared_bytes: kernel.static_shared_bytes(),
            uses_dynamic_shared: kernel.dynamic_shared.is_some(),
            min_dynamic_shared_bytes: kernel.dynamic_shared_min_bytes,
            waits_on_prior_grid: kernel.waits_on_prior_grid(),
            cluster: kernel.perf.reqnctapercluster,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_contracts_admit_only_matching_shapes() {
        assert!(BlockContract::Any.admits([1024, 1, 1]));
        assert!(BlockContract::Exactly([256, 1, 1]).admits([256, 1, 1]));
        assert!(!BlockContract::Exactly([256, 1, 1]).admits([128, 2, 1]));
        assert!(BlockContract::AtMost(256).admits([128, 2, 1]));
        assert!(!BlockContract::AtMost(256).admits([256, 2, 1]));
    }

    #[test]
    fn module_keys_depend_on_content_and_target() {
        let a = ModuleKey::of(Target::Sm80, b"abc");
        assert_eq!(a, ModuleKey::of(Target::Sm80, b"abc"));
        assert_ne!(a, ModuleKey::of(Target::Sm89, b"abc"));
        assert_ne!(a, ModuleKey::of(Target::Sm80, b"abd"));
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    }
}
