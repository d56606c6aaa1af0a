//! What a RoPE call asks for, and the compile-time specializations of its kernel.

use crate::rowwise::Access;
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

impl RopeSpec {
    /// Elements one access moves along a head: a 16-byte vector, one element (NeoX) or one
    /// pair (interleaved, as two element accesses).
    pub(crate) fn elems(self) -> u32 {
        match (self.access, self.layout) {
            (Access::Vector, _) => self.access.width(self.storage),
            (Access::Scalar, RopeLayout::NeoX) => 1,
            (Access::Scalar, RopeLayout::Interleaved) => 2,
        }
    }
}
