//! The `#[kernel]` norm instances spill nothing, and the block-per-row ones (entry names ending
//! in `_1`, for `CTA = 1`) leave room for 1024-thread blocks: at most 64 registers a thread, the
//! register file's 64 K over 1024. Warp-per-row instances run 128-thread blocks.
//! Skips with one line where no ptxas is found.

use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::Target;

#[test]
fn block_per_row_norm_instances_fit_a_1024_thread_block_without_spills() {
    let Some(ptxas) = Ptxas::find() else {
        println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
    let mut checked = 0;
    for target in [Target::Sm80, Target::Sm89, Target::Sm90, Target::Sm121] {
        for k in kernels::norm::KERNELS {
            let kernel = k.kernel();
            if !kernel.name.contains("__") {
                continue;
            }
            let ptx = kernel_dsl::emit::emit(&kernel, target).expect("emits");
            let assembled = ptxas
                .assemble(&ptx)
                .unwrap_or_else(|e| panic!("{} @ {target}: {e}", kernel.name));
            for r in assembled.reports {
                assert!(
                    !r.entry.ends_with("_1") || r.registers <= 64,
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
    assert_eq!(checked, 3 * 8 * 4, "every instance at every target");
}
