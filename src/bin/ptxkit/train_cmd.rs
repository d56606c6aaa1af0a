use crate::args::{ModelChoice, TrainArgs};
use crate::error::CliError;
use crate::progress::Progress;
use ptxkit::train::decoder::{self, Corpus, DecoderConfig, Mode, RunOptions};
use ptxkit::train::{self, Launch, Observer, Progress as TrainProgress, TrainConfig};
use std::time::Instant;

/// Trains on the chosen device (the GPU if one is present, else the CPU emulator): the
/// decoder by default, or the block. Checks the first steps against the CPU f64 reference,
/// prints the falling loss, and fails if the device and the reference disagree or the loss
/// did not fall.
pub fn run(args: &TrainArgs) -> Result<(), CliError> {
    match args.model {
        ModelChoice::Decoder => run_decoder(args),
        ModelChoice::Block => run_block(args),
    }
}

/// The decoder-only flags given with `--model block`, as a usage error.
fn refuse_decoder_flags(args: &TrainArgs) -> Result<(), CliError> {
    let given = [
        ("--data", args.data.is_some()),
        ("--checkpoint", args.checkpoint.is_some()),
        ("--resume", args.resume.is_some()),
        ("--base", args.base.is_some()),
        ("--qlora", args.qlora),
        ("--dump-step", args.dump_step.is_some()),
    ];
    match given.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(CliError::Usage(format!(
            "{flag} applies to the decoder; drop it or --model block"
        ))),
        None => Ok(()),
    }
}

fn run_decoder(args: &TrainArgs) -> Result<(), CliError> {
    let started = Instant::now();
    if args.overlap {
        return Err(CliError::Usage(
            "--overlap is for --model block; the decoder averages its gradients after the backward"
                .into(),
        ));
    }
    let devices = match args.gpus {
        Some(gpus) => {
            let given = [
                ("--checkpoint", args.checkpoint.is_some()),
                ("--resume", args.resume.is_some()),
                ("--base", args.base.is_some()),
                ("--dump-step", args.dump_step.is_some()),
            ];
            if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
                return Err(CliError::Usage(format!(
                    "{flag} is for a run on one device; drop it or --gpus"
                )));
            }
            (0..gpus as usize)
                .map(ptxkit::runtime::Device::cuda)
                .collect::<Result<Vec<_>, _>>()
                .map_err(train::TrainError::from)?
        }
        None => vec![crate::run_cmd::pick_device(args.device)?],
    };
    for device in &devices {
        crate::run_cmd::print_device(device);
    }
    let device = devices[0].clone();
    let mut cfg = DecoderConfig::for_device(&device);
    if let Some(steps) = args.steps {
        cfg.steps = steps;
    }
    if let Some(every) = args.log_every {
        cfg.log_every = every;
    }
    cfg.precision = args.precision.into();
    if args.qlora {
        cfg.mode = Mode::QLora {
            rank: args.lora_rank.unwrap_or(8) as usize,
            alpha: args.lora_alpha.unwrap_or(16.0),
        };
    }
    let corpus = match &args.data {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|source| CliError::Read {
                path: path.display().to_string(),
                source,
            })?;
            println!("text: {} ({} bytes)", path.display(), bytes.len());
            Corpus::from_bytes(&bytes)
        }
        None => {
            let c = Corpus::builtin();
            println!(
                "text: the repository's README, ARCHITECTURE and docs ({} bytes)",
                c.len()
            );
            c
        }
    };
    if let Some(dir) = &args.dump_step {
        let loss = decoder::dump_step(&device, &cfg, corpus, args.base.as_deref(), dir)?;
        println!(
            "one step (loss {loss:.6}) written to {}; run scripts/crosscheck_hf.py {}",
            dir.display(),
            dir.display()
        );
        return Ok(());
    }
    if args.gpus.is_some() {
        decoder::run_decoder_data_parallel(&devices, &cfg, &corpus, Launch::Graph, &mut |line| {
            println!("{line}")
        })?;
        println!("total {:.2} s", started.elapsed().as_secs_f64());
        return Ok(());
    }
    let options = RunOptions {
        resume: args.resume.clone(),
        base: args.base.clone(),
        checkpoint: args.checkpoint.clone(),
        checkpoint_every: args.checkpoint_every.unwrap_or(0),
    };
    let mut report = Report {
        progress: Progress::new(),
        stepping: false,
    };
    let result = decoder::run_decoder(&device, &cfg, corpus, Launch::Graph, &options, &mut report);
    report.progress.finish();
    result?;
    println!("total {:.2} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Trains the block: checks the first steps against the CPU f64 reference and prints the
/// falling loss.
fn run_block(args: &TrainArgs) -> Result<(), CliError> {
    refuse_decoder_flags(args)?;
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
    cfg.overlap_reduce = args.overlap;
    train::run_data_parallel(&devices, &cfg, Launch::Graph, &mut |line| {
        println!("{line}")
    })?;
    println!("total {:.2} s", started.elapsed().as_secs_f64());
    Ok(())
}
