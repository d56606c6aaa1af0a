//! A training run on one device: the block's buffers, a pre-warm step, and each step either
//! replayed from a graph captured once or launched directly.

use super::config::TrainConfig;
use super::device_model::DeviceModel;
use super::error::TrainError;
use super::grad_reduce::GradReducer;
use super::params;
use super::problem::Problem;
use kernel_runtime::{Communicator, Device, Graph, Stream};

/// How each step reaches the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// The whole step is captured once as a graph ([`Stream::capture`]) and replayed.
    Graph,
    /// Every step queues its launches one by one.
    Direct,
}

/// The block being trained on a device.
pub struct Trainer {
    cfg: TrainConfig,
    problem: Problem,
    stream: Stream,
    model: DeviceModel,
    graph: Option<Graph>,
    steps_done: u32,
}

impl Trainer {
    /// Uploads the problem of `cfg`, pre-warms every kernel the step uses by running one step
    /// (then puts the weights, moments and step count back), seals `device` so that nothing
    /// compiles mid-step, and with [`Launch::Graph`] captures the step.
    ///
    /// ```
    /// use ptxkit::train::{Launch, Trainer, TrainConfig};
    /// # fn main() -> Result<(), ptxkit::train::TrainError> {
    /// let device = kernel_runtime::Device::emulator();
    /// let mut trainer = Trainer::new(&device, &TrainConfig::small(), Launch::Graph)?;
    /// trainer.step()?;
    /// let first = trainer.loss()?;
    /// trainer.step()?;
    /// assert!(trainer.loss()? < first);
    /// # Ok(()) }
    /// ```
    pub fn new(device: &Device, cfg: &TrainConfig, launch: Launch) -> Result<Trainer, TrainError> {
        cfg.validate()?;
        let problem = Problem::new(cfg.shape, cfg.seed);
        Trainer::build(device, cfg, problem, launch, None)
    }

    /// One rank of a data-parallel run over `comm`: the problem of `cfg` (its `tokens` are the
    /// global batch) is split into `comm.world()` equal shards and this rank trains on shard
    /// `comm.rank()`; each step averages the gradients (and the loss) over the ranks inside the
    /// step, so clipping sees the global norm and every rank makes the same update. Every rank
    /// must call this at the same time: in one process, the ranks meet
    /// ([`Communicator::rendezvous`]) once every buffer and graph exists, before any collective.
    ///
    /// ```
    /// use ptxkit::train::{Launch, Trainer, TrainConfig};
    /// # fn main() -> Result<(), ptxkit::train::TrainError> {
    /// let device = kernel_runtime::Device::emulator();
    /// let comm = kernel_runtime::Communicator::single(&device)?;
    /// let mut trainer = Trainer::for_rank(comm, &TrainConfig::small(), Launch::Graph)?;
    /// trainer.step()?;
    /// assert!(trainer.loss()?.is_finite());
    /// # Ok(()) }
    /// ```
    pub fn for_rank(
        comm: Communicator,
        cfg: &TrainConfig,
        launch: Launch,
    ) -> Result<Trainer, TrainError> {
        cfg.validate()?;
        let problem = Problem::new(cfg.shape, cfg.seed).shard(comm.rank(), comm.world())?;
        let shard_cfg = TrainConfig {
            shape: problem.shape,
            ..*cfg
        };
        let device = comm.device().clone();
        Trainer::build(&device, &shard_cfg, problem, launch, Some(comm))
    }

    fn build(
        device: &Device,
        cfg: &TrainConfig,
        problem: Problem,
        launch: Launch,
        comm: Option<Communicator>,
    ) -> Result<Trainer, TrainError> {
        let rank = comm.as_ref().map(Communicator::rank);
        let _build = tracing::debug_span!(target: "ptxkit::train", "build", ?rank).entered();
        let stream = device.stream()?;
        let mut model = DeviceModel::new(&stream, cfg, &problem)?;
        tracing::debug!(target: "ptxkit::train", "buffers made");
        // The pre-warm step runs without collectives: a peer rank may still be allocating or
        // loading modules, which can wait on this GPU's work (see `Communicator::rendezvous`).
        model.record_step(&stream)?;
        model.reset(&stream, &problem)?;
        stream.synchronize()?;
        tracing::debug!(target: "ptxkit::train", "pre-warm step done");
        device.seal();
        model.reducer = comm
            .map(|c| {
                let reducer = GradReducer::new(c, model.opt.layout());
                match cfg.overlap_reduce {
                    true => reducer.overlapped(),
                    false => Ok(reducer),
                }
            })
            .transpose()?;
        let graph = match launch {
            Launch::Graph => Some(capture_step(&stream, |s| model.record_step(s))?),
            Launch::Direct => None,
        };
        tracing::debug!(target: "ptxkit::train", "step captured");
        if let Some(reducer) = &model.reducer {
            reducer
                .comm()
                .rendezvous(super::data_parallel::RANK_TIMEOUT)?;
            tracing::debug!(target: "ptxkit::train", "peers met");
        }
        Ok(Trainer {
            cfg: *cfg,
            problem,
            stream,
            model,
            graph,
            steps_done: 0,
        })
    }

    /// Waits for the queued steps, at most `timeout` where the trainer is a rank of a
    /// data-parallel run (a dead or hung peer aborts the communicator and is an error, never a
    /// hang); without one, as [`Trainer::synchronize`].
    pub fn wait(&self, timeout: std::time::Duration) -> Result<(), TrainError> {
        match &self.model.reducer {
            Some(reducer) => Ok(reducer.comm().wait(&self.stream, timeout)?),
            None => self.synchronize(),
        }
    }

    /// This trainer's rank in its data-parallel run (0 where it trains alone).
    pub fn rank(&self) -> usize {
        self.model.reducer.as_ref().map_or(0, |r| r.comm().rank())
    }

    /// What is trained.
    pub fn config(&self) -> &TrainConfig {
        &self.cfg
    }

    /// The inputs, targets and initial weights being trained on.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Launches captured per step, with [`Launch::Graph`].
    pub fn graph_launches(&self) -> Option<usize> {
        self.graph.as_ref().map(Graph::launches)
    }

    /// Queues one step (nothing is read back).
    pub fn step(&mut self) -> Result<(), TrainError> {
        match &self.graph {
            Some(graph) => graph.replay()?,
            None => self.model.record_step(&self.stream)?,
        }
        self.steps_done += 1;
        Ok(())
    }

    /// Steps taken.
    pub fn steps_done(&self) -> u32 {
        self.steps_done
    }

    /// Waits for the queued steps.
    pub fn synchronize(&self) -> Result<(), TrainError> {
        Ok(self.stream.synchronize()?)
    }

    /// The last step's mean loss (from its forward, before its update).
    pub fn loss(&self) -> Result<f32, TrainError> {
        Ok(self.model.loss.to_host(&self.stream)?[0])
    }

    /// The last step's global gradient norm and clip scale.
    pub fn grad_norm_and_scale(&self) -> Result<(f32, f32), TrainError> {
        let v = self.model.norm_scale.to_host(&self.stream)?;
        Ok((v[0], v[1]))
    }

    /// The L2 norm of the last step's gradient with respect to the block's input.
    pub fn input_grad_norm(&self) -> Result<f64, TrainError> {
        let dx = self.model.dx.to_host(&self.stream)?;
        Ok(dx.iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt())
    }

    /// The L2 norm of each weight now, in [`Tensor::ALL`](super::Tensor::ALL) order.
    pub fn weight_norms(&self) -> Result<Vec<f64>, TrainError> {
        let flat = self.model.params.to_host(&self.stream)?;
        Ok(params::norms(self.model.opt.layout(), &flat))
    }

    /// The flat weights' bits (every tensor in the optimizer's layout).
    pub fn weight_bits(&self) -> Result<Vec<u32>, TrainError> {
        let flat = self.model.params.to_host(&self.stream)?;
        Ok(flat.iter().map(|v| v.to_bits()).collect())
    }

    /// The step count the optimizer keeps on the device.
    pub fn device_step_count(&self) -> Result<u32, TrainError> {
        Ok(self.model.step.count(&self.stream)?)
    }
}

/// Captures one whole step, queued by `record`. The capture callback can only fail with a
/// runtime error, so an op's own refusal (impossible here: the pre-warm step ran the same ops
/// on the same buffers) is kept aside and returned instead.
pub(crate) fn capture_step(
    stream: &Stream,
    mut record: impl FnMut(&Stream) -> Result<(), kernels::Error>,
) -> Result<Graph, TrainError> {
    let mut refused = None;
    let graph = stream.capture(|s| match record(s) {
        Ok(()) => Ok(()),
        Err(kernels::Error::Runtime(e)) => Err(e),
        Err(other) => {
            refused = Some(other);
            Err(kernel_runtime::Error::NotAllowedDuringCapture {
                op: "a step an op refused",
            })
        }
    });
    if let Some(e) = refused {
        return Err(e.into());
    }
    Ok(graph?)
}
