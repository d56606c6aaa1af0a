//! What a device is and what it allows.

use kernel_dsl::Target;

/// Which backend a device runs on.
///
/// ```
/// use kernel_runtime::{Device, DeviceKind};
/// assert_eq!(Device::emulator().props().kind, DeviceKind::Emulator);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    Cuda { ordinal: usize },
    Emulator,
}

/// A device's identity and launch limits.
///
/// ```
/// let props = kernel_runtime::Device::emulator().props().clone();
/// assert!(props.max_threads_per_block >= 1024);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProps {
    pub kind: DeviceKind,
    pub name: String,
    /// The device's native target (never an `a` variant; see [`Target::from_compute_capability`]).
    pub target: Target,
    pub sm_count: u32,
    pub max_threads_per_block: u32,
    pub max_block_dims: [u32; 3],
    pub max_grid_dims: [u32; 3],
    /// Shared memory a block gets without opting in (48 KiB on every supported target).
    pub shared_bytes_per_block: u32,
    /// Shared memory a block may use after opting in through the function attribute.
    pub shared_bytes_per_block_optin: u32,
}

impl DeviceProps {
    /// Limits taken from the target table, for the emulator.
    pub(crate) fn nominal(kind: DeviceKind, name: String, target: Target) -> DeviceProps {
        let limits = target.limits();
        DeviceProps {
            kind,
            name,
            target,
            sm_count: 1,
            max_threads_per_block: limits.max_threads_per_block,
            max_block_dims: [1024, 1024, 64],
            max_grid_dims: [i32::MAX as u32, 65535, 65535],
            shared_bytes_per_block: limits.static_shared_bytes,
            shared_bytes_per_block_optin: limits.max_shared_bytes_per_block,
        }
    }
}
