//! The `#[kernel]` row-wise instances (norms, softmax) spill nothing, and the block-per-row ones
//! (entry names ending in `_1`, for `CTA = 1`) leave room for their largest blocks: at most 64
//! registers a thread for 1024-thread blocks (the register file's 64 K over 1024), 128 for the
//! 512-thread blocks of the softmax backward and of the one-element-a-time streaming softmax
//! and cross-entropy. Warp-per-row instances run 128-thread blocks.
//! Skips with one line where no ptxas is found.

use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::Target;
use kernels::OpKernel;

/// Assembles every `#[kernel]` instance of `family` at each target; returns how many it checked.
fn check(ptxas: &Ptxas, family: &[&OpKernel]) -> usize {
    let mut checked = 0;
    for target in [Target::Sm80, Target::Sm89, Target::Sm90, Target::Sm121] {
        for k in family {
            if k.built_in().is_none() {
                continue;
            }
            let kernel = k.kernel();
            let ptx = kernel_dsl::emit::emit(&kernel, target).expect("emits");
            let assembled = ptxas
                .assemble(&ptx)
                .unwrap_or_else(|e| panic!("{} @ {target}: {e}", kernel.name));
            for r in assembled.reports {
                let vector = !r.entry.contains("_1_");
                let f32_vector = r.entry.contains("f32_4_");
                let limit = if r.entry.starts_with("softmax_backward")
                    || (r.entry.starts_with("softmax_streaming") && !vector)
                    || (r.entry.starts_with("cross_entropy") && !f32_vector)
                {
                    128
                } else {
                    64
                };
                assert!(
                    !r.entry.ends_with("_1") || r.registers <= limit,
                    "{} uses {} registers at {target}",
                    r.entry,
                    r.registers
                );
                assert_eq!(
                    (r.spill_stores, r.spill_loads),
                    (0, 0),
                    "{} spills",
                    r.entry
                );
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn block_per_row_instances_fit_their_blocks_without_spills() {
    let Some(ptxas) = Ptxas::find() else {
        println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
    assert_eq!(check(&ptxas, kernels::norm::KERNELS), 3 * 8 * 4, "norms");
    assert_eq!(
        check(&ptxas, kernels::softmax::KERNELS),
        (8 + 4 + 8) * 4,
        "softmax"
    );
    assert_eq!(
        check(&ptxas, kernels::cross_entropy::KERNELS),
        (8 + 2) * 4,
        "cross-entropy"
    );
}
