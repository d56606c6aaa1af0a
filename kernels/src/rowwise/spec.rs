//! The compile-time specializations of the row-wise kernels.

use crate::codegen::rows::{held_chunks, Group};
use crate::codegen::tensor::Access;
use crate::FloatType;

/// The most threads a row's CTA gets: half the hardware limit, so kernels that keep a row in
/// registers (under 100 per thread at every target, ptxas reports) always fit on an SM.
pub(crate) const MAX_ROW_THREADS: u32 = 512;

/// Chunks of its row each thread of a forward row kernel (softmax, cross-entropy) holds in
/// registers: four 16-byte vectors (16 f32 or 32 bf16, so a bf16 row keeps as many bytes in
/// flight per thread as an f32 one), or the shared default for scalar access.
pub(crate) const fn row_held_chunks(storage: FloatType, access: Access) -> u32 {
    match access {
        Access::Vector => 4,
        Access::Scalar => held_chunks(storage, access),
    }
}

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
    /// Every specialization, in [`RowSpec::index`] order.
    pub(crate) const ALL: [RowSpec; 8] = [
        spec(FloatType::F32, Access::Scalar, Group::Warp),
        spec(FloatType::F32, Access::Scalar, Group::Block),
        spec(FloatType::F32, Access::Vector, Group::Warp),
        spec(FloatType::F32, Access::Vector, Group::Block),
        spec(FloatType::Bf16, Access::Scalar, Group::Warp),
        spec(FloatType::Bf16, Access::Scalar, Group::Block),
        spec(FloatType::Bf16, Access::Vector, Group::Warp),
        spec(FloatType::Bf16, Access::Vector, Group::Block),
    ];

    /// The CTA-per-row specializations, in [`RowSpec::ALL`] order (position
    /// [`RowSpec::cta_index`]).
    pub(crate) const CTA: [RowSpec; 4] = [
        RowSpec::ALL[1],
        RowSpec::ALL[3],
        RowSpec::ALL[5],
        RowSpec::ALL[7],
    ];

    /// Position in [`RowSpec::CTA`] of this storage and access.
    pub(crate) fn cta_index(self) -> usize {
        self.index() / 2
    }

    /// Position in [`RowSpec::ALL`].
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

#[cfg(test)]
mod tests {
    use super::RowSpec;

    #[test]
    fn index_is_the_position_in_all() {
        for (i, s) in RowSpec::ALL.iter().enumerate() {
            assert_eq!(s.index(), i);
        }
    }

    #[test]
    fn cta_index_is_the_position_in_cta() {
        for (i, s) in RowSpec::CTA.iter().enumerate() {
            assert_eq!(s.cta_index(), i);
            assert_eq!(s.group, crate::codegen::rows::Group::Block);
        }
    }
}
