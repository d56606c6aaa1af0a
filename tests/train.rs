//! Training the transformer block end to end: on the emulator, the first steps against the
//! CPU f64 reference, the falling loss, and graph replay against direct launches; on a GPU
//! (skipped with one line where there is none), graph replay against direct launches at full
//! size and the whole `ptxkit train` run.

use ptxkit::runtime::Device;
use ptxkit::train::{
    compare_with_reference, run, Launch, Shape, TrainConfig, TrainError, Trainer, LOSS_TOLERANCE,
};

/// Takes `steps` steps; returns each step's loss bits and, at the end, the weights' bits and
/// the optimizer's device-side step count.
fn losses_and_weights(
    device: &Device,
    cfg: &TrainConfig,
    launch: Launch,
    steps: u32,
) -> (Vec<u32>, Vec<u32>, u32) {
    let mut trainer = Trainer::new(device, cfg, launch).unwrap();
    let losses = (0..steps)
        .map(|_| {
            trainer.step().unwrap();
            trainer.loss().unwrap().to_bits()
        })
        .collect();
    let count = trainer.device_step_count().unwrap();
    (losses, trainer.weight_bits().unwrap(), count)
}

#[test]
fn the_first_three_steps_match_the_cpu_f64_reference_on_the_emulator() {
    let device = Device::emulator();
    let cfg = TrainConfig::small();
    let mut trainer = Trainer::new(&device, &cfg, Launch::Graph).unwrap();
    let checks = compare_with_reference(&mut trainer, 3).unwrap();
    // Per step: loss, grad norm, input grad norm and five weight norms.
    assert_eq!(checks.len(), 3 * 8);
    for c in &checks {
        println!(
            "step {} {:<22} device {:.9} reference {:.9} rel error {:.2e}",
            c.step,
            c.quantity,
            c.device,
            c.reference,
            c.rel_error()
        );
        assert!(
            c.passed(),
            "step {}: {} is {} on the device but {} in the reference (tolerance {:e})",
            c.step,
            c.quantity,
            c.device,
            c.reference,
            c.tolerance
        );
    }
    let loss = |step| {
        checks
            .iter()
            .find(|c| c.step == step && c.quantity == "loss")
            .unwrap()
    };
    assert_eq!(loss(1).tolerance, LOSS_TOLERANCE);
    assert!(
        loss(3).reference < loss(1).reference,
        "the reference learns too"
    );
}

#[test]
fn the_loss_falls_on_the_emulator() {
    let cfg = TrainConfig {
        steps: 24,
        ..TrainConfig::small()
    };
    let summary = run(&Device::emulator(), &cfg, Launch::Graph, &mut |l| {
        println!("{l}")
    })
    .unwrap();
    let first = summary.losses.first().unwrap();
    let last = summary.losses.last().unwrap();
    assert_eq!((first.0, last.0), (1, 24));
    assert!(
        last.1 < 0.5 * first.1,
        "loss {} at step 1 but {} at step 24",
        first.1,
        last.1
    );
    assert_eq!(summary.graph_launches, Some(35));
}

#[test]
fn graph_replay_gives_the_bits_of_direct_launches_on_the_emulator() {
    let device = Device::emulator();
    let cfg = TrainConfig::small();
    let graph = losses_and_weights(&device, &cfg, Launch::Graph, 5);
    let direct = losses_and_weights(&device, &cfg, Launch::Direct, 5);
    assert_eq!(graph.2, 5, "the optimizer counted every replay");
    assert_eq!(graph, direct);
}

#[test]
fn bad_settings_are_typed_errors_before_anything_runs() {
    let device = Device::emulator();
    let no_steps = TrainConfig {
        steps: 0,
        ..TrainConfig::small()
    };
    let err = run(&device, &no_steps, Launch::Graph, &mut |_| {}).unwrap_err();
    assert!(matches!(err, TrainError::Config(_)), "{err}");
    let empty = TrainConfig {
        shape: Shape {
            ffn: 0,
            ..Shape::SMALL
        },
        ..TrainConfig::small()
    };
    let err = Trainer::new(&device, &empty, Launch::Graph).err().unwrap();
    assert!(err.to_string().contains("ffn is 0"), "{err}");
}

#[test]
fn on_the_gpu_graph_replay_matches_direct_launches_and_training_converges() {
    let device = match Device::cuda(0) {
        Ok(d) => d,
        Err(_) => {
            println!("skipping: no CUDA driver/GPU present");
            return;
        }
    };
    let cfg = TrainConfig::large();
    let graph = losses_and_weights(&device, &cfg, Launch::Graph, 4);
    let direct = losses_and_weights(&device, &cfg, Launch::Direct, 4);
    println!(
        "graph losses {:?}",
        graph
            .0
            .iter()
            .map(|&b| f32::from_bits(b))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        graph.0, direct.0,
        "losses differ between graph replay and direct launches"
    );
    assert!(
        graph.1 == direct.1,
        "weights differ between graph replay and direct launches"
    );
    assert_eq!(graph.2, 4);
    // The whole run at GPU size: reference check, 300 steps, falling loss.
    let summary = run(&device, &cfg, Launch::Graph, &mut |l| println!("{l}")).unwrap();
    let (first, last) = (summary.losses[0].1, summary.losses.last().unwrap().1);
    assert!(
        last < 0.5 * first,
        "loss {first} at step 1 but {last} at the end"
    );
}

fn ptxkit(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ptxkit"))
        .args(args)
        .output()
        .expect("run ptxkit")
}

#[test]
fn the_train_command_prints_the_reference_check_and_the_falling_loss() {
    let out = ptxkit(&[
        "train", "--model", "block", "--device", "emulator", "--steps", "12",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("captured once as a graph"), "{text}");
    assert!(
        text.contains("first 3 steps against the CPU f64 reference"),
        "{text}"
    );
    assert_eq!(text.matches("  loss  ").count(), 3, "{text}");
    assert!(!text.contains("MISMATCH"), "{text}");
    for step in [1, 2, 3, 4, 8, 12] {
        assert!(text.contains(&format!("step {step:>5}  loss ")), "{text}");
    }
    assert!(text.contains("loss fell from"), "{text}");
}

#[test]
fn resuming_from_a_directory_without_a_checkpoint_fails_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("ptxkit-no-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = ptxkit(&[
        "train",
        "--device",
        "emulator",
        "--resume",
        dir.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.json"), "{err}");
}

#[test]
fn the_train_command_rejects_bad_arguments_with_exit_2() {
    for (args, message) in [
        (
            &["train", "--steps", "0"][..],
            "invalid value '0' for '--steps <N>'",
        ),
        (
            &["train", "--steps"][..],
            "a value is required for '--steps <N>'",
        ),
        (
            &["train", "--device", "tpu"][..],
            "invalid value 'tpu' for '--device",
        ),
        (
            &["train", "--batch", "4"][..],
            "unexpected argument '--batch'",
        ),
        (
            &["train", "--lora-rank", "4"][..],
            "the following required arguments were not provided",
        ),
        (
            &["train", "--model", "block", "--qlora"][..],
            "--qlora applies to the decoder",
        ),
        (
            &["train", "--gpus", "2", "--resume", "x"][..],
            "--resume is for a run on one device",
        ),
        (
            &["train", "--model", "gpt"][..],
            "invalid value 'gpt' for '--model",
        ),
    ] {
        let out = ptxkit(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
    }
}
