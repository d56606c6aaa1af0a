//! Tensor-core fragment layouts of `mma.sync` and `ldmatrix`/`stmatrix`, from the PTX ISA's
//! "Matrix fragments for mma.m16n8k*" tables. Each function maps a (lane, register, half) to
//! the (row, column) of the matrix element it holds.

use crate::numerics::{round_f64, Half, IeeeFormat, Rounding};
use crate::program::MmaKind;

/// `(row, col)` of A's element held by `lane` in register `reg`, half `half` (0 = low 16 bits;
/// tf32 registers hold one element, `half` 0).
pub(crate) fn a_position(kind: MmaKind, lane: usize, reg: usize, half: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane & 3);
    match kind {
        MmaKind::M16N8K16Half(_) => (g + 8 * (reg & 1), 2 * t + half + 8 * (reg >> 1)),
        MmaKind::M16N8K8Half(_) => (g + 8 * reg, 2 * t + half),
        MmaKind::M16N8K8Tf32 => (g + 8 * (reg & 1), t + 4 * (reg >> 1)),
        MmaKind::M16N8K4Tf32 => (g + 8 * reg, t),
        // Four bytes per register: a0..a3 row g, a4..a7 row g+8, a8.. columns + 16.
        MmaKind::M16N8K32Int8 { .. } => (g + 8 * (reg & 1), 4 * t + half + 16 * (reg >> 1)),
    }
}

/// `(row k, col n)` of B's element held by `lane` in register `reg`, half `half`.
pub(crate) fn b_position(kind: MmaKind, lane: usize, reg: usize, half: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane & 3);
    match kind {
        MmaKind::M16N8K16Half(_) => (2 * t + half + 8 * reg, g),
        MmaKind::M16N8K8Half(_) => (2 * t + half, g),
        MmaKind::M16N8K8Tf32 => (t + 4 * reg, g),
        MmaKind::M16N8K4Tf32 => (t, g),
        MmaKind::M16N8K32Int8 { .. } => (4 * t + half + 16 * reg, g),
    }
}

/// `(row, col)` of the f32 accumulator element `i` (0..4) of `lane`.
pub(crate) fn c_position_f32(lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane & 3);
    (g + 8 * (i >> 1), 2 * t + (i & 1))
}

/// `(row, col)` of the packed-f16 accumulator register `reg` (0..2), half `half`.
pub(crate) fn c_position_f16(lane: usize, reg: usize, half: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane & 3);
    (g + 8 * reg, 2 * t + half)
}

pub(crate) fn k_of(kind: MmaKind) -> usize {
    match kind {
        MmaKind::M16N8K16Half(_) => 16,
        MmaKind::M16N8K8Half(_) | MmaKind::M16N8K8Tf32 => 8,
        MmaKind::M16N8K4Tf32 => 4,
        MmaKind::M16N8K32Int8 { .. } => 32,
    }
}

/// The value of one input element from its register bits.
pub(crate) fn input_value(kind: MmaKind, reg_bits: u64, half: usize) -> f64 {
    match kind {
        MmaKind::M16N8K16Half(h) | MmaKind::M16N8K8Half(h) => {
            h.to_f64((reg_bits >> (16 * half)) as u16)
        }
        // The tensor core reads the top 19 bits of a tf32 operand.
        MmaKind::M16N8K8Tf32 | MmaKind::M16N8K4Tf32 => {
            f32::from_bits(reg_bits as u32 & 0xffff_e000) as f64
        }
        MmaKind::M16N8K32Int8 { a_signed, .. } => int8_value(reg_bits, half, a_signed),
    }
}

/// How many elements each input register holds.
pub(crate) fn halves(kind: MmaKind) -> usize {
    match kind {
        MmaKind::M16N8K16Half(_) | MmaKind::M16N8K8Half(_) => 2,
        MmaKind::M16N8K8Tf32 | MmaKind::M16N8K4Tf32 => 1,
        MmaKind::M16N8K32Int8 { .. } => 4,
    }
}

/// Byte `index` of an integer MMA operand register.
pub(crate) fn int8_value(reg_bits: u64, index: usize, signed: bool) -> f64 {
    let byte = (reg_bits >> (8 * index)) as u8;
    if signed {
        byte as i8 as f64
    } else {
        byte as f64
    }
}

/// `D = A * B + C` for one warp's 16x8 tile: products are exact in f64 and summed there, then
/// rounded once to the accumulator type. (Real tensor cores round partial sums differently;
/// results agree to within the f32 accumulation error the hardware documents.)
pub(crate) fn multiply(
    a: &[[f64; 32]; 16],
    b: &[[f64; 8]; 32],
    c: &[[f64; 8]; 16],
    k: usize,
) -> [[f64; 8]; 16] {
    let mut d = [[0.0; 8]; 16];
    for (i, row) in d.iter_mut().enumerate() {
        for (j, out) in row.iter_mut().enumerate() {
            let mut acc = c[i][j];
            for kk in 0..k {
                acc += a[i][kk] * b[kk][j];
            }
            *out = acc;
        }
    }
    d
}

pub(crate) fn to_f32_bits(v: f64) -> u64 {
    round_f64(v, IeeeFormat::F32, Rounding::NearestEven)
}

pub(crate) fn to_f16_bits(v: f64) -> u64 {
    Half::F16.from_f64(v, Rounding::NearestEven) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_of_a_b_and_c_is_held_by_exactly_one_lane_register() {
        for kind in [
            MmaKind::M16N8K16Half(Half::Bf16),
            MmaKind::M16N8K8Half(Half::F16),
            MmaKind::M16N8K8Tf32,
            MmaKind::M16N8K4Tf32,
            MmaKind::M16N8K32Int8 {
                a_signed: true,
                b_signed: false,
            },
        ] {
            let k = k_of(kind);
            let h = halves(kind);
            let (na, nb) = (16 * k / 32 / h, 8 * k / 32 / h);
            let mut seen_a = vec![0; 16 * k];
            let mut seen_b = vec![0; 8 * k];
            for lane in 0..32 {
                for reg in 0..na {
                    for half in 0..h {
                        let (r, c) = a_position(kind, lane, reg, half);
                        seen_a[r * k + c] += 1;
                    }
                }
                for reg in 0..nb {
                    for half in 0..h {
                        let (r, c) = b_position(kind, lane, reg, half);
                        seen_b[r * 8 + c] += 1;
                    }
                }
            }
            assert!(seen_a.iter().all(|&n| n == 1), "{kind:?} A");
            assert!(seen_b.iter().all(|&n| n == 1), "{kind:?} B");
        }
        let mut seen_c = [0; 128];
        for lane in 0..32 {
            for i in 0..4 {
                let (r, c) = c_position_f32(lane, i);
                seen_c[r * 8 + c] += 1;
            }
        }
        assert!(seen_c.iter().all(|&n| n == 1));
    }

    #[test]
    fn lane_five_holds_the_documented_elements_of_m16n8k16() {
        // groupID 1, threadID_in_group 1: a0,a1 = (1, 2..3), a2,a3 = (9, 2..3), a4,a5 = (1, 10..11).
        let kind = MmaKind::M16N8K16Half(Half::F16);
        assert_eq!(a_position(kind, 5, 0, 0), (1, 2));
        assert_eq!(a_position(kind, 5, 1, 1), (9, 3));
        assert_eq!(a_position(kind, 5, 2, 0), (1, 10));
        assert_eq!(a_position(kind, 5, 3, 1), (9, 11));
        assert_eq!(b_position(kind, 5, 0, 1), (3, 1));
        assert_eq!(b_position(kind, 5, 1, 0), (10, 1));
        assert_eq!(c_position_f32(5, 3), (9, 3));
    }
}
