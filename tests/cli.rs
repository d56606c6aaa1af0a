//! The README's main job for the foundation: `ptxkit emit`.

use std::process::Command;

fn ptxkit(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ptxkit"))
        .args(args)
        .output()
        .expect("run ptxkit")
}

#[test]
fn emit_writes_one_module_per_kernel_and_target_and_reports_refusals() {
    let dir = std::env::temp_dir().join(format!("ptxkit-cli-{}", std::process::id()));
    let out = ptxkit(&[
        "emit",
        "--targets",
        "sm_75,sm_121",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for k in ["vector_add", "saxpy", "block_reduce_sum", "transpose_32x32"] {
        for t in ["sm_75", "sm_121"] {
            let text = std::fs::read_to_string(dir.join(format!("{k}@{t}.ptx"))).unwrap();
            assert!(text.contains(&format!(".target {t}\n")), "{k}@{t}");
        }
    }
    assert!(
        table.contains(
            "mma_bf16_16x8x16       sm_75    refused: needs sm_80 or newer (PTX ISA 7.0)"
        ),
        "{table}"
    );
    assert!(dir.join("mma_bf16_16x8x16@sm_121.ptx").exists());
    assert!(!dir.join("mma_bf16_16x8x16@sm_75.ptx").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_exit_2_with_a_message_naming_the_fix() {
    let out = ptxkit(&["emit", "--targets", "sm_91"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected one of sm_70"));
    let out = ptxkit(&["emit"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`--targets` is required"));
    let out = ptxkit(&["emit", "--targets", "sm_80", "--kernels", "nope"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no kernel named `nope`"));
}

#[test]
fn catalog_lists_wgmma_as_sm90a_only() {
    let out = ptxkit(&["catalog"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("Wgmma") && l.contains("sm_90a (PTX ISA 8.0)")),
        "{text}"
    );
}
