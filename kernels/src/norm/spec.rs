//! The compile-time specializations of the row-wise norm kernels.

use crate::codegen::rows::Group;
use crate::codegen::tensor::Access;
use crate::Storage;

/// Storage type × memory access × row group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RowSpec {
    pub storage: Storage,
    pub access: Access,
    pub group: Group,
}

const fn spec(storage: Storage, access: Access, group: Group) -> RowSpec {
    RowSpec {
        storage,
        access,
        group,
    }
}

impl RowSpec {
    /// Every specialization, in [`RowSpec::index`] order.
    pub(crate) const ALL: [RowSpec; 8] = [
        spec(Storage::F32, Access::Scalar, Group::Warp),
        spec(Storage::F32, Access::Scalar, Group::Block),
        spec(Storage::F32, Access::Vector, Group::Warp),
        spec(Storage::F32, Access::Vector, Group::Block),
        spec(Storage::Bf16, Access::Scalar, Group::Warp),
        spec(Storage::Bf16, Access::Scalar, Group::Block),
        spec(Storage::Bf16, Access::Vector, Group::Warp),
        spec(Storage::Bf16, Access::Vector, Group::Block),
    ];

    /// The CTA-per-row specializations, in [`RowSpec::block_index`] order (kernels whose
    /// CTAs loop over rows keeping per-column state).
    pub(crate) const BLOCK: [RowSpec; 4] = [
        spec(Storage::F32, Access::Scalar, Group::Block),
        spec(Storage::F32, Access::Vector, Group::Block),
        spec(Storage::Bf16, Access::Scalar, Group::Block),
        spec(Storage::Bf16, Access::Vector, Group::Block),
    ];

    /// Position in [`RowSpec::ALL`].
    pub(crate) fn index(self) -> usize {
        let s = match self.storage {
            Storage::F32 => 0,
            Storage::Bf16 => 4,
        };
        let a = match self.access {
            Access::Scalar => 0,
            Access::Vector => 2,
        };
        let g = match self.group {
            Group::Warp => 0,
            Group::Block => 1,
        };
        s + a + g
    }

    /// Position in [`RowSpec::BLOCK`] (the group is ignored).
    pub(crate) fn block_index(self) -> usize {
        self.index() / 2
    }

    /// The entry-name suffix: `f32_v16b_cta`.
    pub(crate) fn suffix(self) -> String {
        format!(
            "{}_{}_{}",
            self.storage.suffix(),
            self.access.tag(),
            self.group.tag()
        )
    }
}
