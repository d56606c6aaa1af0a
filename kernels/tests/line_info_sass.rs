//! Line info changes neither the machine code nor the resources of the op library's
//! `#[kernel]`s: each family's first instance, assembled for sm_90 (sm_90a where it needs it) with `.loc` and `-lineinfo`
//! and without, has the same SASS in every `.text` section and the same `ptxas -v` report.
//! `PTXKIT_LINE_INFO_SASS=all` checks every instance. Skips with one line where no ptxas is
//! found, or where this build recorded no lines (`PTXKIT_LINE_INFO=off`, or a release build).

use kernel_dsl::ptxas::Ptxas;
use kernel_dsl::Target;
use std::collections::BTreeSet;

#[test]
fn line_info_leaves_the_library_kernels_sass_and_registers_unchanged() {
    let Some(ptxas) = Ptxas::find() else {
        println!("skipping: ptxas not found (set PTXKIT_PTXAS)");
        return;
    };
    let every = std::env::var("PTXKIT_LINE_INFO_SASS").as_deref() == Ok("all");
    let mut families = BTreeSet::new();
    let mut checked = 0;
    for k in kernels::all_kernels() {
        let kernel = k.kernel();
        if kernel.source.is_empty() {
            continue;
        }
        let family = kernel
            .name
            .split("__")
            .next()
            .unwrap_or_default()
            .to_string();
        if !families.insert(family) && !every {
            continue;
        }
        // A kernel that needs the arch-specific target (the Hopper GEMM) is assembled for it.
        let target = if kernel_dsl::catalog::kernel_requirement(&kernel).admits(Target::Sm90) {
            Target::Sm90
        } else {
            Target::Sm90a
        };
        let diff = ptxas
            .line_info_difference(&kernel, target)
            .unwrap_or_else(|e| panic!("{}: {e}", kernel.name));
        assert_eq!(diff, None, "{}", kernel.name);
        checked += 1;
    }
    if checked == 0 {
        println!("skipping: this build recorded no source lines (line info is off)");
        return;
    }
    assert!(checked >= 20, "only {checked} kernel families checked");
}
