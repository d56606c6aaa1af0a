//! The same training step on the CPU in f64: forward, backward, global-norm clipping and
//! AdamW, from the same f32 inputs and initial weights as the device. The element-wise pieces
//! are the op library's own f64 references.

use super::config::TrainConfig;
use super::linalg::{matmul_nn, matmul_nt, matmul_tn};
use super::params::Tensor;
use super::problem::Problem;
use kernels::elementwise::reference::{swiglu, swiglu_backward};
use kernels::norm::reference::{rms_norm, rms_norm_backward};
use kernels::optim::reference::adamw;

/// What one reference step reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RefStep {
    /// Mean cross-entropy of the step's forward (before its update).
    pub loss: f64,
    /// Global L2 norm of every weight gradient, before clipping.
    pub grad_norm: f64,
    /// The clip scale applied to the gradients.
    pub clip_scale: f64,
    /// L2 norm of the gradient with respect to the block's input.
    pub dx_norm: f64,
}

/// The trained state in f64.
pub struct Reference {
    cfg: TrainConfig,
    x: Vec<f64>,
    targets: Vec<usize>,
    weights: Vec<Vec<f64>>,
    m: Vec<Vec<f64>>,
    v: Vec<Vec<f64>>,
    step: u32,
}

impl Reference {
    /// Starts from `problem`'s initial weights with zero moments.
    ///
    /// ```
    /// use ptxkit::train::{Problem, Reference, TrainConfig};
    /// let cfg = TrainConfig::small();
    /// let mut r = Reference::new(&cfg, &Problem::new(cfg.shape, cfg.seed));
    /// let first = r.step();
    /// assert!((first.loss - (24f64).ln()).abs() < 1.0);
    /// assert!(r.step().loss < first.loss);
    /// ```
    pub fn new(cfg: &TrainConfig, problem: &Problem) -> Reference {
        let widen = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        let zeros = || problem.init.iter().map(|t| vec![0.0; t.len()]).collect();
        Reference {
            cfg: *cfg,
            x: widen(&problem.x),
            targets: problem.targets.iter().map(|&t| t as usize).collect(),
            weights: problem.init.iter().map(|t| widen(t)).collect(),
            m: zeros(),
            v: zeros(),
            step: 0,
        }
    }

    /// The L2 norm of each weight, in [`Tensor::ALL`] order.
    pub fn weight_norms(&self) -> Vec<f64> {
        self.weights.iter().map(|w| norm(w)).collect()
    }

    /// One step: forward and loss, backward, clipping, AdamW.
    pub fn step(&mut self) -> RefStep {
        let s = self.cfg.shape;
        let (t, d, f, c) = (s.tokens, s.hidden, s.ffn, s.classes);
        let eps = self.cfg.norm_eps as f64;
        let w = |k: Tensor| -> &[f64] { &self.weights[k.index()] };

        // Forward.
        let n = rms_norm(&self.x, w(Tensor::Gamma), t, d, eps);
        let gate = matmul_nt(&n, w(Tensor::WGate), t, f, d);
        let up = matmul_nt(&n, w(Tensor::WUp), t, f, d);
        let a: Vec<f64> = gate.iter().zip(&up).map(|(&g, &u)| swiglu(g, u)).collect();
        let mut h = matmul_nt(&a, w(Tensor::WDown), t, d, f);
        for (h, x) in h.iter_mut().zip(&self.x) {
            *h += x;
        }
        let logits = matmul_nt(&h, w(Tensor::WOut), t, c, d);
        let (loss, dlogits) = cross_entropy(&logits, &self.targets, t, c);

        // Backward.
        let d_out = matmul_tn(&dlogits, &h, c, d, t);
        let dh = matmul_nn(&dlogits, w(Tensor::WOut), t, d, c);
        let d_down = matmul_tn(&dh, &a, d, f, t);
        let da = matmul_nn(&dh, w(Tensor::WDown), t, f, d);
        let (dgate, dup): (Vec<f64>, Vec<f64>) = (0..t * f)
            .map(|i| swiglu_backward(gate[i], up[i], da[i]))
            .unzip();
        let d_gate = matmul_tn(&dgate, &n, f, d, t);
        let d_up = matmul_tn(&dup, &n, f, d, t);
        let mut dn = matmul_nn(&dgate, w(Tensor::WGate), t, d, f);
        for (o, v) in dn.iter_mut().zip(matmul_nn(&dup, w(Tensor::WUp), t, d, f)) {
            *o += v;
        }
        let (dx_norm, d_gamma) = rms_norm_backward(&self.x, w(Tensor::Gamma), &dn, t, d, eps);
        let dx: Vec<f64> = dh.iter().zip(&dx_norm).map(|(a, b)| a + b).collect();
        let grads = [d_gamma, d_gate, d_up, d_down, d_out];

        // Clipping and AdamW.
        let all: Vec<f64> = grads.iter().flatten().copied().collect();
        let (grad_norm, clip_scale) =
            kernels::clip::reference::norm_and_scale(&all, self.cfg.max_norm as f64);
        self.step += 1;
        for (k, g) in Tensor::ALL.iter().zip(&grads) {
            let i = k.index();
            let state = self.weights[i]
                .iter_mut()
                .zip(self.m[i].iter_mut())
                .zip(self.v[i].iter_mut());
            for (((p, m), v), &g) in state.zip(g) {
                (*p, *m, *v) = adamw(
                    &self.cfg.adamw,
                    self.step,
                    k.decay(),
                    *p,
                    g * clip_scale,
                    *m,
                    *v,
                );
            }
        }
        RefStep {
            loss,
            grad_norm,
            clip_scale,
            dx_norm: norm(&dx),
        }
    }
}

/// Mean softmax cross-entropy over the rows and its gradient with respect to the logits.
fn cross_entropy(logits: &[f64], targets: &[usize], rows: usize, cols: usize) -> (f64, Vec<f64>) {
    let mut loss = 0.0;
    let mut grad = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &logits[r * cols..(r + 1) * cols];
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + row.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
        loss += lse - row[targets[r]];
        for (j, v) in row.iter().enumerate() {
            let hit = if j == targets[r] { 1.0 } else { 0.0 };
            grad[r * cols + j] = ((v - lse).exp() - hit) / rows as f64;
        }
    }
    (loss / rows as f64, grad)
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}
