//! Runtime benchmarks on a GPU: module load time (PTX JIT vs cubin), launch overhead of the
//! typed launch path vs a raw cudarc launch, and per-launch cost inside a replayed graph.
//! Prints a table; prints one `skipping` line where no GPU is present.
//!
//! Cubins for the generated kernels are built at run time with the machine's ptxas
//! (`PTXAS`, default /usr/local/cuda/bin/ptxas); the driver's on-disk JIT cache is disabled so
//! every PTX load really compiles.

use cudarc::driver::{CudaContext, LaunchConfig as RawConfig, PushKernelArg};
use kernel_dsl::{
    BlockContract, KernelArtifacts, KernelMeta, ParamKind, ParamMeta, ScalarType, Target,
};
use kernel_runtime::{Buffer, Device, KernelArg, LaunchConfig};
use std::borrow::Cow;
use std::time::Instant;

const TEST_PTX_SM90: &str = include_str!("../tests/fixtures/test_kernels.sm_90.ptx");
const TEST_PTX_SM80: &str = include_str!("../tests/fixtures/test_kernels.sm_80.ptx");
const TEST_CUBIN_SM90: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_90.cubin");
const TEST_CUBIN_SM80: &[u8] = include_bytes!("../tests/fixtures/test_kernels.sm_80.cubin");

fn vector_add_meta() -> KernelMeta {
    let slice = |name: &'static str, mutable| ParamMeta {
        name: Cow::Borrowed(name),
        kind: ParamKind::Slice {
            elem: ScalarType::F32,
            mutable,
        },
    };
    KernelMeta {
        entry: Cow::Borrowed("vector_add"),
        params: Cow::Owned(vec![
            slice("a", false),
            slice("b", false),
            slice("c", true),
            ParamMeta {
                name: Cow::Borrowed("n"),
                kind: ParamKind::Scalar(ScalarType::U32),
            },
        ]),
        block: BlockContract::Any,
        static_shared_bytes: 0,
        uses_dynamic_shared: false,
        min_dynamic_shared_bytes: 0,
        waits_on_prior_grid: false,
        cluster: None,
    }
}

/// A long straight-line kernel (`steps` dependent FMAs per element), so the JIT has real work.
fn fma_chain_ptx(target: Target, steps: usize) -> String {
    let version = if target == Target::Sm90 { "7.8" } else { "7.0" };
    let mut body = String::new();
    for i in 0..steps {
        let c = 1.0f32 + (i % 7) as f32 * 1e-3;
        body.push_str(&format!(
            "\tfma.rn.f32 %f1, %f1, 0f{:08X}, 0f{:08X};\n",
            c.to_bits(),
            (1e-4f32 * (i % 5) as f32).to_bits()
        ));
    }
    format!(
        ".version {version}\n.target {target}\n.address_size 64\n\n\
         .visible .entry fma_chain(\n\t.param .u64 fma_chain_param_0,\n\t.param .u64 fma_chain_param_1,\n\t.param .u64 fma_chain_param_2,\n\t.param .u32 fma_chain_param_3\n)\n{{\n\
         \t.reg .pred %p<2>;\n\t.reg .b32 %r<6>;\n\t.reg .f32 %f<2>;\n\t.reg .b64 %rd<8>;\n\
         \tld.param.u64 %rd1, [fma_chain_param_0];\n\tld.param.u64 %rd3, [fma_chain_param_2];\n\tld.param.u32 %r2, [fma_chain_param_3];\n\
         \tmov.u32 %r3, %ctaid.x;\n\tmov.u32 %r4, %ntid.x;\n\tmov.u32 %r5, %tid.x;\n\tmad.lo.s32 %r1, %r3, %r4, %r5;\n\
         \tsetp.ge.u32 %p1, %r1, %r2;\n\t@%p1 bra $L__done;\n\tcvta.to.global.u64 %rd4, %rd1;\n\tcvta.to.global.u64 %rd5, %rd3;\n\
         \tmul.wide.u32 %rd6, %r1, 4;\n\tadd.s64 %rd4, %rd4, %rd6;\n\tadd.s64 %rd5, %rd5, %rd6;\n\tld.global.f32 %f1, [%rd4];\n\
         {body}\tst.global.f32 [%rd5], %f1;\n$L__done:\n\tret;\n}}\n"
    )
}

fn ptxas(ptx: &str, target: Target) -> Option<Vec<u8>> {
    let exe = std::env::var("PTXAS").unwrap_or_else(|_| "/usr/local/cuda/bin/ptxas".into());
    let dir = std::env::temp_dir().join(format!("ptxkit-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let (src, out) = (dir.join("k.ptx"), dir.join("k.cubin"));
    std::fs::write(&src, ptx).ok()?;
    let ok = std::process::Command::new(exe)
        .args(["-arch", target.name(), "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .ok()?
        .success();
    if ok {
        std::fs::read(&out).ok()
    } else {
        None
    }
}

fn leak(
    meta: KernelMeta,
    ptx: Option<&'static str>,
    cubin: Option<&'static [u8]>,
    t: Target,
) -> &'static KernelArtifacts {
    Box::leak(Box::new(KernelArtifacts {
        meta,
        ptx: Cow::Owned(
            ptx.map(|p| vec![(t, kernel_dsl::Ptx::Text(p))])
                .unwrap_or_default(),
        ),
        cubins: Cow::Owned(cubin.map(|c| vec![(t, c)]).unwrap_or_default()),
        emit: None,
        ir: None,
    }))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median wall time of loading `artifacts` on a fresh device (fresh module cache), in ms.
fn load_ms(artifacts: &'static KernelArtifacts, reps: usize) -> f64 {
    let times = (0..reps)
        .map(|_| {
            let device = Device::cuda(0).expect("device");
            let t = Instant::now();
            device.prewarm(&[artifacts]).expect("load");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    median(times)
}

fn main() {
    // SAFETY (of intent): set before the driver initialises, in a single-threaded main.
    std::env::set_var("CUDA_CACHE_DISABLE", "1");
    if let Ok(dir) = std::env::var("PTXKIT_BENCH_DUMP_PTX") {
        // Writes the generated kernels, for checking them with ptxas without a GPU.
        for t in [Target::Sm80, Target::Sm90] {
            let path = std::path::Path::new(&dir).join(format!("fma_chain.{t}.ptx"));
            std::fs::write(path, fma_chain_ptx(t, 1000)).expect("write PTX");
        }
    }
    let device = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("skipping: no CUDA driver/GPU present ({e})");
            return;
        }
    };
    let target = device.target();
    let (test_ptx, test_cubin) = match target {
        Target::Sm90 => (TEST_PTX_SM90, TEST_CUBIN_SM90),
        Target::Sm80 => (TEST_PTX_SM80, TEST_CUBIN_SM80),
        t => {
            println!("skipping: bench fixtures cover sm_80 and sm_90, not {t}");
            return;
        }
    };
    println!(
        "device: {} ({target}, {} SMs)",
        device.props().name,
        device.props().sm_count
    );
    println!();
    println!("| measurement | value |");
    println!("| --- | --- |");

    // 1. Module load: PTX JIT vs cubin.
    let reps = 7;
    let va_ptx = leak(vector_add_meta(), Some(test_ptx), None, target);
    let va_cubin = leak(vector_add_meta(), None, Some(test_cubin), target);
    println!(
        "| load vector_add module (3 entries), PTX JIT, median of {reps} | {:.3} ms |",
        load_ms(va_ptx, reps)
    );
    println!(
        "| load vector_add module (3 entries), cubin, median of {reps} | {:.3} ms |",
        load_ms(va_cubin, reps)
    );
    for steps in [1_000usize, 10_000] {
        let ptx: &'static str = Box::leak(fma_chain_ptx(target, steps).into_boxed_str());
        let mut meta = vector_add_meta();
        meta.entry = Cow::Borrowed("fma_chain");
        let jit = leak(meta.clone(), Some(ptx), None, target);
        println!(
            "| load fma_chain ({steps} FMAs), PTX JIT, median of {reps} | {:.3} ms |",
            load_ms(jit, reps)
        );
        match ptxas(ptx, target) {
            Some(cubin) => {
                let cubin: &'static [u8] = Box::leak(cubin.into_boxed_slice());
                let bin = leak(meta, None, Some(cubin), target);
                println!(
                    "| load fma_chain ({steps} FMAs), cubin, median of {reps} | {:.3} ms |",
                    load_ms(bin, reps)
                );
            }
            None => println!("| load fma_chain ({steps} FMAs), cubin | no ptxas found |"),
        }
    }

    // 2. Launch overhead: typed path vs raw cudarc, tiny kernel, host-side enqueue time.
    let n = 256usize;
    let launches = 20_000usize;
    let stream = device.stream().expect("stream");
    device.prewarm(&[va_ptx]).expect("prewarm");
    let da = Buffer::from_host(&stream, &vec![1.0f32; n]).expect("alloc");
    let db = Buffer::from_host(&stream, &vec![2.0f32; n]).expect("alloc");
    let mut dc = Buffer::<f32>::zeros(&stream, n).expect("alloc");
    let cfg = LaunchConfig::for_elements(n as u32, 256);
    // Launches go in batches well below the driver's queue depth, so enqueue time is the host's
    // cost and not back-pressure from the GPU; the stream drains between batches.
    let batch = 200usize;
    let typed = |count: usize, dc: &mut Buffer<f32>| {
        let mut enqueue = 0.0;
        let t = Instant::now();
        for _ in 0..count / batch {
            let started = Instant::now();
            for _ in 0..batch {
                let args = [
                    KernelArg::from(&da),
                    KernelArg::from(&db),
                    KernelArg::from(&mut *dc),
                    KernelArg::from(n as u32),
                ];
                stream.launch(va_ptx, cfg, &args).expect("launch");
            }
            enqueue += started.elapsed().as_secs_f64();
            stream.synchronize().expect("sync");
        }
        (enqueue, t.elapsed().as_secs_f64())
    };
    typed(1000, &mut dc);
    let (typed_enq, typed_total) = typed(launches, &mut dc);

    let raw_row = |tracking: bool| -> (f64, f64) {
        let ctx = CudaContext::new(0).expect("ctx");
        if !tracking {
            // SAFETY: this benchmark uses one stream for all its buffers and launches.
            unsafe { ctx.disable_event_tracking() };
        }
        let s = ctx.new_stream().expect("stream");
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(test_ptx))
            .expect("module");
        let f = module.load_function("vector_add").expect("function");
        let a = s.clone_htod(&vec![1.0f32; n]).expect("alloc");
        let b = s.clone_htod(&vec![2.0f32; n]).expect("alloc");
        let mut c = s.alloc_zeros::<f32>(n).expect("alloc");
        let nn = n as u32;
        let raw_cfg = RawConfig {
            grid_dim: (1, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut run = |count: usize| {
            let mut enqueue = 0.0;
            let t = Instant::now();
            for _ in 0..count / batch {
                let started = Instant::now();
                for _ in 0..batch {
                    let mut builder = s.launch_builder(&f);
                    builder.arg(&a).arg(&b).arg(&mut c).arg(&nn);
                    // SAFETY: vector_add takes (f32*, f32*, f32*, u32) and n matches the buffers.
                    unsafe { builder.launch(raw_cfg) }.expect("launch");
                }
                enqueue += started.elapsed().as_secs_f64();
                s.synchronize().expect("sync");
            }
            (enqueue, t.elapsed().as_secs_f64())
        };
        run(1000);
        run(launches)
    };
    let (raw_enq, raw_total) = raw_row(false);
    let (rawt_enq, rawt_total) = raw_row(true);
    let us = |s: f64| s * 1e6 / launches as f64;
    println!(
        "| typed launch (validate + cache hit + cuLaunchKernel), enqueue per launch | {:.2} µs |",
        us(typed_enq)
    );
    println!(
        "| typed launch, wall per launch incl. sync every 200 | {:.2} µs |",
        us(typed_total)
    );
    println!(
        "| raw cudarc launch_builder (event tracking off), enqueue per launch | {:.2} µs |",
        us(raw_enq)
    );
    println!(
        "| raw cudarc launch_builder (event tracking off), wall per launch incl. sync every 200 | {:.2} µs |",
        us(raw_total)
    );
    println!(
        "| raw cudarc launch_builder (default event tracking), enqueue per launch | {:.2} µs |",
        us(rawt_enq)
    );
    println!(
        "| raw cudarc launch_builder (default event tracking), wall per launch incl. sync every 200 | {:.2} µs |",
        us(rawt_total)
    );

    // 3. Graph replay: per-launch cost of a 100-launch graph vs the same launches direct.
    let per_graph = 100usize;
    let replays = 200usize;
    let graph = stream
        .capture(|s| {
            for _ in 0..per_graph {
                let args = [
                    KernelArg::from(&da),
                    KernelArg::from(&db),
                    KernelArg::from(&mut dc),
                    KernelArg::from(n as u32),
                ];
                s.launch(va_ptx, cfg, &args)?;
            }
            Ok(())
        })
        .expect("capture");
    graph.replay().expect("replay");
    stream.synchronize().expect("sync");
    let (start, end) = (
        device.event().expect("event"),
        device.event().expect("event"),
    );
    let t = Instant::now();
    stream.record(&start).expect("record");
    for _ in 0..replays {
        graph.replay().expect("replay");
    }
    stream.record(&end).expect("record");
    let enqueue = t.elapsed().as_secs_f64();
    let gpu_ms = start.elapsed_ms(&end).expect("elapsed") as f64;
    let total = (per_graph * replays) as f64;
    println!(
        "| graph of {per_graph} launches, {replays} replays: host enqueue per launch | {:.3} µs |",
        enqueue * 1e6 / total
    );
    println!(
        "| graph replay: GPU time per launch (events) | {:.3} µs |",
        gpu_ms * 1e3 / total
    );
    stream.record(&start).expect("record");
    for _ in 0..replays * per_graph {
        let args = [
            KernelArg::from(&da),
            KernelArg::from(&db),
            KernelArg::from(&mut dc),
            KernelArg::from(n as u32),
        ];
        stream.launch(va_ptx, cfg, &args).expect("launch");
    }
    stream.record(&end).expect("record");
    let direct_ms = start.elapsed_ms(&end).expect("elapsed") as f64;
    println!(
        "| direct launches: GPU time per launch (events) | {:.3} µs |",
        direct_ms * 1e3 / total
    );
    let c = dc.to_host(&stream).expect("copy");
    assert!(
        c.iter().all(|&x| x == 3.0),
        "vector_add produced wrong values"
    );
    println!();
    println!("(check: all {n} outputs == 3.0)");
}
