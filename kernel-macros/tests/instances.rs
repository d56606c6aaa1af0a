//! Generic kernels: each listed instance becomes its own entry, static and typed launcher;
//! problem sizes stay runtime parameters.

mod common;

use kernel_dsl::{BlockContract, ParamKind, ScalarType};
use kernel_macros::{device, kernel};
use kernel_runtime::{Bf16, Buffer, Device, LaunchConfig};

#[device(crate = crate::common::paths)]
fn silu(v: f32) -> f32 {
    v / (1.0 + (-v).exp())
}

/// `y = silu(x)` for f32 or bf16 storage, in blocks of `BLOCK` threads.
#[kernel(crate = crate::common::paths, instances(<f32, 256>, <bf16, 128>), block = BLOCK)]
pub fn silu_rows<T: Element, const BLOCK: u32>(x: &[T], y: &mut [T], n: u32) {
    let i = block_idx().x * BLOCK + thread_idx().x;
    if i < n {
        y[i] = silu(x[i] as f32) as T;
    }
}

#[test]
fn each_instance_has_its_own_entry_block_contract_and_element_type() {
    assert_eq!(SILU_ROWS__F32_256.meta.entry, "silu_rows__f32_256");
    assert_eq!(SILU_ROWS__BF16_128.meta.entry, "silu_rows__bf16_128");
    assert_eq!(
        SILU_ROWS__F32_256.meta.block,
        BlockContract::Exactly([256, 1, 1])
    );
    assert_eq!(
        SILU_ROWS__BF16_128.meta.block,
        BlockContract::Exactly([128, 1, 1])
    );
    assert_eq!(
        SILU_ROWS__BF16_128.meta.params[0].kind,
        ParamKind::Slice {
            elem: ScalarType::Bf16,
            mutable: false
        }
    );
    assert_eq!(
        SILU_ROWS__BF16_128.meta.params[2].kind,
        ParamKind::Scalar(ScalarType::U32)
    );
    let entries: Vec<_> = SILU_ROWS_INSTANCES
        .iter()
        .map(|k| k.meta.entry.to_string())
        .collect();
    assert_eq!(entries, ["silu_rows__f32_256", "silu_rows__bf16_128"]);
}

#[test]
fn both_instances_compute_silu_at_an_odd_size() -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let n = 1001u32;
    let x: Vec<f32> = (0..n)
        .map(|k| ((k * 37 % 101) as f32 - 50.0) / 7.0)
        .collect();
    let silu = |v: f32| v / (1.0 + (-v).exp());

    let dx = Buffer::from_host(&stream, &x)?;
    let mut dy = Buffer::from_host(&stream, &vec![f32::NAN; n as usize])?;
    silu_rows__f32_256(&stream, LaunchConfig::for_elements(n, 256), &dx, &mut dy, n)?;
    for (k, got) in dy.to_host(&stream)?.into_iter().enumerate() {
        let want = silu(x[k]);
        assert!(
            (got - want).abs() <= 1e-5 * want.abs().max(1.0),
            "f32 at {k}: {got} vs {want}"
        );
    }

    let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let dxb = Buffer::from_host(&stream, &xb)?;
    let mut dyb = Buffer::from_host(&stream, &vec![Bf16::from_f32(f32::NAN); n as usize])?;
    silu_rows__bf16_128(
        &stream,
        LaunchConfig::for_elements(n, 128),
        &dxb,
        &mut dyb,
        n,
    )?;
    for (k, got) in dyb.to_host(&stream)?.into_iter().enumerate() {
        let want = silu(xb[k].to_f32());
        let got = got.to_f32();
        assert!(
            (got - want).abs() <= 1e-2 * want.abs().max(1.0),
            "bf16 at {k}: {got} vs {want}"
        );
    }
    Ok(())
}

/// A kernel that accepts any block of at most `THREADS` threads.
#[kernel(crate = crate::common::paths, instances(<64>, <256>), max_threads = THREADS)]
pub fn bounded_copy<const THREADS: u32>(x: &[u32], y: &mut [u32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = x[i];
    }
}

#[test]
fn max_threads_becomes_an_upper_bound_contract_and_maxntid() {
    assert_eq!(BOUNDED_COPY__64.meta.block, BlockContract::AtMost(64));
    assert_eq!(BOUNDED_COPY__256.meta.block, BlockContract::AtMost(256));
    let ptx =
        (BOUNDED_COPY__64.emit.expect("emit function"))(kernel_dsl::Target::Sm89).expect("emits");
    assert!(ptx.contains(".maxntid 64, 1, 1"), "{ptx}");
}

/// `y = x · s` over `n` elements, `W` at a time, for each element type and width of the cross
/// product; `W` depends on `T`.
#[kernel(crate = crate::common::paths, instances(T in [f32, bf16], W in [1, T::VEC]))]
pub fn scale_by<T: Element, const W: u32>(x: &[T], y: &mut [T], s: T, n: u32) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) * W;
    if i + W <= n {
        let mut v = x.load_vec::<W>(i);
        for k in 0..W {
            v[k] = ((v[k] as f32) * (s as f32)) as T;
        }
        y.store_vec::<W>(i, v);
    }
}

#[test]
fn a_cross_product_builds_every_combination_with_dependent_constants() {
    let entries: Vec<_> = SCALE_BY_INSTANCES
        .iter()
        .map(|k| k.meta.entry.to_string())
        .collect();
    assert_eq!(
        entries,
        [
            "scale_by__f32_1",
            "scale_by__f32_4",
            "scale_by__bf16_1",
            "scale_by__bf16_8"
        ]
    );
}

/// `U` follows from `W` (one value per instance): a chosen axis adds no combinations.
#[kernel(
    crate = crate::common::paths,
    instances(W in [1, 4], U in [if W == 1 { 8 } else { 2 }])
)]
pub fn unrolled_copy<const W: u32, const U: u32>(x: &[f32], y: &mut [f32]) {
    let base = thread_idx().x * (W * U);
    for u in 0..U {
        y.store_vec::<W>(base + u * W, x.load_vec::<W>(base + u * W));
    }
}

#[test]
fn an_axis_may_choose_its_value_from_the_axes_before_it() {
    let entries: Vec<_> = UNROLLED_COPY_INSTANCES
        .iter()
        .map(|k| k.meta.entry.to_string())
        .collect();
    assert_eq!(entries, ["unrolled_copy__1_8", "unrolled_copy__4_2"]);
}

#[test]
fn the_generic_launcher_picks_the_instance_from_the_type_and_constants(
) -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let n = 64u32;
    let x: Vec<f32> = (0..n).map(|k| k as f32 - 20.0).collect();
    let want: Vec<f32> = x.iter().map(|v| v * 0.5).collect();
    let dx = Buffer::from_host(&stream, &x)?;
    for w in [1u32, 4] {
        let mut dy = Buffer::from_host(&stream, &vec![f32::NAN; n as usize])?;
        scale_by(
            &stream,
            LaunchConfig::for_elements(n / w, 32),
            w,
            &dx,
            &mut dy,
            0.5,
            n,
        )?;
        assert_eq!(dy.to_host(&stream)?, want, "f32 × {w}");
    }
    let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let dxb = Buffer::from_host(&stream, &xb)?;
    let mut dyb = Buffer::from_host(&stream, &vec![Bf16::from_f32(f32::NAN); n as usize])?;
    let half = Bf16::from_f32(0.5);
    scale_by(
        &stream,
        LaunchConfig::for_elements(n / 8, 32),
        8,
        &dxb,
        &mut dyb,
        half,
        n,
    )?;
    let got: Vec<f32> = dyb.to_host(&stream)?.iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, want, "bf16 × 8");

    // bf16 was built with widths 1 and 8 only: 4 is refused before anything launches.
    let e = scale_by(
        &stream,
        LaunchConfig::for_elements(n / 4, 32),
        4,
        &dxb,
        &mut dyb,
        half,
        n,
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            kernel_runtime::Error::NoInstance {
                kernel: "scale_by",
                ..
            }
        ),
        "{msg}"
    );
    assert!(msg.contains("<bf16, 4>"), "{msg}");
    assert!(
        msg.contains("<f32, 1>, <f32, 4>, <bf16, 1>, <bf16, 8>"),
        "{msg}"
    );
    Ok(())
}

/// Shifts of typed literals by const parameters fold: `1u32 << S` sizes a register array and
/// bounds an unrolled loop whose variable indexes it, and `32u32 >> S` scales it.
#[kernel(crate = crate::common::paths, instances(<1>, <3>))]
pub fn shifted_sizes<const S: u32>(y: &mut [u32]) {
    let mut a = [0u32; 1u32 << S];
    for r in 0..(1u32 << S) {
        a[r] = r * (32u32 >> S);
    }
    for r in 0..(1u32 << S) {
        y[r] = a[r];
    }
}

#[test]
fn shifts_by_const_parameters_fold_into_sizes_bounds_and_indices(
) -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    for (s, want) in [(1u32, vec![0u32, 16]), (3, (0..8).map(|r| r * 4).collect())] {
        let mut y = Buffer::<u32>::zeros(&stream, want.len())?;
        shifted_sizes(&stream, LaunchConfig::linear(1, 1), s, &mut y)?;
        assert_eq!(y.to_host(&stream)?, want, "S = {s}");
    }
    Ok(())
}
