//! CPU references for the attention ops, in f64, over the layouts the module documents.

use super::{Heads, Mask};
use crate::layout::PagedLayout;

/// The forward's outputs: `o` (`[tokens, heads.q, heads.dim]`) and `lse` (`[heads.q, tokens]`).
pub struct Forward {
    pub o: Vec<f64>,
    pub lse: Vec<f64>,
}

/// The backward's outputs, laid out as `q`, `k` and `v`.
pub struct Backward {
    pub dq: Vec<f64>,
    pub dk: Vec<f64>,
    pub dv: Vec<f64>,
}

/// The keys query `i` of a sequence of `len` attends: `0..end`.
fn key_end(mask: Mask, i: usize, len: usize) -> usize {
    match mask {
        Mask::Full => len,
        Mask::Causal => i + 1,
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Softmax probabilities of one query row over keys `0..end` of a sequence starting at token
/// `start`, with the row's log-sum-exp.
#[allow(clippy::too_many_arguments)]
fn probabilities(
    q: &[f64],
    k: &[f64],
    heads: Heads,
    h: usize,
    row: usize,
    start: usize,
    end: usize,
    scale: f64,
) -> (Vec<f64>, f64) {
    let d = heads.dim;
    let hk = h / heads.group();
    let qr = &q[(row * heads.q + h) * d..][..d];
    let s: Vec<f64> = (0..end)
        .map(|j| scale * dot(qr, &k[((start + j) * heads.kv + hk) * d..][..d]))
        .collect();
    let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = s.iter().map(|x| (x - m).exp()).sum();
    let lse = m + sum.ln();
    (s.iter().map(|x| (x - lse).exp()).collect(), lse)
}

/// The sequences of a packed batch as `(start, len)`.
fn sequences(cu_seqlens: &[u32]) -> impl Iterator<Item = (usize, usize)> + '_ {
    cu_seqlens
        .windows(2)
        .map(|w| (w[0] as usize, (w[1] - w[0]) as usize))
}

/// `o = softmax(scale · q·kᵀ + mask)·v` per sequence and head, and its row log-sum-exp.
///
/// ```
/// use kernels::attention::{reference, Heads, Mask};
/// let heads = Heads { q: 1, kv: 1, dim: 1 };
/// // Two tokens in one sequence: the first attends only itself when causal.
/// let f = reference::forward(&[1.0, 1.0], &[0.0, 0.0], &[2.0, 4.0], &[0, 2], heads, Mask::Causal, 1.0);
/// assert_eq!(f.o, vec![2.0, 3.0]);
/// assert!((f.lse[1] - 2f64.ln()).abs() < 1e-12);
/// ```
pub fn forward(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    cu_seqlens: &[u32],
    heads: Heads,
    mask: Mask,
    scale: f64,
) -> Forward {
    let d = heads.dim;
    let tokens = q.len() / (heads.q * d);
    let mut o = vec![0.0; q.len()];
    let mut lse = vec![0.0; heads.q * tokens];
    for (start, len) in sequences(cu_seqlens) {
        for h in 0..heads.q {
            let hk = h / heads.group();
            for i in 0..len {
                let row = start + i;
                let end = key_end(mask, i, len);
                let (p, l) = probabilities(q, k, heads, h, row, start, end, scale);
                lse[h * tokens + row] = l;
                let out = &mut o[(row * heads.q + h) * d..][..d];
                for (j, pj) in p.iter().enumerate() {
                    let vr = &v[((start + j) * heads.kv + hk) * d..][..d];
                    for (x, y) in out.iter_mut().zip(vr) {
                        *x += pj * y;
                    }
                }
            }
        }
    }
    Forward { o, lse }
}

/// The gradients of [`forward`]'s `o` with respect to `q`, `k` and `v`, given `d_o` (the
/// gradient of `o`); kv heads sum the gradients of the query heads that share them.
///
/// With `P` the probabilities, `dV = Pᵀ·dO`, `dP = dO·Vᵀ`, `dS = P ∘ (dP − rowsum(dO ∘ O))`,
/// `dQ = scale · dS·K`, `dK = scale · dSᵀ·Q`.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    d_o: &[f64],
    cu_seqlens: &[u32],
    heads: Heads,
    mask: Mask,
    scale: f64,
) -> Backward {
    let d = heads.dim;
    let mut dq = vec![0.0; q.len()];
    let mut dk = vec![0.0; k.len()];
    let mut dv = vec![0.0; v.len()];
    for (start, len) in sequences(cu_seqlens) {
        for h in 0..heads.q {
            let hk = h / heads.group();
            for i in 0..len {
                let row = start + i;
                let end = key_end(mask, i, len);
                let (p, _) = probabilities(q, k, heads, h, row, start, end, scale);
                let dor = &d_o[(row * heads.q + h) * d..][..d];
                let dp: Vec<f64> = (0..end)
                    .map(|j| dot(dor, &v[((start + j) * heads.kv + hk) * d..][..d]))
                    .collect();
                // rowsum(dO ∘ O) = Σ_j P_j · dP_j.
                let delta: f64 = p.iter().zip(&dp).map(|(a, b)| a * b).sum();
                for j in 0..end {
                    let kv_at = ((start + j) * heads.kv + hk) * d;
                    let ds = p[j] * (dp[j] - delta);
                    for e in 0..d {
                        dv[kv_at + e] += p[j] * dor[e];
                        dq[(row * heads.q + h) * d + e] += scale * ds * k[kv_at + e];
                        dk[kv_at + e] += scale * ds * q[(row * heads.q + h) * d + e];
                    }
                }
            }
        }
    }
    Backward { dq, dk, dv }
}

/// Decode over a paged cache: `q` holds `new` query tokens per sequence
/// (`[seqs · new, heads.q, heads.dim]`, a sequence's tokens together). Sequence `s` holds
/// `seq_lens[s]` tokens in the cache, the last `new` of them the queries' own; query `i` of
/// `new` attends cache positions `0 ..= seq_lens[s] − new + i`. Key position `p` is read from
/// slot `p mod block_size` of block `block_table[s · blocks_per_seq + p / block_size]`.
/// Returns `o`, laid out as `q`.
#[allow(clippy::too_many_arguments)]
pub fn decode(
    q: &[f64],
    k_cache: &[f64],
    v_cache: &[f64],
    block_table: &[u32],
    seq_lens: &[u32],
    layout: PagedLayout,
    heads: Heads,
    new: usize,
    scale: f64,
) -> Vec<f64> {
    let d = heads.dim;
    let mut o = vec![0.0; q.len()];
    let row_of = |s: usize, p: usize| {
        let block = block_table[s * layout.blocks_per_seq + p / layout.block_size] as usize;
        (block * layout.block_size + p % layout.block_size) * layout.width
    };
    for (s, &len) in seq_lens.iter().enumerate() {
        let len = len as usize;
        for i in 0..new {
            let end = len - new + i + 1;
            for h in 0..heads.q {
                let hk = h / heads.group();
                let at = ((s * new + i) * heads.q + h) * d;
                let qr = &q[at..at + d];
                let sc: Vec<f64> = (0..end)
                    .map(|p| scale * dot(qr, &k_cache[row_of(s, p) + hk * d..][..d]))
                    .collect();
                let m = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let w: Vec<f64> = sc.iter().map(|x| (x - m).exp()).collect();
                let sum: f64 = w.iter().sum();
                for (p, wp) in w.iter().enumerate() {
                    let vr = &v_cache[row_of(s, p) + hk * d..][..d];
                    for e in 0..d {
                        o[at + e] += wp / sum * vr[e];
                    }
                }
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The analytic backward agrees with central differences of the forward on a causal GQA
    /// batch of two sequences.
    #[test]
    fn backward_matches_finite_differences() {
        let heads = Heads {
            q: 2,
            kv: 1,
            dim: 3,
        };
        let cu = [0u32, 2, 5];
        let tokens = 5;
        let gen = |n: usize, seed: f64| -> Vec<f64> {
            (0..n).map(|i| ((i as f64 + seed) * 0.7).sin()).collect()
        };
        let q = gen(tokens * 2 * 3, 0.1);
        let k = gen(tokens * 3, 1.3);
        let v = gen(tokens * 3, 2.9);
        let d_o = gen(tokens * 2 * 3, 4.2);
        let scale = 0.8;
        let loss = |q: &[f64], k: &[f64], v: &[f64]| {
            dot(&forward(q, k, v, &cu, heads, Mask::Causal, scale).o, &d_o)
        };
        let g = backward(&q, &k, &v, &d_o, &cu, heads, Mask::Causal, scale);
        let eps = 1e-6;
        let check = |x: &[f64], grad: &[f64], which: usize| {
            for i in 0..x.len() {
                let (mut up, mut down) = (x.to_vec(), x.to_vec());
                up[i] += eps;
                down[i] -= eps;
                let f = |t: &[f64]| match which {
                    0 => loss(t, &k, &v),
                    1 => loss(&q, t, &v),
                    _ => loss(&q, &k, t),
                };
                let fd = (f(&up) - f(&down)) / (2.0 * eps);
                assert!(
                    (fd - grad[i]).abs() < 1e-7,
                    "input {which}, element {i}: {fd} vs {}",
                    grad[i]
                );
            }
        };
        check(&q, &g.dq, 0);
        check(&k, &g.dk, 1);
        check(&v, &g.dv, 2);
    }

    /// Decode of the last token over a cache in shuffled pages equals the forward's last row.
    #[test]
    fn decode_matches_forward_last_row() {
        let heads = Heads {
            q: 4,
            kv: 2,
            dim: 2,
        };
        let len = 5;
        let layout = PagedLayout {
            num_blocks: 3,
            block_size: 2,
            width: 4,
            seqs: 1,
            blocks_per_seq: 3,
        };
        let table = [2u32, 0, 1];
        let gen = |n: usize, seed: f64| -> Vec<f64> {
            (0..n).map(|i| ((i as f64 + seed) * 1.1).cos()).collect()
        };
        let (q, k, v) = (gen(len * 8, 0.3), gen(len * 4, 1.7), gen(len * 4, 3.1));
        let (mut kc, mut vc) = (vec![0.0; 24], vec![0.0; 24]);
        for p in 0..len {
            let row = (table[p / 2] as usize * 2 + p % 2) * 4;
            kc[row..row + 4].copy_from_slice(&k[p * 4..][..4]);
            vc[row..row + 4].copy_from_slice(&v[p * 4..][..4]);
        }
        let f = forward(&q, &k, &v, &[0, len as u32], heads, Mask::Causal, 0.5);
        let o = decode(
            &q[(len - 1) * 8..],
            &kc,
            &vc,
            &table,
            &[len as u32],
            layout,
            heads,
            1,
            0.5,
        );
        for (a, b) in o.iter().zip(&f.o[(len - 1) * 8..]) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }
}
