//! Reads which SM a cubin was assembled for, so the parity contract covers cubins as well as
//! PTX: ptxas records the target in the ELF header's `e_flags`, whose layout depends on the
//! CUDA ELF ABI version (ptxas 12.9 writes 7 up to sm_90a and 8 from sm_100; ptxas 13 writes 8
//! for every target).

use kernel_dsl::Target;

const EM_CUDA: u16 = 190;

/// The target a cubin was built for; `Ok(None)` for an ABI version this reader does not know.
pub(crate) fn cubin_target(bytes: &[u8]) -> Result<Option<Target>, String> {
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
    let (sm, arch_specific) = match bytes[8] {
        7 => (flags & 0xff, flags & 0x800 != 0),
        8 => ((flags >> 8) & 0xff, flags & 0x8 != 0),
        _ => return Ok(None),
    };
    let target = Target::ALL
        .into_iter()
        .find(|t| t.sm() == sm && t.is_arch_specific() == arch_specific)
        .ok_or_else(|| format!("was built for sm_{sm}, which ptxkit has no target for"))?;
    Ok(Some(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SM80: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_80.cubin");
    const SM90: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_90.cubin");
    const SM90A: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_90a.cubin");

    #[test]
    fn cubins_from_ptxas_name_their_exact_target() {
        assert_eq!(cubin_target(SM80), Ok(Some(Target::Sm80)));
        assert_eq!(cubin_target(SM90), Ok(Some(Target::Sm90)));
        assert_eq!(cubin_target(SM90A), Ok(Some(Target::Sm90a)));
    }

    #[test]
    fn abi_8_headers_from_ptxas_12_9_and_13_are_read() {
        let mut bin = SM90.to_vec();
        bin[8] = 8;
        bin[0x30..0x34].copy_from_slice(&0x0600_640au32.to_le_bytes());
        assert_eq!(cubin_target(&bin), Ok(Some(Target::Sm100a)));
        bin[0x30..0x34].copy_from_slice(&0x0600_7802u32.to_le_bytes());
        assert_eq!(cubin_target(&bin), Ok(Some(Target::Sm120)));
        // ptxas 13.0 writes ABI 8 for sm_90 too (header seen on the H200 machine).
        bin[0x30..0x34].copy_from_slice(&0x0600_5a04u32.to_le_bytes());
        assert_eq!(cubin_target(&bin), Ok(Some(Target::Sm90)));
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
