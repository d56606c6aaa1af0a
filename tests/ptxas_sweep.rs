//! The ptxas sweep: every PTX golden in the workspace is assembled by NVIDIA's ptxas for exactly
//! the target its `.target` names, with `-v`; any error or warning fails, hot kernels must not
//! spill, and the resource report is written to `target/ptxas-report.md`.

use ptxkit::dsl::ptxas::{Ptxas, ResourceReport};
use std::path::{Path, PathBuf};

fn golden_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_dir() && !matches!(name, "target" | ".git" | ".tools" | "node_modules") {
                stack.push(p);
            } else if name.ends_with(".snap")
                && p.parent().is_some_and(|d| d.ends_with("snapshots"))
            {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

/// The snapshot body: everything after insta's front matter.
fn snapshot_body(text: &str) -> &str {
    match text.strip_prefix("---") {
        Some(rest) => rest
            .split_once("\n---\n")
            .map(|(_, body)| body)
            .unwrap_or(rest),
        None => text,
    }
}

#[test]
fn every_ptx_golden_assembles_for_its_own_target_without_warnings_or_spills() {
    let Some(ptxas) = Ptxas::find() else {
        panic!("ptxas not found: run `bash scripts/install-ptxas.sh` (the README's test command does) or set PTXKIT_PTXAS");
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = format!("# ptxas resource report\n\nptxas: {}\n\n| golden | target | entry | registers | spill stores | spill loads | stack | shared |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n", ptxas.version().unwrap_or_default());
    let mut assembled = 0;
    let mut failures = Vec::new();
    for file in golden_files(root) {
        let text = std::fs::read_to_string(&file).expect("read snapshot");
        let body = snapshot_body(&text);
        if !body.contains(".target") {
            continue; // not a PTX golden
        }
        let name = file
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        match ptxas.assemble(body) {
            Ok(out) => {
                assembled += 1;
                for ResourceReport {
                    entry,
                    registers,
                    spill_stores,
                    spill_loads,
                    stack_bytes,
                    shared_bytes,
                } in &out.reports
                {
                    report.push_str(&format!(
                        "| {name} | {} | {entry} | {registers} | {spill_stores} | {spill_loads} | {stack_bytes} | {shared_bytes} |\n",
                        out.target
                    ));
                    if spill_stores + spill_loads > 0 {
                        failures.push(format!("{name}: `{entry}` spills ({spill_stores} B stored, {spill_loads} B loaded)"));
                    }
                }
                assert!(!out.cubin.is_empty(), "{name}: ptxas wrote no cubin");
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    let out_dir = root.join("target");
    let _ = std::fs::create_dir_all(&out_dir);
    let _ = std::fs::write(out_dir.join("ptxas-report.md"), &report);
    println!("{report}");
    assert!(
        failures.is_empty(),
        "ptxas sweep failed:\n{}",
        failures.join("\n")
    );
    assert!(
        assembled >= 26,
        "only {assembled} PTX goldens found; the sample goldens alone are 26"
    );
}
