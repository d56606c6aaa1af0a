//! The machine code of a cubin: its `.text.<entry>` sections, read from the ELF file ptxas
//! writes. Two cubins whose text sections are equal run the same SASS, whatever debug
//! sections (such as `-lineinfo`'s line tables) either carries.

use crate::error::Error;

/// Each `.text.*` section of `cubin` (an ELF64 little-endian file), by name, in file order.
///
/// ```
/// // Not an ELF file: an error, never a panic.
/// assert!(kernel_dsl::cubin_sections::text_sections(b"PTX").is_err());
/// ```
pub fn text_sections(cubin: &[u8]) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let bad = |what: &str| Error::Ptxas {
        detail: format!("the cubin is not an ELF64 file ptxas wrote ({what}); reassemble it"),
    };
    if cubin.len() < 0x40 || &cubin[..4] != b"\x7fELF" || cubin[4] != 2 || cubin[5] != 1 {
        return Err(bad("no ELF64 little-endian header"));
    }
    let u16_at = |o: usize| -> Option<u64> {
        Some(u16::from_le_bytes(cubin.get(o..o + 2)?.try_into().ok()?) as u64)
    };
    let u32_at = |o: usize| -> Option<u64> {
        Some(u32::from_le_bytes(cubin.get(o..o + 4)?.try_into().ok()?) as u64)
    };
    let u64_at = |o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(cubin.get(o..o + 8)?.try_into().ok()?))
    };
    let header = || -> Option<(usize, usize, usize, usize)> {
        Some((
            u64_at(0x28)? as usize,
            u16_at(0x3a)? as usize,
            u16_at(0x3c)? as usize,
            u16_at(0x3e)? as usize,
        ))
    };
    let (shoff, entsize, count, names_index) = header().ok_or_else(|| bad("short header"))?;
    // (name offset, type, file offset, size) of each section.
    let section = |i: usize| -> Option<(usize, u64, usize, usize)> {
        let at = shoff.checked_add(i.checked_mul(entsize)?)?;
        Some((
            u32_at(at)? as usize,
            u32_at(at + 4)?,
            u64_at(at + 0x18)? as usize,
            u64_at(at + 0x20)? as usize,
        ))
    };
    let (_, _, names_at, _) = section(names_index).ok_or_else(|| bad("no section names"))?;
    let mut out = Vec::new();
    for i in 0..count {
        let (name_off, kind, offset, size) =
            section(i).ok_or_else(|| bad("short section table"))?;
        let name_start = names_at + name_off;
        let tail = cubin
            .get(name_start..)
            .ok_or_else(|| bad("section name outside the file"))?;
        let end = tail
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| bad("unterminated name"))?;
        let name = String::from_utf8_lossy(&tail[..end]).into_owned();
        // Type 8 (NOBITS) occupies no bytes in the file.
        if !name.starts_with(".text") || kind == 8 {
            continue;
        }
        let bytes = cubin
            .get(offset..offset + size)
            .ok_or_else(|| bad("section outside the file"))?;
        out.push((name, bytes.to_vec()));
    }
    Ok(out)
}
