//! What the emulator and GPU tests of the flash-attention forward share: a seeded case, its
//! upload (inputs rounded to the element type), the run and the comparison with the f64
//! reference on the rounded inputs.
#![allow(dead_code)]

use kernel_runtime::{Buffer, Stream};
use kernels::attention::{
    flash_forward, flash_forward_with, reference, Attention, AttentionPath, Batch, HalfElement,
    Heads, Mask,
};
use kernels::FloatType;

/// xorshift64*: small, seeded, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let u = (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }

    pub fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// One forward problem: sequence lengths (packed in order), heads, mask; `spare_len` adds
/// to `max_len` and `spare_tokens` to the packed rows beyond the last sequence, as a graph
/// captured for longer sequences sees them.
#[derive(Clone, Debug)]
pub struct Case {
    pub lens: Vec<usize>,
    pub heads: Heads,
    pub mask: Mask,
    pub spare_len: usize,
    pub spare_tokens: usize,
    pub seed: u64,
    /// The kernels to run; `None` lets `flash_forward` choose for the device.
    pub path: Option<AttentionPath>,
}

impl Case {
    pub fn new(lens: &[usize], q: usize, kv: usize, dim: usize, mask: Mask) -> Case {
        Case {
            lens: lens.to_vec(),
            heads: Heads { q, kv, dim },
            mask,
            spare_len: 0,
            spare_tokens: 0,
            seed: 7,
            path: None,
        }
    }

    pub fn cu_seqlens(&self) -> Vec<u32> {
        let mut cu = vec![0u32];
        for &l in &self.lens {
            cu.push(cu.last().unwrap() + l as u32);
        }
        cu
    }

    pub fn tokens(&self) -> usize {
        self.lens.iter().sum::<usize>() + self.spare_tokens
    }

    pub fn max_len(&self) -> usize {
        self.lens.iter().copied().max().unwrap_or(0) + self.spare_len
    }

    pub fn scale(&self) -> f32 {
        1.0 / (self.heads.dim as f32).sqrt()
    }
}

/// The largest error allowed in `o` for `T`. Each output is `Σ p̃_j v_j / Σ p_j` with `P`
/// rounded to `T` before `P·V` (relative error at most half an ulp, 2^-9 for bf16 and 2^-12
/// for f16) over values in [-1, 1], then rounded to `T` once more: at most two half-ulps of
/// absolute error; the f32 accumulation and `ex2.approx` add far less. Half again as margin.
pub fn o_tolerance<T: HalfElement>() -> f64 {
    let half_ulp = match T::TYPE {
        FloatType::F16 => 2f64.powi(-12),
        _ => 2f64.powi(-9),
    };
    3.0 * half_ulp
}

/// The inputs of `case` rounded to `T`, uploaded, and as f64 for the reference.
pub struct Inputs<T: HalfElement> {
    pub q: Buffer<T>,
    pub k: Buffer<T>,
    pub v: Buffer<T>,
    pub cu: Buffer<u32>,
    pub host: [Vec<f64>; 3],
}

pub fn upload<T: HalfElement>(stream: &Stream, case: &Case) -> Inputs<T> {
    let mut rng = Rng::new(case.seed);
    let t = case.tokens();
    let h = case.heads;
    let mut put = |n: usize, lo: f32, hi: f32| {
        let vals: Vec<T> = rng.vec(n, lo, hi).into_iter().map(T::from_f32).collect();
        let host = vals.iter().map(|&x| x.to_f32() as f64).collect::<Vec<_>>();
        (Buffer::from_host(stream, &vals).expect("upload"), host)
    };
    // Queries wider than keys, so that some rows' softmax is peaked and some flat.
    let (q, qh) = put(t * h.q * h.dim, -2.0, 2.0);
    let (k, kh) = put(t * h.kv * h.dim, -1.0, 1.0);
    let (v, vh) = put(t * h.kv * h.dim, -1.0, 1.0);
    let cu = Buffer::from_host(stream, &case.cu_seqlens()).expect("upload");
    Inputs {
        q,
        k,
        v,
        cu,
        host: [qh, kh, vh],
    }
}

/// Runs the forward on `case` into NaN-poisoned outputs; returns `o` and `lse` as f32.
pub fn run<T: HalfElement>(stream: &Stream, case: &Case, inp: &Inputs<T>) -> (Vec<f32>, Vec<f32>) {
    let h = case.heads;
    let t = case.tokens();
    let mut o = Buffer::from_host(stream, &vec![T::from_f32(f32::NAN); t * h.q * h.dim]).unwrap();
    let mut lse = Buffer::from_host(stream, &vec![f32::NAN; t * h.q]).unwrap();
    let batch = Batch {
        cu_seqlens: &inp.cu,
        seqs: case.lens.len(),
        tokens: t,
        max_len: case.max_len(),
    };
    let attn = Attention {
        heads: h,
        mask: case.mask,
        scale: case.scale(),
    };
    let (q, k, v) = (&inp.q, &inp.k, &inp.v);
    match case.path {
        Some(path) => flash_forward_with(stream, path, q, k, v, batch, attn, &mut o, &mut lse),
        None => flash_forward(stream, q, k, v, batch, attn, &mut o, &mut lse),
    }
    .unwrap();
    let o = o
        .to_host(stream)
        .unwrap()
        .iter()
        .map(|x| x.to_f32())
        .collect();
    (o, lse.to_host(stream).unwrap())
}

/// Runs `case` and compares `o` (within [`o_tolerance`]) and `lse` (1e-3 relative) with
/// the reference over the rows its sequences cover; the spare rows past them must stay
/// unwritten. Returns the outputs' bits, for a rerun to compare.
pub fn check<T: HalfElement>(stream: &Stream, case: &Case) -> Vec<u32> {
    let inp = upload::<T>(stream, case);
    let (o, lse) = run(stream, case, &inp);
    let h = case.heads;
    let covered = case.tokens() - case.spare_tokens;
    let [qh, kh, vh] = &inp.host;
    let n = covered * h.q * h.dim;
    let nk = covered * h.kv * h.dim;
    let want = reference::forward(
        &qh[..n],
        &kh[..nk],
        &vh[..nk],
        &case.cu_seqlens(),
        h,
        case.mask,
        case.scale() as f64,
    );
    let tol = o_tolerance::<T>();
    for (i, (&a, &e)) in o[..n].iter().zip(&want.o).enumerate() {
        let row = i / (h.q * h.dim);
        assert!(
            (a as f64 - e).abs() <= tol,
            "{case:?}: o[{i}] (token {row}, head {}, element {}) is {a}, expected {e}",
            i / h.dim % h.q,
            i % h.dim
        );
    }
    assert!(
        o[n..].iter().all(|x| x.is_nan()),
        "{case:?}: rows past the last sequence were written"
    );
    let tokens = case.tokens();
    for hq in 0..h.q {
        for row in 0..tokens {
            let a = lse[hq * tokens + row];
            if row >= covered {
                assert!(a.is_nan(), "{case:?}: lse of spare row {row} was written");
                continue;
            }
            let e = want.lse[hq * covered + row];
            assert!(
                (a as f64 - e).abs() <= 1e-3 * e.abs().max(1.0),
                "{case:?}: lse of head {hq}, token {row} is {a}, expected {e}"
            );
        }
    }
    o.iter()
        .map(|x| x.to_bits())
        .chain(lse.iter().map(|x| x.to_bits()))
        .collect()
}
