//! Warp-collective instructions, executed once for all the lanes that take part.

use super::context::Ctx;
use super::mma;
use super::thread::FaultKind;
use crate::error::Access;
use crate::program::{Collective, MmaKind, ReduxOp, ShflMode, Space, VoteMode};

/// Register file access for a whole CTA: `slots` 64-bit slots per thread.
pub(crate) struct Regs<'a> {
    pub all: &'a mut [u64],
    pub slots: usize,
}

impl Regs<'_> {
    #[inline]
    pub(crate) fn get(&self, thread: usize, slot: u32) -> u64 {
        self.all[thread * self.slots + slot as usize]
    }
    #[inline]
    pub(crate) fn set(&mut self, thread: usize, slot: u32, v: u64) {
        self.all[thread * self.slots + slot as usize] = v;
    }
}

/// Executes `c` for the participating threads `lanes` (CTA-linear thread indices of one warp,
/// ascending). `warp_base` is the thread index of lane 0. A fault names the thread it hit.
pub(crate) fn execute(
    c: &Collective,
    lanes: &[usize],
    warp_base: usize,
    regs: &mut Regs<'_>,
    ctx: &mut Ctx<'_>,
) -> Result<(), (usize, FaultKind)> {
    let block_threads = ctx.block_threads as usize;
    let exists = |lane: usize| warp_base + lane < block_threads;
    match *c {
        Collective::Shfl {
            mode,
            d,
            p,
            a,
            b,
            c,
            ..
        } => {
            let mut results = [(0usize, 0u64, false); 32];
            for (i, &t) in lanes.iter().enumerate() {
                let lane = t - warp_base;
                let bval = (regs.get(t, b) & 0x1f) as usize;
                let cv = regs.get(t, c);
                let clamp = (cv & 0x1f) as usize;
                let seg = ((cv >> 8) & 0x1f) as usize;
                let max_lane = (lane & seg) | (clamp & !seg);
                let min_lane = lane & seg;
                let (j, valid) = match mode {
                    ShflMode::Up => {
                        let j = lane as isize - bval as isize;
                        (j, j >= max_lane as isize)
                    }
                    ShflMode::Down => {
                        let j = (lane + bval) as isize;
                        (j, j <= max_lane as isize)
                    }
                    ShflMode::Bfly => {
                        let j = (lane ^ bval) as isize;
                        (j, j <= max_lane as isize)
                    }
                    ShflMode::Idx => {
                        let j = (min_lane | (bval & !seg)) as isize;
                        (j, j <= max_lane as isize)
                    }
                };
                // A lane in range must read a lane that takes part: a GPU returns an
                // undefined value for one outside the member mask or absent from the warp.
                let src = if valid && j >= 0 {
                    let source = warp_base + j as usize;
                    if !lanes.contains(&source) {
                        let members = lanes.iter().fold(0u32, |m, &u| m | 1 << (u - warp_base));
                        return Err((
                            t,
                            FaultKind::ShuffleSource {
                                lane: lane as u32,
                                source: j as u32,
                                members,
                                present: exists(j as usize),
                            },
                        ));
                    }
                    source
                } else {
                    t
                };
                results[i] = (t, regs.get(src, a), valid);
            }
            for &(t, v, valid) in &results[..lanes.len()] {
                regs.set(t, d, v & 0xffff_ffff);
                regs.set(t, p, valid as u64);
            }
        }
        Collective::Vote {
            mode,
            d,
            a,
            negated,
            ..
        } => {
            let mut ballot = 0u32;
            let mut all = true;
            let mut any = false;
            for &t in lanes {
                let v = (regs.get(t, a) != 0) != negated;
                if v {
                    ballot |= 1 << (t - warp_base);
                }
                all &= v;
                any |= v;
            }
            let result = match mode {
                VoteMode::Ballot => ballot as u64,
                VoteMode::All => all as u64,
                VoteMode::Any => any as u64,
                VoteMode::Uni => (all || !any) as u64,
            };
            for &t in lanes {
                regs.set(t, d, result);
            }
        }
        Collective::Redux {
            op, signed, d, a, ..
        } => {
            let values: Vec<u32> = lanes.iter().map(|&t| regs.get(t, a) as u32).collect();
            let result = match op {
                ReduxOp::Add => values.iter().fold(0u32, |x, &y| x.wrapping_add(y)),
                ReduxOp::And => values.iter().fold(u32::MAX, |x, &y| x & y),
                ReduxOp::Or => values.iter().fold(0, |x, &y| x | y),
                ReduxOp::Xor => values.iter().fold(0, |x, &y| x ^ y),
                ReduxOp::Min if signed => {
                    values.iter().map(|&v| v as i32).min().unwrap_or(0) as u32
                }
                ReduxOp::Max if signed => {
                    values.iter().map(|&v| v as i32).max().unwrap_or(0) as u32
                }
                ReduxOp::Min => values.iter().copied().min().unwrap_or(0),
                ReduxOp::Max => values.iter().copied().max().unwrap_or(0),
            };
            for &t in lanes {
                regs.set(t, d, result as u64);
            }
        }
        Collective::Match {
            all, wide, d, p, a, ..
        } => {
            let value = |t: usize| {
                if wide {
                    regs.get(t, a)
                } else {
                    regs.get(t, a) & 0xffff_ffff
                }
            };
            let mut results = Vec::with_capacity(lanes.len());
            let every_equal = lanes.iter().all(|&t| value(t) == value(lanes[0]));
            let participants: u32 = lanes.iter().map(|&t| 1u32 << (t - warp_base)).sum();
            for &t in lanes {
                let same: u32 = lanes
                    .iter()
                    .filter(|&&u| value(u) == value(t))
                    .map(|&u| 1u32 << (u - warp_base))
                    .sum();
                let m = if all {
                    if every_equal {
                        participants
                    } else {
                        0
                    }
                } else {
                    same
                };
                results.push((t, m));
            }
            for (t, m) in results {
                regs.set(t, d, m as u64);
                regs.set(t, p, every_equal as u64);
            }
        }
        Collective::WarpSync { .. } => {}
        Collective::Activemask { d } => {
            let mask: u32 = lanes.iter().fold(0, |m, &t| m | 1 << (t - warp_base));
            for &t in lanes {
                regs.set(t, d, mask as u64);
            }
        }
        // Warpgroup instructions run in `wgmma::execute`, once all four warps arrive.
        Collective::Wgmma { .. } => {}
        Collective::Elect { d, p, .. } => {
            let elected = lanes.first().copied().unwrap_or(warp_base);
            for &t in lanes {
                regs.set(t, d, (elected - warp_base) as u64);
                regs.set(t, p, (t == elected) as u64);
            }
        }
        Collective::Mma {
            kind,
            f16_acc_c,
            f16_acc_d,
            satfinite,
            ref d,
            ref a,
            ref b,
            ref c,
        } => {
            let k = mma::k_of(kind);
            let halves = mma::halves(kind);
            let mut ma = [[0.0f64; 32]; 16];
            let mut mb = [[0.0f64; 8]; 32];
            // Integer inputs: exact in f64, and so are the s32 sums of their products.
            let int8 = match kind {
                MmaKind::M16N8K32Int8 { a_signed, b_signed } => Some((a_signed, b_signed)),
                _ => None,
            };
            let value = |bits: u64, half: usize, signed_pick: fn((bool, bool)) -> bool| match int8 {
                Some(signs) => mma::int8_value(bits, half, signed_pick(signs)),
                None => mma::input_value(kind, bits, half),
            };
            let mut mc = [[0.0f64; 8]; 16];
            for &t in lanes {
                let lane = t - warp_base;
                for (reg, &slot) in a.iter().enumerate() {
                    for half in 0..halves {
                        let (r, col) = mma::a_position(kind, lane, reg, half);
                        ma[r][col] = value(regs.get(t, slot), half, |s| s.0);
                    }
                }
                for (reg, &slot) in b.iter().enumerate() {
                    for half in 0..halves {
                        let (r, col) = mma::b_position(kind, lane, reg, half);
                        mb[r][col] = value(regs.get(t, slot), half, |s| s.1);
                    }
                }
                if f16_acc_c {
                    for (reg, &slot) in c.iter().enumerate() {
                        for half in 0..2 {
                            let (r, col) = mma::c_position_f16(lane, reg, half);
                            mc[r][col] = crate::numerics::Half::F16
                                .to_f64((regs.get(t, slot) >> (16 * half)) as u16);
                        }
                    }
                } else {
                    for (i, &slot) in c.iter().enumerate() {
                        let (r, col) = mma::c_position_f32(lane, i);
                        let bits = regs.get(t, slot) as u32;
                        mc[r][col] = if int8.is_some() {
                            bits as i32 as f64
                        } else {
                            f32::from_bits(bits) as f64
                        };
                    }
                }
            }
            let md = mma::multiply(&ma, &mb, &mc, k);
            for &t in lanes {
                let lane = t - warp_base;
                if f16_acc_d {
                    for (reg, &slot) in d.iter().enumerate() {
                        let (r0, c0) = mma::c_position_f16(lane, reg, 0);
                        let (r1, c1) = mma::c_position_f16(lane, reg, 1);
                        let v = mma::to_f16_bits(md[r0][c0]) | (mma::to_f16_bits(md[r1][c1]) << 16);
                        regs.set(t, slot, v);
                    }
                } else {
                    for (i, &slot) in d.iter().enumerate() {
                        let (r, col) = mma::c_position_f32(lane, i);
                        let v = md[r][col];
                        let bits = match int8 {
                            Some(_) if satfinite => {
                                v.clamp(i32::MIN as f64, i32::MAX as f64) as i32 as u32 as u64
                            }
                            Some(_) => (v as i64 as u32) as u64,
                            None => mma::to_f32_bits(v),
                        };
                        regs.set(t, slot, bits);
                    }
                }
            }
        }
        Collective::Ldmatrix {
            count,
            trans,
            d,
            at,
        } => {
            // matrices[m][row][col] of b16 elements; row r of matrix m is addressed by lane 8m + r.
            let mut matrices = [[[0u16; 8]; 8]; 4];
            for (m, matrix) in matrices.iter_mut().take(count as usize).enumerate() {
                for (row, out) in matrix.iter_mut().enumerate() {
                    let t = warp_base + 8 * m + row;
                    if !exists(8 * m + row) {
                        continue;
                    }
                    let addr = regs.get(t, at.base).wrapping_add(at.offset as u64);
                    let bytes = ctx
                        .read(shared_space(at.space), addr, 16, t, Access::Load)
                        .map_err(|k| (t, k))?;
                    for (col, v) in out.iter_mut().enumerate() {
                        *v = u16::from_le_bytes([bytes[2 * col], bytes[2 * col + 1]]);
                    }
                }
            }
            for &t in lanes {
                let lane = t - warp_base;
                let (g, q) = (lane >> 2, lane & 3);
                for (m, &slot) in d.iter().take(count as usize).enumerate() {
                    let (lo, hi) = if trans {
                        (matrices[m][2 * q][g], matrices[m][2 * q + 1][g])
                    } else {
                        (matrices[m][g][2 * q], matrices[m][g][2 * q + 1])
                    };
                    regs.set(t, slot, lo as u64 | ((hi as u64) << 16));
                }
            }
        }
        Collective::Stmatrix {
            count,
            trans,
            s,
            at,
        } => {
            let mut matrices = [[[0u16; 8]; 8]; 4];
            for &t in lanes {
                let lane = t - warp_base;
                let (g, q) = (lane >> 2, lane & 3);
                for (m, &slot) in s.iter().take(count as usize).enumerate() {
                    let v = regs.get(t, slot);
                    let (lo, hi) = (v as u16, (v >> 16) as u16);
                    if trans {
                        matrices[m][2 * q][g] = lo;
                        matrices[m][2 * q + 1][g] = hi;
                    } else {
                        matrices[m][g][2 * q] = lo;
                        matrices[m][g][2 * q + 1] = hi;
                    }
                }
            }
            for (m, matrix) in matrices.iter().take(count as usize).enumerate() {
                for (row, vals) in matrix.iter().enumerate() {
                    if !exists(8 * m + row) {
                        continue;
                    }
                    let t = warp_base + 8 * m + row;
                    let addr = regs.get(t, at.base).wrapping_add(at.offset as u64);
                    let mut bytes = [0u8; 16];
                    for (col, v) in vals.iter().enumerate() {
                        bytes[2 * col..2 * col + 2].copy_from_slice(&v.to_le_bytes());
                    }
                    ctx.write(shared_space(at.space), addr, &bytes, t)
                        .map_err(|k| (t, k))?;
                }
            }
        }
    }
    Ok(())
}

fn shared_space(space: Space) -> Space {
    match space {
        Space::Generic => Space::Generic,
        _ => Space::Shared,
    }
}
