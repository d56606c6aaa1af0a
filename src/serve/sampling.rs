//! Choosing the next token from logits: greedy, or a draw at a temperature restricted to the
//! top k tokens and the top-p nucleus, from a seeded generator so a run repeats exactly.

use super::error::ServeError;

/// How the next token is chosen.
///
/// ```
/// use ptxkit::serve::{Rng, Sampling};
/// let logits = [0.0f32, 3.0, 1.0];
/// assert_eq!(Sampling::GREEDY.sample(&logits, &mut Rng::new(0)), 1);
/// // Top-k of 1 leaves only the largest, whatever the temperature.
/// let s = Sampling { temperature: 5.0, top_k: 1, top_p: 1.0 };
/// assert_eq!(s.sample(&logits, &mut Rng::new(9)), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// 0 for greedy (argmax); else logits are divided by it before the softmax.
    pub temperature: f32,
    /// Keep only the `top_k` most likely tokens (0 keeps all).
    pub top_k: usize,
    /// Keep the fewest most likely tokens whose probabilities add up to at least `top_p`
    /// (1 keeps all).
    pub top_p: f32,
}

impl Sampling {
    /// The most likely token, every time.
    pub const GREEDY: Sampling = Sampling {
        temperature: 0.0,
        top_k: 0,
        top_p: 1.0,
    };

    /// Checks the parameters: temperature finite and ≥ 0, top_p in (0, 1].
    pub fn validate(&self) -> Result<(), ServeError> {
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(ServeError::Sampling(format!(
                "temperature {} must be 0 (greedy) or positive",
                self.temperature
            )));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(ServeError::Sampling(format!(
                "top_p {} must be in (0, 1]",
                self.top_p
            )));
        }
        Ok(())
    }

    /// The token chosen from `logits` (NaN logits are never chosen unless all are NaN; no
    /// logits at all give token 0).
    pub fn sample(&self, logits: &[f32], rng: &mut Rng) -> u32 {
        if logits.is_empty() {
            return 0;
        }
        let argmax = || {
            let mut best = 0;
            for (i, &l) in logits.iter().enumerate() {
                if l > logits[best] || logits[best].is_nan() {
                    best = i;
                }
            }
            best as u32
        };
        if self.temperature == 0.0 || self.top_k == 1 {
            return argmax();
        }
        // Most likely first; ties keep the lower id first so the order is deterministic.
        let mut order: Vec<usize> = (0..logits.len()).filter(|&i| !logits[i].is_nan()).collect();
        order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
        if self.top_k > 0 {
            order.truncate(self.top_k);
        }
        let Some(&top) = order.first() else {
            return argmax();
        };
        let t = f64::from(self.temperature);
        let max = f64::from(logits[top]);
        let weights: Vec<f64> = order
            .iter()
            .map(|&i| ((f64::from(logits[i]) - max) / t).exp())
            .collect();
        let total: f64 = weights.iter().sum();
        let mut kept = order.len();
        if self.top_p < 1.0 {
            let mut cum = 0.0;
            for (n, w) in weights.iter().enumerate() {
                cum += w / total;
                if cum >= f64::from(self.top_p) {
                    kept = n + 1;
                    break;
                }
            }
        }
        let kept_total: f64 = weights[..kept].iter().sum();
        let mut u = rng.next_f64() * kept_total;
        for (n, w) in weights[..kept].iter().enumerate() {
            if u < *w {
                return order[n] as u32;
            }
            u -= w;
        }
        order[kept - 1] as u32
    }
}

/// A small seeded generator (splitmix64): the same seed gives the same draws on every
/// machine.
///
/// ```
/// use ptxkit::serve::Rng;
/// let (mut a, mut b) = (Rng::new(42), Rng::new(42));
/// assert_eq!(a.next_f64(), b.next_f64());
/// ```
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_p_keeps_the_nucleus_and_top_k_the_largest() {
        // Probabilities about 0.66, 0.24, 0.09, 0.01 at temperature 1.
        let logits = [3.0f32, 2.0, 1.0, -1.0];
        let nucleus = Sampling {
            temperature: 1.0,
            top_k: 0,
            top_p: 0.8,
        };
        let top2 = Sampling {
            top_k: 2,
            top_p: 1.0,
            ..nucleus
        };
        let mut rng = Rng::new(3);
        let mut seen = [0usize; 4];
        for _ in 0..2000 {
            seen[nucleus.sample(&logits, &mut rng) as usize] += 1;
            assert!(top2.sample(&logits, &mut rng) < 2);
        }
        assert_eq!((seen[2], seen[3]), (0, 0), "{seen:?}");
        // 0.66 / 0.90 of the draws go to the first token.
        assert!((1350..1580).contains(&seen[0]), "{seen:?}");
    }

    #[test]
    fn bad_parameters_are_refused() {
        let s = Sampling {
            temperature: -1.0,
            ..Sampling::GREEDY
        };
        assert!(s.validate().is_err());
        let s = Sampling {
            top_p: 0.0,
            ..Sampling::GREEDY
        };
        assert!(s.validate().is_err());
    }
}
