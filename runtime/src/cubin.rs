//! Reads which SM a cubin was assembled for, so the parity contract covers cubins as well as
//! PTX: ptxas records the target in the ELF header's `e_flags`, whose layout depends on the
//! CUDA ELF ABI version (ptxas 12.9 writes 7 up to sm_90a and 8 from sm_100; ptxas 13 writes 8
//! for every target). ptxas 13 writes the same ABI-8 flags for sm_90 and sm_90a (0x06005a04,
//! both read off cubins it assembled on the H200 machine), so such a header names the SM but not
//! whether the `a` variant was asked for.

use kernel_dsl::Target;

const EM_CUDA: u16 = 190;

/// What a cubin's header says about its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CubinArch {
    /// The header names exactly this target.
    Exact(Target),
    /// The header names this plain target, but the arch-specific (`a`) variant writes the same
    /// header, so either may have been asked for.
    PlainOrArchSpecific(Target),
}

impl CubinArch {
    /// Whether a module embedded for `target` may be this cubin.
    pub(crate) fn admits(self, target: Target) -> bool {
        match self {
            CubinArch::Exact(t) => t == target,
            CubinArch::PlainOrArchSpecific(t) => {
                t == target || t.arch_specific_variant() == Some(target)
            }
        }
    }
}

/// The target a cubin was built for; `Ok(None)` for an ABI version this reader does not know.
pub(crate) fn cubin_target(bytes: &[u8]) -> Result<Option<CubinArch>, String> {
    if bytes.len() < 0x34 || &bytes[..4] != b"\x7fELF" {
        return Err("is not an ELF file".into());
    }
    if bytes[4] != 2 {
        return Err("is not a 64-bit ELF file".into());
    }
    let machine = u16::from_le_bytes([bytes[0x12], bytes[0x13]]);
    if machine != EM_CUDA {
        return Err(format!(
            "is an ELF file for machine {machine}, not CUDA ({EM_CUDA})"
        ));
    }
    let flags = u32::from_le_bytes([bytes[0x30], bytes[0x31], bytes[0x32], bytes[0x33]]);
    let abi = bytes[8];
    let (sm, arch_specific) = match abi {
        7 => (flags & 0xff, flags & 0x800 != 0),
        8 => ((flags >> 8) & 0xff, flags & 0x8 != 0),
        _ => return Ok(None),
    };
    let target = Target::ALL
        .into_iter()
        .find(|t| t.sm() == sm && t.is_arch_specific() == arch_specific)
        .ok_or_else(|| format!("was built for sm_{sm}, which ptxkit has no target for"))?;
    if abi == 8 && sm < 100 && !arch_specific {
        return Ok(Some(CubinArch::PlainOrArchSpecific(target)));
    }
    Ok(Some(CubinArch::Exact(target)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SM80: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_80.cubin");
    const SM90: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_90.cubin");
    const SM90A: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_90a.cubin");

    #[test]
    fn cubins_from_ptxas_name_their_exact_target() {
        assert_eq!(cubin_target(SM80), Ok(Some(CubinArch::Exact(Target::Sm80))));
        assert_eq!(cubin_target(SM90), Ok(Some(CubinArch::Exact(Target::Sm90))));
        assert_eq!(
            cubin_target(SM90A),
            Ok(Some(CubinArch::Exact(Target::Sm90a)))
        );
    }

    #[test]
    fn abi_8_headers_from_ptxas_12_9_and_13_are_read() {
        let mut bin = SM90.to_vec();
        bin[8] = 8;
        bin[0x30..0x34].copy_from_slice(&0x0600_640au32.to_le_bytes());
        assert_eq!(
            cubin_target(&bin),
            Ok(Some(CubinArch::Exact(Target::Sm100a)))
        );
        bin[0x30..0x34].copy_from_slice(&0x0600_7802u32.to_le_bytes());
        assert_eq!(
            cubin_target(&bin),
            Ok(Some(CubinArch::Exact(Target::Sm120)))
        );
        // ptxas 13.0 writes ABI 8 for sm_90 and, identically, for sm_90a (headers seen on the
        // H200 machine): either embedding is admitted, nothing else is.
        bin[0x30..0x34].copy_from_slice(&0x0600_5a04u32.to_le_bytes());
        let arch = cubin_target(&bin).unwrap().unwrap();
        assert_eq!(arch, CubinArch::PlainOrArchSpecific(Target::Sm90));
        assert!(arch.admits(Target::Sm90) && arch.admits(Target::Sm90a));
        assert!(!arch.admits(Target::Sm89) && !arch.admits(Target::Sm100a));
    }

    #[test]
    fn non_cubins_are_refused() {
        assert!(cubin_target(b"\x7fELF short").is_err());
        assert!(cubin_target(&[0u8; 64]).is_err());
        let mut bin = SM90.to_vec();
        bin[0x12] = 62; // x86-64
        assert!(cubin_target(&bin).unwrap_err().contains("not CUDA"));
    }
}
