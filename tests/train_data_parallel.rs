//! Data-parallel training on the emulator's one-rank communicator: the step with its gradient
//! all-reduce inside the graph matches the plain step bit for bit, and bad setups are typed
//! errors.

use kernel_runtime::{Communicator, Device};
use ptxkit::train::{run_data_parallel, Launch, TrainConfig, TrainError, Trainer};

/// Both ways of averaging: after the backward, and bucket by bucket on a second stream forked
/// into the captured step.
#[test]
fn one_rank_with_the_all_reduce_in_the_graph_matches_the_plain_step_bit_for_bit() {
    for overlap_reduce in [false, true] {
        let cfg = TrainConfig {
            overlap_reduce,
            ..TrainConfig::small()
        };
        let mut plain = Trainer::new(&Device::emulator(), &cfg, Launch::Graph).unwrap();
        let device = Device::emulator();
        let comm = Communicator::single(&device).unwrap();
        let mut rank = Trainer::for_rank(comm, &cfg, Launch::Graph).unwrap();
        for _ in 0..3 {
            plain.step().unwrap();
            rank.step().unwrap();
            assert_eq!(
                plain.loss().unwrap().to_bits(),
                rank.loss().unwrap().to_bits(),
                "overlap {overlap_reduce}"
            );
        }
        assert_eq!(plain.weight_bits().unwrap(), rank.weight_bits().unwrap());
    }
}

#[test]
fn a_data_parallel_run_on_one_emulator_rank_trains() {
    let cfg = TrainConfig {
        log_every: 20,
        ..TrainConfig::small()
    };
    let summary =
        run_data_parallel(&[Device::emulator()], &cfg, Launch::Graph, &mut |_| {}).unwrap();
    assert_eq!(summary.ranks, 1);
    let steps: Vec<u32> = summary.losses.iter().map(|&(s, _)| s).collect();
    assert_eq!(steps, vec![1, 2, 3, 20, 40]);
}

#[test]
fn no_ranks_and_uneven_shards_are_config_errors() {
    let cfg = TrainConfig::small();
    let err = run_data_parallel(&[], &cfg, Launch::Graph, &mut |_| {}).unwrap_err();
    assert!(matches!(err, TrainError::Config(_)), "{err}");
    let devices = [Device::emulator(), Device::emulator(), Device::emulator()];
    let err = run_data_parallel(&devices, &cfg, Launch::Graph, &mut |_| {}).unwrap_err();
    assert!(
        matches!(err, TrainError::Config(ref m) if m.contains("3 equal shards")),
        "{err}"
    );
}
