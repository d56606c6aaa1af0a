//! `ptxkit quantize` and `ptxkit generate` end to end on the emulator: a random checkpoint
//! quantized, served with two prompts, the same seed repeating its text; a checkpoint that
//! `ptxkit train` wrote taken through quantize and generate, its GGUF read back byte for
//! byte; bad input refused.

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
fn a_trained_checkpoint_goes_through_quantize_and_generate_and_its_gguf_reads_back_exactly() {
    use kernels::quant::gguf::{GgufFormat, GgufMatrix};
    use ptxkit::gguf::llama::{quantize, Checkpoint, QuantType, Weight};
    use ptxkit::gguf::{Gguf, GgufWriter};

    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt");
    let ckpt_arg = ckpt.to_str().unwrap();
    let out = ptxkit(&[
        "train",
        "--device",
        "emulator",
        "--steps",
        "2",
        "--checkpoint",
        ckpt_arg,
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");

    let gguf = dir.path().join("model.gguf");
    let out = ptxkit(&[
        "quantize",
        "--checkpoint",
        ckpt_arg,
        "--out",
        gguf.to_str().unwrap(),
        "--type",
        "q8_0",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");

    // The file is what quantizing the trained checkpoint in this process gives, and reading
    // it and writing it again gives the same bytes.
    let bytes = std::fs::read(&gguf).unwrap();
    let trained = Checkpoint::load(&ckpt).unwrap();
    let (fresh, _) = quantize(&trained, QuantType::Q8_0).unwrap();
    assert!(
        fresh.to_bytes().unwrap() == bytes,
        "the written GGUF differs from a fresh quantization"
    );
    let file = Gguf::parse(bytes.clone()).unwrap();
    let again = GgufWriter::from_file(&file).unwrap().to_bytes().unwrap();
    assert!(again == bytes, "read and written again, the GGUF changed");

    // ffn_down is stored unpermuted, so its Q8_0 decode is within Q8_0's error of the trained
    // checkpoint's values.
    let down = Weight::FfnDown(0);
    let info = file.tensor(&down.gguf_name()).unwrap();
    let (rows, cols) = info.matrix().unwrap();
    let q = GgufMatrix::from_bytes(
        GgufFormat::Q8_0,
        rows,
        cols,
        file.tensor_data(&down.gguf_name()).unwrap().to_vec(),
    )
    .unwrap();
    let decoded = q.dequantize();
    let want = trained.weight(down);
    for (block, (got, want)) in decoded.chunks(32).zip(want.chunks(32)).enumerate() {
        let absmax = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        // ggml rounds x/d to the nearest integer q with d = absmax/127 and stores d in f16,
        // so |x − q·f16(d)| ≤ d/2 + 127·d·2⁻¹¹.
        let d = absmax / 127.0;
        let bound = (d * 0.5 + 127.0 * d / 2048.0) * 1.0001;
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= bound, "block {block}: {g} against {w}");
        }
    }

    let out = ptxkit(&[
        "generate",
        "--device",
        "emulator",
        "--model",
        gguf.to_str().unwrap(),
        "--prompt",
        "fn ",
        "--max-tokens",
        "3",
        "--ignore-eos",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("[0] fn ") && stdout.contains("(3 tokens, MaxTokens)"),
        "{stdout}"
    );
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
