//! Every GEMM specialization assembles with ptxas for each target it supports, without
//! spills. Skips with one line where no ptxas is found.

use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::Target;

#[test]
fn gemm_kernels_assemble_without_spills() {
    let Some(ptxas) = Ptxas::find() else {
        println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
    for target in [
        Target::Sm80,
        Target::Sm89,
        Target::Sm90,
        Target::Sm90a,
        Target::Sm121,
    ] {
        for k in kernels::gemm::KERNELS {
            let kernel = k.kernel();
            // Kernels refuse the targets their instructions' catalog rows exclude (wgmma
            // exists on sm_90a only, fp8 conversion from sm_89), and no other.
            let Ok(ptx) = kernel_dsl::emit::emit(&kernel, target) else {
                assert!(
                    !kernel_dsl::catalog::kernel_requirement(&kernel).admits(target),
                    "{} refuses {target}",
                    kernel.name
                );
                continue;
            };
            let assembled = ptxas
                .assemble(&ptx)
                .unwrap_or_else(|e| panic!("{} @ {target}: {e}", kernel.name));
            for r in assembled.reports {
                println!(
                    "{target} {} registers {} spills {}/{} stack {} smem {}",
                    r.entry,
                    r.registers,
                    r.spill_stores,
                    r.spill_loads,
                    r.stack_bytes,
                    r.shared_bytes
                );
                assert_eq!(
                    (r.spill_stores, r.spill_loads),
                    (0, 0),
                    "{} spills at {target}",
                    r.entry
                );
            }
        }
    }
}
