//! Builds `tests/downstream` (a crate that depends on ptxkit by path, as a user's does) with
//! `--features sm_89,sm_121`, then checks that exactly those two targets are embedded, in its own
//! kernels and in the op library's, that the emulator runs the highest of them, and that ptxas
//! accepts every embedded module for its target. A copy that declares only the two features it
//! enables builds without a warning, and rustc's errors in it name ptxkit's types by paths the
//! crate can write.

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

/// A second full build of ptxkit sits beside the workspace's own: without debug info or
/// incremental state it takes a fraction of the disk, which CI machines have little of.
fn lean_debug_build(build: &mut Command) {
    build
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .env("CARGO_INCREMENTAL", "0");
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
    lean_debug_build(&mut build);
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

    // The emulator runs the highest target the crate built, so its embedded PTX runs.
    let emulated = run(Command::new(&bin).arg("emulator-target"));
    assert_eq!(emulated.trim(), "sm_121");

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

/// A copy of the fixture (as the package `downstream-subset`, so that its binary does not
/// replace the fixture's) whose `[features]` declare only `features`, each forwarded to ptxkit.
fn fixture_declaring(features: &[&str], dir: &Path) {
    let fixture = root().join("tests/downstream");
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("src")).expect("fixture copy");
    for f in ["build.rs", "Cargo.lock", "src/main.rs", "src/kernels.rs"] {
        std::fs::copy(fixture.join(f), dir.join(f)).expect("copy the fixture");
    }
    let declared: String = features
        .iter()
        .map(|f| format!("{f} = [\"ptxkit/{f}\"]\n"))
        .collect();
    let manifest = format!(
        "[package]\nname = \"downstream-subset\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\nptxkit = {{ path = {:?}, default-features = false }}\n\n[features]\n{declared}",
        root().display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("write the manifest");
}

#[test]
fn a_crate_declaring_only_the_features_it_uses_builds_without_warnings_and_errors_name_writable_paths(
) {
    // Its bf16 instance of `silu_rows` cannot be built for sm_70 or sm_75, so the expansion
    // holds target errors for features this crate does not declare, as well as PTX entries.
    let dir = std::env::temp_dir().join(format!("ptxkit-downstream-subset-{}", std::process::id()));
    fixture_declaring(&["sm_89", "sm_121"], &dir);
    // The same target directory and features as the test above, so ptxkit is built once.
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "--features", "sm_89,sm_121", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(root().join("target/downstream"))
        .env_remove("PTXKIT_TARGETS");
    lean_debug_build(&mut build);
    match ptxas() {
        Some(p) => build.env("PTXKIT_PTXAS", p),
        None => build.env_remove("PTXKIT_PTXAS"),
    };
    let out = build.output().expect("run cargo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");

    // rustc's errors name ptxkit's types by paths the user can write.
    std::fs::write(
        dir.join("src/main.rs"),
        "struct Buffer;\n\
         fn take(_: Buffer) {}\n\
         fn main() {\n\
             let stream = ptxkit::runtime::Device::emulator().stream().unwrap();\n\
             take(ptxkit::runtime::Buffer::<f32>::zeros(&stream, 4).unwrap());\n\
         }\n",
    )
    .expect("write the probe");
    let out = build.output().expect("run cargo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("`ptxkit::runtime::Buffer<f32>`"),
        "{stderr}"
    );
    assert!(!stderr.contains("ptxkit::kernel_runtime"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
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
