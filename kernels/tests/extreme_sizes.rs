//! Every public op of the library, on the emulator, with claimed sizes of 0, 1, 2^31, 2^33 and
//! `usize::MAX` and buffers of a few elements that cannot hold the large ones: each answers
//! with a typed [`Error`] (or runs, for 0 and 1), and none panics. Each call runs under
//! `catch_unwind`, so one run names every op and size that panics, all at once.
//!
//! The buffers stay tiny and the sizes are only claimed: the sweep allocates nothing large.

use kernel_runtime::{Bf16, Buffer, Device, EmulatorOptions, Stream};
use kernels::attention::{self, Attention, Batch, Decode, Heads};
use kernels::gemm::{self, Epilogue, GemmShape, Layout, Math};
use kernels::layout::PagedLayout;
use kernels::optim::{AdamW, AdamWConfig, AdamWState, DeviceStep, ParamLayout};
use kernels::rope::{Rope, RopeLayout};
use kernels::{
    argmax, cast, clip, cross_entropy, elementwise, embedding, layout, norm, softmax, Error,
};
use std::panic::{catch_unwind, AssertUnwindSafe};

const SIZES: [usize; 5] = [0, 1, 1 << 31, 1 << 33, usize::MAX];

/// Elements in every buffer: enough for sizes of 0 and 1, far short of the rest.
const LEN: usize = 4;

struct Sweep {
    stream: Stream,
    ran: usize,
    failures: Vec<String>,
}

impl Sweep {
    fn new() -> Sweep {
        // A small step budget: an op that wrongly launched a huge grid ends in an error here
        // instead of running for hours.
        let device = Device::emulator_with(EmulatorOptions::new().step_budget(20_000_000));
        Sweep {
            stream: device.stream().expect("emulator stream"),
            ran: 0,
            failures: Vec::new(),
        }
    }

    fn f32s(&self) -> Buffer<f32> {
        Buffer::from_host(&self.stream, &[0.5f32; LEN]).unwrap()
    }
    fn bf16s(&self) -> Buffer<Bf16> {
        Buffer::from_host(&self.stream, &[Bf16::from_f32(0.5); LEN]).unwrap()
    }
    fn u32s(&self) -> Buffer<u32> {
        Buffer::from_host(&self.stream, &[0u32; LEN]).unwrap()
    }
    fn i32s(&self) -> Buffer<i32> {
        Buffer::from_host(&self.stream, &[0i32; LEN]).unwrap()
    }

    /// Runs a helper that returns sizes rather than a `Result`: only a panic is wrong.
    fn helper(&mut self, op: &str, size: usize, f: impl FnOnce(&Sweep)) {
        self.case(op, 0, |s| {
            f(s);
            Ok(())
        });
        if let Some(last) = self.failures.last_mut() {
            if last.starts_with(&format!("{op} at 0:")) {
                *last = last.replacen(" at 0:", &format!(" at {size}:"), 1);
            }
        }
    }

    /// Runs `op` at `size`: an `Err` is right for sizes above 1; an `Ok` there means the op
    /// took sizes its buffers cannot hold. A panic is always wrong.
    fn case(&mut self, op: &str, size: usize, f: impl FnOnce(&Sweep) -> Result<(), Error>) {
        self.ran += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| f(self)));
        let what = format!("{op} at {size}");
        match outcome {
            Ok(Ok(())) if size > 1 => self.failures.push(format!(
                "{what}: accepted a size its {LEN}-element buffers cannot hold"
            )),
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let text = e.to_string();
                if text.is_empty() {
                    self.failures
                        .push(format!("{what}: an error with no message"));
                }
            }
            Err(payload) => {
                let text = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                self.failures.push(format!("{what}: panicked: {text}"));
            }
        }
    }
}

/// Ops whose only sizes are their buffers' lengths: 0 and 1 elements, and mismatched pairs.
fn by_length(s: &mut Sweep) {
    for len in [0usize, 1] {
        let host = vec![0.25f32; len];
        let buf = |s: &Sweep| Buffer::from_host(&s.stream, &host).unwrap();
        s.case("add", len, |s| {
            elementwise::add(&s.stream, &buf(s), &buf(s), &mut buf(s))
        });
        s.case("mul", len, |s| {
            elementwise::mul(&s.stream, &buf(s), &buf(s), &mut buf(s))
        });
        s.case("scale", len, |s| {
            elementwise::scale(&s.stream, &buf(s), 2.0, &mut buf(s))
        });
        s.case("silu", len, |s| {
            elementwise::silu(&s.stream, &buf(s), &mut buf(s))
        });
        s.case("silu_backward", len, |s| {
            elementwise::silu_backward(&s.stream, &buf(s), &buf(s), &mut buf(s))
        });
        s.case("gelu_tanh", len, |s| {
            elementwise::gelu_tanh(&s.stream, &buf(s), &mut buf(s))
        });
        s.case("gelu_tanh_backward", len, |s| {
            elementwise::gelu_tanh_backward(&s.stream, &buf(s), &buf(s), &mut buf(s))
        });
        s.case("swiglu", len, |s| {
            elementwise::swiglu(&s.stream, &buf(s), &buf(s), &mut buf(s))
        });
        s.case("swiglu_backward", len, |s| {
            elementwise::swiglu_backward(
                &s.stream,
                &buf(s),
                &buf(s),
                &buf(s),
                &mut buf(s),
                &mut buf(s),
            )
        });
        s.case("cast", len, |s| {
            let mut dst: Buffer<Bf16> =
                Buffer::from_host(&s.stream, &vec![Bf16::from_f32(0.0); len]).unwrap();
            cast::cast(&s.stream, &buf(s), &mut dst)
        });
        s.case("grad_norm", len, |s| {
            let mut ws = Buffer::<f32>::zeros(&s.stream, clip::WORKSPACE_LEN as usize).unwrap();
            let mut ns = Buffer::<f32>::zeros(&s.stream, 2).unwrap();
            clip::grad_norm(&s.stream, &buf(s), 1.0, &mut ws, &mut ns)
        });
        s.case("clip_grad_norm", len, |s| {
            let mut ws = Buffer::<f32>::zeros(&s.stream, clip::WORKSPACE_LEN as usize).unwrap();
            let mut ns = Buffer::<f32>::zeros(&s.stream, 2).unwrap();
            clip::clip_grad_norm(&s.stream, &mut buf(s), 1.0, &mut ws, &mut ns)
        });
    }
}

/// Row-wise ops over `rows × cols`, each dimension swept with the other at 1, then both.
fn rowwise(s: &mut Sweep) {
    for size in SIZES {
        for (rows, cols, tag) in [(size, 1, "rows"), (1, size, "cols"), (size, size, "both")] {
            let op = |name: &str| format!("{name} ({tag})");
            s.case(&op("rms_norm"), size, |s| {
                norm::rms_norm(
                    &s.stream,
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    rows,
                    cols,
                    1e-5,
                )
            });
            s.case(&op("add_rms_norm"), size, |s| {
                norm::add_rms_norm(
                    &s.stream,
                    &s.f32s(),
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    &mut s.f32s(),
                    rows,
                    cols,
                    1e-5,
                )
            });
            s.case(&op("rms_norm_heads"), size, |s| {
                norm::rms_norm_heads(
                    &s.stream,
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    rows,
                    cols,
                    cols,
                    1e-5,
                )
            });
            s.case(&op("layer_norm"), size, |s| {
                norm::layer_norm(
                    &s.stream,
                    &s.f32s(),
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    rows,
                    cols,
                    1e-5,
                )
            });
            s.case(&op("rms_norm_backward"), size, |s| {
                let _ = norm::rms_norm_backward_workspace(rows, cols);
                norm::rms_norm_backward(
                    &s.stream,
                    &s.f32s(),
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    &mut s.f32s(),
                    &mut s.f32s(),
                    rows,
                    cols,
                    1e-5,
                )
            });
            s.case(&op("layer_norm_backward"), size, |s| {
                let _ = norm::layer_norm_backward_workspace(rows, cols);
                norm::layer_norm_backward(
                    &s.stream,
                    &s.f32s(),
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    &mut s.f32s(),
                    &mut s.f32s(),
                    &mut s.f32s(),
                    rows,
                    cols,
                    1e-5,
                )
            });
            s.case(&op("softmax"), size, |s| {
                softmax::softmax(
                    &s.stream,
                    &s.f32s(),
                    &mut s.f32s(),
                    rows,
                    cols,
                    1.0,
                    softmax::Mask::None,
                )
            });
            s.case(&op("softmax causal"), size, |s| {
                softmax::softmax(
                    &s.stream,
                    &s.f32s(),
                    &mut s.f32s(),
                    rows,
                    cols,
                    1.0,
                    softmax::Mask::Causal { queries: rows },
                )
            });
            s.case(&op("softmax_backward"), size, |s| {
                softmax::softmax_backward(
                    &s.stream,
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    rows,
                    cols,
                    1.0,
                )
            });
            s.case(&op("transpose"), size, |s| {
                layout::transpose(&s.stream, &s.f32s(), &mut s.f32s(), rows, cols)
            });
            s.case(&op("argmax"), size, |s| {
                let _ = argmax::argmax_workspace(rows, cols);
                argmax::argmax(
                    &s.stream,
                    &s.f32s(),
                    &mut s.u32s(),
                    &mut s.u32s(),
                    rows,
                    cols,
                )
            });
            s.case(&op("cross_entropy"), size, |s| {
                let (mut rl, mut l) = (s.f32s(), s.f32s());
                cross_entropy::cross_entropy(
                    &s.stream,
                    &s.f32s(),
                    &s.i32s(),
                    &mut s.f32s(),
                    &mut rl,
                    &mut l,
                    &mut s.u32s(),
                    rows,
                    cols,
                    -100,
                )
            });
        }
    }
}

/// Ops over `tokens × heads × head_dim`, each swept with the others at 1 (2 for `head_dim`,
/// which rope needs even), then all three.
fn per_head(s: &mut Sweep) {
    for size in SIZES {
        for (t, h, d, tag) in [
            (size, 1, 2, "tokens"),
            (1, size, 2, "heads"),
            (1, 1, size, "head_dim"),
            (size, size, size, "all"),
        ] {
            let op = |name: &str| format!("{name} ({tag})");
            let spec = Rope {
                layout: RopeLayout::NeoX,
                theta: 10000.0,
                rotary_dim: d.min(2),
            };
            s.case(&op("rope"), size, |s| {
                kernels::rope::rope(
                    &s.stream,
                    &s.f32s(),
                    &s.u32s(),
                    &mut s.f32s(),
                    t,
                    h,
                    d,
                    spec,
                )
            });
            s.case(&op("rope_backward"), size, |s| {
                kernels::rope::rope_backward(
                    &s.stream,
                    &s.f32s(),
                    &s.u32s(),
                    &mut s.f32s(),
                    t,
                    h,
                    d,
                    spec,
                )
            });
            s.case(&op("heads_from_interleaved"), size, |s| {
                layout::heads_from_interleaved(&s.stream, &s.f32s(), &mut s.f32s(), t, h, d)
            });
            s.case(&op("interleaved_from_heads"), size, |s| {
                layout::interleaved_from_heads(&s.stream, &s.f32s(), &mut s.f32s(), t, h, d)
            });
            s.case(&op("embedding"), size, |s| {
                embedding::embedding(&s.stream, &s.f32s(), &s.u32s(), &mut s.f32s(), t, h, d)
            });
            s.case(&op("embedding_backward"), size, |s| {
                embedding::embedding_backward(
                    &s.stream,
                    &s.f32s(),
                    &s.u32s(),
                    &mut s.f32s(),
                    t,
                    h,
                    d,
                )
            });
            let paged = PagedLayout {
                num_blocks: h,
                block_size: d,
                width: d,
                seqs: t,
                blocks_per_seq: h,
            };
            s.case(&op("kv_cache_append"), size, |s| {
                let _ = paged.cache_len();
                layout::kv_cache_append(
                    &s.stream,
                    &s.f32s(),
                    &s.u32s(),
                    &s.u32s(),
                    &s.u32s(),
                    &mut s.f32s(),
                    t,
                    paged,
                )
            });
        }
    }
}

fn gemms(s: &mut Sweep) {
    for size in SIZES {
        for (m, n, k, b, tag) in [
            (size, 1, 1, 1, "m"),
            (1, size, 1, 1, "n"),
            (1, 1, size, 1, "k"),
            (size, 1, size, 1, "m and k"),
            (1, 1, 1, size, "batch"),
            (size, size, size, size, "all"),
        ] {
            let op = |name: &str| format!("{name} ({tag})");
            s.case(&op("GemmShape + gemm"), size, |s| {
                let shape = GemmShape::batched(Layout::Nn, b, m, n, k);
                let _ = shape.flops();
                gemm::gemm(
                    &s.stream,
                    &shape,
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    &Epilogue::default(),
                    Math::Fp32,
                )
            });
            s.case(&op("gemm tf32"), size, |s| {
                let shape = GemmShape::batched(Layout::Nt, b, m, n, k);
                gemm::gemm(
                    &s.stream,
                    &shape,
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    &Epilogue::default(),
                    Math::Tf32,
                )
            });
            s.case(&op("gemm bf16"), size, |s| {
                let shape = GemmShape::batched(Layout::Tn, b, m, n, k);
                gemm::gemm(
                    &s.stream,
                    &shape,
                    &s.bf16s(),
                    &s.bf16s(),
                    &mut s.f32s(),
                    &Epilogue::default(),
                    Math::Fp32,
                )
            });
            s.case(&op("gemm_split_k"), size, |s| {
                let shape = GemmShape::batched(Layout::Nn, b, m, n, k);
                gemm::gemm_split_k(
                    &s.stream,
                    &shape,
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    &Epilogue::default(),
                    2,
                )
            });
            s.case(&op("select + gemm_with_plan"), size, |s| {
                let shape = GemmShape::batched(Layout::Nn, b, m, n, k);
                let plan = gemm::select(
                    kernels::FloatType::F32,
                    kernels::FloatType::F32,
                    Math::Fp32,
                    &shape,
                    kernel_dsl_target(),
                )?;
                gemm::gemm_with_plan(
                    &s.stream,
                    &plan,
                    &shape,
                    &s.f32s(),
                    &s.f32s(),
                    &mut s.f32s(),
                    &Epilogue::default(),
                )
            });
            if b == 1 {
                s.case(&op("matmul"), size, |s| {
                    gemm::matmul(&s.stream, &s.f32s(), &s.f32s(), &mut s.f32s(), m, n, k)
                });
                // Its sizes are u32: a larger claim is the largest it can be told.
                let dim = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
                s.case(&op("tma_wgmma_bf16_nt"), size, |s| {
                    gemm::tma_wgmma_bf16_nt(
                        &s.stream,
                        &s.bf16s(),
                        &s.bf16s(),
                        &mut s.f32s(),
                        dim(m),
                        dim(n),
                        dim(k),
                    )
                });
            }
        }
        s.case("gemm_split_k (splits)", size, |s| {
            let shape = GemmShape::new(Layout::Nn, 1, 1, 1);
            gemm::gemm_split_k(
                &s.stream,
                &shape,
                &s.f32s(),
                &s.f32s(),
                &mut s.f32s(),
                &Epilogue::default(),
                size,
            )
        });
    }
}

fn kernel_dsl_target() -> kernel_dsl::Target {
    kernel_runtime::EMULATOR_DEFAULT_TARGET
}

fn attention_ops(s: &mut Sweep) {
    for size in SIZES {
        for (seqs, tokens, max_len, hq, hkv, dim, tag) in [
            (size, 1, 1, 1, 1, 64, "seqs"),
            (1, size, 1, 1, 1, 64, "tokens"),
            (1, 1, size, 1, 1, 64, "max_len"),
            (1, 1, 1, size, 1, 64, "q heads"),
            (1, 1, 1, size, size, 64, "heads"),
            (1, 1, 1, 1, 1, size, "dim"),
            (size, size, size, size, size, size, "all"),
        ] {
            let op = |name: &str| format!("{name} ({tag})");
            let heads = Heads {
                q: hq,
                kv: hkv,
                dim,
            };
            let attn = Attention {
                heads,
                mask: attention::Mask::Causal,
                scale: 0.125,
            };
            s.case(&op("flash_forward"), size, |s| {
                let cu = s.u32s();
                let batch = Batch {
                    cu_seqlens: &cu,
                    seqs,
                    tokens,
                    max_len,
                };
                attention::flash_forward(
                    &s.stream,
                    &s.bf16s(),
                    &s.bf16s(),
                    &s.bf16s(),
                    batch,
                    attn,
                    &mut s.bf16s(),
                    &mut s.f32s(),
                )
            });
            s.case(&op("flash_backward"), size, |s| {
                let _ = attention::flash_backward_workspace(tokens, heads)?;
                let cu = s.u32s();
                let batch = Batch {
                    cu_seqlens: &cu,
                    seqs,
                    tokens,
                    max_len,
                };
                attention::flash_backward(
                    &s.stream,
                    &s.bf16s(),
                    &s.bf16s(),
                    &s.bf16s(),
                    &s.bf16s(),
                    &s.bf16s(),
                    &s.f32s(),
                    batch,
                    attn,
                    &mut s.bf16s(),
                    &mut s.bf16s(),
                    &mut s.bf16s(),
                    &mut s.f32s(),
                )
            });
            let decode = Decode {
                heads,
                scale: 0.125,
                new: tokens,
                max_len,
                splits: seqs.clamp(1, 4),
            };
            let paged = PagedLayout {
                num_blocks: tokens,
                block_size: max_len,
                width: hkv.saturating_mul(dim),
                seqs,
                blocks_per_seq: tokens,
            };
            s.case(&op("paged_decode"), size, |s| {
                let _ = attention::decode_splits(seqs, heads, max_len, 132);
                let _ = attention::paged_decode_workspace(seqs, decode)?;
                attention::paged_decode(
                    &s.stream,
                    &s.bf16s(),
                    &s.bf16s(),
                    &s.bf16s(),
                    &s.u32s(),
                    &s.u32s(),
                    paged,
                    decode,
                    &mut s.f32s(),
                    &mut s.bf16s(),
                )
            });
        }
    }
}

fn optimizer(s: &mut Sweep) {
    for size in SIZES {
        s.case("ParamLayout::new", size, |_| {
            ParamLayout::new(&[size, size]).map(|_| ())
        });
        s.case("AdamW::new + step", size, |s| {
            let opt = AdamW::new(&s.stream, &[size], &[true])?;
            let (mut p, g, mut m, mut v) = (s.f32s(), s.f32s(), s.f32s(), s.f32s());
            let state = AdamWState {
                params: &mut p,
                grads: &g,
                m: &mut m,
                v: &mut v,
                bf16_copy: None,
                clip: None,
            };
            opt.step(&s.stream, 1, &AdamWConfig::default(), state)
        });
        s.case("AdamW::step_on_device", size, |s| {
            let opt = AdamW::new(&s.stream, &[size, 1], &[true, false])?;
            let mut step = DeviceStep::new(&s.stream)?;
            let (mut p, g, mut m, mut v) = (s.f32s(), s.f32s(), s.f32s(), s.f32s());
            let state = AdamWState {
                params: &mut p,
                grads: &g,
                m: &mut m,
                v: &mut v,
                bf16_copy: None,
                clip: None,
            };
            opt.step_on_device(&s.stream, &mut step, &AdamWConfig::default(), state)
        });
    }
}

/// The public helpers the ops are planned with: sizes in, sizes out, never a panic.
fn helpers(s: &mut Sweep) {
    for size in SIZES {
        for kv in [0, 1, size] {
            s.helper("Heads::group", size, |_| {
                let _ = Heads {
                    q: size,
                    kv,
                    dim: size,
                }
                .group();
            });
        }
        s.helper("softmax::Mask::limit", size, |_| {
            for queries in [0, 1, size] {
                let _ = softmax::Mask::Causal { queries }.limit(size, size);
                let _ = softmax::Mask::None.limit(size, size);
            }
        });
        s.case("Rope::check", size, |_| {
            Rope {
                layout: RopeLayout::Interleaved,
                theta: 1.0,
                rotary_dim: size,
            }
            .check(size)?;
            Rope {
                layout: RopeLayout::NeoX,
                theta: 1.0,
                rotary_dim: 2,
            }
            .check(size)
        });
        s.helper("GemmShape::is_empty", size, |_| {
            let shape = GemmShape::batched(Layout::Tn, size, size, size, size);
            let _ = (shape.is_empty(), shape.flops());
        });
        s.case("ParamLayout copy_in/copy_out", size, |s| {
            let layout = ParamLayout::new(&[1, 2])?;
            let _ = (
                layout.offset(size),
                layout.len(size),
                layout.range(size),
                layout.total(),
            );
            layout.copy_in(&s.stream, &s.f32s(), &mut s.f32s(), size)?;
            layout.copy_out(&s.stream, &s.f32s(), size, &mut s.f32s())
        });
    }
}

#[test]
fn every_op_answers_extreme_sizes_with_an_error_or_a_result_and_never_panics() {
    let mut s = Sweep::new();
    by_length(&mut s);
    rowwise(&mut s);
    per_head(&mut s);
    gemms(&mut s);
    attention_ops(&mut s);
    optimizer(&mut s);
    helpers(&mut s);
    eprintln!(
        "extreme sizes: {} calls, {} failed",
        s.ran,
        s.failures.len()
    );
    assert!(s.ran > 400, "the sweep ran only {} cases", s.ran);
    assert!(
        s.failures.is_empty(),
        "{} of {} cases failed:\n{}",
        s.failures.len(),
        s.ran,
        s.failures.join("\n")
    );
}
