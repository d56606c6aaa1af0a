//! The `#[kernel]` RoPE and embedding instances spill nothing at any target, and leave room for
//! at least 4 blocks of 128 threads an SM (at most 128 registers a thread). Skips with one line
//! where no ptxas is found.

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
fn rope_and_embedding_instances_assemble_without_spills() {
    let Some(ptxas) = Ptxas::find() else {
        println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
    assert_eq!(check(&ptxas, kernels::rope::KERNELS), 8 * 4, "rope");
    assert_eq!(
        check(&ptxas, kernels::embedding::KERNELS),
        (8 + 4) * 4,
        "embedding"
    );
}
