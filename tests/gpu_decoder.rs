//! The decoder on a real GPU: the first steps of the GPU-sized model match the CPU f64
//! reference, graph replay gives the same bits as direct launches, the full preset's loss
//! falls, and QLoRA trains with its base frozen. Skips with one line where no GPU is present.

use ptxkit::runtime::Device;
use ptxkit::train::decoder::{
    compare_decoder_with_reference, run_decoder, run_decoder_data_parallel, Corpus, DecoderConfig,
    DecoderTrainer, Mode, RunOptions,
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

#[test]
fn on_the_gpu_the_decoder_matches_its_reference_and_graph_replay_matches_direct_launches() {
    let Some(device) = gpu() else { return };
    let cfg = checked();
    let mut trainer = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
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
    let graph = loss_bits(&Device::cuda(0).unwrap(), &cfg, Launch::Graph, 3);
    let direct = loss_bits(&Device::cuda(0).unwrap(), &cfg, Launch::Direct, 3);
    assert_eq!(graph, direct, "graph replay and direct launches differ");
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
