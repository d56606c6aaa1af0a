//! Helpers shared by the integration tests: a seeded generator, PTX boilerplate, buffers.

#![allow(dead_code)]

use ptx_emulator::{ArgValue, Emulator, Error, GlobalMemory, LaunchConfig, LaunchStats};

/// xorshift64*: deterministic, seeded, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    /// Uniform in [lo, hi).
    pub fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
    }
    pub fn f32s(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.f32_in(lo, hi)).collect()
    }
    pub fn u32s(&mut self, n: usize) -> Vec<u32> {
        (0..n).map(|_| self.next_u32()).collect()
    }
}

/// `.version`/`.target`/`.address_size` followed by `body`.
pub fn ptx(body: &str) -> String {
    format!(".version 8.0\n.target sm_90\n.address_size 64\n\n{body}")
}

/// Value written into output buffers before a launch, so unwritten outputs are caught.
pub const POISON_F32: f32 = -7.77e33;
pub const POISON_U32: u32 = 0xdead_beef;

pub fn poisoned_f32(mem: &mut GlobalMemory, n: usize) -> u64 {
    mem.alloc_f32(&vec![POISON_F32; n])
}

pub fn poisoned_u32(mem: &mut GlobalMemory, n: usize) -> u64 {
    let a = mem.alloc(n * 4);
    let bytes: Vec<u8> = (0..n).flat_map(|_| POISON_U32.to_le_bytes()).collect();
    mem.write(a, &bytes).unwrap();
    a
}

pub fn alloc_u32(mem: &mut GlobalMemory, values: &[u32]) -> u64 {
    let a = mem.alloc(values.len() * 4);
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    mem.write(a, &bytes).unwrap();
    a
}

pub fn alloc_u16(mem: &mut GlobalMemory, values: &[u16]) -> u64 {
    let a = mem.alloc(values.len() * 2);
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    mem.write(a, &bytes).unwrap();
    a
}

pub fn read_u64(mem: &GlobalMemory, addr: u64, n: usize) -> Vec<u64> {
    let mut bytes = vec![0u8; n * 8];
    mem.read(addr, &mut bytes).unwrap();
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Loads `source` and launches `entry`.
pub fn launch(
    source: &str,
    entry: &str,
    cfg: LaunchConfig,
    args: &[ArgValue],
    mem: &mut GlobalMemory,
) -> Result<LaunchStats, Error> {
    let module = Emulator::new().load(source).expect("test PTX parses");
    module.launch(entry, &cfg, args, mem)
}

/// bf16 bits of `x`, rounded to nearest even.
pub fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    let round = 0x7fff + ((b >> 16) & 1);
    ((b + round) >> 16) as u16
}

pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}
