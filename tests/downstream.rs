//! Builds `tests/downstream` (a crate that depends on ptxkit by path, as a user's does) with
//! `--features sm_89,sm_121`, then checks that exactly those two targets are embedded, in its own
//! kernels and in the op library's, and that ptxas accepts every embedded module for its target.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXKIT_PTXAS") {
        return Some(PathBuf::from(p));
    }
    let p = root().join(".tools/ptxas-12.9/nvidia/cuda_nvcc/bin/ptxas");
    p.is_file().then_some(p)
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_downstream_crate_embeds_exactly_its_enabled_targets_and_ptxas_accepts_them() {
    let fixture = root().join("tests/downstream");
    let target_dir = root().join("target/downstream");
    let ptxas = ptxas();
    let mut build = Command::new(env!("CARGO"));
    build
        .args([
            "build",
            "--quiet",
            "--features",
            "sm_89,sm_121",
            "--manifest-path",
        ])
        .arg(fixture.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .env_remove("PTXKIT_TARGETS");
    match &ptxas {
        Some(p) => build.env("PTXKIT_PTXAS", p),
        None => build.env_remove("PTXKIT_PTXAS"),
    };
    run(&mut build);
    let bin = target_dir.join("debug").join("downstream");

    // The typed launcher runs on the emulator as it would on a GPU (sm_89 is built in).
    let launched = run(Command::new(&bin).args(["launch", "emulator"]));
    assert!(
        launched.starts_with("saxpy: 100003 elements correct"),
        "{launched}"
    );

    let targets = run(Command::new(&bin).arg("targets"));
    assert_eq!(targets.lines().collect::<Vec<_>>(), ["sm_89", "sm_121"]);

    // The op library's #[kernel] instances follow the crate's features too, with a cubin
    // for each enabled target where ptxas was found.
    let library = run(Command::new(&bin).arg("library-targets"));
    let want: &[&str] = if ptxas.is_some() {
        &["sm_89", "sm_121", "cubin sm_89", "cubin sm_121"]
    } else {
        &["sm_89", "sm_121"]
    };
    assert_eq!(library.lines().collect::<Vec<_>>(), want);

    let dump = std::env::temp_dir().join(format!("ptxkit-downstream-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dump);
    run(Command::new(&bin).arg("dump").arg(&dump));
    let mut modules: Vec<PathBuf> = std::fs::read_dir(&dump)
        .expect("dump dir")
        .map(|e| e.expect("entry").path())
        .collect();
    modules.sort();
    let ptx: Vec<&PathBuf> = modules
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    // saxpy and the two instances of silu_rows, for two targets each.
    assert_eq!(ptx.len(), 6, "{modules:?}");
    for p in &ptx {
        let target = target_of(p);
        let text = std::fs::read_to_string(p).expect("read ptx");
        assert!(
            text.contains(&format!(".target {target}\n")),
            "{} does not say .target {target}",
            p.display()
        );
    }

    let Some(ptxas) = ptxas else {
        eprintln!(
            "skipped the ptxas half: no ptxas (set PTXKIT_PTXAS or install .tools/ptxas-12.9)"
        );
        return;
    };
    for p in &ptx {
        let out = dump.join("check.cubin");
        run(Command::new(&ptxas)
            .arg(format!("-arch={}", target_of(p)))
            .arg(p)
            .arg("-o")
            .arg(&out));
    }
    // With ptxas at build time, the build script's target list yields a cubin per module.
    let cubins = modules
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cubin"))
        .count();
    assert_eq!(cubins, 6, "{modules:?}");
    let _ = std::fs::remove_dir_all(&dump);
}

fn target_of(p: &Path) -> String {
    let stem = p
        .file_stem()
        .expect("file name")
        .to_string_lossy()
        .into_owned();
    stem.rsplit_once('@')
        .expect("<entry>@<target>")
        .1
        .to_string()
}
