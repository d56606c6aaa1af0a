//! The command line: `ptxkit emit` (the README's job that needs no GPU), `--help` for every
//! subcommand, usage errors (exit status 2) against failures (exit status 1), and a short
//! `ptxkit train` on the emulator judged on its true losses.

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
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--targets <TARGETS>"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ptxkit(&["emit", "--targets", "sm_80", "--kernels", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no kernel named `nope`"));
}

#[test]
fn every_subcommand_has_help_that_names_its_options() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--help"],
            &[
                "train",
                "run",
                "emit",
                "quantize",
                "generate",
                "catalog",
                "targets",
                "Exit status",
            ],
        ),
        (&["help"], &["train", "emit"]),
        (
            &["train", "--help"],
            &["--steps <N>", "--device", "--log-every <K>", "emulator"],
        ),
        (&["run", "--help"], &["--device"]),
        (
            &["emit", "--help"],
            &["--targets <TARGETS>", "--out <DIR>", "--kernels"],
        ),
        (
            &["quantize", "--help"],
            &["--checkpoint <DIR>", "--out <FILE>", "--type", "q4_k_m"],
        ),
        (
            &["generate", "--help"],
            &[
                "--model <FILE>",
                "--prompt <TEXT>",
                "--max-tokens <N>",
                "--top-p <P>",
                "--seed",
            ],
        ),
        (&["catalog", "--help"], &["instruction form"]),
        (&["targets", "--help"], &["minimum PTX ISA"]),
        (&["help", "train"], &["--steps <N>"]),
    ];
    for (args, wanted) in cases {
        let out = ptxkit(args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {text}");
        for w in *wanted {
            assert!(
                text.contains(w),
                "`ptxkit {}` lacks {w:?}:\n{text}",
                args.join(" ")
            );
        }
    }
}

#[test]
fn unknown_flags_commands_and_values_are_usage_errors_with_status_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["train", "--bogus"], "unexpected argument '--bogus'"),
        (
            &["train", "--steps"],
            "a value is required for '--steps <N>'",
        ),
        (&["train", "--steps", "0"], "--steps <N>"),
        (&["train", "--steps", "many"], "invalid digit"),
        (
            &["run", "--device", "tpu"],
            "possible values: best, cuda, emulator",
        ),
        (&["run", "extra"], "unexpected argument 'extra'"),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (&[], "Usage: ptxkit"),
    ];
    for (args, wanted) in cases {
        let out = ptxkit(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(wanted), "`ptxkit {}`: {err}", args.join(" "));
        assert!(!err.contains("needs a value"), "{err}");
    }
}

#[test]
fn work_that_fails_exits_with_status_1() {
    // A regular file stands where the output directory should be.
    let file = std::env::temp_dir().join(format!("ptxkit-cli-file-{}", std::process::id()));
    std::fs::write(&file, b"").unwrap();
    let out = ptxkit(&[
        "emit",
        "--targets",
        "sm_80",
        "--out",
        file.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&file);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not write"));
}

#[test]
fn a_short_training_run_on_the_emulator_passes_and_reports_its_losses() {
    // A text of the test's own: the default text is the project's docs, and whether five
    // steps lower the loss depends on what the batches hold.
    let data = std::env::temp_dir().join(format!("ptxkit-cli-text-{}.txt", std::process::id()));
    let text = "Threads read, work in registers and write. Blocks share memory on the chip. ";
    std::fs::write(&data, text.repeat(12)).unwrap();
    let data_arg = data.to_str().unwrap();
    let out = ptxkit(&[
        "train", "--device", "emulator", "--steps", "5", "--data", data_arg,
    ]);
    std::fs::remove_file(&data).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let loss_at = |step: u32| -> f64 {
        let prefix = format!("step {step:>5}  loss ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no loss for step {step}:\n{text}"))
            .parse()
            .unwrap()
    };
    let (first, last) = (loss_at(1), loss_at(5));
    assert!(last < first, "{text}");
    assert!(
        text.contains(&format!(
            "loss fell from {first:.6} at step 1 to {last:.6} at step 5"
        )),
        "{text}"
    );
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

#[test]
fn ptxas_is_looked_up_when_emit_runs_not_when_it_was_built() {
    let scratch = std::env::temp_dir().join(format!("ptxkit-cli-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let emit = |ptxas: Option<&std::path::Path>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ptxkit"));
        cmd.args([
            "emit",
            "--targets",
            "sm_80",
            "--kernels",
            "vector_add",
            "--out",
        ])
        .arg(scratch.join("out"))
        .current_dir(&scratch)
        .env_remove("CUDA_HOME")
        .env("PATH", "");
        match ptxas {
            Some(p) => cmd.env("PTXKIT_PTXAS", p),
            None => cmd.env_remove("PTXKIT_PTXAS"),
        };
        let out = cmd.output().expect("run ptxkit");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // Nowhere to look: no variable, an empty PATH, no `.tools` above the current directory.
    assert!(emit(None).contains("ptxas not found"));
    // A stand-in named at run time is the one used.
    let fake = scratch.join("fake-ptxas");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'Cuda compilation tools, release 0.0, stand-in'\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let table = emit(Some(&fake));
    assert!(
        table.contains(&format!("resources from {}", fake.display())),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `ptxkit train --model block` (the quicker model) on the emulator for `steps` steps, with `RUST_LOG` set to `log` (unset for
/// `None`); stderr is a pipe, as in CI.
fn train_on_emulator(steps: &str, log: Option<&str>) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ptxkit"));
    cmd.args([
        "train", "--model", "block", "--device", "emulator", "--steps", steps,
    ]);
    match log {
        Some(filter) => cmd.env("RUST_LOG", filter),
        None => cmd.env_remove("RUST_LOG"),
    };
    cmd.output().expect("run ptxkit")
}

#[test]
fn rust_log_shows_module_loads_and_launches_and_is_quiet_by_default() {
    let out = train_on_emulator("2", Some("ptxkit=debug"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = String::from_utf8_lossy(&out.stderr);
    for wanted in [
        "ptxkit::load",
        "origin=EmbeddedPtx",
        "module loaded",
        "launch{kernel=",
        "ptxkit::launch",
        "time.busy",
    ] {
        assert!(log.contains(wanted), "no {wanted:?} in:\n{log}");
    }
    // The report stays on stdout, free of log lines.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ptxkit::"));

    let quiet = train_on_emulator("2", None);
    assert!(quiet.status.success());
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("ptxkit::"));
}

#[test]
fn progress_off_a_terminal_is_plain_lines_on_stderr() {
    let out = train_on_emulator("2", None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            "pre-warm: loading every kernel of the step",
            "training: 2 steps"
        ],
        "{err}"
    );
}
