//! The decoder in f64 on the CPU, one whole sequence at a time: the reference the device
//! engine and the quantized file are checked against.

use super::error::ServeError;
use super::model::dequantized;
use crate::gguf::llama::{read_config, Checkpoint, Weight};
use crate::gguf::Gguf;
use crate::model::ModelConfig;
use kernels::rope::RopeLayout;
use std::collections::HashMap;

/// A model's weights as f64, row-major `[out, in]`, with the RoPE pairing its q/k rows
/// were laid out for.
pub struct ReferenceModel {
    cfg: ModelConfig,
    layout: RopeLayout,
    weights: HashMap<Weight, Vec<f64>>,
}

impl ReferenceModel {
    /// The unquantized checkpoint, Hugging Face layout (half-split RoPE pairs).
    pub fn from_checkpoint(ckpt: &Checkpoint) -> ReferenceModel {
        let cfg = ckpt.config;
        let weights = Weight::all(&cfg)
            .into_iter()
            .map(|w| (w, ckpt.weight(w).iter().map(|&x| f64::from(x)).collect()))
            .collect();
        ReferenceModel {
            cfg,
            layout: RopeLayout::NeoX,
            weights,
        }
    }

    /// A GGUF file's weights, dequantized, in ggml's layout (adjacent RoPE pairs).
    pub fn from_gguf(file: &Gguf) -> Result<ReferenceModel, ServeError> {
        let cfg = read_config(file)?;
        let mut weights = HashMap::new();
        for w in Weight::all(&cfg) {
            let values = dequantized(file, &cfg, w)?;
            weights.insert(w, values.iter().map(|&x| f64::from(x)).collect());
        }
        Ok(ReferenceModel {
            cfg,
            layout: RopeLayout::Interleaved,
            weights,
        })
    }

    fn w(&self, w: Weight) -> &[f64] {
        let w = match (w, self.cfg.tied_embeddings) {
            (Weight::Output, true) => Weight::TokenEmbd,
            _ => w,
        };
        &self.weights[&w]
    }

    /// The logits after each token of `tokens` (`tokens.len()` rows of `vocab`); every token
    /// must be below `vocab` (this is a test reference, not a checked entry point).
    pub fn logits(&self, tokens: &[u32]) -> Vec<Vec<f64>> {
        let c = &self.cfg;
        let (h, d, t) = (c.hidden, c.head_dim, tokens.len());
        let embd = self.w(Weight::TokenEmbd);
        let mut x: Vec<Vec<f64>> = tokens
            .iter()
            .map(|&tok| embd[tok as usize * h..(tok as usize + 1) * h].to_vec())
            .collect();
        for l in 0..c.layers {
            let n: Vec<Vec<f64>> = x
                .iter()
                .map(|r| rms_norm(r, self.w(Weight::AttnNorm(l)), c.norm_eps))
                .collect();
            let proj = |w: Weight, b: Weight, out: usize, p: usize, r: &[f64]| {
                let mut y = matvec(self.w(w), r, out);
                if c.qkv_bias {
                    y.iter_mut().zip(self.w(b)).for_each(|(y, b)| *y += b);
                }
                self.rope(&mut y, p);
                y
            };
            let kvw = c.kv_width();
            let q: Vec<Vec<f64>> = n
                .iter()
                .enumerate()
                .map(|(p, r)| proj(Weight::AttnQ(l), Weight::AttnQBias(l), h, p, r))
                .collect();
            let k: Vec<Vec<f64>> = n
                .iter()
                .enumerate()
                .map(|(p, r)| proj(Weight::AttnK(l), Weight::AttnKBias(l), kvw, p, r))
                .collect();
            let v: Vec<Vec<f64>> = n
                .iter()
                .map(|r| {
                    let mut y = matvec(self.w(Weight::AttnV(l)), r, kvw);
                    if c.qkv_bias {
                        y.iter_mut()
                            .zip(self.w(Weight::AttnVBias(l)))
                            .for_each(|(y, b)| *y += b);
                    }
                    y
                })
                .collect();
            let group = c.heads_q / c.heads_kv;
            let scale = 1.0 / (d as f64).sqrt();
            for i in 0..t {
                let mut o = vec![0.0; h];
                for hq in 0..c.heads_q {
                    let hk = hq / group;
                    let qh = &q[i][hq * d..(hq + 1) * d];
                    let scores: Vec<f64> = (0..=i)
                        .map(|j| scale * dot(qh, &k[j][hk * d..(hk + 1) * d]))
                        .collect();
                    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let sum: f64 = e.iter().sum();
                    for (j, ej) in e.iter().enumerate() {
                        for z in 0..d {
                            o[hq * d + z] += ej / sum * v[j][hk * d + z];
                        }
                    }
                }
                let attn = matvec(self.w(Weight::AttnOutput(l)), &o, h);
                x[i].iter_mut().zip(&attn).for_each(|(x, a)| *x += a);
                let n2 = rms_norm(&x[i], self.w(Weight::FfnNorm(l)), c.norm_eps);
                let gate = matvec(self.w(Weight::FfnGate(l)), &n2, c.ffn);
                let up = matvec(self.w(Weight::FfnUp(l)), &n2, c.ffn);
                let act: Vec<f64> = gate
                    .iter()
                    .zip(&up)
                    .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
                    .collect();
                let down = matvec(self.w(Weight::FfnDown(l)), &act, h);
                x[i].iter_mut().zip(&down).for_each(|(x, m)| *x += m);
            }
        }
        x.iter()
            .map(|r| {
                let n = rms_norm(r, self.w(Weight::OutputNorm), c.norm_eps);
                matvec(self.w(Weight::Output), &n, c.vocab)
            })
            .collect()
    }

    /// `n` tokens chosen greedily after `prompt`.
    pub fn greedy(&self, prompt: &[u32], n: usize) -> Vec<u32> {
        let mut tokens = prompt.to_vec();
        for _ in 0..n {
            let logits = self.logits(&tokens);
            let last = logits.last().expect("a non-empty prompt");
            let best = (0..last.len()).fold(0, |b, i| if last[i] > last[b] { i } else { b });
            tokens.push(best as u32);
        }
        tokens[prompt.len()..].to_vec()
    }

    /// Rotates each head of `y` by position `p`.
    fn rope(&self, y: &mut [f64], p: usize) {
        let d = self.cfg.head_dim;
        for head in y.chunks_exact_mut(d) {
            for i in 0..d / 2 {
                let angle =
                    p as f64 * f64::from(self.cfg.rope_theta).powf(-2.0 * i as f64 / d as f64);
                let (a, b) = match self.layout {
                    RopeLayout::NeoX => (i, i + d / 2),
                    RopeLayout::Interleaved => (2 * i, 2 * i + 1),
                };
                let (x0, x1) = (head[a], head[b]);
                head[a] = x0 * angle.cos() - x1 * angle.sin();
                head[b] = x0 * angle.sin() + x1 * angle.cos();
            }
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn matvec(w: &[f64], x: &[f64], out: usize) -> Vec<f64> {
    (0..out)
        .map(|o| dot(&w[o * x.len()..(o + 1) * x.len()], x))
        .collect()
}

fn rms_norm(x: &[f64], gamma: &[f64], eps: f32) -> Vec<f64> {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let r = 1.0 / (ms + f64::from(eps)).sqrt();
    x.iter().zip(gamma).map(|(v, g)| v * r * g).collect()
}
