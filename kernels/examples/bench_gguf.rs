//! GGUF weights: the decode GEMV at M = 1 to 16 on Llama-3-8B's projections and the serve
//! benchmark's 8 × 2048 model's, for each
//! format and activation type, as a share of the copy bandwidth over the quantized weight
//! bytes (the driver's device-to-device copy, measured in the same run; activations and
//! outputs are not counted), timed twice so that clock drift shows: the f32 route (`gemv`),
//! the int8 route's GEMV alone (`gemv_q8` on activations quantized once) and with the
//! activations' quantization in each launch pair, the int8 route on the tensor cores
//! (`gemv_q8_mma`, its activations read from global or staged in shared memory), and the tensor-core GEMV (`gemv_mma`,
//! also by the row tiles a warp takes and by a block a tile against blocks that walk tiles); the stacked forms a decode layer launches (q, k and v
//! as one `gemv_mma_parts`, gate and up as one `gemv_mma_swiglu`) against the launches they
//! replace; then the prefill at M = 512
//! (dequantize to bf16, then the bf16 GEMM) against the bf16 GEMM alone on the
//! already-dequantized weight.
//!
//! ```text
//! cargo run --release -p kernels --example bench_gguf          # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_gguf      # tiny shapes on the emulator
//! BENCH_ONLY=gemv/q4_K BENCH_RUNS=1 ncu … bench_gguf           # some rows
//! ```

mod common;

use common::{filled, Bench, Res};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::elementwise::swiglu;
use kernels::gemm::{gemm, Epilogue, GemmShape, Layout, Math};
use kernels::quant::gguf::{
    dequantize, gemv, gemv_mma, gemv_mma_parts, gemv_mma_swiglu, gemv_mma_with, gemv_q8,
    gemv_q8_mma_with, prefill, prefill_workspace_len, quantize_activations, GemvMmaPlan,
    GgufFormat, GgufMatrix, GgufWeights, QuantizedActivations,
};
use kernels::Float;

/// Llama-3-8B's projections, `rows × cols` (N × K): qkv, o, gate_up, down.
const SHAPES: [(&str, usize, usize); 4] = [
    ("qkv", 6144, 4096),
    ("o", 4096, 4096),
    ("gate_up", 28672, 4096),
    ("down", 4096, 14336),
];

/// The serve benchmark's 8 × 2048 model (rows of 8 and 22 blocks of 256): q, k and v
/// stacked, o, then the two the tiles table also takes, gate and up stacked, and down.
const SERVE_SHAPES: [(&str, usize, usize); 4] = [
    ("8x2048 qkv", 3072, 2048),
    ("8x2048 o", 2048, 2048),
    ("8x2048 gate_up", 11264, 2048),
    ("8x2048 down", 2048, 5632),
];

/// Launches per timed run, so that launch gaps do not hide the kernel's bandwidth.
const LAUNCHES: usize = 20;

/// Deterministic blocks with finite scales near 1 (the speed does not depend on the values).
fn weights(s: &Stream, format: GgufFormat, rows: usize, cols: usize) -> Res<GgufWeights> {
    Ok(matrix(format, rows, cols)?.to_device(s)?)
}

/// [`weights`] on the host.
fn matrix(format: GgufFormat, rows: usize, cols: usize) -> Res<GgufMatrix> {
    let mut h = 0x9e37_79b9u32;
    let mut bytes: Vec<u8> = (0..rows * format.row_bytes(cols))
        .map(|_| {
            h ^= h << 13;
            h ^= h >> 17;
            h ^= h << 5;
            h as u8
        })
        .collect();
    let halves: &[usize] = match format {
        GgufFormat::Q8_0 => &[0],
        GgufFormat::Q4K => &[0, 2],
        GgufFormat::Q6K => &[208],
    };
    for (i, block) in bytes.chunks_exact_mut(format.block_bytes()).enumerate() {
        for &at in halves {
            // f16 exponent 10 (2^-5) with a varying mantissa.
            let v = 10u16 << 10 | (i as u16 & 0x3ff);
            block[at..at + 2].copy_from_slice(&v.to_le_bytes());
        }
    }
    Ok(GgufMatrix::from_bytes(format, rows, cols, bytes)?)
}

fn skip(name: &str) -> bool {
    std::env::var("BENCH_ONLY").is_ok_and(|only| !name.contains(&only))
}

fn gemv_row<T: Float>(b: &Bench, w: &GgufWeights, shape: &str, m: usize) -> Res {
    let name = format!("gemv/{}/{}/{shape}/m{m}", w.format(), T::TYPE.suffix());
    if skip(&name) {
        return Ok(());
    }
    let x = filled::<T>(&b.stream, m * w.cols(), 3)?;
    let mut y = Buffer::<T>::zeros(&b.stream, m * w.rows())?;
    let mut xq = QuantizedActivations::new(&b.stream, m, w.cols())?;
    quantize_activations(&b.stream, &x, &mut xq, m)?;
    let bytes = (w.quantized_bytes() * LAUNCHES) as f64;
    let f32_route = b.percent_twice(bytes, |s| {
        for _ in 0..LAUNCHES {
            gemv(s, w, &x, &mut y, m)?;
        }
        Ok(())
    })?;
    let int8 = b.percent_twice(bytes, |s| {
        for _ in 0..LAUNCHES {
            gemv_q8(s, w, &xq, &mut y, m)?;
        }
        Ok(())
    })?;
    let with_quantize = b.percent_twice(bytes, |s| {
        for _ in 0..LAUNCHES {
            quantize_activations(s, &x, &mut xq, m)?;
            gemv_q8(s, w, &xq, &mut y, m)?;
        }
        Ok(())
    })?;
    let pair = |[a, b]: [f64; 2]| format!("{a:>5.1} / {b:>5.1}");
    let tensor_core = pair(b.percent_twice(bytes, |s| {
        for _ in 0..LAUNCHES {
            gemv_mma(s, w, &x, &mut y, m)?;
        }
        Ok(())
    })?);
    let int8_direct_x = pair(b.percent_twice(bytes, |s| {
        for _ in 0..LAUNCHES {
            gemv_q8_mma_with(s, w, &xq, &mut y, m, false)?;
        }
        Ok(())
    })?);
    let int8_staged_x = pair(b.percent_twice(bytes, |s| {
        for _ in 0..LAUNCHES {
            gemv_q8_mma_with(s, w, &xq, &mut y, m, true)?;
        }
        Ok(())
    })?);
    println!(
        "| {:<5} | {:<4} | {:<16} | {:>2} | {} | {} | {} | {} | {} | {} |",
        w.format().name(),
        T::TYPE.suffix(),
        format!("{shape} {}x{}", w.rows(), w.cols()),
        m,
        pair(f32_route),
        pair(int8),
        pair(with_quantize),
        tensor_core,
        int8_direct_x,
        int8_staged_x
    );
    Ok(())
}

/// The tensor-core GEMV with each plan, side by side: the row tiles a warp takes, and a
/// block a tile of rows against as many blocks as the SMs hold, each walking tiles.
fn tiles_row(b: &Bench, w: &GgufWeights, shape: &str, m: usize) -> Res {
    let name = format!("tiles/{}/{shape}/m{m}", w.format());
    if skip(&name) {
        return Ok(());
    }
    let x = filled::<Bf16>(&b.stream, m * w.cols(), 3)?;
    let mut y = Buffer::<Bf16>::zeros(&b.stream, m * w.rows())?;
    let bytes = (w.quantized_bytes() * LAUNCHES) as f64;
    let sms = b.stream.device().props().sm_count as usize;
    let walking = sms * GemvMmaPlan::BLOCKS_PER_SM;
    let mut cells = Vec::new();
    for tiles in [1, 2] {
        for grid in [w.rows(), walking] {
            if tiles == 2 && w.format() == GgufFormat::Q8_0 {
                cells.push("–".to_string());
                continue;
            }
            let plan = GemvMmaPlan { tiles, grid };
            let [a, c] = b.percent_twice(bytes, |s| {
                for _ in 0..LAUNCHES {
                    gemv_mma_with(s, w, &x, &mut y, m, plan)?;
                }
                Ok(())
            })?;
            cells.push(format!("{a:>5.1} / {c:>5.1}"));
        }
    }
    println!(
        "| {:<5} | {:<22} | {m:>2} | {} |",
        w.format().name(),
        format!("{shape} {}x{}", w.rows(), w.cols()),
        cells.join(" | ")
    );
    Ok(())
}

/// A decoder layer's projections that read one input: `(name, hidden, kv width, ffn)`.
type Layer = (&'static str, usize, usize, usize);

/// The serve path's (Q4_K, f32 `x` and `y`): q, k and v as one `gemv_mma_parts` against
/// three `gemv_mma`, and gate and up as one `gemv_mma_swiglu` against two `gemv_mma` and the
/// elementwise SwiGLU; µs a call, and the stacked form's share of the other's time.
fn stacked_row(b: &Bench, (name, hidden, kv, ffn): Layer, m: usize) -> Res {
    let label = format!("stacked/{name}/m{m}");
    if skip(&label) {
        return Ok(());
    }
    let s = &b.stream;
    let f = GgufFormat::Q4K;
    let (q, k, v) = (
        matrix(f, hidden, hidden)?,
        matrix(f, kv, hidden)?,
        matrix(f, kv, hidden)?,
    );
    let qkv = GgufMatrix::stack(&[&q, &k, &v])?.to_device(s)?;
    let (q, k, v) = (q.to_device(s)?, k.to_device(s)?, v.to_device(s)?);
    let (gate, up) = (matrix(f, ffn, hidden)?, matrix(f, ffn, hidden)?);
    let gate_up = GgufMatrix::stack(&[&gate, &up])?.to_device(s)?;
    let (gate, up) = (gate.to_device(s)?, up.to_device(s)?);
    let x = filled::<f32>(s, m * hidden, 5)?;
    let out = |n: usize| Buffer::<f32>::zeros(s, m * n);
    let (mut yq, mut yk, mut yv) = (out(hidden)?, out(kv)?, out(kv)?);
    let (mut yg, mut yu, mut act) = (out(ffn)?, out(ffn)?, out(ffn)?);
    let per_call = |ms: f64| 1000.0 * ms / LAUNCHES as f64;
    let stacked_qkv = per_call(b.time(|s| {
        for _ in 0..LAUNCHES {
            let parts = [hidden, kv, kv];
            gemv_mma_parts(s, &qkv, &parts, &x, &mut [&mut yq, &mut yk, &mut yv], m)?;
        }
        Ok(())
    })?);
    let apart_qkv = per_call(b.time(|s| {
        for _ in 0..LAUNCHES {
            gemv_mma(s, &q, &x, &mut yq, m)?;
            gemv_mma(s, &k, &x, &mut yk, m)?;
            gemv_mma(s, &v, &x, &mut yv, m)?;
        }
        Ok(())
    })?);
    let stacked_mlp = per_call(b.time(|s| {
        for _ in 0..LAUNCHES {
            gemv_mma_swiglu(s, &gate_up, &x, &mut act, m)?;
        }
        Ok(())
    })?);
    let apart_mlp = per_call(b.time(|s| {
        for _ in 0..LAUNCHES {
            gemv_mma(s, &gate, &x, &mut yg, m)?;
            gemv_mma(s, &up, &x, &mut yu, m)?;
            swiglu(s, &yg, &yu, &mut act)?;
        }
        Ok(())
    })?);
    println!(
        "| {name:<22} | {m:>2} | {stacked_qkv:>7.2} | {apart_qkv:>7.2} | {:>5.2} | {stacked_mlp:>7.2} | {apart_mlp:>7.2} | {:>5.2} |",
        stacked_qkv / apart_qkv,
        stacked_mlp / apart_mlp
    );
    Ok(())
}

fn prefill_row(b: &Bench, w: &GgufWeights, shape: &str, m: usize) -> Res {
    let name = format!("prefill/{}/{shape}/m{m}", w.format());
    if skip(&name) {
        return Ok(());
    }
    let (n, k) = (w.rows(), w.cols());
    let x = filled::<Bf16>(&b.stream, m * k, 4)?;
    let mut y = Buffer::<Bf16>::zeros(&b.stream, m * n)?;
    let mut ws = Buffer::<Bf16>::zeros(&b.stream, prefill_workspace_len(w))?;
    let fused = b.time(|s| Ok(prefill(s, w, &x, &mut y, m, &mut ws)?))?;
    let dequant = b.time(|s| Ok(dequantize(s, w, &mut ws)?))?;
    let gemm_shape = GemmShape::new(Layout::Nt, m, n, k);
    let alone = b.time(|s| {
        Ok(gemm(
            s,
            &gemm_shape,
            &x,
            &ws,
            &mut y,
            &Epilogue::default(),
            Math::Fp32,
        )?)
    })?;
    println!(
        "| {:<5} | {:<16} | {m:>4} | {fused:>8.3} | {dequant:>8.3} | {alone:>8.3} | {:>5.1} |",
        w.format().name(),
        format!("{shape} {n}x{k}"),
        100.0 * alone / fused
    );
    Ok(())
}

fn main() -> Res {
    let b = Bench::new()?;
    let small = Bench::small();
    let shapes: Vec<(&str, usize, usize)> = if small {
        vec![("small", 40, 512)]
    } else {
        SHAPES.to_vec()
    };
    let serve: &[(&str, usize, usize)] = if small { &[] } else { &SERVE_SHAPES };
    let model_shapes = [&shapes[..], serve].concat();
    println!("\nGEMV, % of copy bandwidth over the quantized weight bytes (two passes)\n");
    println!("| format | x, y | shape | M | gemv | gemv_q8 | quantize + gemv_q8 | gemv_mma | gemv_q8_mma, x direct | gemv_q8_mma, x staged |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for format in GgufFormat::ALL {
        for &(shape, n, k) in &model_shapes {
            let w = weights(&b.stream, format, n, k)?;
            for m in [1, 4, 8, 16] {
                gemv_row::<Bf16>(&b, &w, shape, m)?;
                gemv_row::<f32>(&b, &w, shape, m)?;
            }
        }
    }
    println!("\ngemv_mma (bf16) by the row tiles a warp takes, % of copy (two passes)\n");
    println!(
        "| format | shape | M | 1 tile, a block a tile | 1 tile, blocks walk tiles | 2 tiles, a block a tile | 2 tiles, blocks walk tiles |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    // Of the serve model's, its two widest weights (the last two).
    let tile_shapes = [&shapes[..], serve.get(2..).unwrap_or(&[])].concat();
    // Q8_0 has the one-tile plan only.
    for format in GgufFormat::ALL {
        for &(shape, n, k) in &tile_shapes {
            let w = weights(&b.stream, format, n, k)?;
            for m in [1, 16] {
                tiles_row(&b, &w, shape, m)?;
            }
        }
    }
    let layers: Vec<Layer> = if small {
        vec![("small 256/128/512", 256, 128, 512)]
    } else {
        vec![
            ("8 x 2048 2048/512/5632", 2048, 512, 5632),
            ("Llama-3-8B 4096/1024/14336", 4096, 1024, 14336),
        ]
    };
    println!("\nStacked GEMVs (Q4_K, f32) against the launches they replace, µs a call\n");
    println!("| layer (hidden/kv/ffn) | M | qkv stacked | qkv apart | ratio | gate+up+SwiGLU stacked | apart | ratio |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for &layer in &layers {
        for m in [1, 16] {
            stacked_row(&b, layer, m)?;
        }
    }
    let m = if small { 64 } else { 512 };
    println!("\nPrefill (dequantize to bf16 + bf16 GEMM) against the bf16 GEMM alone, ms\n");
    println!("| format | shape | M | prefill | dequantize | GEMM alone | GEMM / prefill % |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for format in GgufFormat::ALL {
        for &(shape, n, k) in &shapes {
            let w = weights(&b.stream, format, n, k)?;
            prefill_row(&b, &w, shape, m)?;
        }
    }
    Ok(())
}
