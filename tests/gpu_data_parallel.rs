//! Data-parallel training on two GPUs: the loss with a per-GPU batch B matches one GPU with
//! batch 2B over the first steps within the f32 loss tolerance, and the ranks' weights stay
//! bit-identical. Skips with one line where fewer than two GPUs or no libnccl are present.

use ptxkit::runtime::{nccl_available, Communicator, Device};
use ptxkit::train::{Launch, TrainConfig, Trainer, LOSS_TOLERANCE, RANK_TIMEOUT};

const STEPS: u32 = 5;

#[test]
fn two_gpus_with_batch_b_match_one_gpu_with_batch_2b() {
    if let Err(e) = nccl_available() {
        println!("skipping: {e}");
        return;
    }
    let devices = match (Device::cuda(0), Device::cuda(1)) {
        (Ok(a), Ok(b)) => vec![a, b],
        (Err(e), _) | (_, Err(e)) => {
            println!("skipping: fewer than 2 GPUs ({e})");
            return;
        }
    };
    // The GPU preset's 4096 tokens are the global batch: 2048 on each GPU.
    let cfg = TrainConfig::large();

    let mut single = Trainer::new(&Device::cuda(0).unwrap(), &cfg, Launch::Graph).unwrap();
    let mut want = Vec::new();
    for _ in 0..STEPS {
        single.step().unwrap();
        want.push(single.loss().unwrap() as f64);
    }

    let comms = Communicator::per_device(&devices).unwrap();
    let ranks: Vec<(Vec<f64>, Vec<u32>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|comm| {
                scope.spawn(move || {
                    let mut t = Trainer::for_rank(comm, &cfg, Launch::Graph).unwrap();
                    let mut losses = Vec::new();
                    for _ in 0..STEPS {
                        t.step().unwrap();
                        t.wait(RANK_TIMEOUT).unwrap();
                        losses.push(t.loss().unwrap() as f64);
                    }
                    (losses, t.weight_bits().unwrap())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    for (step, (&got, &w)) in ranks[0].0.iter().zip(&want).enumerate() {
        let rel = (got - w).abs() / w.abs();
        println!(
            "step {}: 2 GPUs {got:.9}, 1 GPU {w:.9}, rel {rel:.2e}",
            step + 1
        );
        assert!(
            rel <= LOSS_TOLERANCE,
            "step {}: loss {got} on 2 GPUs vs {w} on 1 (rel {rel:.2e} > {LOSS_TOLERANCE:.0e})",
            step + 1
        );
    }
    assert_eq!(ranks[0].0, ranks[1].0, "the ranks saw different losses");
    assert!(
        ranks[0].1 == ranks[1].1,
        "the ranks' weights are not bit-identical"
    );
}
