//! The `#[kernel]` RMSNorm instances leave room for 1024-thread blocks (at most 64 registers a
//! thread, the register file's 64 K over 1024) and spill nothing, on every golden target.
//! Skips with one line where no ptxas is found.

use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::Target;

#[test]
fn rms_norm_instances_fit_a_1024_thread_block_without_spills() {
    let Some(ptxas) = Ptxas::find() else {
        println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
    let mut checked = 0;
    for target in [Target::Sm80, Target::Sm89, Target::Sm90, Target::Sm121] {
        for k in kernels::norm::KERNELS {
            let kernel = k.kernel();
            if !kernel.name.starts_with("rms_norm__") {
                continue;
            }
            let ptx = kernel_dsl::emit::emit(&kernel, target).expect("emits");
            let assembled = ptxas
                .assemble(&ptx)
                .unwrap_or_else(|e| panic!("{} @ {target}: {e}", kernel.name));
            for r in assembled.reports {
                assert!(
                    r.registers <= 64,
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
    assert_eq!(checked, 8 * 4, "every instance at every target");
}
