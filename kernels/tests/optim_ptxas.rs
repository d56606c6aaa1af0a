//! The `#[kernel]` AdamW and gradient-clipping instances spill nothing at any target, and leave
//! room for at least 2 blocks of 256 threads an SM (at most 128 registers a thread): an AdamW
//! thread holds 16 elements of four buffers between its loads and its stores. Skips with one
//! line where no ptxas is found.

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
                println!("{} @ {target}: {} registers", r.entry, r.registers);
                assert!(
                    r.registers <= 128,
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
fn adamw_and_clip_instances_assemble_without_spills() {
    let Some(ptxas) = Ptxas::find() else {
        println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
    assert_eq!(
        check(&ptxas, kernels::optim::KERNELS),
        (16 + 1) * 4,
        "optim"
    );
    assert_eq!(
        check(&ptxas, kernels::clip::KERNELS),
        (2 + 1 + 2) * 4,
        "clip"
    );
}
