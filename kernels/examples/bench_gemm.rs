//! GEMM throughput of our kernels against cuBLAS, in one process on one device: fp32 (SIMT vs
//! cuBLAS sgemm without TF32), TF32 (vs cuBLAS with TF32 compute) and bf16 (vs cuBLAS
//! `gemmEx` bf16 → bf16, f32 compute), each timed with CUDA events after warm-up, median of the
//! timed runs. The last column is our throughput over cuBLAS's (1.0 = parity). fp32 uses
//! cuBLAS's default math mode, which never uses TF32. Where our kernel is a `#[kernel]` port
//! whose builder kernel still ships (the `mma.sync` GEMM of the `mma` rows and of TF32 on
//! Hopper NN/TN), the builder kernel is timed beside it in the same run (`builder ms`, and
//! `ours/builder`: builder time over ours, above 1.0 the port is faster); TF32 NT on Hopper
//! runs on tf32 `wgmma`, and that column times the `mma.sync` kernel it replaced (NN and TN,
//! on transposed copies, too). Where a 16-bit problem on Hopper splits k, the column times the
//! same kernel on whole tiles (`gemm_split_k` with one range). The `tma` rows time
//! the Hopper GEMM with f32 output through its own launcher (`tma_wgmma_bf16_nt`, bf16 NT);
//! their cuBLAS column is the bf16 one.
//!
//! ```text
//! cargo run --release -p kernels --example bench_gemm            # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_gemm        # tiny shapes on the emulator
//! ```
//!
//! `BENCH_KINDS=swiglu` times `gemm_swiglu` against the unfused form and cuBLAS (see
//! [`swiglu_rows`]); `BENCH_KINDS=epilogue` the fused bias + activation and residual
//! epilogues against a GEMM followed by an elementwise kernel ([`epilogue_rows`]);
//! `BENCH_KINDS=copy` the bf16 output with its f32 copy against an f32 GEMM and a cast
//! ([`copy_rows`]); `BENCH_KINDS=stream_k` stream-K beside whole tiles over one to three
//! waves of tiles ([`stream_k_rows`]).
//!
//! `BENCH_LABELS=lora16_up,grad_w` (say) keeps only the problems of those labels (a profile
//! of a few rows).
//!
//! `BENCH_KINDS=async` times, on Hopper, the `#[kernel]` `wgmma` GEMM fed by `cp.async` (what
//! `gemm` picks where rows are not 16-byte aligned, so the copy engine cannot read them)
//! against the builder kernel it replaces and cuBLAS, bf16 in and out, at
//! [`unaligned_problems`]; with `BENCH_SMALL=1` these rows run on an emulated sm_90a.
//!
//! Shapes: 4096³ and 8192³; a linear layer of 4096 tokens × 4864 outputs × 896 inputs (and its
//! transpose) forward (`y = x·Wᵀ`, NT) with both gradients (`dx = dy·W`, NN; `dW = dyᵀ·x`,
//! TN); LoRA adapters of rank 8–64 on a 4096 × 4096 layer.

mod common;

use kernel_dsl::Target;
use kernel_runtime::{Bf16, Buffer, Device, Stream};
use kernels::cast::cast;
use kernels::elementwise::{add, gelu_tanh, silu, swiglu};
use kernels::gemm::{
    gemm, gemm_split_k, gemm_swiglu, gemm_with_f32_copy, gemm_with_plan, gemm_with_workspace,
    select, split_k_partials, tma_wgmma_bf16_nt, Activation, Epilogue, GemmShape, GemmWorkspace,
    Layout, Math,
};
use kernels::Float;
use std::error::Error;

type Res<T = ()> = Result<T, Box<dyn Error>>;

/// What is timed: our kernel for `T` inputs (f32 outputs for f32, else `T`) with `math`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Fp32,
    Tf32,
    Bf16,
    /// bf16 through the sm_80 `mma.sync` kernel, whatever the device (on Hopper, `gemm` itself
    /// picks `wgmma`).
    MmaBf16,
    /// bf16 NT with f32 output through the `#[kernel]` TMA + `wgmma` GEMM's own launcher
    /// (`tma_wgmma_bf16_nt`).
    TmaBf16,
    /// bf16 on Hopper at rows that are not 16-byte aligned: the `cp.async`-fed `wgmma` GEMM.
    AsyncBf16,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Fp32 => "fp32",
            Kind::Tf32 => "tf32",
            Kind::Bf16 => "bf16",
            Kind::MmaBf16 => "mma",
            Kind::TmaBf16 => "tma",
            Kind::AsyncBf16 => "async",
        }
    }
}

struct Bench {
    device: Device,
    stream: Stream,
    warmup: usize,
    runs: usize,
    blas: Option<blas::Blas>,
}

impl Bench {
    /// Median milliseconds of `f` on our stream.
    fn time(&self, mut f: impl FnMut(&Stream) -> Res) -> Res<f64> {
        for _ in 0..self.warmup {
            f(&self.stream)?;
        }
        let mut ms = Vec::with_capacity(self.runs);
        for _ in 0..self.runs {
            let (start, end) = (self.device.event()?, self.device.event()?);
            self.stream.record(&start)?;
            f(&self.stream)?;
            self.stream.record(&end)?;
            end.synchronize()?;
            ms.push(start.elapsed_ms(&end)? as f64);
        }
        Ok(median(ms))
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn filled<T: Float>(stream: &Stream, n: usize, seed: u32) -> Res<Buffer<T>> {
    // A cheap deterministic pattern in [-1, 1), never all zeros.
    let host: Vec<T> = (0..n)
        .map(|i| {
            let h = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed);
            T::from_f32((h >> 8) as f32 / (1u32 << 23) as f32 - 1.0)
        })
        .collect();
    Ok(Buffer::from_host(stream, &host)?)
}

/// Filled `A`, `B` and a zeroed `C` for `shape`.
type Operands<T, O> = (Buffer<T>, Buffer<T>, Buffer<O>);

fn operands<T: Float, O: Float>(b: &Bench, shape: &GemmShape) -> Res<Operands<T, O>> {
    let (ar, ac) = shape.layout.a_rows_cols(shape.m, shape.k);
    let (br, bc) = shape.layout.b_rows_cols(shape.n, shape.k);
    Ok((
        filled::<T>(&b.stream, ar * ac, 1)?,
        filled::<T>(&b.stream, br * bc, 2)?,
        Buffer::<O>::zeros(&b.stream, shape.m * shape.n)?,
    ))
}

/// Our kernel as `gemm` picks it on `target` (the device's, or sm_80 for `mma.sync`), then,
/// where that kernel is a `#[kernel]` port, the builder kernel it replaces: milliseconds of
/// each.
fn ours<T: Float, O: Float>(
    b: &Bench,
    shape: &GemmShape,
    math: Math,
    target: Target,
) -> Res<(f64, Option<f64>)> {
    let (a, bb, mut c) = operands::<T, O>(b, shape)?;
    let epi = Epilogue::default();
    let plan = select(T::TYPE, O::TYPE, math, shape, target)?;
    let ms = b.time(|s| Ok(gemm_with_plan(s, &plan, shape, &a, &bb, &mut c, &epi)?))?;
    let mut builder = plan.builder();
    if std::ptr::eq(builder.kernel, plan.kernel) && math == Math::Tf32 && target.sm() == 90 {
        // TF32 NT on tf32 `wgmma`: beside the `mma.sync` kernel Hopper ran before.
        builder = select(T::TYPE, O::TYPE, math, shape, Target::Sm80)?;
    }
    if std::ptr::eq(builder.kernel, plan.kernel) {
        let splits = split_k_partials::<T, O>(&b.stream, shape, math)? > 0;
        if splits && T::TYPE != kernels::FloatType::F32 && target == b.device.target() {
            // Split along k (or stream-K): beside the same kernel on whole tiles, and beside
            // itself fed a workspace (no allocation per call), printed on its own line.
            let whole = b.time(|s| Ok(gemm_split_k(s, shape, &a, &bb, &mut c, &epi, 1)?))?;
            let mut ws = GemmWorkspace::for_shapes::<T, O>(&b.stream, &[*shape], math)?;
            let held = b.time(|s| {
                Ok(gemm_with_workspace(
                    s, shape, &a, &bb, &mut c, &epi, math, &mut ws,
                )?)
            })?;
            println!("|      | (workspace) | {held:.3} ms beside {ms:.3} allocating per call |");
            return Ok((ms, Some(whole)));
        }
        return Ok((ms, None));
    }
    let old = b.time(|s| Ok(gemm_with_plan(s, &builder, shape, &a, &bb, &mut c, &epi)?))?;
    Ok((ms, Some(old)))
}

/// The `#[kernel]` TMA GEMM (bf16 NT, f32 out) through its own launcher: milliseconds.
fn ours_tma(b: &Bench, shape: &GemmShape) -> Res<(f64, Option<f64>)> {
    let (a, bb, mut c) = operands::<Bf16, f32>(b, shape)?;
    let (m, n, k) = (shape.m as u32, shape.n as u32, shape.k as u32);
    let ms = b.time(|s| Ok(tma_wgmma_bf16_nt(s, &a, &bb, &mut c, m, n, k)?))?;
    Ok((ms, None))
}

fn row(b: &Bench, kind: Kind, label: &str, shape: &GemmShape) -> Res {
    let device = b.device.target();
    // The TMA GEMM runs on sm_90 only, and takes NT problems with 16-byte rows.
    if kind == Kind::TmaBf16
        && (device.sm() != 90 || shape.layout != Layout::Nt || !shape.k.is_multiple_of(8))
    {
        return Ok(());
    }
    // The cp.async wgmma GEMM runs on sm_90 only.
    if kind == Kind::AsyncBf16 && device.sm() != 90 {
        return Ok(());
    }
    let (ms, builder) = match kind {
        Kind::TmaBf16 => ours_tma(b, shape)?,
        Kind::Fp32 => ours::<f32, f32>(b, shape, Math::Fp32, device)?,
        Kind::Tf32 => ours::<f32, f32>(b, shape, Math::Tf32, device)?,
        Kind::Bf16 => ours::<Bf16, Bf16>(b, shape, Math::Fp32, device)?,
        Kind::MmaBf16 => ours::<Bf16, Bf16>(b, shape, Math::Fp32, Target::Sm80)?,
        Kind::AsyncBf16 => ours::<Bf16, Bf16>(b, shape, Math::Fp32, device)?,
    };
    let old = match builder {
        Some(t) => format!("{t:>10.3} | {:>12.2}", t / ms),
        None => format!("{:>10} | {:>12}", "-", "-"),
    };
    let tflops = |ms: f64| shape.flops() / (ms * 1e-3) / 1e12;
    let (theirs, ratio) = match &b.blas {
        Some(blas) => {
            let t = blas.time(kind, shape, b.warmup, b.runs)?;
            (
                format!("{:>9.3} | {:>7.1}", t, tflops(t)),
                format!("{:>11.2}", t / ms),
            )
        }
        None => (format!("{:>9} | {:>7}", "-", "-"), format!("{:>11}", "-")),
    };
    println!(
        "| {:<4} | {label:<11} | {:<2} | {:>5} × {:>5} × {:>5} | {ms:>8.3} | {:>7.1} | {old} | {theirs} | {ratio} |",
        kind.name(),
        shape.layout.tag(),
        shape.m,
        shape.n,
        shape.k,
        tflops(ms),
    );
    Ok(())
}

/// Stream-K beside whole tiles over problems of one to three waves of 128 × 256 tiles
/// (bf16, k = 4096, f32 accumulation, bf16 out): each timed through a workspace, as a captured
/// step runs it, beside `gemm_split_k(…, 1)` (whole tiles) and cuBLAS, to check the rule that
/// picks stream-K. Rows where the rule keeps whole tiles print `whole` in the `runs` column.
fn stream_k_rows(b: &Bench, small: bool) -> Res {
    let (k, shapes): (usize, &[(Layout, usize, usize)]) = if small {
        (256, &[(Layout::Tn, 384, 512), (Layout::Nt, 256, 768)])
    } else {
        (
            4096,
            &[
                (Layout::Tn, 896, 4864),
                (Layout::Tn, 1024, 4864),
                (Layout::Tn, 4864, 896),
                (Layout::Tn, 4864, 1024),
                (Layout::Nt, 4864, 896),
                (Layout::Nt, 4864, 1024),
                (Layout::Nt, 1024, 4864),
                (Layout::Tn, 4864, 768),
                (Layout::Tn, 1280, 4864),
                (Layout::Tn, 4864, 1280),
                (Layout::Tn, 2048, 4864),
                (Layout::Nt, 4096, 1536),
            ],
        )
    };
    println!();
    println!("| ly | m     × n     × k     | tiles | runs     | whole ms | stream-K ms | whole / stream-K | cuBLAS ms | ours / cuBLAS |");
    println!("|----|-----------------------|-------|----------|----------|-------------|------------------|-----------|---------------|");
    for &(layout, m, n) in shapes {
        let shape = GemmShape::new(layout, m, n, k);
        let (a, bb, mut c) = operands::<Bf16, Bf16>(b, &shape)?;
        let epi = Epilogue::default();
        let streamed = split_k_partials::<Bf16, Bf16>(&b.stream, &shape, Math::Fp32)? > 0;
        let mut ws = GemmWorkspace::for_shapes::<Bf16, Bf16>(&b.stream, &[shape], Math::Fp32)?;
        let ours = b.time(|s| {
            Ok(gemm_with_workspace(
                s,
                &shape,
                &a,
                &bb,
                &mut c,
                &epi,
                Math::Fp32,
                &mut ws,
            )?)
        })?;
        let whole = b.time(|s| Ok(gemm_split_k(s, &shape, &a, &bb, &mut c, &epi, 1)?))?;
        let theirs = match &b.blas {
            Some(blas) => blas.time(Kind::Bf16, &shape, b.warmup, b.runs)?,
            None => f64::NAN,
        };
        let tiles = m.div_ceil(128) * n.div_ceil(256);
        println!(
            "| {} | {m:>5} × {n:>5} × {k:>5} | {tiles:>5} | {:<8} | {whole:>8.3} | {ours:>11.3} | {:>16.2} | {theirs:>9.3} | {:>13.2} |",
            layout.tag(),
            if streamed { "stream-K" } else { "whole" },
            whole / ours,
            theirs / ours,
        );
    }
    Ok(())
}

/// A gated MLP's projections and SwiGLU, `silu(x·W_gateᵀ) ⊙ (x·W_upᵀ)` in bf16: `gemm_swiglu`
/// (one launch on Hopper), beside our unfused form (two `gemm`s, then the elementwise SwiGLU)
/// and beside cuBLAS's GEMM of the stacked `[W_gate; W_up]` (`m × 2n × k`, one call) followed
/// by our elementwise SwiGLU (each timed on its own, the sum reported).
fn swiglu_rows(b: &Bench, small: bool) -> Res {
    let shapes: &[(&str, usize, usize, usize)] = if small {
        &[("tiny", 64, 136, 64)]
    } else {
        &[
            ("qwen0.5b", 4096, 4864, 896),
            ("llama8b", 4096, 14336, 4096),
        ]
    };
    println!();
    println!("| swiglu   | m     × n     × k     | fused ms | TFLOP/s | unfused ms | fused/unfused | cuBLAS+swiglu ms | fused/(cuBLAS+swiglu) |");
    println!("|----------|-----------------------|----------|---------|------------|---------------|------------------|-----------------------|");
    for &(label, m, n, k) in shapes {
        let x = filled::<Bf16>(&b.stream, m * k, 1)?;
        let wg = filled::<Bf16>(&b.stream, n * k, 2)?;
        let wu = filled::<Bf16>(&b.stream, n * k, 3)?;
        let mut out = Buffer::<Bf16>::zeros(&b.stream, m * n)?;
        let fused = b.time(|s| Ok(gemm_swiglu(s, &x, &wg, &wu, &mut out, m, n, k)?))?;
        let shape = GemmShape::new(Layout::Nt, m, n, k);
        let epi = Epilogue::default();
        let (mut gate, mut up) = (
            Buffer::<Bf16>::zeros(&b.stream, m * n)?,
            Buffer::<Bf16>::zeros(&b.stream, m * n)?,
        );
        let swiglu_ms = b.time(|s| Ok(swiglu(s, &gate, &up, &mut out)?))?;
        let unfused = b.time(|s| {
            gemm(s, &shape, &x, &wg, &mut gate, &epi, Math::Fp32)?;
            gemm(s, &shape, &x, &wu, &mut up, &epi, Math::Fp32)?;
            Ok(swiglu(s, &gate, &up, &mut out)?)
        })?;
        let theirs = match &b.blas {
            Some(blas) => {
                let stacked = GemmShape::new(Layout::Nt, m, 2 * n, k);
                let t = blas.time(Kind::Bf16, &stacked, b.warmup, b.runs)? + swiglu_ms;
                format!("{t:>16.3} | {:>21.2}", t / fused)
            }
            None => format!("{:>16} | {:>21}", "-", "-"),
        };
        let tflops = 4.0 * (m * n * k) as f64 / (fused * 1e-3) / 1e12;
        println!(
            "| {label:<8} | {m:>5} × {n:>5} × {k:>5} | {fused:>8.3} | {tflops:>7.1} | {unfused:>10.3} | {:>13.2} | {theirs} |",
            unfused / fused
        );
    }
    Ok(())
}

/// bf16 GEMMs with a fused epilogue (bias + GELU, bias + SiLU, residual add), beside our
/// plain GEMM followed by our elementwise kernel, and cuBLAS's plain GEMM followed by the same
/// elementwise kernel (each part timed on its own in the same process, the times added). The
/// elementwise stand-ins apply the activation (or the add) but no bias, so both unfused
/// columns are lower bounds for an unfused bias + activation.
fn epilogue_rows(b: &Bench, small: bool) -> Res {
    let shapes = linear_layers(small);
    println!();
    println!("| epilogue  | m     × n     × k     | fused ms | ours + elementwise ms | fused/(ours+elementwise) | cuBLAS + elementwise ms | fused/(cuBLAS+elementwise) |");
    println!("|-----------|-----------------------|----------|-----------------------|--------------------------|-------------------------|----------------------------|");
    for &(m, n, k) in shapes {
        let shape = GemmShape::new(Layout::Nt, m, n, k);
        let (a, bb, mut c) = operands::<Bf16, Bf16>(b, &shape)?;
        let bias = filled::<Bf16>(&b.stream, n, 4)?;
        let residual = filled::<Bf16>(&b.stream, m * n, 5)?;
        let mut out = Buffer::<Bf16>::zeros(&b.stream, m * n)?;
        let plain = Epilogue::default();
        let plain_ms = b.time(|s| Ok(gemm(s, &shape, &a, &bb, &mut c, &plain, Math::Fp32)?))?;
        let blas_ms = match &b.blas {
            Some(blas) => Some(blas.time(Kind::Bf16, &shape, b.warmup, b.runs)?),
            None => None,
        };
        let cases = [
            (
                "bias+gelu",
                Epilogue::default()
                    .with_bias(&bias)
                    .with_activation(Activation::GeluTanh),
            ),
            (
                "bias+silu",
                Epilogue::default()
                    .with_bias(&bias)
                    .with_activation(Activation::Silu),
            ),
            ("residual", Epilogue::default().with_residual(&residual)),
        ];
        for (label, epi) in cases {
            let fused = b.time(|s| Ok(gemm(s, &shape, &a, &bb, &mut c, &epi, Math::Fp32)?))?;
            let elementwise = b.time(|s| {
                match label {
                    "bias+gelu" => gelu_tanh(s, &c, &mut out)?,
                    "bias+silu" => silu(s, &c, &mut out)?,
                    _ => add(s, &c, &residual, &mut out)?,
                }
                Ok(())
            })?;
            let ours = plain_ms + elementwise;
            let theirs = match blas_ms {
                Some(t) => {
                    let t = t + elementwise;
                    format!("{t:>23.3} | {:>26.2}", t / fused)
                }
                None => format!("{:>23} | {:>26}", "-", "-"),
            };
            println!(
                "| {label:<9} | {m:>5} × {n:>5} × {k:>5} | {fused:>8.3} | {ours:>21.3} | {:>24.2} | {theirs} |",
                ours / fused
            );
        }
    }
    Ok(())
}

/// bf16 GEMMs writing a bf16 output and its f32 copy in one epilogue (`gemm_with_f32_copy`),
/// plain and with bias + GELU, beside our GEMM into f32 (same epilogue) followed by our cast to
/// bf16, and cuBLAS's plain bf16 → f32 GEMM followed by the same cast (each part timed on its
/// own in the same process, the times added; for bias + GELU the cuBLAS column is a lower
/// bound, as it applies neither).
fn copy_rows(b: &Bench, small: bool) -> Res {
    let shapes = linear_layers(small);
    println!();
    println!("| f32 copy  | m     × n     × k     | fused ms | ours f32 + cast ms | fused/(ours+cast) | cuBLAS f32 + cast ms | fused/(cuBLAS+cast) |");
    println!("|-----------|-----------------------|----------|--------------------|-------------------|----------------------|---------------------|");
    for &(m, n, k) in shapes {
        let shape = GemmShape::new(Layout::Nt, m, n, k);
        let (a, bb, mut c) = operands::<Bf16, Bf16>(b, &shape)?;
        let mut copy = Buffer::<f32>::zeros(&b.stream, m * n)?;
        let bias = filled::<Bf16>(&b.stream, n, 4)?;
        let cast_ms = b.time(|s| Ok(cast(s, &copy, &mut c)?))?;
        let blas_ms = match &b.blas {
            Some(blas) => Some(blas.time_f32_out(&shape, b.warmup, b.runs)?),
            None => None,
        };
        let cases = [
            ("plain", Epilogue::default()),
            (
                "bias+gelu",
                Epilogue::default()
                    .with_bias(&bias)
                    .with_activation(Activation::GeluTanh),
            ),
        ];
        for (label, epi) in cases {
            let fused = b.time(|s| {
                Ok(gemm_with_f32_copy(
                    s,
                    &shape,
                    &a,
                    &bb,
                    &mut c,
                    &mut copy,
                    &epi,
                    Math::Fp32,
                )?)
            })?;
            let f32_ms = b.time(|s| Ok(gemm(s, &shape, &a, &bb, &mut copy, &epi, Math::Fp32)?))?;
            let ours = f32_ms + cast_ms;
            let theirs = match blas_ms {
                Some(t) => {
                    let t = t + cast_ms;
                    format!("{t:>20.3} | {:>19.2}", t / fused)
                }
                None => format!("{:>20} | {:>19}", "-", "-"),
            };
            println!(
                "| {label:<9} | {m:>5} × {n:>5} × {k:>5} | {fused:>8.3} | {ours:>18.3} | {:>17.2} | {theirs} |",
                ours / fused
            );
        }
    }
    Ok(())
}

/// A linear layer's (tokens, outputs, inputs): 4096 tokens × 4864 outputs × 896 inputs and its
/// transpose (a tiny one on the emulator).
fn linear_layers(small: bool) -> &'static [(usize, usize, usize)] {
    if small {
        &[(48, 40, 24)]
    } else {
        &[(4096, 4864, 896), (4096, 896, 4864)]
    }
}

/// Problems whose rows are not 16-byte aligned (a leading dimension of 4100 bf16), for
/// [`Kind::AsyncBf16`]: square-ish in each layout.
fn unaligned_problems(small: bool) -> Vec<(String, GemmShape)> {
    let (s, odd) = if small { (40, 36) } else { (4096, 4100) };
    vec![
        ("unaligned".into(), GemmShape::new(Layout::Nt, s, s, odd)),
        ("unaligned".into(), GemmShape::new(Layout::Nn, s, s, odd)),
        ("unaligned".into(), GemmShape::new(Layout::Tn, odd, s, s)),
    ]
}

/// The problems: (label, shape).
fn problems(small: bool) -> Vec<(String, GemmShape)> {
    let sq: &[usize] = if small { &[64] } else { &[4096, 8192] };
    let linear = linear_layers(small);
    let ranks: &[usize] = if small { &[8] } else { &[8, 16, 32, 64] };
    let hidden = if small { 64 } else { 4096 };
    let mut out = Vec::new();
    for &s in sq {
        out.push(("square".into(), GemmShape::new(Layout::Nn, s, s, s)));
        out.push(("square".into(), GemmShape::new(Layout::Nt, s, s, s)));
        // TN with whole waves of tiles (the training shapes' TN rows end in a mostly idle one).
        out.push(("square".into(), GemmShape::new(Layout::Tn, s, s, s)));
    }
    for &(t, o, i) in linear {
        out.push(("fwd".into(), GemmShape::new(Layout::Nt, t, o, i)));
        out.push(("grad_x".into(), GemmShape::new(Layout::Nn, t, i, o)));
        out.push(("grad_w".into(), GemmShape::new(Layout::Tn, o, i, t)));
    }
    for &r in ranks {
        // x·Aᵀ (down to rank r), then (x·Aᵀ)·Bᵀ (back up), and the adapter gradients.
        let lbl = |s: &str| format!("lora{r}_{s}");
        out.push((lbl("down"), GemmShape::new(Layout::Nt, hidden, r, hidden)));
        out.push((lbl("up"), GemmShape::new(Layout::Nt, hidden, hidden, r)));
        out.push((lbl("dA"), GemmShape::new(Layout::Tn, r, hidden, hidden)));
        out.push((lbl("dB"), GemmShape::new(Layout::Tn, hidden, r, hidden)));
    }
    out
}

fn main() -> Res {
    let small = std::env::var_os("BENCH_SMALL").is_some();
    // BENCH_KINDS=bf16,mma (say) runs only those rows.
    let only = std::env::var("BENCH_KINDS").ok();
    let wants = |name: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|w| w == name))
    };
    // BENCH_LABELS=lora16_up,square (say) runs only the problems of those labels.
    let labels = std::env::var("BENCH_LABELS").ok();
    let wants_label = |label: &str| {
        labels
            .as_deref()
            .is_none_or(|l| l.split(',').any(|w| w == label))
    };
    let device = if small && only.is_some() && (wants("async") || wants("stream_k")) {
        // The async and stream-K rows need Hopper.
        Device::emulator_for(Target::Sm90a)
    } else if small {
        Device::emulator()
    } else {
        Device::cuda(0).map_err(|e| {
            format!("no CUDA device ({e}); set BENCH_SMALL=1 to run tiny shapes on the emulator")
        })?
    };
    let stream = device.stream()?;
    let blas = if small {
        println!("cuBLAS skipped: emulator run");
        None
    } else {
        Some(blas::Blas::new()?)
    };
    let b = Bench {
        device,
        stream,
        warmup: if small { 1 } else { 5 },
        runs: if small { 3 } else { 15 },
        blas,
    };
    println!("device: {}", b.device.props().name);
    println!("| math | problem     | ly | m     × n     × k     |  ours ms | TFLOP/s | builder ms | ours/builder | cuBLAS ms | TFLOP/s | ours/cuBLAS |");
    println!("|------|-------------|----|-----------------------|----------|---------|------------|--------------|-----------|---------|-------------|");
    let kinds = [
        Kind::Fp32,
        Kind::Tf32,
        Kind::Bf16,
        Kind::MmaBf16,
        Kind::TmaBf16,
        Kind::AsyncBf16,
    ];
    for kind in kinds.into_iter().filter(|k| wants(k.name())) {
        let list = if kind == Kind::AsyncBf16 {
            unaligned_problems(small)
        } else {
            problems(small)
        };
        for (label, shape) in list.into_iter().filter(|(l, _)| wants_label(l)) {
            row(&b, kind, &label, &shape)?;
        }
    }
    if wants("swiglu") {
        swiglu_rows(&b, small)?;
    }
    if wants("epilogue") {
        epilogue_rows(&b, small)?;
    }
    if wants("copy") {
        copy_rows(&b, small)?;
    }
    if wants("stream_k") {
        stream_k_rows(&b, small)?;
    }
    Ok(())
}

/// cuBLAS through cudarc, on its own stream of device 0 (the same GPU).
mod blas {
    use super::{GemmShape, Kind, Layout, Res};
    use cudarc::cublas::{result, sys, CudaBlas};
    use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
    use std::ffi::c_void;
    use std::sync::Arc;

    pub struct Blas {
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        handle: CudaBlas,
    }

    impl Blas {
        pub fn new() -> Res<Blas> {
            // SAFETY: probing only tries to dlopen the driver library.
            if !unsafe { cudarc::driver::sys::is_culib_present() } {
                return Err("no CUDA driver".into());
            }
            let ctx = CudaContext::new(0)?;
            let stream = ctx.new_stream()?;
            let handle = CudaBlas::new(stream.clone())?;
            Ok(Blas {
                ctx,
                stream,
                handle,
            })
        }

        fn filled(&self, bytes: usize) -> Res<CudaSlice<u16>> {
            // Small finite values for either element type: bf16 / the high halves of f32.
            let host: Vec<u16> = (0..bytes / 2)
                .map(|i| 0x3c00 | ((i as u32).wrapping_mul(2_654_435_761) >> 25) as u16)
                .collect();
            Ok(self.stream.clone_htod(&host)?)
        }

        /// Median milliseconds of cuBLAS on `shape` (row-major, mapped onto column-major by
        /// computing `Cᵀ = op(B)ᵀ·op(A)ᵀ`), C of the inputs' type.
        pub fn time(&self, kind: Kind, s: &GemmShape, warmup: usize, runs: usize) -> Res<f64> {
            self.time_out(kind, s, false, warmup, runs)
        }

        /// [`Blas::time`] for bf16 inputs and an f32 C.
        pub fn time_f32_out(&self, s: &GemmShape, warmup: usize, runs: usize) -> Res<f64> {
            self.time_out(Kind::Bf16, s, true, warmup, runs)
        }

        fn time_out(
            &self,
            kind: Kind,
            s: &GemmShape,
            f32_out: bool,
            warmup: usize,
            runs: usize,
        ) -> Res<f64> {
            let (elem, ty, compute) = match kind {
                Kind::Fp32 => (
                    4,
                    sys::cudaDataType_t::CUDA_R_32F,
                    sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                ),
                Kind::Tf32 => (
                    4,
                    sys::cudaDataType_t::CUDA_R_32F,
                    sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
                ),
                Kind::Bf16 | Kind::MmaBf16 | Kind::TmaBf16 | Kind::AsyncBf16 => (
                    2,
                    sys::cudaDataType_t::CUDA_R_16BF,
                    sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                ),
            };
            let a = self.filled(s.m * s.k * elem)?;
            let b = self.filled(s.n * s.k * elem)?;
            let (c_elem, c_ty) = if f32_out {
                (4, sys::cudaDataType_t::CUDA_R_32F)
            } else {
                (elem, ty)
            };
            let mut c = self.filled(s.m * s.n * c_elem)?;
            use sys::cublasOperation_t::{CUBLAS_OP_N as N, CUBLAS_OP_T as T};
            // Column-major: the first operand is our B, the second our A.
            let (op_b, ldb) = match s.layout {
                Layout::Nt => (T, s.k),
                Layout::Nn | Layout::Tn => (N, s.n),
            };
            let (op_a, lda) = match s.layout {
                Layout::Tn => (T, s.m),
                Layout::Nn | Layout::Nt => (N, s.k),
            };
            let alpha = 1.0f32;
            let beta = 0.0f32;
            let launch = || -> Res {
                let (pa, _ra) = a.device_ptr(&self.stream);
                let (pb, _rb) = b.device_ptr(&self.stream);
                let (pc, _rc) = c.device_ptr_mut(&self.stream);
                // SAFETY: every pointer is a live allocation of this context sized for its
                // operand (m·k, n·k, m·n elements); alpha/beta are host f32 as compute 32F needs.
                unsafe {
                    result::gemm_ex(
                        *self.handle.handle(),
                        op_b,
                        op_a,
                        s.n as i32,
                        s.m as i32,
                        s.k as i32,
                        &alpha as *const f32 as *const c_void,
                        pb as *const c_void,
                        ty,
                        ldb as i32,
                        pa as *const c_void,
                        ty,
                        lda as i32,
                        &beta as *const f32 as *const c_void,
                        pc as *mut c_void,
                        c_ty,
                        s.n as i32,
                        compute,
                        sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                    )?;
                }
                Ok(())
            };
            super::common::vendor_median_ms(&self.ctx, &self.stream, warmup, runs, launch)
        }
    }
}
