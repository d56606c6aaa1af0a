//! Integer bit manipulation: `prmt`, `bfe`, `bfi`, `lop3`, `shf`, `bfind`, `brev`.

/// The selector modes of `prmt.b32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrmtMode {
    Generic,
    F4e,
    B4e,
    Rc8,
    Ecl,
    Ecr,
    Rc16,
}

/// `prmt.b32{.mode} d, a, b, c`.
pub fn prmt(mode: PrmtMode, a: u32, b: u32, c: u32) -> u32 {
    let bytes = ((b as u64) << 32 | a as u64).to_le_bytes();
    let pick = |sel: u32| -> u8 { bytes[(sel & 7) as usize] };
    let mut out = [0u8; 4];
    match mode {
        PrmtMode::Generic => {
            for (i, o) in out.iter_mut().enumerate() {
                let sel = (c >> (4 * i)) & 0xf;
                let byte = pick(sel);
                // Bit 3 of the selector replicates the chosen byte's sign bit.
                *o = if sel & 8 != 0 {
                    if byte & 0x80 != 0 {
                        0xff
                    } else {
                        0
                    }
                } else {
                    byte
                };
            }
        }
        _ => {
            let s = c & 3;
            let sel: [u32; 4] = match mode {
                PrmtMode::F4e => [s, s + 1, s + 2, s + 3],
                PrmtMode::B4e => {
                    [(8 - s) & 7, (7 - s) & 7, (6 - s) & 7, (5 - s) & 7].map(|x| x & 7)
                }
                PrmtMode::Rc8 => [s, s, s, s],
                PrmtMode::Ecl => [s, s.max(1), s.max(2), 3].map(|x| x.min(3)),
                PrmtMode::Ecr => [0, s.min(1), s.min(2), s],
                PrmtMode::Rc16 => {
                    let h = (s & 1) * 2;
                    [h, h + 1, h, h + 1]
                }
                PrmtMode::Generic => [0, 1, 2, 3],
            };
            for (o, sel) in out.iter_mut().zip(sel) {
                *o = pick(sel & 7);
            }
        }
    }
    u32::from_le_bytes(out)
}

/// `bfe.{u,s}{32,64} d, a, pos, len`: extracts `len` bits from `pos`, sign-extending for signed.
pub fn bfe(a: u64, pos: u32, len: u32, width: u32, signed: bool) -> u64 {
    let pos = pos & 0xff;
    let len = len & 0xff;
    let msb = width - 1;
    let sign_bit_pos = (pos + len).saturating_sub(1).min(msb);
    let sbit = if signed && len != 0 {
        (a >> sign_bit_pos) & 1
    } else {
        0
    };
    let mut d = 0u64;
    for i in 0..width {
        let bit = if i < len && pos + i <= msb {
            (a >> (pos + i)) & 1
        } else {
            sbit
        };
        d |= bit << i;
    }
    if width < 64 {
        d & ((1u64 << width) - 1)
    } else {
        d
    }
}

/// `bfi.b{32,64} f, a, b, pos, len`: inserts the low `len` bits of `a` into `b` at `pos`.
pub fn bfi(a: u64, b: u64, pos: u32, len: u32, width: u32) -> u64 {
    let pos = pos & 0xff;
    let len = len & 0xff;
    let mut f = b;
    for i in 0..len {
        if pos + i >= width {
            break;
        }
        let bit = (a >> i) & 1;
        f = (f & !(1u64 << (pos + i))) | (bit << (pos + i));
    }
    f
}

/// `lop3.b32 d, a, b, c, immLut`.
pub fn lop3(a: u32, b: u32, c: u32, lut: u8) -> u32 {
    let mut d = 0u32;
    for (i, term) in [
        !a & !b & !c,
        !a & !b & c,
        !a & b & !c,
        !a & b & c,
        a & !b & !c,
        a & !b & c,
        a & b & !c,
        a & b & c,
    ]
    .into_iter()
    .enumerate()
    {
        if lut & (1 << i) != 0 {
            d |= term;
        }
    }
    d
}

/// `shf.{l,r}.{clamp,wrap}.b32 d, a, b, c`: funnel shift of the 64-bit value `b:a`.
pub fn shf(left: bool, clamp: bool, a: u32, b: u32, c: u32) -> u32 {
    let n = if clamp { c.min(32) } else { c & 31 };
    let wide = (b as u64) << 32 | a as u64;
    if left {
        ((wide << n) >> 32) as u32
    } else {
        (wide >> n) as u32
    }
}

/// `bfind{.shiftamt}.{u,s}{32,64}`: position of the most significant non-sign bit, or all ones.
pub fn bfind(a: u64, width: u32, signed: bool, shift_amount: bool) -> u32 {
    let mut v = if width == 32 { a & 0xffff_ffff } else { a };
    if signed && (v >> (width - 1)) & 1 == 1 {
        v = !v;
        if width == 32 {
            v &= 0xffff_ffff;
        }
    }
    if v == 0 {
        return u32::MAX;
    }
    let pos = 63 - v.leading_zeros();
    if shift_amount {
        width - 1 - pos
    } else {
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prmt_generic_selects_bytes_and_replicates_signs() {
        let a = 0x4433_2211;
        let b = 0x8877_6655;
        assert_eq!(prmt(PrmtMode::Generic, a, b, 0x3210), a);
        assert_eq!(prmt(PrmtMode::Generic, a, b, 0x7654), b);
        assert_eq!(prmt(PrmtMode::Generic, a, b, 0x0123), 0x1122_3344);
        // Selector 0xf picks byte 7 (0x88) and replicates its sign bit.
        assert_eq!(prmt(PrmtMode::Generic, a, b, 0xf410), 0xff55_2211);
        assert_eq!(prmt(PrmtMode::Rc16, a, b, 1), 0x4433_4433);
        assert_eq!(prmt(PrmtMode::F4e, a, b, 1), 0x5544_3322);
    }

    #[test]
    fn bfe_sign_extends_signed_fields_and_bfi_inserts() {
        assert_eq!(bfe(0xf0, 4, 4, 32, false), 0xf);
        assert_eq!(bfe(0xf0, 4, 4, 32, true), 0xffff_ffff);
        assert_eq!(bfe(0x70, 4, 4, 32, true), 7);
        assert_eq!(bfe(0x1234, 0, 0, 32, false), 0);
        assert_eq!(bfi(0xab, 0x1111_1111, 8, 8, 32), 0x1111_ab11);
    }

    #[test]
    fn lop3_implements_its_truth_table() {
        let (a, b, c) = (0xf0f0_f0f0u32, 0xcccc_ccccu32, 0xaaaa_aaaau32);
        assert_eq!(lop3(a, b, c, 0x80), a & b & c);
        assert_eq!(lop3(a, b, c, 0x96), a ^ b ^ c);
        assert_eq!(lop3(a, b, c, 0xfe), a | b | c);
        assert_eq!(lop3(a, b, c, 0xf0), a);
    }

    #[test]
    fn funnel_shifts_and_bfind() {
        assert_eq!(shf(true, false, 0x8000_0000, 0x1, 1), 0x3);
        assert_eq!(shf(false, false, 0x1, 0x3, 1), 0x8000_0000);
        // Clamped to 32: the high word comes down whole.
        assert_eq!(shf(false, true, 0x1, 0x3, 40), 3);
        assert_eq!(shf(false, false, 0x1, 0x3, 33), 0x8000_0000);
        assert_eq!(bfind(0x10, 32, false, false), 4);
        assert_eq!(bfind(0x10, 32, false, true), 27);
        assert_eq!(bfind(0, 32, false, false), u32::MAX);
        assert_eq!(bfind(0xffff_fff0, 32, true, false), 3);
    }
}
