//! The Hopper intrinsics on the emulator: tensor-map parameters, mbarriers, the bulk tensor
//! copy, `wgmma` descriptors over 128-byte swizzled tiles and `wgmma.mma_async` into a
//! register accumulator carried across a loop, checked against a CPU product; and the PTX
//! they emit, assembled by ptxas where one is found.

mod common;

use kernel_dsl::Target;
use kernel_macros::kernel;
use kernel_runtime::{
    Bf16, Buffer, Device, Error, LaunchConfig, TensorMap, TensorSwizzle, TensorTiling,
};

/// Depth of one k-slab: 64 bf16, one 128-byte swizzled row.
const BK: usize = 64;
/// Bytes of dynamic shared memory: 1 KiB of slack to align the tiles, then A's and B's slabs.
const SHARED_BYTES: u32 = 1024 + 2 * 64 * BK as u32 * 2;

/// `c[64 × 64] = a[64 × k] · b[64 × k]ᵀ` (both k-contiguous) by one warpgroup: each k-slab of
/// both operands lands by TMA on one mbarrier, then four `wgmma` k16 steps read it.
#[kernel(crate = crate::common::paths, block = 128, needs = sm_90a)]
pub fn wgmma_tile_64x64(a: &TensorMap<bf16, 2>, b: &TensorMap<bf16, 2>, c: &mut [f32], k: u32) {
    let smem = dynamic_shared::<bf16, { 512 + 2 * 64 * 64 }>();
    let bars = shared_array::<u64, 1>();
    // The 128-byte swizzle repeats every 1024 bytes: the tiles start on that boundary.
    let at = align_index(smem, 1024);
    let t = thread_idx().x;
    if t == 0 {
        mbarrier_init(bars, 0, 1);
        fence_proxy_async();
    }
    sync_threads();
    let mut acc = [0.0f32; 32];
    let mut phase = 0u32;
    let mut k0 = 0u32;
    while k0 < k {
        if t == 0 {
            mbarrier_arrive_expect_tx(bars, 0, 2 * 64 * 64 * 2);
            tma_load(smem, at, a, [k0, 0], bars, 0);
            tma_load(smem, at + 64 * 64, b, [k0, 0], bars, 0);
        }
        while !mbarrier_try_wait_parity(bars, 0, phase) {}
        wgmma_fence();
        for ks in [0, 1, 2, 3] {
            // One k16 step is 32 bytes along the swizzled row; 8-row groups are 1024 apart.
            let da = wgmma_desc(smem, at + ks * 16, 16, 1024, 128);
            let db = wgmma_desc(smem, at + 64 * 64 + ks * 16, 16, 1024, 128);
            wgmma_bf16(&mut acc, da, db, true, false, false);
        }
        wgmma_commit_group();
        wgmma_wait_group(0);
        // Every thread is done with the slab before the next copy overwrites it.
        sync_threads();
        phase ^= 1;
        k0 += 64;
    }
    let warp = t / 32;
    let g = (t % 32) / 4;
    let q = t % 4;
    for i in 0..32 {
        let row = 16 * warp + g + 8 * ((i / 2) % 2);
        let col = 8 * (i / 4) + 2 * q + i % 2;
        c[row * 64 + col] = acc[i];
    }
}

/// Seeded values that are exact in bf16, never all zero.
fn operand(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 59) as i32 - 16) as f32 / 8.0
        })
        .collect()
}

fn map(buf: &Buffer<Bf16>, k: usize) -> Result<TensorMap, Error> {
    TensorMap::tiled(
        buf.view(),
        &TensorTiling::matrix(64, k as u64, k as u64, 64, BK as u32, TensorSwizzle::B128),
    )
}

#[test]
fn a_tma_fed_wgmma_tile_matches_the_cpu_product_over_several_k_slabs() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90a).stream()?;
    let k = 3 * BK;
    let a = operand(64 * k, 3);
    let b = operand(64 * k, 7);
    let to_bf16 = |v: &[f32]| v.iter().map(|&x| Bf16::from_f32(x)).collect::<Vec<_>>();
    let da = Buffer::from_host(&stream, &to_bf16(&a))?;
    let db = Buffer::from_host(&stream, &to_bf16(&b))?;
    let (ma, mb) = (map(&da, k)?, map(&db, k)?);
    let mut c = Buffer::from_host(&stream, &vec![f32::NAN; 64 * 64])?;
    let cfg = LaunchConfig::linear(1, 128).with_dynamic_shared(SHARED_BYTES);
    wgmma_tile_64x64(&stream, cfg, &ma, &mb, &mut c, k as u32)?;
    let c = c.to_host(&stream)?;
    for i in 0..64 {
        for j in 0..64 {
            let want: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[j * k + p] as f64)
                .sum();
            // Products of eighths sum exactly in f32 at these magnitudes.
            assert_eq!(c[i * 64 + j] as f64, want, "c[{i}][{j}]");
        }
    }
    Ok(())
}

/// `c[64 × 64] = a[64 × k] · b` by one warpgroup with A in registers: each warp builds its 16
/// rows' m16n8k16 A fragments from `a`'s bf16 pairs (`a_words`, k contiguous), and B's slabs
/// land by TMA, read k-contiguous (`b` stored `64 × k`) or MN-major (`b` stored `k × 64`).
#[kernel(crate = crate::common::paths, block = 128, needs = sm_90a, instances(<0>, <1>))]
pub fn wgmma_regs_tile_64x64<const B_MN: u32>(
    a_words: &[u32],
    b: &TensorMap<bf16, 2>,
    c: &mut [f32],
    k: u32,
) {
    let smem = dynamic_shared::<bf16, { 512 + 64 * 64 }>();
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
    let top = (16 * warp + g) * k / 2 + q;
    let low = top + 4 * k;
    let mut acc = [0.0f32; 32];
    let mut phase = 0u32;
    let mut k0 = 0u32;
    while k0 < k {
        if t == 0 {
            mbarrier_arrive_expect_tx(bars, 0, 64 * 64 * 2);
            if B_MN == 1 {
                tma_load(smem, at, b, [0, k0], bars, 0);
            } else {
                tma_load(smem, at, b, [k0, 0], bars, 0);
            }
        }
        while !mbarrier_try_wait_parity(bars, 0, phase) {}
        wgmma_fence();
        for ks in [0, 1, 2, 3] {
            let w = (k0 + 16 * ks) / 2;
            let frag = [
                a_words[top + w],
                a_words[low + w],
                a_words[top + w + 4],
                a_words[low + w + 4],
            ];
            if B_MN == 1 {
                // 16 k rows of 128 bytes a step; 8-row groups 1024 bytes apart.
                let db = wgmma_desc(smem, at + ks * 1024, 8192, 1024, 128);
                wgmma_bf16_regs(&mut acc, frag, db, true, true);
            } else {
                let db = wgmma_desc(smem, at + ks * 16, 16, 1024, 128);
                wgmma_bf16_regs(&mut acc, frag, db, true, false);
            }
        }
        wgmma_commit_group();
        wgmma_wait_group(0);
        sync_threads();
        phase ^= 1;
        k0 += 64;
    }
    for i in 0..32 {
        let row = 16 * warp + g + 8 * ((i / 2) % 2);
        let col = 8 * (i / 4) + 2 * q + i % 2;
        c[row * 64 + col] = acc[i];
    }
}

#[test]
fn a_wgmma_with_a_in_registers_matches_the_cpu_product_for_both_b_layouts() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90a).stream()?;
    let k = 2 * BK;
    let a = operand(64 * k, 5);
    let b = operand(64 * k, 11);
    let bits = |x: f32| Bf16::from_f32(x).to_bits() as u32;
    let words: Vec<u32> = a.chunks(2).map(|p| bits(p[0]) | bits(p[1]) << 16).collect();
    let da = Buffer::from_host(&stream, &words)?;
    let db = Buffer::from_host(
        &stream,
        &b.iter().map(|&x| Bf16::from_f32(x)).collect::<Vec<_>>(),
    )?;
    for b_mn in [0u32, 1] {
        // `b` as stored: 64 rows of k (k-contiguous) or k rows of 64 (MN-major), one 64 × 64
        // box a slab either way.
        let (rows, cols) = if b_mn == 1 { (k, 64) } else { (64, k) };
        let tiling = TensorTiling::matrix(
            rows as u64,
            cols as u64,
            cols as u64,
            64,
            64,
            TensorSwizzle::B128,
        );
        let mb = TensorMap::tiled(db.view(), &tiling)?;
        let mut c = Buffer::from_host(&stream, &vec![f32::NAN; 64 * 64])?;
        let cfg = LaunchConfig::linear(1, 128).with_dynamic_shared(1024 + 64 * 64 * 2);
        wgmma_regs_tile_64x64(&stream, cfg, b_mn, &da, &mb, &mut c, k as u32)?;
        let c = c.to_host(&stream)?;
        for i in 0..64 {
            for j in 0..64 {
                let bj = |p: usize| {
                    if b_mn == 1 {
                        b[p * 64 + j]
                    } else {
                        b[j * k + p]
                    }
                };
                let want: f64 = (0..k).map(|p| a[i * k + p] as f64 * bj(p) as f64).sum();
                assert_eq!(c[i * 64 + j] as f64, want, "B layout {b_mn}: c[{i}][{j}]");
            }
        }
    }
    Ok(())
}

#[test]
fn a_tensor_map_of_another_element_type_is_refused_before_launch() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90a).stream()?;
    let k = BK;
    let good = Buffer::from_host(&stream, &vec![Bf16::from_f32(1.0); 64 * k])?;
    let wrong = Buffer::<f32>::zeros(&stream, 64 * k)?;
    let ma = map(&good, k)?;
    let mf = TensorMap::tiled(
        wrong.view(),
        &TensorTiling::matrix(64, k as u64, k as u64, 64, 32, TensorSwizzle::B128),
    )?;
    let mut c = Buffer::from_host(&stream, &vec![f32::NAN; 64 * 64])?;
    let cfg = LaunchConfig::linear(1, 128).with_dynamic_shared(SHARED_BYTES);
    let e = wgmma_tile_64x64(&stream, cfg, &ma, &mf, &mut c, k as u32).unwrap_err();
    assert!(
        matches!(&e, Error::TensorMapParam { param, .. } if param == "b"),
        "{e}"
    );
    assert!(c.to_host(&stream)?.iter().all(|v| v.is_nan()));
    Ok(())
}

#[test]
fn a_kernel_that_needs_sm_90a_is_built_only_for_targets_that_run_it() {
    // This crate builds for sm_80 alone, which cannot run `wgmma`: no module and no error.
    assert!(WGMMA_TILE_64X64.embedded_targets().is_empty());
    let ptx = (WGMMA_TILE_64X64.emit.expect("an emit function"))(Target::Sm90a)
        .expect("the kernel emits for sm_90a");
    for want in [
        ".target sm_90a",
        "cp.async.bulk.tensor.2d",
        "mbarrier.try_wait.parity",
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
        "fence.proxy.async",
    ] {
        assert!(ptx.contains(want), "no `{want}` in\n{ptx}");
    }
    assert!((WGMMA_TILE_64X64.emit.expect("an emit function"))(Target::Sm90).is_err());
}

#[test]
fn the_accumulator_stays_in_registers_across_the_k_loop() {
    let Some(ptxas) = kernel_dsl::ptxas::Ptxas::find() else {
        eprintln!("skipping: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
    let kernels = [&WGMMA_TILE_64X64]
        .into_iter()
        .chain(WGMMA_REGS_TILE_64X64_INSTANCES);
    for k in kernels {
        let ptx = (k.emit.expect("an emit function"))(Target::Sm90a)
            .expect("the kernel emits for sm_90a");
        let out = ptxas.assemble(&ptx).expect("ptxas accepts the module");
        let r = &out.reports[0];
        assert_eq!(
            (r.spill_stores, r.spill_loads, r.stack_bytes),
            (0, 0, 0),
            "{}",
            out.log
        );
        assert!(!out.log.contains("warning"), "{}", out.log);
    }
}

/// Two warpgroups: each thread records its warpgroup, the groups trade registers, and warp 0
/// stores four 8×8 matrices with `stmatrix` and loads them back with `ldmatrix`; inside
/// `griddepcontrol`'s wait and early launch, which a lone grid passes through.
#[kernel(crate = crate::common::paths, block = 256, needs = sm_90a)]
pub fn warpgroup_roles(out: &mut [u32]) {
    griddep_wait();
    let t = thread_idx().x;
    let wg = warpgroup_idx();
    if wg == 0 {
        setmaxnreg_inc(232);
    } else {
        setmaxnreg_dec(40);
    }
    let tile = shared_array::<u32, 128>();
    if t < 32 {
        // Lane l names row l % 8 of matrix l / 8, four words a row, rows one after another.
        stmatrix_x4(
            tile,
            4 * t,
            [4 * t + 1, 4 * t + 2, 4 * t + 3, 4 * t + 65536],
        );
    }
    sync_threads();
    if t < 32 {
        let back = ldmatrix_x4(tile, 4 * t);
        for j in 0..4 {
            out[256 + 4 * t + j] = back[j];
        }
    }
    if t < 128 {
        out[384 + t] = tile[t];
    }
    out[t] = wg;
    griddep_launch_dependents();
}

#[test]
fn warpgroup_index_register_trade_and_stmatrix_run_on_the_emulator() -> Result<(), Error> {
    let stream = Device::emulator_for(Target::Sm90a).stream()?;
    let mut out = Buffer::from_host(&stream, &[u32::MAX; 512])?;
    warpgroup_roles(&stream, LaunchConfig::linear(1, 256), &mut out)?;
    let out = out.to_host(&stream)?;
    for t in 0..256u32 {
        assert_eq!(out[t as usize], t / 128, "warpgroup of thread {t}");
    }
    let value = |l: u32, j: u32| [4 * l + 1, 4 * l + 2, 4 * l + 3, 4 * l + 65536][j as usize];
    for l in 0..32u32 {
        for j in 0..4u32 {
            // `ldmatrix` undoes `stmatrix`: each lane gets its own registers back.
            assert_eq!(
                out[(256 + 4 * l + j) as usize],
                value(l, j),
                "lane {l} reg {j}"
            );
            // Matrix j's row r holds lanes 4r..4r+3's register j: word 32j + l.
            assert_eq!(
                out[(384 + 32 * j + l) as usize],
                value(l, j),
                "tile word {}",
                32 * j + l
            );
        }
    }
    Ok(())
}
