//! SM targets, the PTX ISA version each needs, and their resource limits.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A PTX ISA version such as 7.8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct IsaVersion(pub u8, pub u8);

impl fmt::Display for IsaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl FromStr for IsaVersion {
    type Err = TargetParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || TargetParseError::Isa(s.to_string());
        let (a, b) = s.trim().split_once('.').ok_or_else(bad)?;
        Ok(IsaVersion(
            a.parse().map_err(|_| bad())?,
            b.parse().map_err(|_| bad())?,
        ))
    }
}

/// A compilation target: an SM version, optionally its arch-specific (`a`) variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Target {
    Sm70,
    Sm75,
    Sm80,
    Sm86,
    Sm89,
    Sm90,
    Sm90a,
    Sm100,
    Sm100a,
    Sm120,
    Sm121,
}

/// Resource limits of a target that the verifier and the launcher check against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetLimits {
    /// Static shared memory a block may declare.
    pub static_shared_bytes: u32,
    /// Shared memory a block may use in all, after opting in through the function attribute.
    pub max_shared_bytes_per_block: u32,
    pub max_threads_per_block: u32,
    pub max_registers_per_thread: u32,
    pub registers_per_sm: u32,
}

/// The error for a target or ISA name that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetParseError {
    #[error("unknown target `{0}`: expected one of sm_70, sm_75, sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_120, sm_121")]
    Target(String),
    #[error("malformed PTX ISA version `{0}`: expected MAJOR.MINOR such as 7.8")]
    Isa(String),
}

impl Target {
    /// The target a crate builds for when it enables no `sm_*` feature (`#[kernel]` and the
    /// `kernels` build script both follow it).
    pub const DEFAULT_BUILD: Target = Target::Sm80;

    /// Every target ptxkit emits for, lowest first.
    pub const ALL: [Target; 11] = [
        Target::Sm70,
        Target::Sm75,
        Target::Sm80,
        Target::Sm86,
        Target::Sm89,
        Target::Sm90,
        Target::Sm90a,
        Target::Sm100,
        Target::Sm100a,
        Target::Sm120,
        Target::Sm121,
    ];

    /// The SM number (90 for both sm_90 and sm_90a).
    pub const fn sm(self) -> u32 {
        match self {
            Target::Sm70 => 70,
            Target::Sm75 => 75,
            Target::Sm80 => 80,
            Target::Sm86 => 86,
            Target::Sm89 => 89,
            Target::Sm90 | Target::Sm90a => 90,
            Target::Sm100 | Target::Sm100a => 100,
            Target::Sm120 => 120,
            Target::Sm121 => 121,
        }
    }

    /// True for the arch-specific `a` variants, which unlock instructions such as `wgmma`.
    pub const fn is_arch_specific(self) -> bool {
        matches!(self, Target::Sm90a | Target::Sm100a)
    }

    /// The name PTX writes after `.target` and the cargo feature that enables it (`sm_90a`).
    pub const fn name(self) -> &'static str {
        match self {
            Target::Sm70 => "sm_70",
            Target::Sm75 => "sm_75",
            Target::Sm80 => "sm_80",
            Target::Sm86 => "sm_86",
            Target::Sm89 => "sm_89",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
            Target::Sm100 => "sm_100",
            Target::Sm100a => "sm_100a",
            Target::Sm120 => "sm_120",
            Target::Sm121 => "sm_121",
        }
    }

    /// The lowest PTX ISA version whose ptxas accepts this target.
    pub const fn min_isa(self) -> IsaVersion {
        match self {
            Target::Sm70 => IsaVersion(6, 0),
            Target::Sm75 => IsaVersion(6, 3),
            Target::Sm80 => IsaVersion(7, 0),
            Target::Sm86 => IsaVersion(7, 1),
            Target::Sm89 | Target::Sm90 => IsaVersion(7, 8),
            Target::Sm90a => IsaVersion(8, 0),
            Target::Sm100 | Target::Sm100a => IsaVersion(8, 6),
            Target::Sm120 => IsaVersion(8, 7),
            Target::Sm121 => IsaVersion(8, 8),
        }
    }

    /// The target a device of compute capability `major.minor` runs natively. Devices report
    /// no `a` variant; a module for `sm_90a` loads on a 9.0 device only because the runtime
    /// asks for it by name.
    pub fn from_compute_capability(major: u32, minor: u32) -> Option<Target> {
        let sm = major * 10 + minor;
        Target::ALL
            .into_iter()
            .find(|t| t.sm() == sm && !t.is_arch_specific())
    }

    /// The `a` variant of this target's SM, if one exists.
    pub const fn arch_specific_variant(self) -> Option<Target> {
        match self.sm() {
            90 => Some(Target::Sm90a),
            100 => Some(Target::Sm100a),
            _ => None,
        }
    }

    /// The cargo feature that enables this target (`sm_89`).
    pub const fn feature(self) -> &'static str {
        self.name()
    }

    pub const fn limits(self) -> TargetLimits {
        let max_shared_bytes_per_block = match self.sm() {
            70 => 96 * 1024,
            75 => 64 * 1024,
            80 => 163 * 1024,
            86 | 89 | 120 | 121 => 99 * 1024,
            _ => 227 * 1024,
        };
        TargetLimits {
            static_shared_bytes: 48 * 1024,
            max_shared_bytes_per_block,
            max_threads_per_block: 1024,
            max_registers_per_thread: 255,
            registers_per_sm: 65536,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Target {
    type Err = TargetParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Target::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| TargetParseError::Target(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_isa_follows_the_design_table() {
        assert_eq!(Target::Sm70.min_isa(), IsaVersion(6, 0));
        assert_eq!(Target::Sm90.min_isa(), IsaVersion(7, 8));
        assert_eq!(Target::Sm90a.min_isa(), IsaVersion(8, 0));
        assert_eq!(Target::Sm121.min_isa(), IsaVersion(8, 8));
    }

    #[test]
    fn names_parse_back_to_the_same_target() {
        for t in Target::ALL {
            assert_eq!(t.name().parse::<Target>().unwrap(), t);
        }
        let err = "sm_91".parse::<Target>().unwrap_err();
        assert!(err.to_string().contains("sm_90a"), "{err}");
    }

    #[test]
    fn compute_capability_maps_to_the_plain_target() {
        assert_eq!(Target::from_compute_capability(9, 0), Some(Target::Sm90));
        assert_eq!(Target::from_compute_capability(8, 9), Some(Target::Sm89));
        assert_eq!(Target::from_compute_capability(8, 7), None);
    }

    #[test]
    fn isa_versions_order_numerically() {
        assert!(IsaVersion(8, 0) > IsaVersion(7, 8));
        assert_eq!("8.8".parse::<IsaVersion>().unwrap(), IsaVersion(8, 8));
        assert!("8".parse::<IsaVersion>().is_err());
    }
}
