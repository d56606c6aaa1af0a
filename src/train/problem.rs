//! The task and the starting point, made on the host from a seed: inputs, the class each
//! input belongs to, and the initial weights.

use super::config::Shape;
use super::error::TrainError;
use super::linalg::matmul_nt;
use super::params::Tensor;
use crate::selfcheck::SeededRng;

/// Inputs `x` (`tokens × hidden`), one target class per token, and the initial value of every
/// [`Tensor`] (in [`Tensor::ALL`] order).
///
/// The targets are what a fixed random linear "teacher" `P` (`classes × hidden`) says:
/// `target[t] = argmax_c x[t] · P[c]`. The classifier can learn this (with `W_out → P` the
/// residual path alone solves it), so the loss falls from about `ln(classes)`.
#[derive(Clone, Debug)]
pub struct Problem {
    pub shape: Shape,
    pub x: Vec<f32>,
    pub targets: Vec<i32>,
    pub init: Vec<Vec<f32>>,
}

impl Problem {
    /// The problem for `shape` and `seed`; the same every run.
    ///
    /// ```
    /// use ptxkit::train::{Problem, Shape};
    /// let p = Problem::new(Shape::SMALL, 7);
    /// assert_eq!(p.targets.len(), 16);
    /// assert!(p.targets.iter().all(|&t| (0..24).contains(&t)));
    /// ```
    pub fn new(shape: Shape, seed: u64) -> Problem {
        let mut rng = SeededRng::new(seed);
        let (t, d, f, c) = (shape.tokens, shape.hidden, shape.ffn, shape.classes);
        // Uniform in [-1, 1) has variance 1/3: `uniform(n, s)` has variance s²/3.
        let mut uniform = |n: usize, scale: f64| -> Vec<f32> {
            (0..n)
                .map(|_| (rng.next_f32() as f64 * scale) as f32)
                .collect()
        };
        let unit = 3f64.sqrt();
        let x = uniform(t * d, unit);
        let teacher = uniform(c * d, unit);
        let init = vec![
            vec![1.0; d],
            uniform(f * d, unit / (d as f64).sqrt()),
            uniform(f * d, unit / (d as f64).sqrt()),
            uniform(d * f, 0.5 * unit / (f as f64).sqrt()),
            uniform(c * d, 0.25 * unit / (d as f64).sqrt()),
        ];
        debug_assert_eq!(init.len(), Tensor::ALL.len());
        let widen = |v: &[f32]| v.iter().map(|&a| a as f64).collect::<Vec<_>>();
        let scores = matmul_nt(&widen(&x), &widen(&teacher), t, c, d);
        let targets = scores
            .chunks(c)
            .map(|row| {
                let mut best = (0, f64::NEG_INFINITY);
                for (class, &s) in row.iter().enumerate() {
                    if s > best.1 {
                        best = (class, s);
                    }
                }
                best.0 as i32
            })
            .collect();
        Problem {
            shape,
            x,
            targets,
            init,
        }
    }
}

impl Problem {
    /// Rank `rank`'s shard of `world` equal shards, for data parallelism: its rows of `x` and
    /// `targets` (a shape of `tokens / world` rows), the same initial weights.
    ///
    /// ```
    /// use ptxkit::train::{Problem, Shape};
    /// let p = Problem::new(Shape::SMALL, 7);
    /// let half = p.shard(1, 2).unwrap();
    /// assert_eq!(half.shape.tokens, 8);
    /// assert_eq!(half.targets, p.targets[8..]);
    /// assert!(p.shard(0, 3).is_err()); // 16 rows do not split in three
    /// ```
    pub fn shard(&self, rank: usize, world: usize) -> Result<Problem, TrainError> {
        let t = self.shape.tokens;
        if world == 0 || rank >= world || !t.is_multiple_of(world) {
            return Err(TrainError::Config(format!(
                "{t} tokens cannot be split into {world} equal shards (rank {rank}): use a token count divisible by the GPU count"
            )));
        }
        let rows = t / world;
        let d = self.shape.hidden;
        let first = rank * rows;
        Ok(Problem {
            shape: Shape {
                tokens: rows,
                ..self.shape
            },
            x: self.x[first * d..(first + rows) * d].to_vec(),
            targets: self.targets[first..first + rows].to_vec(),
            init: self.init.clone(),
        })
    }
}
