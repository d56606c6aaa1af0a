//! The fp8 GEMM (`kernels::gemm::gemm_fp8`, e4m3 · e4m3 → bf16 with per-tensor scales) against
//! cuBLASLt's fp8 matmul on the same problem, in one process on one sm_90 device: each timed
//! with CUDA events after warm-up, median of the timed runs. cuBLASLt runs with fast
//! accumulation on, as ours accumulates: the sums stay in the tensor cores across the whole of
//! k. The last column is our throughput over cuBLASLt's (1.0 = parity).
//!
//! ```text
//! cargo run --release -p kernels --features sm_90 --example bench_gemm_fp8   # on a GPU
//! BENCH_SMALL=1 cargo run -p kernels --example bench_gemm_fp8                # emulator
//! ```
//!
//! Shapes (`m × n × k`, C = A·Bᵀ with both operands k-contiguous): 4096³ and 8192³, a linear
//! layer of 4096 tokens × 4864 outputs × 896 inputs, and Llama-3-8B's gate_up (8192 tokens ×
//! 28672 × 4096) and down (8192 × 4096 × 14336) projections.

mod common;

use kernel_runtime::{Bf16, Buffer, Device, Stream};
use kernels::gemm::{gemm_fp8, Fp8Format, Fp8Matrix};

use common::Res;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Bytes of a cheap deterministic pattern of small e4m3 values, both signs, never all zero.
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len)
        .map(|i| {
            let h = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed);
            // Exponent field 4..=7 (1/8 to 1), any mantissa, any sign.
            ((h >> 24) as u8 & 0x87) | (0x20 + ((h >> 16) as u8 & 0x18))
        })
        .collect()
}

/// Median milliseconds of `f` on `stream`.
fn time(
    device: &Device,
    stream: &Stream,
    warmup: usize,
    runs: usize,
    mut f: impl FnMut() -> Res,
) -> Res<f64> {
    for _ in 0..warmup {
        f()?;
    }
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (start, end) = (device.event()?, device.event()?);
        stream.record(&start)?;
        f()?;
        stream.record(&end)?;
        end.synchronize()?;
        ms.push(start.elapsed_ms(&end)? as f64);
    }
    Ok(median(ms))
}

fn main() -> Res {
    let small = std::env::var_os("BENCH_SMALL").is_some();
    let device = if small {
        Device::emulator_for(kernel_dsl::Target::Sm90a)
    } else {
        Device::cuda(0).map_err(|e| {
            format!("no CUDA device ({e}); set BENCH_SMALL=1 to run a tiny shape on the emulator")
        })?
    };
    if device.target().sm() != 90 {
        return Err(format!("the fp8 GEMM runs on sm_90, not {}", device.target().name()).into());
    }
    let stream = device.stream()?;
    let lt = if small {
        println!("cuBLASLt skipped: emulator run");
        None
    } else {
        Some(lt::Lt::new()?)
    };
    let (warmup, runs) = if small { (1, 1) } else { (5, 15) };
    let shapes: &[(&str, usize, usize, usize)] = if small {
        &[("tiny", 64, 64, 128)]
    } else {
        &[
            ("square", 4096, 4096, 4096),
            ("square", 8192, 8192, 8192),
            ("fwd", 4096, 4864, 896),
            ("gate_up", 8192, 28672, 4096),
            ("down", 8192, 4096, 14336),
        ]
    };
    println!("device: {}", device.props().name);
    println!("| problem | m     × n     × k     |  ours ms | TFLOP/s | cuBLASLt ms | TFLOP/s | ours/cuBLASLt |");
    println!("|---------|-----------------------|----------|---------|-------------|---------|---------------|");
    for &(label, m, n, k) in shapes {
        let a = Fp8Matrix::from_bytes(
            &stream,
            Fp8Format::E4m3,
            m as u32,
            k as u32,
            &pattern(m * k, 1),
        )?;
        let b = Fp8Matrix::from_bytes(
            &stream,
            Fp8Format::E4m3,
            n as u32,
            k as u32,
            &pattern(n * k, 2),
        )?;
        let scales = Buffer::from_host(&stream, &[0.5f32, 0.25])?;
        let mut c = Buffer::<Bf16>::zeros(&stream, m * n)?;
        let ms = time(&device, &stream, warmup, runs, || {
            Ok(gemm_fp8(&stream, &a, &b, &scales, &mut c)?)
        })?;
        let tflops = |ms: f64| 2.0 * (m * n * k) as f64 / (ms * 1e-3) / 1e12;
        let theirs = lt.as_ref().map(|lt| {
            lt.time(
                m,
                n,
                k,
                &pattern(m * k, 1),
                &pattern(n * k, 2),
                warmup,
                runs,
            )
        });
        // A refusal by cuBLASLt leaves our row standing, with the refusal in its place.
        let (theirs, ratio) = match theirs {
            Some(Ok(t)) => (
                format!("{t:>11.3} | {:>7.1}", tflops(t)),
                format!("{:>13.2}", t / ms),
            ),
            Some(Err(e)) => (
                format!("{:>11} | {:>7}", "-", "-"),
                format!("cuBLASLt: {e}"),
            ),
            None => (format!("{:>11} | {:>7}", "-", "-"), format!("{:>13}", "-")),
        };
        println!(
            "| {label:<7} | {m:>5} × {n:>5} × {k:>5} | {ms:>8.3} | {:>7.1} | {theirs} | {ratio} |",
            tflops(ms)
        );
    }
    Ok(())
}

/// cuBLASLt's fp8 matmul through cudarc, on its own stream of device 0 (the same GPU).
mod lt {
    use super::Res;
    use cudarc::cublaslt::{result, sys};
    use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
    use std::ffi::c_void;
    use std::sync::Arc;

    /// Workspace offered to the heuristic, as PyTorch offers it on Hopper.
    const WORKSPACE: usize = 32 << 20;

    pub struct Lt {
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        handle: sys::cublasLtHandle_t,
        workspace: CudaSlice<u8>,
    }

    impl Lt {
        pub fn new() -> Res<Lt> {
            let ctx = CudaContext::new(0)?;
            let stream = ctx.new_stream()?;
            let handle = result::create_handle()?;
            let workspace = stream.alloc_zeros::<u8>(WORKSPACE)?;
            Ok(Lt {
                ctx,
                stream,
                handle,
                workspace,
            })
        }

        /// Median milliseconds of `C = sa · sb · A · Bᵀ` for e4m3 `a` (`m × k`) and `b`
        /// (`n × k`), both row-major, into bf16 `C` (`m × n`, row-major), fast accumulation on.
        /// Column-major, that is `Cᵀ (n × m) = op(B) · op(A)` with B read transposed, the TN
        /// form cuBLASLt's fp8 path takes.
        #[allow(clippy::too_many_arguments)]
        pub fn time(
            &self,
            m: usize,
            n: usize,
            k: usize,
            a: &[u8],
            b: &[u8],
            warmup: usize,
            runs: usize,
        ) -> Res<f64> {
            use sys::cublasLtMatmulDescAttributes_t as Desc;
            use sys::cudaDataType_t as Ty;
            let da = self.stream.clone_htod(a)?;
            let db = self.stream.clone_htod(b)?;
            let scales = self.stream.clone_htod(&[0.5f32, 0.25])?;
            let mut dc = self.stream.alloc_zeros::<u16>(m * n)?;
            let desc = result::create_matmul_desc(
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                Ty::CUDA_R_32F,
            )?;
            let (transpose, keep, fast) = (1i32, 0i32, 1i8);
            let (ps, _rs) = scales.device_ptr(&self.stream);
            let (scale_a, scale_b) = (ps, ps + 4);
            // SAFETY: `desc` is live; each value is the type its attribute takes (an int32
            // operation, an int8 flag, a device pointer to one f32), passed with its size.
            unsafe {
                let set = |attr: Desc, v: *const c_void, size: usize| {
                    result::set_matmul_desc_attribute(desc, attr, v, size)
                };
                set(
                    Desc::CUBLASLT_MATMUL_DESC_TRANSA,
                    &transpose as *const i32 as _,
                    4,
                )?;
                set(
                    Desc::CUBLASLT_MATMUL_DESC_TRANSB,
                    &keep as *const i32 as _,
                    4,
                )?;
                set(
                    Desc::CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                    &fast as *const i8 as _,
                    1,
                )?;
                // cuBLASLt's A is our B and its B our A.
                set(
                    Desc::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                    &scale_b as *const u64 as _,
                    8,
                )?;
                set(
                    Desc::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                    &scale_a as *const u64 as _,
                    8,
                )?;
            }
            let (n64, m64, k64) = (n as u64, m as u64, k as u64);
            let layout_a = result::create_matrix_layout(Ty::CUDA_R_8F_E4M3, k64, n64, k as i64)?;
            let layout_b = result::create_matrix_layout(Ty::CUDA_R_8F_E4M3, k64, m64, k as i64)?;
            let layout_c = result::create_matrix_layout(Ty::CUDA_R_16BF, n64, m64, n as i64)?;
            let pref = result::create_matmul_pref()?;
            let bytes = WORKSPACE as u64;
            // SAFETY: `pref` is live and the attribute takes a u64 byte count.
            unsafe {
                result::set_matmul_pref_attribute(
                    pref,
                    sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    &bytes as *const u64 as _,
                    8,
                )?;
            }
            // SAFETY: every descriptor above is live.
            let heuristic = unsafe {
                result::get_matmul_algo_heuristic(
                    self.handle,
                    desc,
                    layout_a,
                    layout_b,
                    layout_c,
                    layout_c,
                    pref,
                )
                .map_err(|e| format!("no algorithm for e4m3 TN into bf16 ({e:?})"))?
            };
            let (alpha, beta) = (1.0f32, 0.0f32);
            let launch = || -> Res {
                let (pa, _ra) = db.device_ptr(&self.stream);
                let (pb, _rb) = da.device_ptr(&self.stream);
                let (pc, _rc) = dc.device_ptr_mut(&self.stream);
                let (pw, _rw) = self.workspace.device_ptr(&self.stream);
                // SAFETY: the operands are live allocations of this context sized for their
                // layouts (n·k, m·k bytes, m·n bf16), the workspace holds WORKSPACE bytes,
                // alpha and beta are host f32 as the f32 scale type needs, and the algorithm
                // came from the heuristic for these descriptors.
                unsafe {
                    result::matmul(
                        self.handle,
                        desc,
                        &alpha as *const f32 as _,
                        &beta as *const f32 as _,
                        pa as *const c_void,
                        layout_a,
                        pb as *const c_void,
                        layout_b,
                        pc as *const c_void,
                        layout_c,
                        pc as *mut c_void,
                        layout_c,
                        &heuristic.algo,
                        pw as *mut c_void,
                        WORKSPACE,
                        self.stream.cu_stream() as _,
                    )?;
                }
                Ok(())
            };
            let ms = super::common::vendor_median_ms(&self.ctx, &self.stream, warmup, runs, launch);
            // SAFETY: the descriptors are live and not used again.
            unsafe {
                result::destroy_matmul_pref(pref)?;
                for l in [layout_a, layout_b, layout_c] {
                    result::destroy_matrix_layout(l)?;
                }
                result::destroy_matmul_desc(desc)?;
            }
            ms
        }
    }

    impl Drop for Lt {
        fn drop(&mut self) {
            // SAFETY: the handle was created in `new` and is destroyed once, here.
            let _ = unsafe { result::destroy_handle(self.handle) };
        }
    }
}
