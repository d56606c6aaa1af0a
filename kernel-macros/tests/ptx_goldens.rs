//! Insta goldens of the PTX `#[kernel]` emits for the samples, one per kernel × target
//! (`<kernel>@<target>`), and ptxas accepting every module the macro can emit.

mod common;

use common::kernels::*;
use kernel_dsl::{KernelArtifacts, Target};
use std::path::PathBuf;
use std::process::Command;

const GOLDEN_TARGETS: [Target; 4] = [Target::Sm80, Target::Sm89, Target::Sm90, Target::Sm121];

fn samples() -> [&'static KernelArtifacts; 5] {
    [
        &VECTOR_ADD,
        &SAXPY,
        &BLOCK_REDUCE_SUM,
        &TRANSPOSE_32X32,
        &MMA_BF16_16X8X16,
    ]
}

fn emit(k: &KernelArtifacts, t: Target) -> Result<String, kernel_dsl::Error> {
    (k.emit.expect("#[kernel] always embeds an emit function"))(t)
}

#[test]
fn sample_ptx_matches_the_goldens() {
    for k in samples() {
        // The goldens pin the PTX without line info (`line_info.rs` has the `.loc` form).
        let kernel = k.kernel().expect("embedded IR").expect("IR unpacks");
        for t in GOLDEN_TARGETS {
            let ptx = kernel_dsl::emit::emit(&kernel, t)
                .unwrap_or_else(|e| panic!("{} for {t}: {e}", k.meta.entry));
            insta::assert_snapshot!(format!("{}@{}", k.meta.entry, t), ptx);
        }
    }
}

#[test]
fn the_embedded_default_target_is_byte_identical_to_emitting_from_the_ir() {
    for k in samples() {
        let embedded = k
            .ptx_for(Target::Sm80)
            .expect("sm_80 is the default target");
        assert_eq!(
            embedded,
            emit(k, Target::Sm80).expect("emits"),
            "{}",
            k.meta.entry
        );
    }
}

fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXKIT_PTXAS") {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../.tools/ptxas-12.9/nvidia/cuda_nvcc/bin/ptxas");
    p.is_file().then_some(p)
}

fn coverage() -> [&'static KernelArtifacts; 16] {
    use common::intrinsics::*;
    [
        &COVERAGE_MATH,
        &COVERAGE_VECTORS,
        &COVERAGE_ASYNC,
        &FLOAT_INTRINSICS,
        &ROUNDING_AND_NAN,
        &BIT_INTRINSICS,
        &TICKETS,
        &LAST_BLOCK_TOTAL,
        &FENCED_COPY,
        &MMA_TF32_16X8X8,
        &BLOCK_VOTES,
        &CHUNKED_WORK,
        &BF16_WORDS,
        &WIDEN_BF16_WORDS,
        &GUARDED_WORDS,
        &SWAP_BF16_PAIRS,
    ]
}

#[test]
fn ptxas_accepts_every_sample_for_every_target_it_emits_for() {
    let Some(ptxas) = ptxas() else {
        eprintln!("skipped: no ptxas (set PTXKIT_PTXAS or install .tools/ptxas-12.9)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("ptxkit-macro-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut assembled = 0;
    for k in samples().into_iter().chain(coverage()) {
        for t in Target::ALL {
            let Ok(ptx) = emit(k, t) else {
                let below = [
                    "mma_bf16_16x8x16",
                    "coverage_vectors",
                    "coverage_async",
                    "bit_intrinsics",
                    "mma_tf32_16x8x8",
                ];
                assert!(
                    below.contains(&&*k.meta.entry) && t.sm() < 80,
                    "{} does not emit for {t}",
                    k.meta.entry
                );
                continue;
            };
            let file = dir.join(format!("{}_{}.ptx", k.meta.entry, t));
            std::fs::write(&file, &ptx).expect("write ptx");
            let out = Command::new(&ptxas)
                .arg(format!("-arch={}", t.name()))
                .arg(&file)
                .arg("-o")
                .arg(dir.join("out.cubin"))
                .output()
                .expect("run ptxas");
            assert!(
                out.status.success(),
                "{} for {t}: {}",
                k.meta.entry,
                String::from_utf8_lossy(&out.stderr)
            );
            assembled += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        assembled >= 4 * 11 + 9 + 4 * 11,
        "assembled only {assembled} modules"
    );
}
