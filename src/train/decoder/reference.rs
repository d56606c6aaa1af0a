//! The decoder's training step on the CPU in f64 (full fine-tuning): forward, backward,
//! global-norm clipping and AdamW from the same f32 weights and batch as the device, built
//! from the ops' own f64 references. Where the device rounds (attention's inputs, output,
//! output gradient and input gradients to bf16; every GEMM's inputs to TF32, the top 19 bits
//! of an f32, as the tensor cores read them; in bf16 training the GEMMs' inputs, the weights'
//! bf16 copies, and every activation the device stores in bf16), the reference rounds the
//! same values, so what remains between the two is f32 arithmetic, roundings that land on the
//! other side of a boundary, and the attention kernels' internal bf16 products.

use super::acts::heads;
use super::config::{DecoderConfig, Precision};
use super::corpus::TokenBatch;
use super::forward::rope_spec;
use super::params::{trainable, Mode, ParamId};
use crate::model::{LayerTensor, NamedTensors, TensorId};
use crate::train::linalg::{matmul_nn, matmul_nt, matmul_tn};
use crate::train::TrainError;
use kernels::attention::{reference as attn, Mask};
use kernels::cast::reference::{round_to, BF16};
use kernels::elementwise::reference::{swiglu, swiglu_backward};
use kernels::norm::reference::{rms_norm, rms_norm_backward};
use kernels::optim::reference::adamw;
use kernels::rope::reference as rope_ref;
use std::collections::HashMap;

/// What one reference step reports.
#[derive(Clone, Debug, PartialEq)]
pub struct DecoderRefStep {
    /// Mean cross-entropy of the step's forward (before its update).
    pub loss: f64,
    /// Global L2 norm of every gradient, before clipping.
    pub grad_norm: f64,
    /// The L2 norm of each trained tensor's gradient, by name.
    pub grad_norms: Vec<(String, f64)>,
    /// The L2 norm of the gradient of the embedding's output.
    pub embedding_grad_norm: f64,
}

/// The trained state in f64.
pub struct DecoderReference {
    cfg: DecoderConfig,
    ids: Vec<ParamId>,
    /// Every model tensor (with QLoRA the base as its NF4 weights decode) and adapter.
    w: HashMap<ParamId, Vec<f64>>,
    /// AdamW's moments of the trained tensors.
    m: HashMap<ParamId, Vec<f64>>,
    v: HashMap<ParamId, Vec<f64>>,
    step: u32,
}

fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

fn narrow(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

fn bf16(v: &[f64]) -> Vec<f64> {
    v.iter().map(|&x| round_to(x, BF16)).collect()
}

/// `v` as the tensor cores read f32 GEMM inputs in TF32: the f32 value's top 19 bits.
fn tf32(v: &[f64]) -> Vec<f64> {
    v.iter()
        .map(|&x| f32::from_bits((x as f32).to_bits() & 0xFFFF_E000) as f64)
        .collect()
}

fn add(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// What the forward keeps for the backward, per layer.
struct LayerSaved {
    x: Vec<f64>,
    n1: Vec<f64>,
    qb: Vec<f64>,
    kb: Vec<f64>,
    vb: Vec<f64>,
    o: Vec<f64>,
    x_mid: Vec<f64>,
    n2: Vec<f64>,
    gate: Vec<f64>,
    up: Vec<f64>,
    a: Vec<f64>,
    /// With QLoRA, `x·Aᵀ` of each projection.
    lora_t: HashMap<LayerTensor, Vec<f64>>,
}

impl DecoderReference {
    /// Starts from `weights` (by name: every model tensor, with QLoRA the base as its NF4
    /// weights decode, and the adapters) with zero moments. Full fine-tuning has a reference
    /// in either precision, QLoRA in bf16 (where its NF4 products decode the weight to bf16
    /// and round what they write, which the reference repeats).
    pub fn new(
        cfg: &DecoderConfig,
        weights: &NamedTensors,
    ) -> Result<DecoderReference, TrainError> {
        if cfg.mode != Mode::Full && cfg.precision != Precision::Bf16 {
            return Err(TrainError::Config(
                "the CPU reference covers QLoRA in bf16 only; run QLoRA in tf32 with check_steps 0"
                    .into(),
            ));
        }
        let ids = trainable(&cfg.model, cfg.mode);
        let all = TensorId::all(&cfg.model).into_iter().map(ParamId::Model);
        let mut w = HashMap::new();
        for p in all.chain(ids.iter().copied()) {
            let t = weights.get(&p.name()).ok_or_else(|| {
                TrainError::Config(format!("the reference is missing `{}`", p.name()))
            })?;
            w.insert(p, widen(&t.data));
        }
        let zeros: HashMap<ParamId, Vec<f64>> =
            ids.iter().map(|p| (*p, vec![0.0; w[p].len()])).collect();
        Ok(DecoderReference {
            cfg: *cfg,
            ids,
            m: zeros.clone(),
            v: zeros,
            w,
            step: 0,
        })
    }

    /// Continues from the device's state: every weight and both moments from `weights`, `m`
    /// and `v` (by name). Each compared step then starts from the same state on both sides,
    /// instead of from states that drifted apart: AdamW's first update is about `lr` times the
    /// sign of each gradient, so the sign of a near-zero gradient element, which rounding
    /// decides, moves that weight by a full `lr`.
    pub fn sync(&mut self, weights: &NamedTensors, m: &NamedTensors, v: &NamedTensors) {
        for p in &self.ids {
            let name = p.name();
            for (set, src) in [(&mut self.w, weights), (&mut self.m, m), (&mut self.v, v)] {
                if let (Some(dst), Some(t)) = (set.get_mut(p), src.get(&name)) {
                    *dst = widen(&t.data);
                }
            }
        }
    }

    /// The L2 norm of each trained tensor now, by name.
    pub fn weight_norms(&self) -> Vec<(String, f64)> {
        self.ids
            .iter()
            .map(|p| (p.name(), norm(&self.w[p])))
            .collect()
    }

    /// `v` as the GEMMs read it: TF32, or bf16 in bf16 training.
    fn gemm_in(&self, v: &[f64]) -> Vec<f64> {
        match self.cfg.precision {
            Precision::Tf32 => tf32(v),
            Precision::Bf16 => bf16(v),
        }
    }

    /// `v` as the device stores an activation that feeds a GEMM: bf16 in bf16 training,
    /// unrounded (f32) in TF32.
    fn act(&self, v: Vec<f64>) -> Vec<f64> {
        match self.cfg.precision {
            Precision::Tf32 => v,
            Precision::Bf16 => bf16(&v),
        }
    }

    /// `a · bᵀ` with the GEMMs' input rounding.
    fn mm_nt(&self, a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
        matmul_nt(&self.gemm_in(a), &self.gemm_in(b), m, n, k)
    }

    /// `a · b` with the GEMMs' input rounding.
    fn mm_nn(&self, a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
        matmul_nn(&self.gemm_in(a), &self.gemm_in(b), m, n, k)
    }

    /// `aᵀ · b` with the GEMMs' input rounding.
    fn mm_tn(&self, a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
        matmul_tn(&self.gemm_in(a), &self.gemm_in(b), m, n, k)
    }

    fn get(&self, id: TensorId) -> &[f64] {
        &self.w[&ParamId::Model(id)]
    }

    fn qlora(&self) -> bool {
        self.cfg.mode != Mode::Full
    }

    /// The adapter of projection `t` of layer `l`: `A`, `B` and the scale.
    fn adapter(&self, l: usize, t: LayerTensor) -> (&[f64], &[f64], f64) {
        let a = &self.w[&ParamId::LoraA(l, t)];
        let b = &self.w[&ParamId::LoraB(l, t)];
        (a, b, self.cfg.mode.lora_scale() as f64)
    }

    fn lw(&self, l: usize, t: LayerTensor) -> &[f64] {
        self.get(TensorId::Layer(l, t))
    }

    /// `x·Wᵀ (+ bias)` for projection `t` of layer `l` (the bias in bf16 training is its
    /// bf16 copy, added in f32 before the output is stored), and with QLoRA `x·Aᵀ` for the
    /// backward: QLoRA's products write bf16, so `x·Wᵀ`, `x·Aᵀ`, the sum with
    /// `scale·(x·Aᵀ)·Bᵀ` and the bias's sum are each rounded.
    fn project(&self, l: usize, t: LayerTensor, x: &[f64], rows: usize) -> (Vec<f64>, Vec<f64>) {
        let shape = t.shape(&self.cfg.model);
        let mut y = self.mm_nt(x, self.lw(l, t), rows, shape[0], shape[1]);
        let mut saved = Vec::new();
        if self.qlora() {
            let (a, b, scale) = self.adapter(l, t);
            let r = self.cfg.mode.rank();
            let base = bf16(&y);
            saved = bf16(&self.mm_nt(x, a, rows, r, shape[1]));
            let lora = self.mm_nt(&saved, b, rows, shape[0], r);
            y = bf16(
                &base
                    .iter()
                    .zip(&lora)
                    .map(|(y, l)| y + scale * l)
                    .collect::<Vec<_>>(),
            );
        }
        let bias = match t {
            LayerTensor::Q => Some(LayerTensor::QBias),
            LayerTensor::K => Some(LayerTensor::KBias),
            LayerTensor::V => Some(LayerTensor::VBias),
            _ => None,
        };
        if let Some(b) = bias.filter(|_| self.cfg.model.qkv_bias) {
            let b = match self.cfg.precision {
                Precision::Tf32 => self.lw(l, b).to_vec(),
                Precision::Bf16 => bf16(self.lw(l, b)),
            };
            for row in y.chunks_mut(shape[0]) {
                for (y, b) in row.iter_mut().zip(&b) {
                    *y += b;
                }
            }
            if self.qlora() {
                y = bf16(&y);
            }
        }
        (y, saved)
    }

    /// The backward of [`Self::project`] given `dy`: records the weight's gradient
    /// (full) or the adapter's (QLoRA: `dB = s·dyᵀ·t`, `u = s·dy·B`, `dA = uᵀ·x`, each
    /// rounded to bf16 as the device writes them) and returns `dy·W` (QLoRA: `+ u·A`,
    /// rounded).
    #[allow(clippy::too_many_arguments)]
    fn project_back(
        &self,
        l: usize,
        t: LayerTensor,
        x: &[f64],
        dy: &[f64],
        saved: &[f64],
        rows: usize,
        grads: &mut HashMap<ParamId, Vec<f64>>,
    ) -> Vec<f64> {
        let shape = t.shape(&self.cfg.model);
        let (out, inp) = (shape[0], shape[1]);
        let dx = self.mm_nn(dy, self.lw(l, t), rows, inp, out);
        if !self.qlora() {
            let dw = self.mm_tn(dy, x, out, inp, rows);
            grads.insert(ParamId::Model(TensorId::Layer(l, t)), dw);
            return dx;
        }
        let (a, b, scale) = self.adapter(l, t);
        let r = self.cfg.mode.rank();
        let scaled = |v: Vec<f64>| bf16(&v.iter().map(|x| scale * x).collect::<Vec<_>>());
        let db = scaled(self.mm_tn(dy, saved, out, r, rows));
        let u = scaled(self.mm_nn(dy, b, rows, r, out));
        let da = bf16(&self.mm_tn(&u, x, r, inp, rows));
        grads.insert(ParamId::LoraA(l, t), da);
        grads.insert(ParamId::LoraB(l, t), db);
        bf16(&add(&bf16(&dx), &self.mm_nn(&u, a, rows, inp, r)))
    }

    /// One step on `batch`: forward and loss, backward, clipping, AdamW.
    pub fn step(&mut self, batch: &TokenBatch) -> DecoderRefStep {
        let cfg = self.cfg;
        let mc = cfg.model;
        let (t, h, v, f) = (cfg.tokens(), mc.hidden, mc.vocab, mc.ffn);
        let (q_w, kv_w) = (mc.heads_q * mc.head_dim, mc.kv_width());
        let eps = mc.norm_eps as f64;
        let hd = heads(&cfg);
        let scale = 1.0 / (mc.head_dim as f64).sqrt();
        let positions: Vec<u32> = (0..t).map(|i| (i % cfg.seq_len) as u32).collect();
        let cu: Vec<u32> = (0..=cfg.seqs).map(|s| (s * cfg.seq_len) as u32).collect();
        let spec = rope_spec(&cfg);
        let head_id = if mc.tied_embeddings {
            TensorId::Embed
        } else {
            TensorId::LmHead
        };

        // Forward.
        let embed = self.get(TensorId::Embed);
        let mut x: Vec<f64> = batch
            .ids
            .iter()
            .flat_map(|&id| embed[id as usize * h..][..h].iter().copied())
            .collect();
        let mut saved = Vec::new();
        for l in 0..mc.layers {
            let n1 = self.act(rms_norm(&x, self.lw(l, LayerTensor::InputNorm), t, h, eps));
            let mut lora_t = HashMap::new();
            let mut proj = |lt: LayerTensor, x: &[f64]| {
                let (y, saved) = self.project(l, lt, x, t);
                lora_t.insert(lt, saved);
                y
            };
            let q = self.act(proj(LayerTensor::Q, &n1));
            let k = self.act(proj(LayerTensor::K, &n1));
            let vv = proj(LayerTensor::V, &n1);
            let qb = bf16(&rope_ref::rope(
                &narrow(&q),
                &positions,
                mc.heads_q,
                mc.head_dim,
                spec,
            ));
            let kb = bf16(&rope_ref::rope(
                &narrow(&k),
                &positions,
                mc.heads_kv,
                mc.head_dim,
                spec,
            ));
            let vb = bf16(&vv);
            let fwd = attn::forward(&qb, &kb, &vb, &cu, hd, Mask::Causal, scale);
            let o = bf16(&fwd.o);
            let x_mid = add(&x, &proj(LayerTensor::O, &o));
            let n2 = self.act(rms_norm(
                &x_mid,
                self.lw(l, LayerTensor::PostNorm),
                t,
                h,
                eps,
            ));
            let gate = self.act(proj(LayerTensor::Gate, &n2));
            let up = self.act(proj(LayerTensor::Up, &n2));
            let a = self.act(gate.iter().zip(&up).map(|(&g, &u)| swiglu(g, u)).collect());
            let next = add(&x_mid, &proj(LayerTensor::Down, &a));
            saved.push(LayerSaved {
                x: std::mem::replace(&mut x, next),
                n1,
                qb,
                kb,
                vb,
                o,
                x_mid,
                n2,
                gate,
                up,
                a,
                lora_t,
            });
        }
        let nf = self.act(rms_norm(&x, self.get(TensorId::FinalNorm), t, h, eps));
        let logits = self.act(self.mm_nt(&nf, self.get(head_id), t, v, h));
        let (loss, dlogits) = cross_entropy(&logits, &batch.targets, t, v);
        let dlogits = self.act(dlogits);

        // Backward.
        let mut grads: HashMap<ParamId, Vec<f64>> = HashMap::new();
        let d_head = self.mm_tn(&dlogits, &nf, v, h, t);
        let dnf = self.mm_nn(&dlogits, self.get(head_id), t, h, v);
        let (mut dx, dgf) = rms_norm_backward(&x, self.get(TensorId::FinalNorm), &dnf, t, h, eps);
        grads.insert(ParamId::Model(TensorId::FinalNorm), dgf);
        for l in (0..mc.layers).rev() {
            let s = &saved[l];
            let g = |grads: &mut HashMap<ParamId, Vec<f64>>, lt, val| {
                grads.insert(ParamId::Model(TensorId::Layer(l, lt)), val);
            };
            let proj_back = |lt: LayerTensor, x: &[f64], dy: &[f64], grads: &mut _| {
                self.project_back(l, lt, x, dy, &s.lora_t[&lt], t, grads)
            };
            // MLP.
            let da = self.act(proj_back(LayerTensor::Down, &s.a, &dx, &mut grads));
            let (dgate, dup): (Vec<f64>, Vec<f64>) = (0..t * f)
                .map(|i| swiglu_backward(s.gate[i], s.up[i], da[i]))
                .unzip();
            let (dgate, dup) = (self.act(dgate), self.act(dup));
            let dn2 = add(
                &proj_back(LayerTensor::Gate, &s.n2, &dgate, &mut grads),
                &proj_back(LayerTensor::Up, &s.n2, &dup, &mut grads),
            );
            let (dxn, dg2) =
                rms_norm_backward(&s.x_mid, self.lw(l, LayerTensor::PostNorm), &dn2, t, h, eps);
            g(&mut grads, LayerTensor::PostNorm, dg2);
            let dx_mid = add(&dx, &dxn);
            // Attention.
            let d_o = bf16(&proj_back(LayerTensor::O, &s.o, &dx_mid, &mut grads));
            let back = attn::backward(&s.qb, &s.kb, &s.vb, &d_o, &cu, hd, Mask::Causal, scale);
            let (dqb, dkb, dv) = (bf16(&back.dq), bf16(&back.dk), bf16(&back.dv));
            let dq = self.act(rope_ref::rope_backward(
                &narrow(&dqb),
                &positions,
                mc.heads_q,
                mc.head_dim,
                spec,
            ));
            let dk = self.act(rope_ref::rope_backward(
                &narrow(&dkb),
                &positions,
                mc.heads_kv,
                mc.head_dim,
                spec,
            ));
            let mut dn1 = vec![0.0; t * h];
            for (lt, bias, dy, width) in [
                (LayerTensor::Q, LayerTensor::QBias, &dq, q_w),
                (LayerTensor::K, LayerTensor::KBias, &dk, kv_w),
                (LayerTensor::V, LayerTensor::VBias, &dv, kv_w),
            ] {
                let dn = proj_back(lt, &s.n1, dy, &mut grads);
                if mc.qkv_bias {
                    let mut db = vec![0.0; width];
                    for row in dy.chunks(width) {
                        for (d, r) in db.iter_mut().zip(row) {
                            *d += r;
                        }
                    }
                    g(&mut grads, bias, db);
                }
                dn1 = add(&dn1, &dn);
            }
            let (dxn, dg1) =
                rms_norm_backward(&s.x, self.lw(l, LayerTensor::InputNorm), &dn1, t, h, eps);
            g(&mut grads, LayerTensor::InputNorm, dg1);
            dx = add(&dx_mid, &dxn);
        }
        let mut d_embed = vec![0.0; v * h];
        for (i, &id) in batch.ids.iter().enumerate() {
            for j in 0..h {
                d_embed[id as usize * h + j] += dx[i * h + j];
            }
        }
        if mc.tied_embeddings {
            d_embed = add(&d_embed, &d_head);
        } else {
            grads.insert(ParamId::Model(TensorId::LmHead), d_head);
        }
        grads.insert(ParamId::Model(TensorId::Embed), d_embed);

        // Clipping and AdamW, over the trained tensors in flat-layout order.
        let order = self.ids.clone();
        let all: Vec<f64> = order
            .iter()
            .flat_map(|id| grads[id].iter().copied())
            .collect();
        let (grad_norm, clip) = kernels::clip::reference::norm_and_scale(&all, cfg.max_norm as f64);
        self.step += 1;
        for id in &order {
            let (w, m, vv) = (self.w.get_mut(id), self.m.get_mut(id), self.v.get_mut(id));
            let (Some(w), Some(m), Some(vv)) = (w, m, vv) else {
                continue;
            };
            for (((p, m), v), &g) in w
                .iter_mut()
                .zip(m.iter_mut())
                .zip(vv.iter_mut())
                .zip(&grads[id])
            {
                (*p, *m, *v) = adamw(&cfg.adamw, self.step, id.decay(), *p, g * clip, *m, *v);
            }
        }
        DecoderRefStep {
            loss,
            grad_norm,
            grad_norms: order
                .iter()
                .map(|id| (id.name(), norm(&grads[id])))
                .collect(),
            embedding_grad_norm: norm(&dx),
        }
    }
}

/// Mean softmax cross-entropy over the rows and its gradient with respect to the logits.
fn cross_entropy(logits: &[f64], targets: &[i32], rows: usize, cols: usize) -> (f64, Vec<f64>) {
    let mut loss = 0.0;
    let mut grad = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &logits[r * cols..(r + 1) * cols];
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + row.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
        let target = targets[r] as usize;
        loss += lse - row[target];
        for (j, v) in row.iter().enumerate() {
            let hit = if j == target { 1.0 } else { 0.0 };
            grad[r * cols + j] = ((v - lse).exp() - hit) / rows as f64;
        }
    }
    (loss / rows as f64, grad)
}
