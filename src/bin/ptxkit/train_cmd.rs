use crate::error::CliError;
use ptxkit::train::{self, Launch, TrainConfig};
use std::time::Instant;

/// Arguments of `ptxkit train`.
pub struct TrainArgs {
    pub device: Option<String>,
    pub steps: Option<u32>,
    pub log_every: Option<u32>,
    /// Data parallel over CUDA devices `0..gpus`, one thread each.
    pub gpus: Option<u32>,
}

impl TrainArgs {
    pub fn parse(args: &[String]) -> Result<TrainArgs, CliError> {
        let mut parsed = TrainArgs {
            device: None,
            steps: None,
            log_every: None,
            gpus: None,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it
                .next()
                .ok_or_else(|| CliError::Usage(format!("`{flag}` needs a value")))?;
            let count = || {
                value.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    CliError::Usage(format!(
                        "`{flag}` takes a whole number of steps of at least 1, not `{value}`"
                    ))
                })
            };
            match flag.as_str() {
                "--device" => parsed.device = Some(value.clone()),
                "--steps" => parsed.steps = Some(count()?),
                "--log-every" => parsed.log_every = Some(count()?),
                "--gpus" => {
                    parsed.gpus = Some(value.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                        CliError::Usage(format!(
                            "`--gpus` takes a GPU count of at least 1, not `{value}`"
                        ))
                    })?)
                }
                other => return Err(CliError::Usage(format!("unknown option `{other}`"))),
            }
        }
        Ok(parsed)
    }
}

/// Trains the block on the chosen device (the GPU if one is present, else the CPU emulator):
/// checks the first steps against the CPU f64 reference, prints the falling loss, and fails
/// if the device and the reference disagree or the loss did not fall.
pub fn run(args: &TrainArgs) -> Result<(), CliError> {
    if let Some(gpus) = args.gpus {
        return run_data_parallel(args, gpus as usize);
    }
    let started = Instant::now();
    let device = crate::run_cmd::pick_device(args.device.as_deref())?;
    crate::run_cmd::print_device(&device);
    let mut cfg = TrainConfig::for_device(&device);
    if let Some(steps) = args.steps {
        cfg.steps = steps;
    }
    if let Some(every) = args.log_every {
        cfg.log_every = every;
    }
    train::run(&device, &cfg, Launch::Graph, &mut |line| println!("{line}"))?;
    println!("total {:.2} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// `--gpus N`: the GPU preset with each GPU given the preset's batch (the global batch grows
/// with N), trained data-parallel on CUDA devices `0..N`.
fn run_data_parallel(args: &TrainArgs, gpus: usize) -> Result<(), CliError> {
    if args.device.is_some() {
        return Err(CliError::Usage(
            "`--gpus` picks CUDA devices 0..N itself; drop `--device`".into(),
        ));
    }
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
