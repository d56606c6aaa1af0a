use ptxkit::dsl::catalog::CATALOG;
use ptxkit::dsl::Target;

/// Prints the instruction catalog: what each form needs.
pub fn catalog() {
    println!("{:<20} {:<34} example", "form", "needs");
    for e in CATALOG {
        println!(
            "{:<20} {:<34} {}",
            format!("{:?}", e.form),
            e.requirement.to_string(),
            e.example
        );
    }
}

/// Prints the target table.
pub fn targets() {
    println!(
        "{:<8} {:>8} {:>16} {:>12}",
        "target", "min ISA", "max smem/block", "arch-specific"
    );
    for t in Target::ALL {
        let l = t.limits();
        println!(
            "{:<8} {:>8} {:>16} {:>12}",
            t.name(),
            t.min_isa().to_string(),
            l.max_shared_bytes_per_block,
            t.is_arch_specific()
        );
    }
}
