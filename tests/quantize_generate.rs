//! `ptxkit quantize` and `ptxkit generate` end to end on the emulator: a random checkpoint
//! quantized, served with two prompts, the same seed repeating its text; bad input refused.

use std::path::Path;
use std::process::{Command, Output};

fn ptxkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptxkit"))
        .args(args)
        .output()
        .expect("run ptxkit")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn quantized(dir: &Path, ty: &str) -> String {
    ptxkit::gguf::llama::write_random(dir, &ptxkit::model::ModelConfig::TINY, 3).unwrap();
    let gguf = dir.join("model.gguf");
    let out = ptxkit(&[
        "quantize",
        "--checkpoint",
        dir.to_str().unwrap(),
        "--out",
        gguf.to_str().unwrap(),
        "--type",
        ty,
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("q8_0:"), "{stdout}");
    gguf.to_str().unwrap().to_owned()
}

#[test]
fn a_quantized_checkpoint_generates_repeatable_text_for_two_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let model = quantized(dir.path(), "q4_k_m");
    let generate = |seed: &str| {
        let out = ptxkit(&[
            "generate",
            "--device",
            "emulator",
            "--model",
            &model,
            "--prompt",
            "ab",
            "--prompt",
            "xyz",
            "--max-tokens",
            "3",
            "--temperature",
            "0.9",
            "--top-k",
            "40",
            "--seed",
            seed,
            "--ignore-eos",
        ]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stdout}{stderr}");
        stdout
    };
    let first = generate("4");
    assert!(
        first.contains("[0] ab") && first.contains("[1] xyz"),
        "{first}"
    );
    assert!(first.contains("(3 tokens, MaxTokens)"), "{first}");
    assert!(first.contains("tokens/s"), "{first}");
    let completions = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with('['))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(completions(&first), completions(&generate("4")));
}

#[test]
fn a_file_that_is_not_a_gguf_model_or_a_missing_checkpoint_fails_with_status_1() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.gguf");
    std::fs::write(&bogus, b"GGUF\x02\x00\x00\x00").unwrap();
    let out = ptxkit(&[
        "generate",
        "--device",
        "emulator",
        "--model",
        bogus.to_str().unwrap(),
        "--prompt",
        "a",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("version 2 is not supported"),
        "{}",
        text(&out).1
    );
    let out = ptxkit(&[
        "quantize",
        "--checkpoint",
        dir.path().to_str().unwrap(),
        "--out",
        bogus.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.contains("config.json"), "{}", text(&out).1);
    let out = ptxkit(&[
        "quantize",
        "--checkpoint",
        "x",
        "--out",
        "y",
        "--type",
        "q2_k",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("possible values: q4_k_m, q8_0, q6_k"),
        "{}",
        text(&out).1
    );
}
