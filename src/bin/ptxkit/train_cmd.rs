use crate::args::TrainArgs;
use crate::error::CliError;
use crate::progress::Progress;
use ptxkit::train::{self, Launch, Observer, Progress as TrainProgress, TrainConfig};
use std::time::Instant;

/// Trains the block on the chosen device (the GPU if one is present, else the CPU emulator):
/// checks the first steps against the CPU f64 reference, prints the falling loss, and fails
/// if the device and the reference disagree or the loss did not fall.
pub fn run(args: &TrainArgs) -> Result<(), CliError> {
    if let Some(gpus) = args.gpus {
        return run_data_parallel(args, gpus as usize);
    }
    let started = Instant::now();
    let device = crate::run_cmd::pick_device(args.device)?;
    crate::run_cmd::print_device(&device);
    let mut cfg = TrainConfig::for_device(&device);
    if let Some(steps) = args.steps {
        cfg.steps = steps;
    }
    if let Some(every) = args.log_every {
        cfg.log_every = every;
    }
    let mut report = Report {
        progress: Progress::new(),
        stepping: false,
    };
    let result = train::run_observed(&device, &cfg, Launch::Graph, &mut report);
    report.progress.finish();
    result?;
    println!("total {:.2} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Shows a training run's lines, and its progress on the bar.
struct Report {
    progress: Progress,
    /// Whether the bar counts steps yet (it spins during the pre-warm).
    stepping: bool,
}

impl Observer for Report {
    fn line(&mut self, line: &str) {
        self.progress.line(line);
    }

    fn progress(&mut self, progress: TrainProgress) {
        match progress {
            TrainProgress::Prewarm => self
                .progress
                .spin("pre-warm: loading every kernel of the step"),
            TrainProgress::Steps { done, total } => {
                if !self.stepping {
                    self.stepping = true;
                    self.progress.start("training", u64::from(total), "steps");
                }
                self.progress.set(u64::from(done), None);
            }
        }
    }
}

/// `--gpus N`: the GPU preset with each GPU given the preset's batch (the global batch grows
/// with N), trained data-parallel on CUDA devices `0..N`.
fn run_data_parallel(args: &TrainArgs, gpus: usize) -> Result<(), CliError> {
    let started = Instant::now();
    let devices = (0..gpus)
        .map(ptxkit::runtime::Device::cuda)
        .collect::<Result<Vec<_>, _>>()
        .map_err(train::TrainError::from)?;
    for device in &devices {
        crate::run_cmd::print_device(device);
    }
    let mut cfg = TrainConfig::large();
    cfg.shape.tokens *= gpus;
    if let Some(steps) = args.steps {
        cfg.steps = steps;
    }
    if let Some(every) = args.log_every {
        cfg.log_every = every;
    }
    train::run_data_parallel(&devices, &cfg, Launch::Graph, &mut |line| {
        println!("{line}")
    })?;
    println!("total {:.2} s", started.elapsed().as_secs_f64());
    Ok(())
}
