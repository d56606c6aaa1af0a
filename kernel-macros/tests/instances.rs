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
pub fn silu_rows<T: Dtype, const BLOCK: u32>(x: &[T], y: &mut [T], n: u32) {
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
