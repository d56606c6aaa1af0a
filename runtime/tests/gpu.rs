//! The GPU suite: runs on a machine with a CUDA driver and an sm_80 or sm_90 GPU, and prints
//! one `skipping` line per test elsewhere.

mod common;

use common::*;
use kernel_dsl::{KernelArtifacts, Ptx, Target};
use kernel_runtime::{
    Buffer, Device, Error, GraphCache, KernelArg, LaunchConfig, ModuleOrigin, Stream,
};
use std::borrow::Cow;

fn gpu() -> Option<Device> {
    match Device::cuda(0) {
        Ok(d) if matches!(d.target(), Target::Sm80 | Target::Sm90) => Some(d),
        Ok(d) => {
            println!(
                "skipping: the GPU suite's fixtures cover sm_80 and sm_90, not {}",
                d.target()
            );
            None
        }
        Err(_) => {
            println!("skipping: no CUDA driver/GPU present");
            None
        }
    }
}

fn vector_add(
    stream: &Stream,
    kernel: &'static KernelArtifacts,
    a: &Buffer<f32>,
    b: &Buffer<f32>,
    c: &mut Buffer<f32>,
) -> Result<(), Error> {
    let n = a.len() as u32;
    let args = [
        KernelArg::from(a),
        KernelArg::from(b),
        KernelArg::from(c),
        KernelArg::from(n),
    ];
    stream.launch(kernel, LaunchConfig::for_elements(n, 256), &args)
}

fn check_sum(kernel: &'static KernelArtifacts, device: &Device, n: usize) {
    let stream = device.stream().unwrap();
    let (a, b) = (random_f32s(1, n), random_f32s(2, n));
    let da = Buffer::from_host(&stream, &a).unwrap();
    let db = Buffer::from_host(&stream, &b).unwrap();
    let mut dc = Buffer::from_host(&stream, &vec![f32::NAN; n]).unwrap();
    vector_add(&stream, kernel, &da, &db, &mut dc).unwrap();
    let c = dc.to_host(&stream).unwrap();
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "element {i} of {n}");
    }
}

#[test]
fn gpu_vector_add_from_ptx_matches_the_cpu() {
    let Some(device) = gpu() else { return };
    println!(
        "device: {} ({}, {} SMs)",
        device.props().name,
        device.target(),
        device.props().sm_count
    );
    check_sum(&VECTOR_ADD, &device, (1 << 20) + 3);
    let info = &device.loaded_modules()[0];
    assert_eq!(
        (info.origin, info.target),
        (ModuleOrigin::EmbeddedPtx, device.target())
    );
}

#[test]
fn gpu_embedded_cubin_is_loaded_instead_of_ptx_and_computes_the_same() {
    let Some(device) = gpu() else { return };
    let info = device.prewarm(&[&VECTOR_ADD_CUBIN]).unwrap();
    assert_eq!(info[0].origin, ModuleOrigin::EmbeddedCubin);
    check_sum(&VECTOR_ADD_CUBIN, &device, 4099);
}

#[test]
fn gpu_cubin_built_by_the_machines_ptxas_loads() {
    let Some(device) = gpu() else { return };
    let ptxas = std::path::Path::new("/usr/local/cuda/bin/ptxas");
    if !ptxas.exists() {
        println!("skipping: no ptxas at {}", ptxas.display());
        return;
    }
    let dir = std::env::temp_dir().join(format!("ptxkit-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let target = device.target();
    let src = dir.join("k.ptx");
    let out = dir.join("k.cubin");
    let ptx = if target == Target::Sm90 {
        PTX_SM90
    } else {
        PTX_SM80
    };
    std::fs::write(&src, ptx).unwrap();
    let status = std::process::Command::new(ptxas)
        .args(["-arch", target.name(), "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    let cubin: &'static [u8] = Box::leak(std::fs::read(&out).unwrap().into_boxed_slice());
    let flags = u32::from_le_bytes([cubin[0x30], cubin[0x31], cubin[0x32], cubin[0x33]]);
    println!(
        "ptxas cubin for {target}: ELF ABI {}, e_flags {flags:#x}",
        cubin[8]
    );
    let artifacts: &'static KernelArtifacts = Box::leak(Box::new(KernelArtifacts {
        meta: meta("vector_add", VECTOR_ADD_PARAMS, false),
        ptx: Cow::Borrowed(&[]),
        cubins: Cow::Owned(vec![(target, cubin)]),
        emit: None,
        ir: None,
    }));
    assert_eq!(
        device.prewarm(&[artifacts]).unwrap()[0].origin,
        ModuleOrigin::EmbeddedCubin
    );
    check_sum(artifacts, &device, 1000);
}

#[test]
fn gpu_refuses_a_module_whose_target_differs_from_the_device() {
    let Some(device) = gpu() else { return };
    let other = if device.target() == Target::Sm90 {
        PTX_SM80
    } else {
        PTX_SM90
    };
    let lying: &'static KernelArtifacts = Box::leak(Box::new(KernelArtifacts {
        meta: meta("vector_add", VECTOR_ADD_PARAMS, false),
        ptx: Cow::Owned(vec![(device.target(), Ptx::Text(other))]),
        cubins: Cow::Borrowed(&[]),
        emit: None,
        ir: None,
    }));
    let err = device.prewarm(&[lying]).unwrap_err();
    assert!(matches!(err, Error::Parity { .. }), "{err}");
    let missing: &'static KernelArtifacts = Box::leak(Box::new(KernelArtifacts {
        meta: meta("vector_add", VECTOR_ADD_PARAMS, false),
        ptx: Cow::Owned(vec![(Target::Sm70, Ptx::Text(""))]),
        cubins: Cow::Borrowed(&[]),
        emit: None,
        ir: None,
    }));
    let msg = device.prewarm(&[missing]).unwrap_err().to_string();
    assert!(
        msg.contains(&format!("enable the `{}` feature", device.target())),
        "{msg}"
    );
    assert!(device.loaded_modules().is_empty());
}

#[test]
fn gpu_failed_jit_returns_the_drivers_log_and_the_kernel_name() {
    let Some(device) = gpu() else { return };
    let base = if device.target() == Target::Sm90 {
        PTX_SM90
    } else {
        PTX_SM80
    };
    let broken: &'static str = Box::leak(
        base.replace("add.f32 %f3", "frobnicate.f32 %f3")
            .into_boxed_str(),
    );
    let artifacts: &'static KernelArtifacts = Box::leak(Box::new(KernelArtifacts {
        meta: meta("vector_add", VECTOR_ADD_PARAMS, false),
        ptx: Cow::Owned(vec![(device.target(), Ptx::Text(broken))]),
        cubins: Cow::Borrowed(&[]),
        emit: None,
        ir: None,
    }));
    match device.prewarm(&[artifacts]) {
        Err(Error::JitFailed { kernel, log, .. }) => {
            println!("JIT log: {log}");
            assert_eq!(kernel, "vector_add");
            assert!(
                log.contains("frobnicate") || log.to_lowercase().contains("error"),
                "{log}"
            );
        }
        other => panic!("expected JitFailed, got {other:?}"),
    }
}

#[test]
fn gpu_sm90a_only_module_loads_on_sm90_as_that_variant() {
    let Some(device) = gpu() else { return };
    if device.target() != Target::Sm90 {
        println!("skipping: needs an sm_90 device");
        return;
    }
    let info = device.prewarm(&[&VECTOR_ADD_SM90A_ONLY]).unwrap();
    assert_eq!(info[0].target, Target::Sm90a);
    check_sum(&VECTOR_ADD_SM90A_ONLY, &device, 777);
}

#[test]
fn gpu_prewarmed_and_sealed_launches_run_and_others_are_refused() {
    let Some(device) = gpu() else { return };
    device.prewarm(&[&VECTOR_ADD]).unwrap();
    device.seal();
    check_sum(&VECTOR_ADD, &device, 5000);
    let stream = device.stream().unwrap();
    let x = Buffer::from_host(&stream, &random_f32s(3, 64)).unwrap();
    let mut y = Buffer::from_host(&stream, &random_f32s(4, 64)).unwrap();
    // AXPY lives in the module VECTOR_ADD loaded: finding its entry is not a load.
    let axpy_args = [2.0f32.into(), (&x).into(), (&mut y).into(), 64u32.into()];
    stream
        .launch(&AXPY, LaunchConfig::linear(1, 64), &axpy_args)
        .unwrap();
    // A kernel in a module that was never loaded is refused.
    let other_ptx: &'static str = if device.target() == Target::Sm90 {
        PTX_SM90
    } else {
        PTX_SM80
    };
    let other: &'static KernelArtifacts = Box::leak(Box::new(KernelArtifacts {
        meta: meta("axpy", AXPY_PARAMS, false),
        ptx: Cow::Owned(vec![(device.target(), Ptx::Text(other_ptx.trim_end()))]),
        cubins: Cow::Borrowed(&[]),
        emit: None,
        ir: None,
    }));
    let err = stream
        .launch(other, LaunchConfig::linear(1, 64), &axpy_args)
        .unwrap_err();
    assert!(matches!(err, Error::KernelNotPrewarmed { .. }), "{err}");
    assert_eq!(
        device.loaded_modules().len(),
        2,
        "vector_add and axpy, one module"
    );
}

#[test]
fn gpu_graph_replay_matches_direct_launches_and_sees_new_contents() {
    let Some(device) = gpu() else { return };
    device.prewarm(&[&VECTOR_ADD, &AXPY]).unwrap();
    let stream = device.stream().unwrap();
    let n = 100_003usize;
    let cfg = LaunchConfig::for_elements(n as u32, 256);
    let (a, b) = (random_f32s(5, n), random_f32s(6, n));
    let mut da = Buffer::from_host(&stream, &a).unwrap();
    let db = Buffer::from_host(&stream, &b).unwrap();
    let mut dc = Buffer::from_host(&stream, &vec![f32::NAN; n]).unwrap();
    let mut dy = Buffer::from_host(&stream, &b).unwrap();
    let nu = n as u32;
    let graph = stream
        .capture(|s| {
            s.launch(
                &VECTOR_ADD,
                cfg,
                &[(&da).into(), (&db).into(), (&mut dc).into(), nu.into()],
            )?;
            s.launch(
                &AXPY,
                cfg,
                &[0.5f32.into(), (&dc).into(), (&mut dy).into(), nu.into()],
            )
        })
        .unwrap();
    assert_eq!(graph.launches(), 2);
    graph.replay().unwrap();
    let y1 = dy.to_host(&stream).unwrap();
    for i in 0..n {
        assert_eq!(y1[i], 0.5f32.mul_add(a[i] + b[i], b[i]), "element {i}");
    }
    let a2 = random_f32s(7, n);
    da.copy_from_host(&stream, &a2).unwrap();
    dy.copy_from_host(&stream, &b).unwrap();
    graph.replay().unwrap();
    let from_graph = dy.to_host(&stream).unwrap();
    dy.copy_from_host(&stream, &b).unwrap();
    stream
        .launch(
            &VECTOR_ADD,
            cfg,
            &[(&da).into(), (&db).into(), (&mut dc).into(), nu.into()],
        )
        .unwrap();
    stream
        .launch(
            &AXPY,
            cfg,
            &[0.5f32.into(), (&dc).into(), (&mut dy).into(), nu.into()],
        )
        .unwrap();
    assert_eq!(from_graph, dy.to_host(&stream).unwrap());
    assert_ne!(from_graph, y1);
}

#[test]
fn gpu_graph_cache_recaptures_only_for_a_new_shape() {
    let Some(device) = gpu() else { return };
    device.prewarm(&[&VECTOR_ADD]).unwrap();
    let stream = device.stream().unwrap();
    let mut graphs = GraphCache::new();
    let mut captures = 0;
    for (round, &n) in [1000usize, 1000, 3000, 1000].iter().enumerate() {
        let (a, b) = (
            random_f32s(10 + round as u64, n),
            random_f32s(20 + round as u64, n),
        );
        let da = Buffer::from_host(&stream, &a).unwrap();
        let db = Buffer::from_host(&stream, &b).unwrap();
        let mut dc = Buffer::from_host(&stream, &vec![f32::NAN; n]).unwrap();
        // The graph for a shape is bound to the buffers it captured, so rounds that replay an
        // old shape write the old buffers: check only freshly captured rounds' outputs.
        let captured = graphs
            .run(&stream, n, |s| {
                vector_add(s, &VECTOR_ADD, &da, &db, &mut dc)
            })
            .unwrap();
        captures += captured as usize;
        if captured {
            let c = dc.to_host(&stream).unwrap();
            assert!((0..n).all(|i| c[i] == a[i] + b[i]));
        }
    }
    assert_eq!((captures, graphs.len()), (2, 2));
}

#[test]
fn gpu_dynamic_shared_memory_above_48_kib_is_opted_in() {
    let Some(device) = gpu() else { return };
    let stream = device.stream().unwrap();
    let (block, blocks) = (256usize, 40usize);
    let x = random_f32s(8, block * blocks);
    let dx = Buffer::from_host(&stream, &x).unwrap();
    let mut dy = Buffer::from_host(&stream, &vec![f32::NAN; block * blocks]).unwrap();
    let cfg = LaunchConfig::linear(blocks as u32, block as u32).with_dynamic_shared(96 * 1024);
    stream
        .launch(&REVERSE, cfg, &[(&dx).into(), (&mut dy).into()])
        .unwrap();
    let y = dy.to_host(&stream).unwrap();
    for b in 0..blocks {
        for t in 0..block {
            assert_eq!(y[b * block + t], x[b * block + block - 1 - t]);
        }
    }
    let over = LaunchConfig::linear(1, 32)
        .with_dynamic_shared(device.props().shared_bytes_per_block_optin + 1);
    let err = stream
        .launch(&REVERSE, over, &[(&dx).into(), (&mut dy).into()])
        .unwrap_err();
    assert!(matches!(err, Error::SharedMemory { .. }), "{err}");
}

#[test]
fn gpu_buffers_cross_streams_and_events_time_work() {
    let Some(device) = gpu() else { return };
    let (s1, s2) = (device.stream().unwrap(), device.stream().unwrap());
    let n = 1 << 16;
    let a = random_f32s(9, n);
    let da = Buffer::from_host(&s1, &a).unwrap();
    let mut dc = Buffer::from_host(&s1, &vec![f32::NAN; n]).unwrap();
    let (start, end) = (device.event().unwrap(), device.event().unwrap());
    s2.record(&start).unwrap();
    vector_add(&s2, &VECTOR_ADD, &da, &da, &mut dc).unwrap();
    s2.record(&end).unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms > 0.0 && ms < 10_000.0, "{ms}");
    let c = dc.to_host(&s2).unwrap();
    assert!((0..n).all(|i| c[i] == 2.0 * a[i]));
    drop(da); // used on s2: the drop waits for the device before freeing
}

#[test]
fn gpu_and_emulator_run_the_same_code_and_agree_bit_for_bit() {
    let Some(gpu_device) = gpu() else { return };
    let emulated = Device::emulator_for(gpu_device.target());
    let n = 4096 + 17;
    let (a, b) = (random_f32s(30, n), random_f32s(31, n));
    let run = |device: &Device| -> Vec<f32> {
        let stream = device.stream().unwrap();
        let da = Buffer::from_host(&stream, &a).unwrap();
        let db = Buffer::from_host(&stream, &b).unwrap();
        let mut dc = Buffer::from_host(&stream, &vec![f32::NAN; n]).unwrap();
        let mut dy = Buffer::from_host(&stream, &b).unwrap();
        vector_add(&stream, &VECTOR_ADD, &da, &db, &mut dc).unwrap();
        let cfg = LaunchConfig::for_elements(n as u32, 128);
        stream
            .launch(
                &AXPY,
                cfg,
                &[
                    1.25f32.into(),
                    (&dc).into(),
                    (&mut dy).into(),
                    (n as u32).into(),
                ],
            )
            .unwrap();
        dy.to_host(&stream).unwrap()
    };
    let (on_gpu, on_cpu) = (run(&gpu_device), run(&emulated));
    assert!(on_gpu
        .iter()
        .zip(&on_cpu)
        .all(|(g, c)| g.to_bits() == c.to_bits()));
}

#[test]
fn gpu_a_failed_capture_ends_cleanly_and_leaves_the_stream_usable() {
    let Some(device) = gpu() else { return };
    let stream = device.stream().unwrap();
    let n = 2048usize;
    let (a, b) = (random_f32s(40, n), random_f32s(41, n));
    let da = Buffer::from_host(&stream, &a).unwrap();
    let db = Buffer::from_host(&stream, &b).unwrap();
    let mut dc = Buffer::from_host(&stream, &vec![f32::NAN; n]).unwrap();
    // VECTOR_ADD is not loaded on this device yet, so the capture must refuse it.
    let err = stream
        .capture(|s| vector_add(s, &VECTOR_ADD, &da, &db, &mut dc))
        .err()
        .unwrap();
    assert!(matches!(err, Error::KernelNotPrewarmed { .. }), "{err}");
    assert!(!stream.is_capturing());
    vector_add(&stream, &VECTOR_ADD, &da, &db, &mut dc).unwrap();
    let c = dc.to_host(&stream).unwrap();
    assert!((0..n).all(|i| c[i] == a[i] + b[i]));
}

#[test]
fn gpu_a_forked_stream_runs_inside_the_graph_and_joins_back() {
    let Some(device) = gpu() else { return };
    device.prewarm(&[&VECTOR_ADD, &AXPY]).unwrap();
    let (main, side) = (device.stream().unwrap(), device.stream().unwrap());
    let n = 1 << 20;
    let nu = n as u32;
    let cfg = LaunchConfig::for_elements(nu, 256);
    let (a, b) = (random_f32s(8, n), random_f32s(9, n));
    let da = Buffer::from_host(&main, &a).unwrap();
    let db = Buffer::from_host(&main, &b).unwrap();
    let mut dc = Buffer::from_host(&main, &vec![f32::NAN; n]).unwrap();
    let mut dy = Buffer::from_host(&main, &b).unwrap();
    let mut dz = Buffer::from_host(&main, &a).unwrap();
    let graph = main
        .capture(|s| {
            s.launch(
                &VECTOR_ADD,
                cfg,
                &[(&da).into(), (&db).into(), (&mut dc).into(), nu.into()],
            )?;
            // y = 0.5·c + y on the side stream, beside z = 2·a + z on the capturing one.
            s.fork(&side)?;
            side.launch(
                &AXPY,
                cfg,
                &[0.5f32.into(), (&dc).into(), (&mut dy).into(), nu.into()],
            )?;
            s.launch(
                &AXPY,
                cfg,
                &[2.0f32.into(), (&da).into(), (&mut dz).into(), nu.into()],
            )?;
            s.join(&side)?;
            // After the join the capturing stream sees the side's result.
            s.launch(
                &AXPY,
                cfg,
                &[1.0f32.into(), (&dy).into(), (&mut dz).into(), nu.into()],
            )
        })
        .unwrap();
    assert_eq!(graph.launches(), 4);
    graph.replay().unwrap();
    let z = dz.to_host(&main).unwrap();
    for i in 0..n {
        let y = 0.5f32.mul_add(a[i] + b[i], b[i]);
        assert_eq!(
            z[i],
            1.0f32.mul_add(y, 2.0f32.mul_add(a[i], a[i])),
            "element {i}"
        );
    }
    // A fork left unjoined is refused, and the driver's capture ends cleanly with it.
    let err = main
        .capture(|s| {
            s.fork(&side)?;
            side.launch(
                &AXPY,
                cfg,
                &[0.5f32.into(), (&dc).into(), (&mut dy).into(), nu.into()],
            )
        })
        .err()
        .unwrap();
    assert!(
        matches!(err, Error::UnjoinedFork { .. } | Error::Driver { .. }),
        "{err}"
    );
    main.synchronize().unwrap();
    side.synchronize().unwrap();
}
