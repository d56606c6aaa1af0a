//! The decoder on a real GPU, in bf16 and in TF32: the first steps of the GPU-sized model
//! match the CPU f64 reference, graph replay gives the same bits as direct launches, the full
//! preset's loss falls (bf16), QLoRA trains with its base frozen, and bf16 QLoRA takes fewer
//! launches a step than TF32's. Skips with one line where no GPU is present.

use ptxkit::runtime::Device;
use ptxkit::train::decoder::{
    compare_decoder_with_reference, run_decoder, run_decoder_data_parallel, Corpus, DecoderConfig,
    DecoderTrainer, Mode, Precision, RunOptions,
};
use ptxkit::train::{Launch, Observer};

fn gpu() -> Option<Device> {
    match Device::cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("skipping: no CUDA driver/GPU present ({e})");
            None
        }
    }
}

struct Print;

impl Observer for Print {
    fn line(&mut self, line: &str) {
        println!("{line}");
    }
}

/// The GPU model on a batch small enough for the f64 reference on the host.
fn checked() -> DecoderConfig {
    DecoderConfig {
        seqs: 2,
        seq_len: 128,
        ..DecoderConfig::small()
    }
}

fn loss_bits(device: &Device, cfg: &DecoderConfig, launch: Launch, steps: u32) -> Vec<u32> {
    let mut t = DecoderTrainer::new(device, cfg, Corpus::builtin(), launch).unwrap();
    (0..steps)
        .map(|_| {
            t.step().unwrap();
            t.loss().unwrap().to_bits()
        })
        .collect()
}

/// The first steps of `cfg` against the reference, then graph replay against direct launches.
fn matches_reference_and_direct_launches(cfg: &DecoderConfig) {
    let device = Device::cuda(0).unwrap();
    let mut trainer = DecoderTrainer::new(&device, cfg, Corpus::builtin(), Launch::Graph).unwrap();
    println!(
        "{}: {} launches a step",
        cfg.precision,
        trainer.graph_launches().unwrap()
    );
    let checks = compare_decoder_with_reference(&mut trainer, 2).unwrap();
    for c in &checks {
        println!(
            "{} {:<56} {:>14.7} {:>14.7} {:.2e}{}",
            c.step,
            c.quantity,
            c.device,
            c.reference,
            c.rel_error(),
            if c.passed() { "" } else { "  MISMATCH" }
        );
    }
    assert!(checks.iter().all(|c| c.passed()));
    let graph = loss_bits(&Device::cuda(0).unwrap(), cfg, Launch::Graph, 3);
    let direct = loss_bits(&Device::cuda(0).unwrap(), cfg, Launch::Direct, 3);
    assert_eq!(graph, direct, "graph replay and direct launches differ");
}

#[test]
fn on_the_gpu_the_bf16_decoder_matches_its_reference_and_graph_replay_matches_direct_launches() {
    let Some(_) = gpu() else { return };
    matches_reference_and_direct_launches(&DecoderConfig {
        precision: Precision::Bf16,
        ..checked()
    });
}

#[test]
fn on_the_gpu_the_tf32_decoder_matches_its_reference_and_graph_replay_matches_direct_launches() {
    let Some(_) = gpu() else { return };
    matches_reference_and_direct_launches(&DecoderConfig {
        precision: Precision::Tf32,
        ..checked()
    });
}

#[test]
fn on_the_gpu_bf16_qlora_takes_fewer_launches_than_tf32_and_reruns_bit_identically() {
    let Some(device) = gpu() else { return };
    let qlora = |precision| DecoderConfig {
        mode: Mode::QLora {
            rank: 16,
            alpha: 32.0,
        },
        precision,
        ..DecoderConfig::small()
    };
    let launches = |cfg: &DecoderConfig| {
        DecoderTrainer::new(
            &Device::cuda(0).unwrap(),
            cfg,
            Corpus::builtin(),
            Launch::Graph,
        )
        .unwrap()
        .graph_launches()
        .unwrap()
    };
    let (tf32, bf16) = (
        launches(&qlora(Precision::Tf32)),
        launches(&qlora(Precision::Bf16)),
    );
    println!("QLoRA step launches: tf32 {tf32}, bf16 {bf16}");
    assert!(bf16 < tf32);
    let cfg = qlora(Precision::Bf16);
    let once = loss_bits(&device, &cfg, Launch::Graph, 3);
    let again = loss_bits(&Device::cuda(0).unwrap(), &cfg, Launch::Graph, 3);
    assert_eq!(once, again, "two bf16 QLoRA runs differ");
}

#[test]
fn on_the_gpu_the_decoder_preset_trains_and_qlora_keeps_its_base() {
    let Some(device) = gpu() else { return };
    let cfg = DecoderConfig {
        steps: 120,
        check_steps: 0,
        ..DecoderConfig::small()
    };
    let s = run_decoder(
        &device,
        &cfg,
        Corpus::builtin(),
        Launch::Graph,
        &RunOptions::default(),
        &mut Print,
    )
    .unwrap();
    let (first, last) = (s.losses[0].1, s.losses.last().unwrap().1);
    assert!(
        last < 0.75 * first,
        "loss {first} at the start, {last} at the end"
    );

    let device = Device::cuda(0).unwrap();
    let qlora = DecoderConfig {
        mode: Mode::QLora {
            rank: 16,
            alpha: 32.0,
        },
        steps: 60,
        log_every: 10,
        ..cfg
    };
    // run_decoder fails if a frozen tensor changed or the loss did not fall.
    run_decoder(
        &device,
        &qlora,
        Corpus::builtin(),
        Launch::Graph,
        &RunOptions::default(),
        &mut Print,
    )
    .unwrap();
}

#[test]
fn on_two_gpus_the_decoder_trains_data_parallel_with_identical_weights() {
    let (Some(_), Ok(second)) = (gpu(), Device::cuda(1)) else {
        println!("skipping: fewer than two GPUs");
        return;
    };
    let devices = [Device::cuda(0).unwrap(), second];
    let cfg = DecoderConfig {
        steps: 40,
        ..DecoderConfig::small()
    };
    // Fails if the ranks' weights differ at the end or the loss did not fall by a quarter.
    run_decoder_data_parallel(
        &devices,
        &cfg,
        &Corpus::builtin(),
        Launch::Graph,
        &mut |l| println!("{l}"),
    )
    .unwrap();
}
