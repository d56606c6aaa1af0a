//! `wgmma.mma_async`, executed once all four warps of a warpgroup have reached it. Shared-memory
//! operands are read through matrix descriptors in the unswizzled K-major layout: 8-row ×
//! 16-byte core matrices, the leading byte offset between core matrices along K, the stride
//! byte offset between them along M or N.

use super::context::Ctx;
use super::mma;
use super::thread::FaultKind;
use super::warp::Regs;
use crate::error::Access;
use crate::program::{Collective, MmaKind, Space};

/// A decoded shared-memory matrix descriptor.
struct Descriptor {
    start: u64,
    leading: u64,
    stride: u64,
}

impl Descriptor {
    fn decode(bits: u64) -> Result<Descriptor, FaultKind> {
        if bits >> 62 != 0 {
            return Err(FaultKind::Unsupported(
                "wgmma with a swizzled shared-memory layout",
            ));
        }
        Ok(Descriptor {
            start: (bits & 0x3fff) << 4,
            leading: ((bits >> 16) & 0x3fff) << 4,
            stride: ((bits >> 32) & 0x3fff) << 4,
        })
    }

    /// Shared address of the 16-bit element at (`row` of M or N, `k`).
    fn address(&self, row: usize, k: usize) -> u64 {
        self.start
            + (row / 8) as u64 * self.stride
            + (k / 8) as u64 * self.leading
            + (row % 8) as u64 * 16
            + (k % 8) as u64 * 2
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
        half,
        n,
        ref d,
        ref a,
        a_desc,
        b_desc,
        scale_d,
        negate_a,
        negate_b,
    } = *c
    else {
        return Ok(());
    };
    let n = n as usize;
    let first = threads[0];
    let read = |ctx: &mut Ctx<'_>, addr: u64, t: usize| -> Result<f64, (usize, FaultKind)> {
        let bytes = ctx
            .read(Space::Shared, addr, 2, t, Access::Load)
            .map_err(|k| (t, k))?;
        Ok(half.to_f64(u16::from_le_bytes([bytes[0], bytes[1]])))
    };
    let sign_a = if negate_a { -1.0 } else { 1.0 };
    let sign_b = if negate_b { -1.0 } else { 1.0 };
    let mut ma = vec![[0.0f64; 16]; 64];
    if a.is_empty() {
        let desc = Descriptor::decode(regs.get(first, a_desc)).map_err(|k| (first, k))?;
        for (m, row) in ma.iter_mut().enumerate() {
            for (k, v) in row.iter_mut().enumerate() {
                *v = sign_a * read(ctx, desc.address(m, k), first)?;
            }
        }
    } else {
        // Each warp holds its 16 rows in the m16n8k16 A-fragment layout.
        let kind = MmaKind::M16N8K16Half(half);
        for &t in threads {
            let (warp, lane) = ((t - base) / 32, (t - base) % 32);
            for (reg, &slot) in a.iter().enumerate() {
                for h in 0..2 {
                    let (r, col) = mma::a_position(kind, lane, reg, h);
                    ma[16 * warp + r][col] = sign_a * mma::input_value(kind, regs.get(t, slot), h);
                }
            }
        }
    }
    let desc = Descriptor::decode(regs.get(first, b_desc)).map_err(|k| (first, k))?;
    let mut mb = vec![[0.0f64; 16]; n];
    for (col, column) in mb.iter_mut().enumerate() {
        for (k, v) in column.iter_mut().enumerate() {
            *v = sign_b * read(ctx, desc.address(col, k), first)?;
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
            for k in 0..16 {
                acc += ma[row][k] * mb[col][k];
            }
            regs.set(t, slot, mma::to_f32_bits(acc));
        }
    }
    Ok(())
}
