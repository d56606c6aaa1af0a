//! The target-parity contract applied to PTX text: a module is loaded only on the target it
//! names, and only if its `.version` is one that target accepts.

use crate::error::Error;
use crate::target::{IsaVersion, Target};

/// The header facts of a PTX module that the parity check reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtxHeader {
    pub version: IsaVersion,
    pub target: Target,
}

/// Reads `.version` and `.target` from PTX text. Comments are skipped; a `.target` line with
/// extra options (`sm_90, debug`) takes its first entry.
pub fn read_ptx_header(ptx: &str) -> Result<PtxHeader, Error> {
    let mut version = None;
    let mut target = None;
    for raw in ptx.lines() {
        let line = raw.split("//").next().unwrap_or("").trim();
        if let Some(rest) = line.strip_prefix(".version") {
            version =
                Some(
                    rest.trim()
                        .parse::<IsaVersion>()
                        .map_err(|_| Error::MalformedHeader {
                            detail: format!("`.version` line `{line}` does not hold MAJOR.MINOR"),
                        })?,
                );
        } else if let Some(rest) = line.strip_prefix(".target") {
            let first = rest.split(',').next().unwrap_or("").trim();
            target = Some(
                first
                    .parse::<Target>()
                    .map_err(|_| Error::MalformedHeader {
                        detail: format!("`.target {first}` names no target ptxkit knows"),
                    })?,
            );
        }
        if version.is_some() && target.is_some() {
            break;
        }
    }
    match (version, target) {
        (Some(version), Some(target)) => Ok(PtxHeader { version, target }),
        (None, _) => Err(Error::MalformedHeader {
            detail: "no `.version` directive".into(),
        }),
        (_, None) => Err(Error::MalformedHeader {
            detail: "no `.target` directive".into(),
        }),
    }
}

/// Checks that `ptx` was emitted for exactly `device` and declares an ISA version that target
/// accepts. The runtime calls this before every PTX load.
///
/// ```
/// use kernel_dsl::{check_ptx_parity, Target};
/// let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n";
/// assert!(check_ptx_parity(ptx, Target::Sm90a).is_ok());
/// assert!(check_ptx_parity(ptx, Target::Sm90).is_err());
/// ```
pub fn check_ptx_parity(ptx: &str, device: Target) -> Result<PtxHeader, Error> {
    let header = read_ptx_header(ptx)?;
    if header.target != device {
        return Err(Error::TargetMismatch {
            module: header.target,
            device,
        });
    }
    if header.version < device.min_isa() {
        return Err(Error::IsaTooOld {
            version: header.version,
            target: device,
            min: device.min_isa(),
        });
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_for_another_target_is_refused_with_both_names() {
        let ptx = "// generated\n.version 7.8\n.target sm_89\n.address_size 64\n";
        let err = check_ptx_parity(ptx, Target::Sm90).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("sm_89") && msg.contains("sm_90"), "{msg}");
    }

    #[test]
    fn a_version_below_the_targets_minimum_is_refused() {
        let ptx = ".version 7.0\n.target sm_90\n";
        assert!(matches!(
            check_ptx_parity(ptx, Target::Sm90),
            Err(Error::IsaTooOld { .. })
        ));
    }

    #[test]
    fn header_reading_ignores_comments_and_target_options() {
        let ptx = "//.target sm_70\n.version 8.8\n.target sm_121, debug\n";
        let h = read_ptx_header(ptx).unwrap();
        assert_eq!(
            h,
            PtxHeader {
                version: IsaVersion(8, 8),
                target: Target::Sm121
            }
        );
    }

    #[test]
    fn missing_directives_are_reported() {
        assert!(read_ptx_header(".target sm_80\n").is_err());
        assert!(read_ptx_header(".version 7.0\n").is_err());
    }
}
