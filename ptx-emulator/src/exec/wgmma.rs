//! `wgmma.mma_async` (f16, bf16, tf32 and fp8 inputs), executed once all four warps of a
//! warpgroup have reached it. Shared-memory operands are read through matrix descriptors in the
//! PTX ISA's canonical layouts, K-major or MN-major (16-bit types only), unswizzled (16-byte
//! chunks of 8 rows; the leading byte offset steps along K for
//! K-major and the stride byte offset along M/N, the other way round for MN-major) or swizzled
//! with 128/64/32-byte rows whose 16-byte chunks are permuted by XOR with address bits 7 and up,
//! as the hardware applies it to the shared-memory address.

use super::context::Ctx;
use super::mma;
use super::thread::FaultKind;
use super::warp::Regs;
use crate::error::Access;
use crate::program::{Collective, MmaKind, Space, WgmmaInput};

/// A decoded shared-memory matrix descriptor.
struct Descriptor {
    start: u64,
    leading: u64,
    stride: u64,
    /// Row pitch of a swizzled layout in bytes (128, 64, 32), or 0 for none.
    swizzle: u64,
}

impl Descriptor {
    fn decode(bits: u64) -> Result<Descriptor, FaultKind> {
        if (bits >> 49) & 7 != 0 {
            return Err(FaultKind::Unsupported(
                "wgmma with a non-zero matrix base offset",
            ));
        }
        Ok(Descriptor {
            start: (bits & 0x3fff) << 4,
            leading: ((bits >> 16) & 0x3fff) << 4,
            stride: ((bits >> 32) & 0x3fff) << 4,
            swizzle: match bits >> 62 {
                1 => 128,
                2 => 64,
                3 => 32,
                _ => 0,
            },
        })
    }

    /// Shared address of the element of `bytes` bytes at (`row` of M or N, `k` within the
    /// instruction's 32 bytes of K), in the PTX ISA's canonical K-major or (`mn_major`, 16-bit
    /// types only) MN-major layout.
    fn address(&self, row: usize, k: usize, mn_major: bool, bytes: usize) -> u64 {
        let (row, k, bytes) = (row as u64, k as u64, bytes as u64);
        // Elements of K in one 16-byte chunk of a core matrix row.
        let chunk = 16 / bytes;
        let linear = match (mn_major, self.swizzle) {
            (false, 0) => {
                return self.start
                    + (row / 8) * self.stride
                    + (k / chunk) * self.leading
                    + (row % 8) * 16
                    + (k % chunk) * bytes;
            }
            (false, pitch) => self.start + (row / 8) * self.stride + (row % 8) * pitch + k * bytes,
            (true, 0) => {
                return self.start
                    + (row % 8) * 2
                    + (row / 8) * self.stride
                    + (k % 8) * 16
                    + (k / 8) * self.leading;
            }
            (true, pitch) => {
                let chunks = pitch / 16;
                self.start
                    + (row % 8) * 2
                    + ((row / 8) % chunks) * 16
                    + (row / (8 * chunks)) * self.leading
                    + (k % 8) * pitch
                    + (k / 8) * self.stride
            }
        };
        // 128B: bits 7..9 into 4..6; 64B: bits 7..8 into 4..5; 32B: bit 7 into bit 4.
        let bits = self.swizzle.trailing_zeros() as u64 - 4;
        linear ^ (((linear >> 7) & ((1 << bits) - 1)) << 4)
    }
}

/// Executes `c` for the 128 threads of one warpgroup (`threads`, ascending from `base`).
pub(crate) fn execute(
    c: &Collective,
    threads: &[usize],
    base: usize,
    regs: &mut Regs<'_>,
    ctx: &mut Ctx<'_>,
) -> Result<(), (usize, FaultKind)> {
    let Collective::Wgmma {
        a_ty,
        b_ty,
        n,
        ref d,
        ref a,
        a_desc,
        b_desc,
        scale_d,
        negate_a,
        negate_b,
        trans_a,
        trans_b,
    } = *c
    else {
        return Ok(());
    };
    let n = n as usize;
    let depth = a_ty.k();
    let first = threads[0];
    let read = |ctx: &mut Ctx<'_>, ty: WgmmaInput, addr: u64, t: usize| {
        let bytes = ctx
            .read(Space::Shared, addr, ty.bytes() as u32, t, Access::Load)
            .map_err(|k| (t, k))?;
        let mut word = [0u8; 4];
        word[..ty.bytes()].copy_from_slice(&bytes[..ty.bytes()]);
        Ok::<f64, (usize, FaultKind)>(ty.value(u32::from_le_bytes(word)))
    };
    let sign_a = if negate_a { -1.0 } else { 1.0 };
    let sign_b = if negate_b { -1.0 } else { 1.0 };
    let mut ma = vec![vec![0.0f64; depth]; 64];
    if a.is_empty() {
        let desc = Descriptor::decode(regs.get(first, a_desc)).map_err(|k| (first, k))?;
        for (m, row) in ma.iter_mut().enumerate() {
            for (k, v) in row.iter_mut().enumerate() {
                let at = desc.address(m, k, trans_a, a_ty.bytes());
                *v = sign_a * read(ctx, a_ty, at, first)?;
            }
        }
    } else {
        // Each warp holds its 16 rows in the A-fragment layout of the `mma.sync` with the
        // same K: m16n8k16 for 16-bit types, m16n8k8 for tf32, m16n8k32 (four bytes a
        // register) for fp8.
        let kind = match a_ty {
            WgmmaInput::Half(h) => MmaKind::M16N8K16Half(h),
            WgmmaInput::Tf32 => MmaKind::M16N8K8Tf32,
            WgmmaInput::Fp8(_) => MmaKind::M16N8K32Int8 {
                a_signed: false,
                b_signed: false,
            },
        };
        let bits = 8 * a_ty.bytes();
        for &t in threads {
            let (warp, lane) = ((t - base) / 32, (t - base) % 32);
            for (reg, &slot) in a.iter().enumerate() {
                let word = regs.get(t, slot) as u32;
                for part in 0..4 / a_ty.bytes() {
                    let (r, col) = mma::a_position(kind, lane, reg, part);
                    let field = (word as u64 >> (bits * part)) as u32;
                    let field = if bits == 32 {
                        field
                    } else {
                        field & ((1 << bits) - 1)
                    };
                    ma[16 * warp + r][col] = sign_a * a_ty.value(field);
                }
            }
        }
    }
    let desc = Descriptor::decode(regs.get(first, b_desc)).map_err(|k| (first, k))?;
    let mut mb = vec![vec![0.0f64; depth]; n];
    for (col, column) in mb.iter_mut().enumerate() {
        for (k, v) in column.iter_mut().enumerate() {
            let at = desc.address(col, k, trans_b, b_ty.bytes());
            *v = sign_b * read(ctx, b_ty, at, first)?;
        }
    }
    let accumulate = regs.get(first, scale_d) != 0;
    for &t in threads {
        let (warp, lane) = ((t - base) / 32, (t - base) % 32);
        let (g, q) = (lane / 4, lane % 4);
        for (i, &slot) in d.iter().enumerate() {
            let row = 16 * warp + g + 8 * ((i >> 1) & 1);
            let col = 8 * (i / 4) + 2 * q + (i & 1);
            let mut acc = if accumulate {
                f32::from_bits(regs.get(t, slot) as u32) as f64
            } else {
                0.0
            };
            for k in 0..depth {
                acc += ma[row][k] * mb[col][k];
            }
            regs.set(t, slot, mma::to_f32_bits(acc));
        }
    }
    Ok(())
}
