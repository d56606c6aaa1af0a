//! What a RoPE call asks for, and the compile-time specializations of its kernel.

use crate::codegen::tensor::Access;
use crate::{Error, FloatType};

/// Which elements of a head form the rotated pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RopeLayout {
    /// GPT-NeoX / Llama (Hugging Face "rotate_half"): pair `i` is `(d[i], d[i + rotary_dim/2])`.
    NeoX,
    /// GPT-J / Meta's original: pair `i` is `(d[2i], d[2i + 1])`.
    Interleaved,
}

/// A rotary embedding: pair `i` of the first `rotary_dim` elements of each head rotates by
/// `position · theta^(−2i / rotary_dim)`; the rest of the head passes through unchanged.
///
/// ```
/// use kernels::rope::{Rope, RopeLayout};
/// let rope = Rope { layout: RopeLayout::NeoX, theta: 10000.0, rotary_dim: 64 };
/// assert!(rope.check(128).is_ok());
/// let odd = Rope { rotary_dim: 63, ..rope };
/// assert!(odd.check(128).unwrap_err().to_string().contains("odd"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rope {
    pub layout: RopeLayout,
    pub theta: f32,
    pub rotary_dim: usize,
}

impl Rope {
    /// Checks the rotary dimension (even, 2 ≤ it ≤ `head_dim`) and theta (finite, > 1).
    pub fn check(&self, head_dim: usize) -> Result<(), Error> {
        let op = "rope";
        let r = self.rotary_dim;
        if r % 2 == 1 {
            return Err(Error::Unsupported {
                op,
                detail: format!(
                    "rotary_dim {r} is odd; RoPE rotates pairs of elements, so pass an even \
                     rotary dimension"
                ),
            });
        }
        if r == 0 || r > head_dim {
            return Err(Error::Unsupported {
                op,
                detail: format!("rotary_dim {r} must be between 2 and head_dim ({head_dim})"),
            });
        }
        if !(self.theta.is_finite() && self.theta > 1.0) {
            return Err(Error::Unsupported {
                op,
                detail: format!(
                    "theta {} must be a finite base above 1 (10000 is usual)",
                    self.theta
                ),
            });
        }
        Ok(())
    }

    /// The kernel's frequency exponent: `inv_freq(i) = 2^(i · exponent)`.
    pub(crate) fn freq_exponent(&self) -> f32 {
        (-(self.theta as f64).log2() / (self.rotary_dim / 2) as f64) as f32
    }
}

/// Element type × layout × memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RopeSpec {
    pub storage: FloatType,
    pub layout: RopeLayout,
    pub access: Access,
}

const fn spec(storage: FloatType, layout: RopeLayout, access: Access) -> RopeSpec {
    RopeSpec {
        storage,
        layout,
        access,
    }
}

impl RopeSpec {
    /// Every specialization, in [`RopeSpec::index`] order.
    pub(crate) const ALL: [RopeSpec; 8] = [
        spec(FloatType::F32, RopeLayout::NeoX, Access::Scalar),
        spec(FloatType::F32, RopeLayout::NeoX, Access::Vector),
        spec(FloatType::F32, RopeLayout::Interleaved, Access::Scalar),
        spec(FloatType::F32, RopeLayout::Interleaved, Access::Vector),
        spec(FloatType::Bf16, RopeLayout::NeoX, Access::Scalar),
        spec(FloatType::Bf16, RopeLayout::NeoX, Access::Vector),
        spec(FloatType::Bf16, RopeLayout::Interleaved, Access::Scalar),
        spec(FloatType::Bf16, RopeLayout::Interleaved, Access::Vector),
    ];

    pub(crate) fn index(self) -> usize {
        let s = match self.storage {
            FloatType::F32 => 0,
            FloatType::Bf16 => 4,
            FloatType::F16 => unreachable!("f16 is refused when the op is called (`f32_or_bf16`)"),
        };
        let l = match self.layout {
            RopeLayout::NeoX => 0,
            RopeLayout::Interleaved => 2,
        };
        let a = match self.access {
            Access::Scalar => 0,
            Access::Vector => 1,
        };
        s + l + a
    }

    /// Elements one access moves along a head: a 16-byte vector, one element (NeoX) or one
    /// pair (interleaved, as two element accesses).
    pub(crate) fn elems(self) -> u32 {
        match (self.access, self.layout) {
            (Access::Vector, _) => self.access.width(self.storage),
            (Access::Scalar, RopeLayout::NeoX) => 1,
            (Access::Scalar, RopeLayout::Interleaved) => 2,
        }
    }

    pub(crate) fn suffix(self) -> String {
        let layout = match self.layout {
            RopeLayout::NeoX => "neox",
            RopeLayout::Interleaved => "interleaved",
        };
        format!("{}_{layout}_{}", self.storage.suffix(), self.access.tag())
    }
}

#[cfg(test)]
mod tests {
    use super::RopeSpec;

    #[test]
    fn index_is_the_position_in_all() {
        for (i, s) in RopeSpec::ALL.iter().enumerate() {
            assert_eq!(s.index(), i);
        }
    }
}
