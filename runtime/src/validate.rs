//! Launch validation against a kernel's metadata and the device's limits. Everything here runs
//! before a module is loaded or a driver is called.

use crate::arg::KernelArg;
use crate::config::LaunchConfig;
use crate::device::DeviceId;
use crate::error::{Error, Result};
use crate::props::DeviceProps;
use kernel_dsl::{KernelMeta, ParamKind, ScalarType, TypeClass};

/// Checks `args` and `cfg` against `meta` on a device with `props`.
pub(crate) fn validate(
    meta: &KernelMeta,
    cfg: &LaunchConfig,
    args: &[KernelArg<'_>],
    props: &DeviceProps,
    device: DeviceId,
) -> Result<()> {
    let kernel = || meta.entry.to_string();
    check_shape(meta, cfg, props)?;
    if args.len() != meta.params.len() {
        return Err(Error::ArgCount {
            kernel: kernel(),
            expected: meta.params.len(),
            got: args.len(),
        });
    }
    for (index, (param, arg)) in meta.params.iter().zip(args).enumerate() {
        let got = arg.kind();
        let fits = match (param.kind, got) {
            (ParamKind::Scalar(want), ParamKind::Scalar(have)) => same_type(want, have),
            (ParamKind::TensorMap, ParamKind::TensorMap) => true,
            (
                ParamKind::Slice {
                    elem: want,
                    mutable: need_mut,
                },
                ParamKind::Slice {
                    elem: have,
                    mutable: is_mut,
                },
            ) => {
                if !same_type(want, have) {
                    false
                } else if need_mut && !is_mut {
                    return Err(Error::NeedsMutableBuffer {
                        kernel: kernel(),
                        index,
                        param: param.name.to_string(),
                        elem: want,
                    });
                } else {
                    true
                }
            }
            _ => false,
        };
        if !fits {
            return Err(Error::ArgKind {
                kernel: kernel(),
                index,
                param: param.name.to_string(),
                expected: param.kind,
                got,
            });
        }
        if let Some(core) = arg.core() {
            if core.device != device {
                return Err(Error::BufferOnOtherDevice {
                    kernel: kernel(),
                    index,
                });
            }
        }
    }
    Ok(())
}

/// An untyped `.bN` parameter accepts any value of its width; otherwise types match exactly.
fn same_type(want: ScalarType, have: ScalarType) -> bool {
    want == have || (want.class() == TypeClass::Bits && want.bits() == have.bits())
}

fn check_shape(meta: &KernelMeta, cfg: &LaunchConfig, props: &DeviceProps) -> Result<()> {
    let kernel = || meta.entry.to_string();
    if cfg.grid.contains(&0) || cfg.block.contains(&0) {
        return Err(Error::ZeroSizedLaunch {
            kernel: kernel(),
            grid: cfg.grid,
            block: cfg.block,
        });
    }
    if !meta.block.admits(cfg.block) {
        return Err(Error::BlockContract {
            kernel: kernel(),
            block: cfg.block,
            contract: meta.block,
        });
    }
    let dims_fit = cfg
        .block
        .iter()
        .zip(props.max_block_dims)
        .all(|(&b, max)| b <= max);
    if !dims_fit || cfg.threads_per_block() > props.max_threads_per_block as u64 {
        return Err(Error::BlockTooLarge {
            kernel: kernel(),
            block: cfg.block,
            max_threads: props.max_threads_per_block,
            max_dims: props.max_block_dims,
        });
    }
    if cfg
        .grid
        .iter()
        .zip(props.max_grid_dims)
        .any(|(&g, max)| g > max)
    {
        return Err(Error::GridTooLarge {
            kernel: kernel(),
            grid: cfg.grid,
            max: props.max_grid_dims,
        });
    }
    if let Some(cluster) = meta.cluster {
        if (0..3).any(|k| !cfg.grid[k].is_multiple_of(cluster[k])) {
            return Err(Error::ClusterGrid {
                kernel: kernel(),
                grid: cfg.grid,
                cluster,
            });
        }
    }
    if cfg.dynamic_shared_bytes > 0 && !meta.uses_dynamic_shared {
        return Err(Error::DynamicSharedNotDeclared {
            kernel: kernel(),
            bytes: cfg.dynamic_shared_bytes,
        });
    }
    let total = meta.static_shared_bytes as u64 + cfg.dynamic_shared_bytes as u64;
    if meta.static_shared_bytes > props.shared_bytes_per_block
        || total > props.shared_bytes_per_block_optin as u64
    {
        return Err(Error::SharedMemory {
            kernel: kernel(),
            static_bytes: meta.static_shared_bytes,
            dynamic_bytes: cfg.dynamic_shared_bytes,
            limit: props.shared_bytes_per_block_optin,
        });
    }
    // The kernel's `.extern .shared` array has no bytes behind it: on a GPU its first access
    // reads or writes out of bounds unreported. The declaration states no size, and its
    // alignment is the base's, so any non-zero size is one the kernel may legitimately ask for.
    if meta.uses_dynamic_shared && cfg.dynamic_shared_bytes == 0 {
        return Err(Error::DynamicSharedMissing { kernel: kernel() });
    }
    // Fewer bytes than the declarations show the kernel indexes: on a GPU the excess accesses
    // land outside the block's shared memory, unreported.
    if meta.uses_dynamic_shared && cfg.dynamic_shared_bytes < meta.min_dynamic_shared_bytes {
        return Err(Error::DynamicSharedTooSmall {
            kernel: kernel(),
            bytes: cfg.dynamic_shared_bytes,
            min: meta.min_dynamic_shared_bytes,
        });
    }
    Ok(())
}
