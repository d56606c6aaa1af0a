//! Host-side global memory for the unit tests' mock engine: buffers at distinct,
//! aligned, non-zero addresses with gaps between them, so an overrun cannot land in a
//! neighbour.

use std::collections::BTreeMap;

const BASE: u64 = 0x1000_0000;
const ALIGN: u64 = 256;
const GAP: u64 = 4096;

#[derive(Default)]
pub(crate) struct HostMemory {
    buffers: BTreeMap<u64, Vec<u8>>,
    next: u64,
}

impl HostMemory {
    pub(crate) fn alloc(&mut self, bytes: usize) -> u64 {
        let addr = self.next.max(BASE);
        self.next = (addr + bytes as u64 + GAP).div_ceil(ALIGN) * ALIGN;
        self.buffers.insert(addr, vec![0; bytes]);
        addr
    }

    pub(crate) fn free(&mut self, addr: u64) {
        self.buffers.remove(&addr);
    }

    /// The buffer holding `[addr, addr + len)`, and the offset of `addr` in it.
    fn locate(&self, addr: u64, len: usize) -> Result<(u64, usize), String> {
        let (&base, buf) = self
            .buffers
            .range(..=addr)
            .next_back()
            .ok_or_else(|| format!("address {addr:#x} is below every buffer"))?;
        let offset = (addr - base) as usize;
        if offset + len > buf.len() {
            return Err(format!(
                "access of {len} bytes at {addr:#x} runs past the buffer at {base:#x} ({} bytes)",
                buf.len()
            ));
        }
        Ok((base, offset))
    }

    pub(crate) fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        let (base, offset) = self.locate(addr, data.len())?;
        if let Some(buf) = self.buffers.get_mut(&base) {
            buf[offset..offset + data.len()].copy_from_slice(data);
        }
        Ok(())
    }

    pub(crate) fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let (base, offset) = self.locate(addr, out.len())?;
        if let Some(buf) = self.buffers.get(&base) {
            out.copy_from_slice(&buf[offset..offset + out.len()]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_get_distinct_addresses_and_overruns_are_refused() {
        let mut m = HostMemory::default();
        let a = m.alloc(16);
        let b = m.alloc(16);
        assert!(a != 0 && b > a + 16);
        m.write(a + 8, &[1, 2, 3, 4]).unwrap();
        let mut out = [0u8; 4];
        m.read(a + 8, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        assert!(m.write(a + 14, &[0; 4]).is_err());
        m.free(a);
        assert!(m.read(a, &mut out).is_err());
    }
}
