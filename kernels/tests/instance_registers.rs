//! Every `#[kernel]` instance of the op library assembles at each target without spills, and
//! within the registers a thread may use in the largest block its host plan launches (the
//! register file's 64 K over the block's threads). Skips with one line where no ptxas is found.

use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::Target;
use kernels::OpKernel;

/// Assembles every `#[kernel]` instance of `family` at each target, checking each entry against
/// `limit(entry)` registers (`None`: no bound beyond spilling nothing); returns how many it
/// checked.
fn check(ptxas: &Ptxas, family: &[&OpKernel], limit: impl Fn(&str) -> Option<u32>) -> usize {
    let mut checked = 0;
    for target in [Target::Sm80, Target::Sm89, Target::Sm90, Target::Sm121] {
        for k in family {
            let kernel = k.kernel();
            let ptx = kernel_dsl::emit::emit(&kernel, target).expect("emits");
            let assembled = ptxas
                .assemble(&ptx)
                .unwrap_or_else(|e| panic!("{} @ {target}: {e}", kernel.name));
            for r in assembled.reports {
                if let Some(most) = limit(&r.entry) {
                    assert!(
                        r.registers <= most,
                        "{} uses {} registers at {target}, over {most}",
                        r.entry,
                        r.registers
                    );
                }
                assert_eq!(
                    (r.spill_stores, r.spill_loads),
                    (0, 0),
                    "{} spills at {target}",
                    r.entry
                );
                checked += 1;
            }
        }
    }
    checked
}

/// The row-wise kernels' block-per-row instances (entry names ending in `_1`, for `CTA = 1`):
/// 64 registers for 1024-thread blocks; 56 for bf16 cross-entropy in 16-byte chunks, two
/// 512-thread blocks an SM; 128 for the 512-thread blocks of the softmax backward, of
/// one-element streaming softmax, and of the other cross-entropy instances. Warp-per-row
/// instances run 128-thread blocks. The split cross-entropy's 256-thread blocks stay within 48,
/// five an SM: its blocks wait for one another, and the SM needs others to run meanwhile.
fn row_limit(entry: &str) -> Option<u32> {
    if entry.starts_with("cross_entropy_split") {
        return Some(48);
    }
    if !entry.ends_with("_1") {
        return None;
    }
    if entry == "cross_entropy__bf16_8_1" {
        return Some(56);
    }
    let vector = !entry.contains("_1_");
    let f32_vector = entry.contains("f32_4_");
    Some(
        if entry.starts_with("softmax_backward")
            || (entry.starts_with("softmax_streaming") && !vector)
            || (entry.starts_with("cross_entropy") && !f32_vector)
        {
            128
        } else {
            64
        },
    )
}

/// The norms: the forward kernels as [`row_limit`], except LayerNorm's, whose blocks stay
/// within 512 threads (128), and the fused RMSNorm's one-element instances, within 768 (85);
/// the backward kernels 64, for two blocks of 512 threads an SM (one block's reduction
/// overlaps the other's loads); the column sums 64, for their 1024-thread blocks.
fn norm_limit(entry: &str) -> Option<u32> {
    if entry.contains("_backward__") || entry.starts_with("norm_column_sum") {
        Some(64)
    } else if entry.starts_with("layer_norm__") {
        row_limit(entry).map(|_| 128)
    } else if entry.starts_with("add_rms_norm__") && entry.contains("_1_") {
        row_limit(entry).map(|_| 85)
    } else {
        row_limit(entry)
    }
}

fn ptxas() -> Option<Ptxas> {
    let found = Ptxas::find();
    if found.is_none() {
        println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
    }
    found
}

#[test]
fn row_instances_fit_their_blocks_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    assert_eq!(
        check(&ptxas, kernels::norm::KERNELS, norm_limit),
        (3 * 8 + 4 + 4 + 2) * 4,
        "norms"
    );
    assert_eq!(
        check(&ptxas, kernels::softmax::KERNELS, row_limit),
        (8 + 4 + 8) * 4,
        "softmax"
    );
    assert_eq!(
        check(&ptxas, kernels::cross_entropy::KERNELS, row_limit),
        (8 + 2 + 2) * 4,
        "cross-entropy"
    );
}

/// RoPE and embedding: at least 4 blocks of 128 threads an SM.
#[test]
fn rope_and_embedding_instances_assemble_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    let most = |_: &str| Some(128);
    assert_eq!(
        check(&ptxas, kernels::rope::KERNELS, most),
        (8 + 8 + 12) * 4,
        "rope"
    );
    assert_eq!(
        check(&ptxas, kernels::embedding::KERNELS, most),
        (8 + 4) * 4,
        "embedding"
    );
}

/// AdamW and clipping: at least 2 blocks of 256 threads an SM (an AdamW thread holds 16
/// elements of four buffers between its loads and its stores); arg-max: 32 registers, eight
/// of its 256-thread blocks an SM.
#[test]
fn optimizer_clip_and_argmax_instances_assemble_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    let most = |_: &str| Some(128);
    assert_eq!(
        check(&ptxas, kernels::optim::KERNELS, most),
        (16 + 1) * 4,
        "optim"
    );
    // The norm's finishing pass is one block of 1024 threads.
    let clip = |e: &str| Some(if e == "grad_norm_finish" { 64 } else { 128 });
    assert_eq!(
        check(&ptxas, kernels::clip::KERNELS, clip),
        (2 + 1 + 2) * 4,
        "clip"
    );
    assert_eq!(
        check(&ptxas, kernels::argmax::KERNELS, |_| Some(32)),
        4 * 4,
        "argmax"
    );
}

/// The casts, the axis swap and the transpose: at least 4 blocks of 256 threads an SM (these
/// ops stream, so occupancy is what keeps bytes in flight). The KV-cache append runs a row a
/// warp or a block of up to 512 threads, as the row kernels do; its 16-byte instances fit 32
/// registers, so that an SM holds 32 of its 64-thread blocks.
#[test]
fn cast_and_layout_instances_assemble_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    let most = |_: &str| Some(64);
    assert_eq!(check(&ptxas, kernels::cast::KERNELS, most), 9 * 4, "casts");
    let layout = |e: &str| {
        Some(if e.starts_with("kv_cache_append") {
            // The one-element instances are `…_1_0` and `…_1_1`.
            if e.contains("_1_") {
                128
            } else {
                32
            }
        } else {
            64
        })
    };
    assert_eq!(
        check(&ptxas, kernels::layout::KERNELS, layout),
        (4 + 3 + 12) * 4,
        "layout"
    );
}

/// The `#[kernel]` GEMMs, 256-thread blocks: the fp32 SIMT kernel asks for two an SM (128
/// registers) for NN and one for NT and TN; the `mma.sync` kernel fits two, as the builder
/// kernels it replaces do.
#[test]
fn gemm_instances_assemble_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    let ported = |prefix: &str| -> Vec<&OpKernel> {
        kernels::gemm::KERNELS
            .iter()
            .copied()
            .filter(|k| k.kernel().name.starts_with(prefix))
            .collect()
    };
    let most = |_: &str| Some(128);
    let simt = |e: &str| Some(if e.ends_with("_1_0") { 128 } else { 255 });
    assert_eq!(check(&ptxas, &ported("gemm_simt__"), simt), 3 * 4, "simt");
    assert_eq!(check(&ptxas, &ported("gemm_mma__"), most), 15 * 4, "mma");
}

/// The `#[kernel]` Hopper GEMMs, sm_90a only: in every instance (split-k, SwiGLU and fp8 too)
/// each consumer's 128 accumulators stay in registers across the k loop (no spills, no
/// stack), within the 168 a thread of its 384-thread block holds at launch (the consumers take
/// more with `setmaxnreg` after).
#[test]
fn tma_wgmma_gemm_keeps_its_accumulator_in_registers() {
    let Some(ptxas) = ptxas() else { return };
    let named = |prefix: &str| -> Vec<_> {
        kernels::gemm::KERNELS
            .iter()
            .filter(|k| k.kernel().name.starts_with(prefix))
            .collect()
    };
    let (instances, fp8) = (named("gemm_tma_wgmma__"), named("gemm_fp8_wgmma__"));
    assert_eq!(
        instances.len(),
        22,
        "bf16 and f16 whole tiles (two outputs) and split-k, three layouts, SwiGLU, tf32 NT and its split-k"
    );
    assert_eq!(fp8.len(), 6, "fp8: three pairings of formats, two outputs");
    for k in instances.into_iter().chain(fp8) {
        let ptx = kernel_dsl::emit::emit(&k.kernel(), Target::Sm90a).expect("emits for sm_90a");
        let assembled = ptxas.assemble(&ptx).expect("ptxas accepts it");
        let r = &assembled.reports[0];
        assert_eq!(
            (r.spill_stores, r.spill_loads, r.stack_bytes),
            (0, 0, 0),
            "{}: {}",
            r.entry,
            assembled.log
        );
        assert!(r.registers <= 168, "{}: {} registers", r.entry, r.registers);
    }
}

/// The `#[kernel]` Hopper GEMM fed by `cp.async`, sm_90a only: in each of its twelve instances
/// the 64 accumulators stay in registers across the k loop (no spills, no stack), within 168
/// (what the builder kernel it replaces takes at most; its 128 KiB of shared memory hold one
/// 256-thread block an SM, so registers do not limit occupancy).
#[test]
fn async_wgmma_gemm_keeps_its_accumulator_in_registers() {
    let Some(ptxas) = ptxas() else { return };
    let instances: Vec<_> = kernels::gemm::KERNELS
        .iter()
        .filter(|k| k.kernel().name.starts_with("gemm_async_wgmma__"))
        .collect();
    assert_eq!(
        instances.len(),
        12,
        "bf16 and f16, two outputs, three layouts"
    );
    for k in instances {
        let ptx = kernel_dsl::emit::emit(&k.kernel(), Target::Sm90a).expect("emits for sm_90a");
        let assembled = ptxas.assemble(&ptx).expect("ptxas accepts it");
        let r = &assembled.reports[0];
        assert_eq!(
            (r.spill_stores, r.spill_loads, r.stack_bytes),
            (0, 0, 0),
            "{}: {}",
            r.entry,
            assembled.log
        );
        assert!(r.registers <= 168, "{}: {} registers", r.entry, r.registers);
    }
}

/// Paged decode: 256-thread blocks, two an SM where a block holds four query rows (128
/// registers), one where it holds eight; the combine streams at 64.
#[test]
fn attention_decode_instances_assemble_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    let most = |e: &str| {
        Some(if e.starts_with("paged_decode_combine") {
            64
        } else if e.ends_with("_4") {
            128
        } else {
            255
        })
    };
    let decode: Vec<&OpKernel> = kernels::attention::KERNELS
        .iter()
        .copied()
        .filter(|k| k.kernel().name.starts_with("paged_decode"))
        .collect();
    assert_eq!(check(&ptxas, &decode, most), (12 + 2) * 4, "decode");
}

/// The flash-attention backward's `mma.sync` kernels: blocks of four or eight warps, as few
/// as one an SM, so any register count a thread may have (255 × 256 threads fit the register
/// file), and no spills. Prints each entry's registers at sm_90. (The sm_90a `wgmma` kernels
/// are assembled by the attention sweep in `attention_forward.rs`.)
#[test]
fn attention_backward_instances_assemble_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    let backward: Vec<&OpKernel> = kernels::attention::KERNELS
        .iter()
        .copied()
        .filter(|k| {
            let name = k.kernel().name;
            name.starts_with("flash_backward") && !name.contains("wgmma")
        })
        .collect();
    for k in &backward {
        let ptx = kernel_dsl::emit::emit(&k.kernel(), Target::Sm90).expect("emits");
        for r in ptxas.assemble(&ptx).expect("assembles").reports {
            println!("{} @ sm_90: {} registers", r.entry, r.registers);
        }
    }
    assert_eq!(check(&ptxas, &backward, |_| Some(255)), 18 * 4, "backward");
}

/// NF4: 256-thread blocks; the quantizer, decoder and SIMT input gradient stream (64
/// registers, four blocks an SM); the GEMV and the fused gate and up hold 16 rows' sums and
/// their decoded weights, and the tensor-core kernel a 64×32 warp tile, as the library GEMM does (128, two an SM).
#[test]
fn nf4_instances_assemble_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    let most = |e: &str| {
        let holds_rows = ["nf4_gemv", "nf4_gate_up", "nf4_mma"];
        Some(if holds_rows.iter().any(|p| e.starts_with(p)) {
            128
        } else {
            64
        })
    };
    assert_eq!(
        check(&ptxas, kernels::quant::nf4::KERNELS, most),
        (3 * 2 + 6 + 4 + 4) * 4,
        "nf4"
    );
}

/// The GGUF dequantize, GEMV (f32, int8 and tensor-core) and activation quantization
/// kernels: no spills; the f32 and int8 GEMVs ask for four 128-thread blocks an SM and the
/// tensor-core GEMVs for two of 256 threads (128 registers either way), and the
/// quantization's 256-thread blocks fit those bounds too. Prints each entry's registers at
/// sm_90.
#[test]
fn gguf_instances_assemble_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    for k in kernels::quant::gguf::KERNELS {
        let ptx = kernel_dsl::emit::emit(&k.kernel(), Target::Sm90).expect("emits");
        for r in ptxas.assemble(&ptx).expect("assembles").reports {
            println!("{} @ sm_90: {} registers", r.entry, r.registers);
        }
    }
    assert_eq!(
        check(&ptxas, kernels::quant::gguf::KERNELS, |_| Some(128)),
        (6 + 36 + 17 + 4 + 18 + 24) * 4,
        "gguf"
    );
}
