//! The compile-time specializations of the row-wise norm kernels.

use crate::codegen::rows::Group;
use crate::codegen::tensor::Access;
use crate::FloatType;

/// Element type × memory access × row group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RowSpec {
    pub storage: FloatType,
    pub access: Access,
    pub group: Group,
}

const fn spec(storage: FloatType, access: Access, group: Group) -> RowSpec {
    RowSpec {
        storage,
        access,
        group,
    }
}

impl RowSpec {
    /// The CTA-per-row specializations, in [`RowSpec::block_index`] order (kernels whose
    /// CTAs loop over rows keeping per-column state).
    pub(crate) const BLOCK: [RowSpec; 4] = [
        spec(FloatType::F32, Access::Scalar, Group::Block),
        spec(FloatType::F32, Access::Vector, Group::Block),
        spec(FloatType::Bf16, Access::Scalar, Group::Block),
        spec(FloatType::Bf16, Access::Vector, Group::Block),
    ];

    /// Position among the eight specializations: storage, then access, then group.
    pub(crate) fn index(self) -> usize {
        let s = match self.storage {
            FloatType::F32 => 0,
            FloatType::Bf16 => 4,
            FloatType::F16 => unreachable!("f16 is refused when the op is called (`f32_or_bf16`)"),
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
