//! The fp8 GEMM (TMA, mbarriers, `wgmma` over e4m3/e5m2) on the emulator for sm_90a, at odd
//! shapes, for each pairing of formats and both outputs; the fp8 encoding against its
//! definition; and operands refused before anything launches.

#[path = "common_fp8/mod.rs"]
mod common_fp8;

use common_fp8::{check, Accuracy};
use kernel_runtime::{Bf16, Buffer, Device, Stream};
use kernels::gemm::{gemm_fp8, Fp8Format, Fp8Matrix};

fn hopper() -> Stream {
    Device::emulator_for(kernel_dsl::Target::Sm90a)
        .stream()
        .expect("emulator stream")
}

#[test]
fn fp8_gemm_matches_the_reference_at_ragged_tiles_and_a_ragged_last_slab() {
    // Two row tiles and two column tiles, each second one ragged, walked by one persistent
    // block (the emulator has one SM); k is one whole 128-deep slab and 16 more.
    use Fp8Format::{E4m3, E5m2};
    check::<f32>(&hopper(), 130, 260, 144, E4m3, E4m3, 3, Accuracy::Exact);
    check::<f32>(&hopper(), 70, 40, 48, E4m3, E5m2, 5, Accuracy::Exact);
    check::<f32>(&hopper(), 70, 40, 48, E5m2, E4m3, 7, Accuracy::Exact);
}

#[test]
fn fp8_gemm_writes_bf16_rounded_once_from_the_scaled_f32_sum() {
    check::<Bf16>(
        &hopper(),
        67,
        131,
        32,
        Fp8Format::E4m3,
        Fp8Format::E4m3,
        9,
        Accuracy::Exact,
    );
}

#[test]
fn fp8_gemm_runs_the_stage_ring_over_several_rounds() {
    // Nine slabs: the four-stage ring wraps twice.
    let k = 9 * 128;
    check::<f32>(
        &hopper(),
        64,
        8,
        k,
        Fp8Format::E4m3,
        Fp8Format::E4m3,
        11,
        Accuracy::Exact,
    );
}

#[test]
fn every_fp8_byte_decodes_and_encodes_back_to_itself() {
    for format in [Fp8Format::E4m3, Fp8Format::E5m2] {
        for bits in 0..=255u8 {
            let v = format.decode(bits);
            if v.is_nan() {
                continue;
            }
            // E5M2's infinities saturate to its largest finite value.
            let want = if v.is_infinite() { bits - 1 } else { bits };
            assert_eq!(format.encode(v), want, "{format:?} {bits:#04x} = {v}");
        }
    }
}

#[test]
fn fp8_encoding_rounds_to_nearest_even_and_saturates() {
    let e4 = Fp8Format::E4m3;
    // Neighbours and midpoints across the normal range, the subnormals and the top.
    for bits in 0..0x7eu8 {
        let (lo, hi) = (e4.decode(bits), e4.decode(bits + 1));
        let mid = (lo + hi) / 2.0;
        let even = if bits % 2 == 0 { bits } else { bits + 1 };
        assert_eq!(e4.encode(mid), even, "midpoint of {bits:#04x} and the next");
        assert_eq!(e4.encode(lo + (hi - lo) * 0.25), bits);
        assert_eq!(e4.encode(lo + (hi - lo) * 0.75), bits + 1);
        assert_eq!(e4.encode(-mid), 0x80 | even);
    }
    assert_eq!(e4.encode(464.0), 0x7e);
    assert_eq!(e4.encode(f32::INFINITY), 0x7e);
    assert_eq!(e4.encode(f32::NEG_INFINITY), 0xfe);
    assert_eq!(Fp8Format::E5m2.encode(1e6), 0x7b);
    assert_eq!(e4.encode(f32::NAN), 0x7f);
}

#[test]
fn fp8_gemm_refuses_bad_operands_and_devices_and_writes_nothing() {
    let s = hopper();
    let e4 = |rows, cols| {
        Fp8Matrix::from_f32(
            &s,
            Fp8Format::E4m3,
            rows,
            cols,
            &vec![1.0; (rows * cols) as usize],
        )
        .unwrap()
    };
    let e5 = |rows, cols| {
        Fp8Matrix::from_f32(
            &s,
            Fp8Format::E5m2,
            rows,
            cols,
            &vec![1.0; (rows * cols) as usize],
        )
        .unwrap()
    };
    let scales = Buffer::from_host(&s, &[1.0f32, 1.0]).unwrap();
    let mut c = Buffer::from_host(&s, &[7.0f32; 4 * 6]).unwrap();
    let cases: [(Fp8Matrix, Fp8Matrix, &str); 3] = [
        (e5(4, 16), e5(6, 16), "e5m2 · e5m2"),
        (e4(4, 16), e4(6, 32), "must agree"),
        (e4(4, 16), e4(5, 16), "m × n = 4 × 5"),
    ];
    for (a, b, why) in cases {
        let err = gemm_fp8(&s, &a, &b, &scales, &mut c).unwrap_err();
        assert!(err.to_string().contains(why), "{why}: {err}");
    }
    let one_scale = Buffer::from_host(&s, &[1.0f32]).unwrap();
    let err = gemm_fp8(&s, &e4(4, 16), &e4(6, 16), &one_scale, &mut c).unwrap_err();
    assert!(err.to_string().contains("scale_a, scale_b"), "{err}");
    let mut half = Buffer::from_host(&s, &[kernel_runtime::F16::from_f32(7.0); 24]).unwrap();
    let err = gemm_fp8(&s, &e4(4, 16), &e4(6, 16), &scales, &mut half).unwrap_err();
    assert!(err.to_string().contains("not f16"), "{err}");
    assert_eq!(c.to_host(&s).unwrap(), vec![7.0; 24]);
    // A device without wgmma (the emulator as an sm_89) is refused before launch.
    let ada = Device::emulator_for(kernel_dsl::Target::Sm89)
        .stream()
        .unwrap();
    let e4 = |rows, cols| {
        let v = vec![1.0; (rows * cols) as usize];
        Fp8Matrix::from_f32(&ada, Fp8Format::E4m3, rows, cols, &v).unwrap()
    };
    let scales = Buffer::from_host(&ada, &[1.0f32, 1.0]).unwrap();
    let mut c = Buffer::from_host(&ada, &[7.0f32; 24]).unwrap();
    let err = gemm_fp8(&ada, &e4(4, 16), &e4(6, 16), &scales, &mut c).unwrap_err();
    assert!(err.to_string().contains("not sm_89"), "{err}");
    assert_eq!(c.to_host(&ada).unwrap(), vec![7.0; 24]);
}

/// Every value of the format and the midpoints between neighbours (ties), both signs, past
/// the largest value and into the subnormals, times `scale`.
fn quantization_inputs(format: Fp8Format, scale: f32) -> Vec<f32> {
    let mut v = Vec::new();
    for bits in 0..0x7eu8 {
        let (lo, hi) = (format.decode(bits), format.decode(bits + 1));
        if hi.is_finite() {
            for x in [lo, (lo + hi) / 2.0, lo + (hi - lo) * 0.3] {
                v.extend([x * scale, -x * scale]);
            }
        }
    }
    v.extend([1e9, -1e9, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0]);
    // Whole rows of 16.
    v.resize(v.len().next_multiple_of(16), 1.0);
    v
}

#[test]
fn fp8_quantization_on_the_device_rounds_as_the_host_encoding_does() {
    let s = hopper();
    let scale = 0.75f32;
    let dscale = Buffer::from_host(&s, &[scale]).unwrap();
    for format in [Fp8Format::E4m3, Fp8Format::E5m2] {
        let x = quantization_inputs(format, scale);
        let rows = (x.len() / 16) as u32;
        let dx = Buffer::from_host(&s, &x).unwrap();
        let q = Fp8Matrix::quantize(&s, format, &dx, rows, 16, &dscale).unwrap();
        let want: Vec<u8> = x.iter().map(|&v| format.encode(v / scale)).collect();
        assert_eq!(q.to_bytes(&s).unwrap(), want, "{format:?} from f32");
        // bf16 inputs: the same rounding of the widened value.
        let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
        let dxb = Buffer::from_host(&s, &xb).unwrap();
        let q = Fp8Matrix::quantize(&s, format, &dxb, rows, 16, &dscale).unwrap();
        let want: Vec<u8> = xb
            .iter()
            .map(|v| format.encode(v.to_f32() / scale))
            .collect();
        assert_eq!(q.to_bytes(&s).unwrap(), want, "{format:?} from bf16");
    }
}

#[test]
fn quantized_operands_feed_the_gemm() {
    let s = hopper();
    let (m, n, k) = (40usize, 24usize, 64usize);
    let a = common_fp8::operand(m * k, 21);
    let b = common_fp8::operand(n * k, 22);
    // Scaled up by 4 on the host and back down by the quantization's scale: the same quarters.
    let up = |v: &[f32]| v.iter().map(|x| x * 4.0).collect::<Vec<f32>>();
    let (da, db) = (
        Buffer::from_host(&s, &up(&a)).unwrap(),
        Buffer::from_host(&s, &up(&b)).unwrap(),
    );
    let four = Buffer::from_host(&s, &[4.0f32]).unwrap();
    let qa = Fp8Matrix::quantize(&s, Fp8Format::E4m3, &da, m as u32, k as u32, &four).unwrap();
    let qb = Fp8Matrix::quantize(&s, Fp8Format::E4m3, &db, n as u32, k as u32, &four).unwrap();
    let scales = Buffer::from_host(&s, &[1.0f32, 1.0]).unwrap();
    let mut c = Buffer::from_host(&s, &vec![f32::NAN; m * n]).unwrap();
    gemm_fp8(&s, &qa, &qb, &scales, &mut c).unwrap();
    let c = c.to_host(&s).unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[j * k + p] as f64)
                .sum();
            assert_eq!(c[i * n + j] as f64, want, "c[{i}][{j}]");
        }
    }
}

#[test]
fn fp8_quantization_refuses_f16_bad_lengths_and_devices_without_fp8() {
    let s = hopper();
    let scale = Buffer::from_host(&s, &[1.0f32]).unwrap();
    let x = Buffer::from_host(&s, &[1.0f32; 32]).unwrap();
    let err = Fp8Matrix::quantize(&s, Fp8Format::E4m3, &x, 3, 16, &scale)
        .err()
        .unwrap();
    assert!(err.to_string().contains("3 × 16"), "{err}");
    let err = Fp8Matrix::quantize(&s, Fp8Format::E4m3, &x, 4, 8, &scale)
        .err()
        .unwrap();
    assert!(err.to_string().contains("multiple of 16"), "{err}");
    let h = Buffer::from_host(&s, &[kernel_runtime::F16::from_f32(1.0); 32]).unwrap();
    let err = Fp8Matrix::quantize(&s, Fp8Format::E4m3, &h, 2, 16, &scale)
        .err()
        .unwrap();
    assert!(err.to_string().contains("not f16"), "{err}");
    // No fp8 conversion below sm_89: refused before launch.
    let ampere = Device::emulator_for(kernel_dsl::Target::Sm80)
        .stream()
        .unwrap();
    let x = Buffer::from_host(&ampere, &[1.0f32; 32]).unwrap();
    let scale = Buffer::from_host(&ampere, &[1.0f32]).unwrap();
    let err = Fp8Matrix::quantize(&ampere, Fp8Format::E4m3, &x, 2, 16, &scale)
        .err()
        .unwrap();
    assert!(err.to_string().contains("not sm_80"), "{err}");
}
