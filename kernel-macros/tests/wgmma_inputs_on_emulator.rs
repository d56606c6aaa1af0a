//! `wgmma` over tf32 and fp8 operands on the emulator: 128-byte swizzled slabs by TMA, both
//! operands K-major, A by descriptor or in registers, checked against a CPU product of the
//! values the operand bits hold.

mod common;

use kernel_dsl::Target;
use kernel_macros::kernel;
use kernel_runtime::{Buffer, Device, Error, LaunchConfig, TensorMap, TensorSwizzle, TensorTiling};

/// Bytes of dynamic shared memory: 1 KiB of slack to align the tiles, then two 64-row slabs of
/// 128 bytes a row.
const SHARED_BYTES: u32 = 1024 + 2 * 64 * 128;

/// `c[64 × 64] = a[64 × k] · b[64 × k]ᵀ` in tf32 by one warpgroup: each 32-deep slab (128
/// bytes of f32 a row) lands by TMA, then four k8 steps read it; with `A_REGS`, A comes from
/// `a_words` (f32 bits) as each warp's m16n8k8 fragment instead.
#[kernel(crate = crate::common::paths, block = 128, needs = sm_90a, instances(<0>, <1>))]
pub fn wgmma_tf32_tile<const A_REGS: u32>(
    a: &TensorMap<f32, 2>,
    a_words: &[u32],
    b: &TensorMap<f32, 2>,
    c: &mut [f32],
    k: u32,
) {
    let smem = dynamic_shared::<f32, { 256 + 2 * 64 * 32 }>();
    let bars = shared_array::<u64, 1>();
    let at = align_index(smem, 1024);
    let t = thread_idx().x;
    if t == 0 {
        mbarrier_init(bars, 0, 1);
        fence_proxy_async();
    }
    sync_threads();
    let warp = t / 32;
    let g = (t % 32) / 4;
    let q = t % 4;
    let top = (16 * warp + g) * k + q;
    let low = top + 8 * k;
    let mut acc = [0.0f32; 32];
    let mut phase = 0u32;
    let mut k0 = 0u32;
    while k0 < k {
        if t == 0 {
            mbarrier_arrive_expect_tx(bars, 0, 2 * 64 * 128);
            tma_load(smem, at, a, [k0, 0], bars, 0);
            tma_load(smem, at + 64 * 32, b, [k0, 0], bars, 0);
        }
        while !mbarrier_try_wait_parity(bars, 0, phase) {}
        wgmma_fence();
        for ks in [0, 1, 2, 3] {
            // One k8 step is 32 bytes along the swizzled row; 8-row groups are 1024 apart.
            let db = wgmma_desc(smem, at + 64 * 32 + ks * 8, 16, 1024, 128);
            if A_REGS == 1 {
                let w = k0 + 8 * ks;
                let frag = [
                    a_words[top + w],
                    a_words[low + w],
                    a_words[top + w + 4],
                    a_words[low + w + 4],
                ];
                wgmma_tf32_regs(&mut acc, frag, db, true);
            } else {
                let da = wgmma_desc(smem, at + ks * 8, 16, 1024, 128);
                wgmma_tf32(&mut acc, da, db, true);
            }
        }
        wgmma_commit_group();
        wgmma_wait_group(0);
        sync_threads();
        phase ^= 1;
        k0 += 32;
    }
    for i in 0..32 {
        let row = 16 * warp + g + 8 * ((i / 2) % 2);
        let col = 8 * (i / 4) + 2 * q + i % 2;
        c[row * 64 + col] = acc[i];
    }
}

/// `c[64 × 64] = a[64 × k] · b[64 × k]ᵀ` in fp8 by one warpgroup, each 128-deep slab (128
/// bytes, 32 words of four values, lowest byte first along k) by TMA and read in four k32
/// steps. `AB` picks the formats (0: e4m3·e4m3, 1:
/// e4m3·e5m2, 2: e5m2·e4m3, 3: e5m2·e5m2); with `A_REGS`, A comes from `a_words` (four bytes a
/// word, k contiguous) as each warp's m16n8k32 fragment.
#[kernel(
    crate = crate::common::paths,
    block = 128,
    needs = sm_90a,
    instances(<0, 0>, <1, 0>, <2, 0>, <3, 0>, <1, 1>)
)]
pub fn wgmma_fp8_tile<const AB: u32, const A_REGS: u32>(
    a: &TensorMap<u32, 2>,
    a_words: &[u32],
    b: &TensorMap<u32, 2>,
    c: &mut [f32],
    k: u32,
) {
    let smem = dynamic_shared::<u32, { 256 + 2 * 64 * 32 }>();
    let bars = shared_array::<u64, 1>();
    let at = align_index(smem, 1024);
    let t = thread_idx().x;
    if t == 0 {
        mbarrier_init(bars, 0, 1);
        fence_proxy_async();
    }
    sync_threads();
    let warp = t / 32;
    let g = (t % 32) / 4;
    let q = t % 4;
    let top = (16 * warp + g) * (k / 4) + q;
    let low = top + 8 * (k / 4);
    let mut acc = [0.0f32; 32];
    let mut phase = 0u32;
    let mut k0 = 0u32;
    while k0 < k {
        if t == 0 {
            mbarrier_arrive_expect_tx(bars, 0, 2 * 64 * 128);
            tma_load(smem, at, a, [k0 / 4, 0], bars, 0);
            tma_load(smem, at + 64 * 32, b, [k0 / 4, 0], bars, 0);
        }
        while !mbarrier_try_wait_parity(bars, 0, phase) {}
        wgmma_fence();
        for ks in [0, 1, 2, 3] {
            let db = wgmma_desc(smem, at + 64 * 32 + ks * 8, 16, 1024, 128);
            if A_REGS == 1 {
                let w = (k0 + 32 * ks) / 4;
                let frag = [
                    a_words[top + w],
                    a_words[low + w],
                    a_words[top + w + 4],
                    a_words[low + w + 4],
                ];
                wgmma_e4m3_e5m2_regs(&mut acc, frag, db, true);
            } else {
                let da = wgmma_desc(smem, at + ks * 8, 16, 1024, 128);
                if AB == 0 {
                    wgmma_e4m3_e4m3(&mut acc, da, db, true);
                } else if AB == 1 {
                    wgmma_e4m3_e5m2(&mut acc, da, db, true);
                } else if AB == 2 {
                    wgmma_e5m2_e4m3(&mut acc, da, db, true);
                } else {
                    wgmma_e5m2_e5m2(&mut acc, da, db, true);
                }
            }
        }
        wgmma_commit_group();
        wgmma_wait_group(0);
        sync_threads();
        phase ^= 1;
        k0 += 128;
    }
    for i in 0..32 {
        let row = 16 * warp + g + 8 * ((i / 2) % 2);
        let col = 8 * (i / 4) + 2 * q + i % 2;
        c[row * 64 + col] = acc[i];
    }
}

/// Seeded quarters in [-2, 2): exact in tf32, e4m3 and e5m2, and their sums of products exact
/// in f32 at these depths.
fn operand(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 60) as i32 - 8) as f32 / 4.0
        })
        .collect()
}

/// The fp8 bits of `v`, which must be exact in the format: `exp_bits` of exponent (bias
/// `2^(exp_bits - 1) - 1`) and `8 - 1 - exp_bits` of mantissa; zero and normal values only.
fn fp8_bits(v: f32, exp_bits: u32) -> u8 {
    let man_bits = 7 - exp_bits;
    let sign = if v < 0.0 { 0x80u8 } else { 0 };
    if v == 0.0 {
        return sign;
    }
    let a = v.abs();
    let e = a.log2().floor() as i32;
    let man = (a / 2f32.powi(e) - 1.0) * (1 << man_bits) as f32;
    assert_eq!(man.fract(), 0.0, "{v} is not exact in the format");
    let biased = e + (1 << (exp_bits - 1)) - 1;
    assert!(biased > 0, "{v} is subnormal in the format");
    sign | ((biased as u8) << man_bits) | man as u8
}

fn product(a: &[f32], b: &[f32], k: usize) -> Vec<f64> {
    let mut c = vec![0.0; 64 * 64];
    for i in 0..64 {
        for j in 0..64 {
            c[i * 64 + j] = (0..k)
                .map(|p| a[i * k + p] as f64 * b[j * k + p] as f64)
                .sum();
        }
    }
    c
}

fn slabs(cols: usize, box_cols: u32) -> TensorTiling {
    TensorTiling::matrix(
        64,
        cols as u64,
        cols as u64,
        64,
        box_cols,
        TensorSwizzle::B128,
    )
}

#[test]
fn a_tf32_wgmma_matches_the_cpu_product_with_a_by_descriptor_or_in_registers() -> Result<(), Error>
{
    let stream = Device::emulator_for(Target::Sm90a).stream()?;
    let k = 64;
    let a = operand(64 * k, 3);
    let b = operand(64 * k, 7);
    let da = Buffer::from_host(&stream, &a)?;
    let words: Vec<u32> = a.iter().map(|x| x.to_bits()).collect();
    let dwords = Buffer::from_host(&stream, &words)?;
    let db = Buffer::from_host(&stream, &b)?;
    let ma = TensorMap::tiled(da.view(), &slabs(k, 32))?;
    let mb = TensorMap::tiled(db.view(), &slabs(k, 32))?;
    let want = product(&a, &b, k);
    for a_regs in [0u32, 1] {
        let mut c = Buffer::from_host(&stream, &vec![f32::NAN; 64 * 64])?;
        let cfg = LaunchConfig::linear(1, 128).with_dynamic_shared(SHARED_BYTES);
        wgmma_tf32_tile(&stream, cfg, a_regs, &ma, &dwords, &mb, &mut c, k as u32)?;
        let c = c.to_host(&stream)?;
        for (i, (&got, &want)) in c.iter().zip(&want).enumerate() {
            assert_eq!(
                got as f64,
                want,
                "A in registers: {a_regs}, c[{}][{}]",
                i / 64,
                i % 64
            );
        }
    }
    Ok(())
}

#[test]
fn a_tf32_wgmma_reads_only_the_top_19_bits_of_each_operand() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90a).stream()?;
    let k = 32;
    // 1 + 2^-12 has a mantissa bit below tf32's ten: the tensor core drops it.
    let a = vec![1.0 + 2f32.powi(-12); 64 * k];
    let b = vec![1.0f32; 64 * k];
    let da = Buffer::from_host(&stream, &a)?;
    let dwords = Buffer::from_host(&stream, &vec![0u32; 64 * k])?;
    let db = Buffer::from_host(&stream, &b)?;
    let ma = TensorMap::tiled(da.view(), &slabs(k, 32))?;
    let mb = TensorMap::tiled(db.view(), &slabs(k, 32))?;
    let mut c = Buffer::from_host(&stream, &vec![f32::NAN; 64 * 64])?;
    let cfg = LaunchConfig::linear(1, 128).with_dynamic_shared(SHARED_BYTES);
    wgmma_tf32_tile(&stream, cfg, 0, &ma, &dwords, &mb, &mut c, k as u32)?;
    assert!(c.to_host(&stream)?.iter().all(|&x| x == k as f32));
    Ok(())
}

#[test]
fn an_fp8_wgmma_matches_the_cpu_product_for_every_pairing_of_formats() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90a).stream()?;
    let k = 128;
    let a = operand(64 * k, 5);
    let b = operand(64 * k, 11);
    let want = product(&a, &b, k);
    // Four values a word, the first in the lowest byte.
    let encode = |v: &[f32], exp_bits: u32| -> Vec<u32> {
        v.chunks(4)
            .map(|w| u32::from_le_bytes(std::array::from_fn(|i| fp8_bits(w[i], exp_bits))))
            .collect()
    };
    // (AB, A in registers, A's exponent bits, B's).
    for (ab, a_regs, ea, eb) in [
        (0u32, 0u32, 4, 4),
        (1, 0, 4, 5),
        (2, 0, 5, 4),
        (3, 0, 5, 5),
        (1, 1, 4, 5),
    ] {
        let da = Buffer::from_host(&stream, &encode(&a, ea))?;
        let db = Buffer::from_host(&stream, &encode(&b, eb))?;
        let ma = TensorMap::tiled(da.view(), &slabs(k / 4, 32))?;
        let mb = TensorMap::tiled(db.view(), &slabs(k / 4, 32))?;
        let mut c = Buffer::from_host(&stream, &vec![f32::NAN; 64 * 64])?;
        let cfg = LaunchConfig::linear(1, 128).with_dynamic_shared(SHARED_BYTES);
        wgmma_fp8_tile(&stream, cfg, ab, a_regs, &ma, &da, &mb, &mut c, k as u32)?;
        let c = c.to_host(&stream)?;
        for (i, (&got, &want)) in c.iter().zip(&want).enumerate() {
            assert_eq!(
                got as f64,
                want,
                "formats {ab}, A in registers: {a_regs}, c[{}][{}]",
                i / 64,
                i % 64
            );
        }
    }
    Ok(())
}

#[test]
fn tf32_and_fp8_wgmma_emit_their_shapes_and_assemble_without_spills() {
    let kernels = WGMMA_TF32_TILE_INSTANCES
        .iter()
        .map(|k| (k, "k8.f32.tf32.tf32"))
        .chain(WGMMA_FP8_TILE_INSTANCES.iter().zip([
            "k32.f32.e4m3.e4m3",
            "k32.f32.e4m3.e5m2",
            "k32.f32.e5m2.e4m3",
            "k32.f32.e5m2.e5m2",
            "k32.f32.e4m3.e5m2",
        ]));
    let ptxas = kernel_dsl::ptxas::Ptxas::find();
    if ptxas.is_none() {
        eprintln!("no ptxas found (set PTXKIT_PTXAS): checking the PTX text only");
    }
    for (k, shape) in kernels {
        let ptx = (k.emit.expect("an emit function"))(Target::Sm90a)
            .expect("the kernel emits for sm_90a");
        let want = format!("wgmma.mma_async.sync.aligned.m64n64{shape}");
        assert!(ptx.contains(&want), "no `{want}` in\n{ptx}");
        assert!((k.emit.expect("an emit function"))(Target::Sm90).is_err());
        if let Some(ptxas) = &ptxas {
            let out = ptxas.assemble(&ptx).expect("ptxas accepts the module");
            let r = &out.reports[0];
            assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{}", out.log);
        }
    }
}
