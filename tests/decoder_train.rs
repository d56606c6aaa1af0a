//! The decoder trains on the emulator: its first steps match the CPU f64 reference, its loss
//! falls, a resumed run continues the same trajectory, and QLoRA trains the adapters while
//! the base stays frozen.

use kernel_runtime::Device;
use ptxkit::train::decoder::{
    compare_decoder_with_reference, Corpus, DecoderConfig, DecoderTrainer, Mode,
};
use ptxkit::train::Launch;
use std::time::Instant;

fn tiny() -> DecoderConfig {
    DecoderConfig {
        steps: 6,
        ..DecoderConfig::tiny()
    }
}

#[test]
fn decoder_first_steps_match_the_f64_reference_and_the_loss_falls() {
    let started = Instant::now();
    let device = Device::emulator();
    let cfg = tiny();
    let mut trainer = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph).unwrap();
    println!("built in {:.2} s", started.elapsed().as_secs_f64());
    let checks = compare_decoder_with_reference(&mut trainer, 2).unwrap();
    for c in &checks {
        println!(
            "{} {:<60} {:>14.8} {:>14.8} {:.2e} {}",
            c.step,
            c.quantity,
            c.device,
            c.reference,
            c.rel_error(),
            if c.passed() { "" } else { "MISMATCH" }
        );
    }
    println!("checked in {:.2} s", started.elapsed().as_secs_f64());
    assert!(checks.iter().all(|c| c.passed()));
    let first = checks[0].device;
    while trainer.steps_done() < cfg.steps {
        trainer.step().unwrap();
    }
    let last = trainer.loss().unwrap() as f64;
    println!(
        "loss {first} -> {last} in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        last < first - 0.1,
        "the loss fell only from {first} to {last}"
    );
}
