//! Host-side "device memory": separately allocated buffers at distinct, non-zero, well-spaced
//! addresses, so an access that misses every buffer can name the one it was nearest to.

use crate::error::{Error, Nearest, ViewBounds};
use crate::module::ViewArg;

/// Where the first buffer is placed: far above the shared and local windows of generic
/// addressing (see [`crate::exec::spaces`]).
const HEAP_BASE: u64 = 0x0000_7f00_0000_0000;
/// Every buffer starts on this alignment, and buffers are separated by at least one such gap so
/// that running off the end of one never lands inside the next.
const ALIGN: u64 = 256;

#[derive(Debug, Clone)]
struct Buffer {
    base: u64,
    data: Vec<u8>,
    /// The views of this buffer the current launch was given: unless the launch was also given
    /// the whole buffer (`open`), accesses must fall inside one of them.
    views: Vec<View>,
    open: bool,
}

/// A view's byte range within its buffer and how to name it in errors.
#[derive(Debug, Clone)]
struct View {
    start: u64,
    end: u64,
    elem_bytes: u32,
    name: String,
    index: usize,
    param: String,
}

impl Buffer {
    #[inline]
    fn bounded(&self) -> bool {
        !self.open && !self.views.is_empty()
    }

    /// Whether `[offset, offset + size)` is usable: inside the buffer and, while it is bounded
    /// by views, inside one of them.
    #[inline]
    fn admits(&self, offset: u64, size: u64) -> bool {
        offset.saturating_add(size) <= self.data.len() as u64
            && (!self.bounded()
                || self
                    .views
                    .iter()
                    .any(|v| offset >= v.start && offset + size <= v.end))
    }
}

/// Buffers the kernels read and write, addressed by 64-bit "device pointers".
///
/// ```
/// use ptx_emulator::GlobalMemory;
/// let mut mem = GlobalMemory::new();
/// let a = mem.alloc(16);
/// mem.write(a, &[1, 2, 3, 4]).unwrap();
/// let mut out = [0u8; 2];
/// mem.read(a + 2, &mut out).unwrap();
/// assert_eq!(out, [3, 4]);
/// assert!(mem.read(a + 15, &mut out).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct GlobalMemory {
    /// Sorted by base address.
    buffers: Vec<Buffer>,
    next_base: u64,
    /// Index of the buffer the last access hit: most accesses repeat it.
    last_hit: usize,
    /// Where each loaded module's `.global` variables live: (module id, name) -> address.
    module_vars: std::collections::BTreeMap<(u64, String), u64>,
}

impl Default for GlobalMemory {
    fn default() -> GlobalMemory {
        GlobalMemory::new()
    }
}

impl GlobalMemory {
    /// An empty memory.
    ///
    /// ```
    /// let mem = ptx_emulator::GlobalMemory::new();
    /// assert_eq!(mem.allocations(), 0);
    /// ```
    pub fn new() -> GlobalMemory {
        GlobalMemory {
            buffers: Vec::new(),
            next_base: HEAP_BASE,
            last_hit: 0,
            module_vars: Default::default(),
        }
    }

    /// Allocates `bytes` zeroed bytes and returns the base address (never 0, 256-byte aligned).
    ///
    /// ```
    /// let mut mem = ptx_emulator::GlobalMemory::new();
    /// let (a, b) = (mem.alloc(10), mem.alloc(10));
    /// assert!(a != 0 && b > a + 10);
    /// ```
    pub fn alloc(&mut self, bytes: usize) -> u64 {
        let base = self.next_base;
        let span = (bytes as u64).div_ceil(ALIGN).max(1) * ALIGN;
        // One empty gap of at least 4 KiB after each buffer.
        self.next_base = base + span + 4096;
        self.buffers.push(Buffer {
            base,
            data: vec![0; bytes],
            views: Vec::new(),
            open: false,
        });
        base
    }

    /// Frees the buffer starting at `addr`.
    ///
    /// ```
    /// let mut mem = ptx_emulator::GlobalMemory::new();
    /// let a = mem.alloc(4);
    /// mem.free(a).unwrap();
    /// assert!(mem.free(a).is_err());
    /// ```
    pub fn free(&mut self, addr: u64) -> Result<(), Error> {
        let index = self
            .buffers
            .binary_search_by_key(&addr, |b| b.base)
            .map_err(|_| Error::NotAnAllocation {
                operation: "free",
                address: addr,
            })?;
        self.buffers.remove(index);
        self.last_hit = 0;
        Ok(())
    }

    /// Copies `data` into memory at `addr`; the range must lie inside one buffer.
    ///
    /// ```
    /// let mut mem = ptx_emulator::GlobalMemory::new();
    /// let a = mem.alloc(4);
    /// assert!(mem.write(a, &[0; 5]).is_err());
    /// ```
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), Error> {
        if self.find(addr, data.len() as u64).is_none() {
            return Err(self.host_fault("write", addr, data.len()));
        }
        if let Some(slice) = self.bytes_mut(addr, data.len() as u64) {
            slice.copy_from_slice(data);
        }
        Ok(())
    }

    /// Copies memory at `addr` into `out`; the range must lie inside one buffer.
    ///
    /// ```
    /// let mut mem = ptx_emulator::GlobalMemory::new();
    /// let a = mem.alloc(4);
    /// let mut out = [9u8; 4];
    /// mem.read(a, &mut out).unwrap();
    /// assert_eq!(out, [0; 4]);
    /// ```
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), Error> {
        let index = self
            .find(addr, out.len() as u64)
            .ok_or_else(|| self.host_fault("read", addr, out.len()))?;
        let b = &self.buffers[index];
        let start = (addr - b.base) as usize;
        out.copy_from_slice(&b.data[start..start + out.len()]);
        Ok(())
    }

    /// Allocates a buffer holding `values` as little-endian f32 and returns its address.
    ///
    /// ```
    /// let mut mem = ptx_emulator::GlobalMemory::new();
    /// let a = mem.alloc_f32(&[1.5, -2.0]);
    /// assert_eq!(mem.read_f32(a, 2).unwrap(), vec![1.5, -2.0]);
    /// ```
    pub fn alloc_f32(&mut self, values: &[f32]) -> u64 {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = self.alloc(bytes.len());
        if let Some(slice) = self.bytes_mut(a, bytes.len() as u64) {
            slice.copy_from_slice(&bytes);
        }
        a
    }

    /// Reads `count` little-endian f32 values at `addr`.
    ///
    /// ```
    /// let mut mem = ptx_emulator::GlobalMemory::new();
    /// let a = mem.alloc(8);
    /// assert_eq!(mem.read_f32(a, 2).unwrap(), vec![0.0, 0.0]);
    /// ```
    pub fn read_f32(&self, addr: u64, count: usize) -> Result<Vec<f32>, Error> {
        let mut bytes = vec![0u8; count * 4];
        self.read(addr, &mut bytes)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// Writes `values` as little-endian f32 at `addr`.
    ///
    /// ```
    /// let mut mem = ptx_emulator::GlobalMemory::new();
    /// let a = mem.alloc(8);
    /// mem.write_f32(a, &[3.0, 4.0]).unwrap();
    /// assert_eq!(mem.read_f32(a + 4, 1).unwrap(), vec![4.0]);
    /// ```
    pub fn write_f32(&mut self, addr: u64, values: &[f32]) -> Result<(), Error> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write(addr, &bytes)
    }

    /// Reads `count` little-endian u32 values at `addr`.
    ///
    /// ```
    /// let mut mem = ptx_emulator::GlobalMemory::new();
    /// let a = mem.alloc(4);
    /// mem.write(a, &7u32.to_le_bytes()).unwrap();
    /// assert_eq!(mem.read_u32(a, 1).unwrap(), vec![7]);
    /// ```
    pub fn read_u32(&self, addr: u64, count: usize) -> Result<Vec<u32>, Error> {
        let mut bytes = vec![0u8; count * 4];
        self.read(addr, &mut bytes)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// How many buffers are allocated.
    ///
    /// ```
    /// let mut mem = ptx_emulator::GlobalMemory::new();
    /// mem.alloc(1);
    /// assert_eq!(mem.allocations(), 1);
    /// ```
    pub fn allocations(&self) -> usize {
        self.buffers.len()
    }

    /// The address of module `module`'s variable `name`, allocated and initialised with `init`
    /// the first time it is asked for.
    pub(crate) fn module_variable(&mut self, module: u64, name: &str, init: &[u8]) -> u64 {
        if let Some(&addr) = self.module_vars.get(&(module, name.to_string())) {
            return addr;
        }
        let addr = self.alloc(init.len().max(1));
        if let Some(slice) = self.bytes_mut(addr, init.len() as u64) {
            slice.copy_from_slice(init);
        }
        self.module_vars.insert((module, name.to_string()), addr);
        addr
    }

    /// Index of the buffer wholly containing `[addr, addr + size)`.
    #[inline]
    fn find(&self, addr: u64, size: u64) -> Option<usize> {
        let contains = |b: &Buffer| addr >= b.base && b.admits(addr - b.base, size);
        if let Some(b) = self.buffers.get(self.last_hit) {
            if contains(b) {
                return Some(self.last_hit);
            }
        }
        let index = self
            .buffers
            .partition_point(|b| b.base <= addr)
            .checked_sub(1)?;
        contains(&self.buffers[index]).then_some(index)
    }

    /// The bytes `[addr, addr + size)` if they lie inside one buffer.
    #[inline]
    pub(crate) fn bytes_mut(&mut self, addr: u64, size: u64) -> Option<&mut [u8]> {
        let index = self.find(addr, size)?;
        self.last_hit = index;
        let b = &mut self.buffers[index];
        let start = (addr - b.base) as usize;
        b.data.get_mut(start..start + size as usize)
    }

    /// The allocation `addr` was in or nearest to, for error messages.
    pub(crate) fn nearest(&self, addr: u64) -> Nearest {
        let distance = |b: &Buffer| {
            if addr < b.base {
                b.base - addr
            } else {
                addr.saturating_sub(b.base + b.data.len() as u64)
            }
        };
        self.buffers
            .iter()
            .min_by_key(|b| distance(b))
            .map_or(Nearest::Nothing, |b| Nearest::Buffer {
                base: b.base,
                bytes: b.data.len() as u64,
                offset: addr.wrapping_sub(b.base) as i64,
            })
    }

    /// Bounds accesses to the buffer holding `view` by it, until [`GlobalMemory::clear_views`];
    /// a view of the whole buffer lifts the bounds instead.
    pub(crate) fn bound_view(&mut self, view: &ViewArg, index: usize, param: &str) {
        let after = self.buffers.partition_point(|b| b.base <= view.addr);
        let inside = |b: &Buffer| {
            view.addr
                .wrapping_sub(b.base)
                .checked_add(view.bytes)
                .is_some_and(|end| end <= b.data.len() as u64)
        };
        let Some(i) = after.checked_sub(1).filter(|&i| inside(&self.buffers[i])) else {
            // A view outside every buffer bounds nothing; its accesses fault on their own.
            return;
        };
        let b = &mut self.buffers[i];
        let start = view.addr - b.base;
        if start == 0 && view.bytes == b.data.len() as u64 {
            b.open = true;
            return;
        }
        b.views.push(View {
            start,
            end: start + view.bytes,
            elem_bytes: view.elem_bytes,
            name: view.name.clone(),
            index,
            param: param.to_string(),
        });
    }

    /// A plain pointer into a buffer lifts any view bounds on it for the launch.
    pub(crate) fn open_buffer(&mut self, addr: u64) {
        let index = self.buffers.partition_point(|b| b.base <= addr);
        if let Some(b) = index.checked_sub(1).map(|i| &mut self.buffers[i]) {
            if addr - b.base <= b.data.len() as u64 {
                b.open = true;
            }
        }
    }

    /// Drops every view bound set for a launch.
    pub(crate) fn clear_views(&mut self) {
        for b in &mut self.buffers {
            b.views.clear();
            b.open = false;
        }
    }

    /// For an access that faulted: the view it fell outside of, where the buffer it was in (or
    /// nearest to) is bounded by views. Names the view nearest the address.
    pub(crate) fn view_fault(&self, addr: u64) -> Option<Box<ViewBounds>> {
        let Nearest::Buffer { base, .. } = self.nearest(addr) else {
            return None;
        };
        let i = self.buffers.binary_search_by_key(&base, |b| b.base).ok()?;
        let b = &self.buffers[i];
        if !b.bounded() {
            return None;
        }
        let offset = addr.wrapping_sub(b.base) as i64;
        let distance = |v: &&View| {
            if offset < v.start as i64 {
                v.start as i64 - offset
            } else {
                offset.saturating_sub(v.end as i64)
            }
        };
        let v = b.views.iter().min_by_key(distance)?;
        Some(Box::new(ViewBounds {
            name: v.name.clone(),
            index: v.index,
            param: v.param.clone(),
            start: v.start,
            end: v.end,
            elem_bytes: v.elem_bytes,
            buffer: b.base,
            buffer_bytes: b.data.len() as u64,
            offset,
        }))
    }

    fn host_fault(&self, operation: &'static str, address: u64, size: usize) -> Error {
        Error::HostOutOfBounds {
            operation,
            address,
            size,
            nearest: self.nearest(address),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_bounds_host_read_names_the_nearest_buffer() {
        let mut mem = GlobalMemory::new();
        let a = mem.alloc(64);
        let _b = mem.alloc(64);
        let mut out = [0u8; 8];
        let err = mem.read(a + 60, &mut out).unwrap_err();
        match err {
            Error::HostOutOfBounds {
                nearest:
                    Nearest::Buffer {
                        base,
                        bytes,
                        offset,
                    },
                ..
            } => {
                assert_eq!((base, bytes, offset), (a, 64, 60));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn freed_buffers_are_no_longer_accessible() {
        let mut mem = GlobalMemory::new();
        let a = mem.alloc(8);
        let b = mem.alloc(8);
        mem.write(b, &[5; 8]).unwrap();
        mem.free(a).unwrap();
        assert!(mem.write(a, &[1]).is_err());
        let mut out = [0u8; 8];
        mem.read(b, &mut out).unwrap();
        assert_eq!(out, [5; 8]);
    }
}
