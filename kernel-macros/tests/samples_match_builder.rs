//! The `#[kernel]` versions of the kernel-dsl samples against the builder versions: same
//! parameters and block contracts, and the same results on the emulator for seeded inputs.

mod common;

use common::kernels::*;
use kernel_dsl::{KernelArtifacts, KernelMeta, ParamKind, ParamMeta, Target};
use kernel_runtime::{Buffer, Device, LaunchConfig};
use std::borrow::Cow;

fn seeded(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Artifacts for a builder kernel, emitted at run time (leaked: the runtime wants `'static`).
fn builder_artifacts(kernel: kernel_dsl::ir::Kernel) -> &'static KernelArtifacts {
    let params: Vec<ParamMeta> = kernel
        .params
        .iter()
        .map(|p| ParamMeta {
            name: Cow::Owned(p.name.clone()),
            kind: match p.ty {
                kernel_dsl::ir::ParamType::Scalar(t) => ParamKind::Scalar(t),
                kernel_dsl::ir::ParamType::GlobalPtr { elem, mutable } => {
                    ParamKind::Slice { elem, mutable }
                }
                kernel_dsl::ir::ParamType::TensorMap => ParamKind::TensorMap,
            },
        })
        .collect();
    let target = Device::emulator().target();
    let ptx: &'static str = Box::leak(
        kernel_dsl::emit::emit(&kernel, target)
            .expect("sample emits")
            .into_boxed_str(),
    );
    Box::leak(Box::new(KernelArtifacts {
        meta: KernelMeta {
            entry: Cow::Owned(kernel.name.clone()),
            params: Cow::Owned(params),
            block: kernel.perf.block_contract(),
            static_shared_bytes: kernel.static_shared_bytes(),
            uses_dynamic_shared: kernel.dynamic_shared.is_some(),
            min_dynamic_shared_bytes: kernel.dynamic_shared_min_bytes,
            waits_on_prior_grid: kernel.waits_on_prior_grid(),
            cluster: kernel.perf.reqnctapercluster,
        },
        ptx: Cow::Owned(vec![(target, kernel_dsl::Ptx::Text(ptx))]),
        cubins: Cow::Borrowed(&[]),
        emit: None,
        ir: None,
    }))
}

fn same_interface(ours: &KernelArtifacts, theirs: kernel_dsl::ir::Kernel) {
    let b = builder_artifacts(theirs);
    assert_eq!(ours.meta.entry, b.meta.entry);
    assert_eq!(ours.meta.params, b.meta.params);
    assert_eq!(ours.meta.block, b.meta.block);
    assert_eq!(ours.meta.static_shared_bytes, b.meta.static_shared_bytes);
}

#[test]
fn macro_samples_declare_the_same_parameters_and_block_contracts_as_the_builder() {
    same_interface(&VECTOR_ADD, kernel_dsl::samples::vector_add());
    same_interface(&SAXPY, kernel_dsl::samples::saxpy());
    same_interface(&BLOCK_REDUCE_SUM, kernel_dsl::samples::block_reduce_sum());
    same_interface(&TRANSPOSE_32X32, kernel_dsl::samples::transpose_32x32());
}

#[test]
fn vector_add_and_saxpy_agree_with_the_builder_and_the_cpu_on_the_emulator(
) -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let n = 1000usize;
    let (a, b) = (seeded(n, 1), seeded(n, 2));
    let da = Buffer::from_host(&stream, &a)?;
    let db = Buffer::from_host(&stream, &b)?;
    let mut ours = Buffer::from_host(&stream, &vec![f32::NAN; n])?;
    let cfg = LaunchConfig::for_elements(n as u32, 128);
    vector_add(&stream, cfg, &da, &db, &mut ours, n as u32)?;
    let mut theirs = Buffer::from_host(&stream, &vec![f32::NAN; n])?;
    let art = builder_artifacts(kernel_dsl::samples::vector_add());
    stream.launch(
        art,
        cfg,
        &[
            (&da).into(),
            (&db).into(),
            (&mut theirs).into(),
            (n as u32).into(),
        ],
    )?;
    let (o, t) = (ours.to_host(&stream)?, theirs.to_host(&stream)?);
    for i in 0..n {
        assert_eq!(o[i], a[i] + b[i], "element {i}");
        assert_eq!(o[i].to_bits(), t[i].to_bits(), "element {i}");
    }

    let s = 0.75f32;
    let mut y_ours = Buffer::from_host(&stream, &b)?;
    let mut y_theirs = Buffer::from_host(&stream, &b)?;
    let small = LaunchConfig::linear(3, 64);
    saxpy(&stream, small, s, &da, &mut y_ours, n as u32)?;
    let art = builder_artifacts(kernel_dsl::samples::saxpy());
    stream.launch(
        art,
        small,
        &[
            s.into(),
            (&da).into(),
            (&mut y_theirs).into(),
            (n as u32).into(),
        ],
    )?;
    let (o, t) = (y_ours.to_host(&stream)?, y_theirs.to_host(&stream)?);
    for i in 0..n {
        assert_eq!(o[i], s.mul_add(a[i], b[i]), "element {i}");
        assert_eq!(o[i].to_bits(), t[i].to_bits(), "element {i}");
    }
    Ok(())
}

#[test]
fn block_reduce_and_transpose_agree_with_the_builder_on_the_emulator(
) -> Result<(), kernel_runtime::Error> {
    let stream = Device::emulator().stream()?;
    let n = 3001usize;
    let x = seeded(n, 3);
    let dx = Buffer::from_host(&stream, &x)?;
    let blocks = 4;
    let cfg = LaunchConfig::linear(blocks, 256);
    let mut ours = Buffer::from_host(&stream, &vec![f32::NAN; blocks as usize])?;
    block_reduce_sum(&stream, cfg, &dx, &mut ours, n as u32)?;
    let mut theirs = Buffer::from_host(&stream, &vec![f32::NAN; blocks as usize])?;
    let art = builder_artifacts(kernel_dsl::samples::block_reduce_sum());
    stream.launch(
        art,
        cfg,
        &[(&dx).into(), (&mut theirs).into(), (n as u32).into()],
    )?;
    let (o, t) = (ours.to_host(&stream)?, theirs.to_host(&stream)?);
    let total: f64 = x.iter().map(|&v| v as f64).sum();
    let got: f64 = o.iter().map(|&v| v as f64).sum();
    assert!((got - total).abs() < 1e-3, "{got} vs {total}");
    assert_eq!(
        o.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        t.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );

    let (rows, cols) = (45u32, 70u32);
    let m = seeded((rows * cols) as usize, 4);
    let dm = Buffer::from_host(&stream, &m)?;
    let tcfg = LaunchConfig {
        grid: [cols.div_ceil(32), rows.div_ceil(32), 1],
        block: [32, 8, 1],
        dynamic_shared_bytes: 0,
    };
    let mut ours = Buffer::from_host(&stream, &vec![f32::NAN; m.len()])?;
    transpose_32x32(&stream, tcfg, &dm, &mut ours, rows, cols)?;
    let o = ours.to_host(&stream)?;
    for r in 0..rows as usize {
        for c in 0..cols as usize {
            assert_eq!(
                o[c * rows as usize + r],
                m[r * cols as usize + c],
                "({r}, {c})"
            );
        }
    }
    let mut theirs = Buffer::from_host(&stream, &vec![f32::NAN; m.len()])?;
    let art = builder_artifacts(kernel_dsl::samples::transpose_32x32());
    stream.launch(
        art,
        tcfg,
        &[(&dm).into(), (&mut theirs).into(), rows.into(), cols.into()],
    )?;
    assert_eq!(
        theirs
            .to_host(&stream)?
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>(),
        o.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    Ok(())
}

#[test]
fn without_sm_features_the_samples_embed_exactly_the_default_target() {
    for k in [
        &VECTOR_ADD,
        &SAXPY,
        &BLOCK_REDUCE_SUM,
        &TRANSPOSE_32X32,
        &MMA_BF16_16X8X16,
    ] {
        assert_eq!(k.embedded_targets(), vec![Target::Sm80], "{}", k.meta.entry);
    }
}

/// The instructions that carry a kernel's meaning (memory, float arithmetic, barriers, warp
/// exchanges), in program order; index arithmetic may differ between the two writings.
fn meaningful_ops(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.split_whitespace().find(|w| !w.starts_with('@')))
        .filter(|m| {
            m.starts_with("ld.global")
                || m.starts_with("st.")
                || m.starts_with("ld.shared")
                || m.starts_with("bar.")
                || m.starts_with("shfl.")
                || m.starts_with("mma.")
                || (m.ends_with(".f32") && !m.starts_with("mov") && !m.starts_with("ld.param"))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn macro_and_builder_samples_print_the_same_memory_float_and_warp_instructions() {
    let pairs: [(&KernelArtifacts, kernel_dsl::ir::Kernel); 4] = [
        (&VECTOR_ADD, kernel_dsl::samples::vector_add()),
        (&SAXPY, kernel_dsl::samples::saxpy()),
        (&BLOCK_REDUCE_SUM, kernel_dsl::samples::block_reduce_sum()),
        (&TRANSPOSE_32X32, kernel_dsl::samples::transpose_32x32()),
    ];
    for (ours, theirs) in pairs {
        for t in [Target::Sm80, Target::Sm90] {
            let a = (ours.emit.expect("emit function"))(t).expect("macro sample emits");
            let b = kernel_dsl::emit::emit(&theirs, t).expect("builder sample emits");
            let ops = meaningful_ops(&a);
            assert!(
                ops.iter().any(|m| m.starts_with("st.global")),
                "{}: {ops:?}",
                ours.meta.entry
            );
            assert_eq!(ops, meaningful_ops(&b), "{} for {t}", ours.meta.entry);
        }
    }
}
