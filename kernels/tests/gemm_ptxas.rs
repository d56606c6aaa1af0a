//! Every GEMM specialization assembles with ptxas for each target it supports, without
//! spills: a test per target, so the harness assembles targets side by side. Skips with one
//! line where no ptxas is found.

use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::Target;

#[test]
fn gemm_kernels_assemble_without_spills_at_sm_80() {
    assemble_every_gemm_at(Target::Sm80);
}

#[test]
fn gemm_kernels_assemble_without_spills_at_sm_89() {
    assemble_every_gemm_at(Target::Sm89);
}

#[test]
fn gemm_kernels_assemble_without_spills_at_sm_90() {
    assemble_every_gemm_at(Target::Sm90);
}

#[test]
fn gemm_kernels_assemble_without_spills_at_sm_90a() {
    assemble_every_gemm_at(Target::Sm90a);
}

#[test]
fn gemm_kernels_assemble_without_spills_at_sm_121() {
    assemble_every_gemm_at(Target::Sm121);
}

fn assemble_every_gemm_at(target: Target) {
    let Some(ptxas) = Ptxas::find() else {
        println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
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
                r.entry, r.registers, r.spill_stores, r.spill_loads, r.stack_bytes, r.shared_bytes
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
