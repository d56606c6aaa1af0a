//! PTX goldens: one insta snapshot per sample kernel and target, named `<kernel>@<target>`,
//! holding the PTX and nothing else. A diff is reviewed like code.

use ptxkit::dsl::{emit, samples, Target};

/// The targets every golden is kept for (where the kernel is legal there).
const GOLDEN_TARGETS: [Target; 5] = [
    Target::Sm80,
    Target::Sm89,
    Target::Sm90,
    Target::Sm90a,
    Target::Sm121,
];

#[test]
fn sample_kernels_match_their_ptx_goldens() {
    let mut count = 0;
    for s in samples::all() {
        for t in GOLDEN_TARGETS {
            let Ok(ptx) = emit::emit(&s.kernel, t) else {
                // Below a kernel's minimum or off its arch-specific target: refusal is tested
                // in kernel-dsl's emit-contract tests.
                continue;
            };
            insta::assert_snapshot!(format!("{}@{}", s.kernel.name, t), ptx);
            count += 1;
        }
    }
    // 5 portable samples × 5 targets, the wgmma sample on sm_90a only.
    assert_eq!(count, 26);
}

#[test]
fn library_kernels_match_their_ptx_goldens() {
    for k in ptxkit::kernels::all_kernels() {
        let kernel = k.kernel();
        let mut emitted = 0;
        for t in GOLDEN_TARGETS {
            if let Ok(ptx) = emit::emit(&kernel, t) {
                insta::assert_snapshot!(format!("{}@{}", kernel.name, t), ptx);
                emitted += 1;
            }
        }
        assert!(
            emitted > 0,
            "{} emits for none of the golden targets",
            kernel.name
        );
    }
}
