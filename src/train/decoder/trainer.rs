//! A decoder training run on one device: the model's buffers, a pre-warm step, each step's
//! batch copied in and the step replayed from a graph captured once (or launched directly),
//! and checkpoints.

use super::config::DecoderConfig;
use super::corpus::{Corpus, TokenBatch};
use super::device::{flatten, DecoderDevice};
use super::params::{trainable, Mode, ParamId};
use super::state::{self, Moments};
use crate::model::{init_weights, HostTensor, NamedTensors};
use crate::selfcheck::SeededRng;
use crate::train::data_parallel::RANK_TIMEOUT;
use crate::train::grad_reduce::GradReducer;
use crate::train::trainer::capture_step;
use crate::train::{Launch, TrainError};
use kernel_runtime::{Communicator, Device, Graph, Stream};
use std::path::Path;

/// The decoder being trained on a device.
pub struct DecoderTrainer {
    cfg: DecoderConfig,
    corpus: Corpus,
    stream: Stream,
    model: DecoderDevice,
    graph: Option<Graph>,
    base: NamedTensors,
    initial: NamedTensors,
    /// With QLoRA, the base as its NF4 weights decoded when the run started.
    decoded_start: Option<NamedTensors>,
    /// This trainer's rank and the ranks of its data-parallel run (`(0, 1)` alone).
    rank: usize,
    world: usize,
    steps_done: u32,
}

/// The starting adapters of a QLoRA run: `A` uniform with the scale of a fan-in init, `B`
/// zero, so the adapted model starts equal to its base (as peft starts them).
fn lora_init(cfg: &DecoderConfig) -> NamedTensors {
    let mut rng = SeededRng::new(cfg.seed ^ 0x10AA);
    let rank = cfg.mode.rank();
    trainable(&cfg.model, cfg.mode)
        .into_iter()
        .map(|p| {
            let shape = p.shape(&cfg.model, rank);
            let n = shape.iter().product();
            let data = match p {
                ParamId::LoraA(..) => {
                    let s = 1.0 / (shape[1] as f64).sqrt();
                    (0..n).map(|_| (rng.next_f32() as f64 * s) as f32).collect()
                }
                _ => vec![0.0; n],
            };
            (p.name(), HostTensor::new(shape, data))
        })
        .collect()
}

impl DecoderTrainer {
    /// A fresh run of `cfg` on `corpus`: seeded initial weights (and adapters with QLoRA),
    /// every kernel pre-warmed by one step (then the state put back), `device` sealed, and
    /// with [`Launch::Graph`] the step captured.
    ///
    /// ```
    /// use ptxkit::train::decoder::{Corpus, DecoderConfig, DecoderTrainer};
    /// use ptxkit::train::Launch;
    /// # fn main() -> Result<(), ptxkit::train::TrainError> {
    /// let device = kernel_runtime::Device::emulator();
    /// let cfg = DecoderConfig { seqs: 1, ..DecoderConfig::tiny() };
    /// let mut trainer = DecoderTrainer::new(&device, &cfg, Corpus::builtin(), Launch::Graph)?;
    /// trainer.step()?;
    /// let first = trainer.loss()?;
    /// assert!((first - 260f32.ln()).abs() < 0.5); // about uniform over the vocabulary
    /// # Ok(()) }
    /// ```
    pub fn new(
        device: &Device,
        cfg: &DecoderConfig,
        corpus: Corpus,
        launch: Launch,
    ) -> Result<DecoderTrainer, TrainError> {
        cfg.validate()?;
        let base = init_weights(&cfg.model, cfg.seed);
        let initial = match cfg.mode {
            Mode::Full => base.clone(),
            Mode::QLora { .. } => lora_init(cfg),
        };
        DecoderTrainer::build(device, cfg, corpus, launch, base, initial, None, None)
    }

    /// One rank of a data-parallel run over `comm`: a fresh run of `cfg` whose every step's
    /// batch is `comm.world()` times `cfg.seqs` windows, of which this rank trains the
    /// `comm.rank()`-th `cfg.seqs`; each step averages the gradients and the loss over the
    /// ranks inside the step, so every rank makes the same update. Every rank must call this
    /// at the same time; they meet once every buffer and graph exists.
    ///
    /// ```
    /// use ptxkit::train::decoder::{Corpus, DecoderConfig, DecoderTrainer};
    /// use ptxkit::train::Launch;
    /// # fn main() -> Result<(), ptxkit::train::TrainError> {
    /// let device = kernel_runtime::Device::emulator();
    /// let comm = kernel_runtime::Communicator::single(&device)?;
    /// let cfg = DecoderConfig { seqs: 1, ..DecoderConfig::tiny() };
    /// let mut t = DecoderTrainer::for_rank(comm, &cfg, Corpus::builtin(), Launch::Graph)?;
    /// t.step()?;
    /// assert!(t.loss()?.is_finite());
    /// # Ok(()) }
    /// ```
    pub fn for_rank(
        comm: Communicator,
        cfg: &DecoderConfig,
        corpus: Corpus,
        launch: Launch,
    ) -> Result<DecoderTrainer, TrainError> {
        cfg.validate()?;
        let base = init_weights(&cfg.model, cfg.seed);
        let initial = match cfg.mode {
            Mode::Full => base.clone(),
            Mode::QLora { .. } => lora_init(cfg),
        };
        let device = comm.device().clone();
        DecoderTrainer::build(
            &device,
            cfg,
            corpus,
            launch,
            base,
            initial,
            None,
            Some(comm),
        )
    }

    /// A fresh run of `cfg` starting from the model checkpointed in `dir` (its config
    /// replaces `cfg.model`): fine-tuning from there with fresh optimizer state, or with
    /// QLoRA, that model quantized as the frozen base.
    pub fn from_base(
        device: &Device,
        cfg: &DecoderConfig,
        corpus: Corpus,
        launch: Launch,
        dir: &Path,
    ) -> Result<DecoderTrainer, TrainError> {
        let (model, base) = crate::model::Checkpoint::load(dir)?;
        let cfg = DecoderConfig { model, ..*cfg };
        cfg.validate()?;
        let initial = match cfg.mode {
            Mode::Full => base.clone(),
            Mode::QLora { .. } => lora_init(&cfg),
        };
        DecoderTrainer::build(device, &cfg, corpus, launch, base, initial, None, None)
    }

    /// Continues the run checkpointed in `dir`: its model config, weights, adapters,
    /// optimizer moments, step count and seed replace `cfg`'s, so the steps that follow are
    /// the ones an uninterrupted run would have taken.
    pub fn resume(
        device: &Device,
        cfg: &DecoderConfig,
        corpus: Corpus,
        launch: Launch,
        dir: &Path,
    ) -> Result<DecoderTrainer, TrainError> {
        let r = state::load(dir, cfg.mode)?;
        let cfg = DecoderConfig {
            model: r.model,
            seed: r.moments.seed,
            ..*cfg
        };
        cfg.validate()?;
        DecoderTrainer::build(
            device,
            &cfg,
            corpus,
            launch,
            r.base,
            r.trained,
            Some(r.moments),
            None,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        device: &Device,
        cfg: &DecoderConfig,
        corpus: Corpus,
        launch: Launch,
        base: NamedTensors,
        initial: NamedTensors,
        moments: Option<Moments>,
        comm: Option<Communicator>,
    ) -> Result<DecoderTrainer, TrainError> {
        corpus.check(cfg.seq_len)?;
        let stream = device.stream()?;
        let mut model = DecoderDevice::new(&stream, cfg, &base, &initial)?;
        // The pre-warm step loads every kernel; `restore` puts the state back.
        model.record_step(&stream)?;
        let mut trainer = DecoderTrainer {
            cfg: *cfg,
            corpus,
            stream,
            model,
            graph: None,
            base,
            initial,
            decoded_start: None,
            rank: comm.as_ref().map_or(0, Communicator::rank),
            world: comm.as_ref().map_or(1, Communicator::world),
            steps_done: 0,
        };
        if cfg.mode != Mode::Full {
            trainer.decoded_start = Some(trainer.decoded_base()?);
        }
        trainer.restore(moments.as_ref())?;
        trainer.stream.synchronize()?;
        device.seal();
        // The pre-warm step ran without collectives (a peer may still be loading modules);
        // the reducer joins the step from here on.
        trainer.model.reducer = comm.map(|c| GradReducer::new(c, trainer.model.opt.layout()));
        if launch == Launch::Graph {
            let model = &mut trainer.model;
            trainer.graph = Some(capture_step(&trainer.stream, |s| model.record_step(s))?);
        }
        if let Some(reducer) = &trainer.model.reducer {
            reducer.comm().rendezvous(RANK_TIMEOUT)?;
        }
        Ok(trainer)
    }

    /// Puts the optimizer at the run's start: the initial tensors and, when resuming, the
    /// saved moments and step; else zero moments at step 0.
    fn restore(&mut self, moments: Option<&Moments>) -> Result<(), TrainError> {
        let layout = self.model.opt.layout().clone();
        let ids = self.model.weights.ids.clone();
        let params = flatten(&layout, &ids, &self.initial);
        let (m, v, step) = match moments {
            Some(s) => (
                flatten(&layout, &ids, &s.m),
                flatten(&layout, &ids, &s.v),
                s.step,
            ),
            None => (vec![0.0; params.len()], vec![0.0; params.len()], 0),
        };
        self.model.set_state(&self.stream, &params, &m, &v, step)?;
        self.steps_done = step;
        Ok(())
    }

    /// What is trained.
    pub fn config(&self) -> &DecoderConfig {
        &self.cfg
    }

    /// Every model tensor the run started from.
    pub fn base(&self) -> &NamedTensors {
        &self.base
    }

    /// The trained tensors' values at the run's start (or at the resumed step).
    pub fn initial(&self) -> &NamedTensors {
        &self.initial
    }

    /// This trainer's part of the batch of step `step` (1-based): the whole batch alone, its
    /// rank's windows in a data-parallel run.
    pub fn batch(&self, step: u32) -> TokenBatch {
        let (seqs, len) = (self.cfg.seqs, self.cfg.seq_len);
        let all = self
            .corpus
            .batch(self.cfg.seed, step, seqs * self.world, len);
        let part = self.rank * seqs * len..(self.rank + 1) * seqs * len;
        TokenBatch {
            ids: all.ids[part.clone()].to_vec(),
            targets: all.targets[part].to_vec(),
        }
    }

    /// Waits for the queued steps, at most `timeout` where the trainer is a rank of a
    /// data-parallel run (a dead or hung peer aborts the communicator and is an error).
    pub fn wait(&self, timeout: std::time::Duration) -> Result<(), TrainError> {
        match &self.model.reducer {
            Some(reducer) => Ok(reducer.comm().wait(&self.stream, timeout)?),
            None => self.synchronize(),
        }
    }

    /// The flat trained tensors' bits (the optimizer's layout), to compare ranks.
    pub fn weight_bits(&self) -> Result<Vec<u32>, TrainError> {
        let flat = self.model.params.to_host(&self.stream)?;
        Ok(flat.iter().map(|v| v.to_bits()).collect())
    }

    /// Launches captured per step, with [`Launch::Graph`].
    pub fn graph_launches(&self) -> Option<usize> {
        self.graph.as_ref().map(Graph::launches)
    }

    /// Copies the next batch in and queues one step (nothing is read back).
    pub fn step(&mut self) -> Result<(), TrainError> {
        let b = self.batch(self.steps_done + 1);
        self.model.set_batch(&self.stream, &b.ids, &b.targets)?;
        match &self.graph {
            Some(graph) => graph.replay()?,
            None => self.model.record_step(&self.stream)?,
        }
        self.steps_done += 1;
        Ok(())
    }

    /// Steps taken (counting those before a resume).
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

    /// The trained tensors now, by name.
    pub fn trained(&self) -> Result<NamedTensors, TrainError> {
        let flat = self.model.params.to_host(&self.stream)?;
        Ok(self.unflatten(&flat))
    }

    /// AdamW's first and second moments of each trained tensor now, by name.
    pub fn moments(&self) -> Result<(NamedTensors, NamedTensors), TrainError> {
        let m = self.model.m.to_host(&self.stream)?;
        let v = self.model.v.to_host(&self.stream)?;
        Ok((self.unflatten(&m), self.unflatten(&v)))
    }

    /// The last step's gradient of each trained tensor (before clipping), by name.
    pub fn gradients(&self) -> Result<NamedTensors, TrainError> {
        let flat = self.model.grads.to_host(&self.stream)?;
        Ok(self.unflatten(&flat))
    }

    /// The L2 norm of the last step's gradient with respect to the embedding's output.
    pub fn embedding_grad_norm(&self) -> Result<f64, TrainError> {
        let g = self.model.embedding_grad().to_host(&self.stream)?;
        Ok(g.iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt())
    }

    /// The last step's logits, `tokens × vocab`.
    pub fn logits(&self) -> Result<Vec<f32>, TrainError> {
        Ok(self.model.logits(&self.stream)?)
    }

    /// The frozen f32 tensors as the device holds them now (QLoRA: the embedding, norms,
    /// head and biases), by name.
    pub fn frozen(&self) -> Result<NamedTensors, TrainError> {
        let mut out = NamedTensors::new();
        for (id, buf) in self.model.weights.frozen() {
            let data = buf.to_host(&self.stream)?;
            out.insert(id.name(), HostTensor::new(id.shape(&self.cfg.model), data));
        }
        Ok(out)
    }

    fn unflatten(&self, flat: &[f32]) -> NamedTensors {
        let layout = self.model.opt.layout();
        let rank = self.cfg.mode.rank();
        self.model
            .weights
            .ids
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let range = layout.range(i).unwrap_or(0..0);
                let t = HostTensor::new(p.shape(&self.cfg.model, rank), flat[range].to_vec());
                (p.name(), t)
            })
            .collect()
    }

    /// Writes a checkpoint of the run as it stands into `dir`: the model as
    /// [`Checkpoint`](crate::model::Checkpoint) writes it, with QLoRA the adapters in peft's
    /// form, and the optimizer's moments, step and seed (`optimizer.safetensors`).
    pub fn save(&self, dir: &Path) -> Result<(), TrainError> {
        let m = self.model.m.to_host(&self.stream)?;
        let v = self.model.v.to_host(&self.stream)?;
        let moments = Moments {
            m: self.unflatten(&m),
            v: self.unflatten(&v),
            step: self.steps_done,
            seed: self.cfg.seed,
        };
        let trained = self.trained()?;
        let base = match self.cfg.mode {
            Mode::Full => &trained,
            Mode::QLora { .. } => &self.base,
        };
        state::save(dir, &self.cfg, base, &trained, &moments)
    }

    /// Every model tensor as the step sees it: with QLoRA the projections as their NF4
    /// weights decode, else the tensors the run started from.
    pub fn decoded_base(&self) -> Result<NamedTensors, TrainError> {
        let mut out = self.base.clone();
        for (name, t) in out.iter_mut() {
            if let Some((layer, lt)) = crate::model::TensorId::all(&self.cfg.model)
                .into_iter()
                .find_map(|id| match id {
                    crate::model::TensorId::Layer(l, lt) if id.name() == *name => Some((l, lt)),
                    _ => None,
                })
            {
                if let Some(w) = self.model.weights.nf4(layer, lt) {
                    // Decoded on the host: the device is sealed, and the codes are exact.
                    t.data = w.to_host(&self.stream)?.dequantize();
                }
            }
        }
        Ok(out)
    }

    /// The names of the frozen model tensors (f32 or NF4) whose value differs from the run's
    /// start; empty for full fine-tuning, where nothing is frozen.
    pub fn changed_frozen(&self) -> Result<Vec<String>, TrainError> {
        let mut changed: Vec<String> = self
            .frozen()?
            .into_iter()
            .filter(|(name, t)| self.base.get(name).map(|b| &b.data) != Some(&t.data))
            .map(|(name, _)| name)
            .collect();
        if let Some(start) = &self.decoded_start {
            let now = self.decoded_base()?;
            changed.extend(
                now.into_iter()
                    .filter(|(name, t)| start.get(name) != Some(t))
                    .map(|(name, _)| name),
            );
        }
        changed.sort();
        changed.dedup();
        Ok(changed)
    }
}
