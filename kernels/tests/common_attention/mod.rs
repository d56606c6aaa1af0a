//! Test helpers for the attention backward suites: seeded inputs rounded to the element type,
//! the forward's `o` and `lse` from the f64 reference (so the tests do not depend on the
//! forward kernel), the kernel's gradients and the f64 reference gradients.
#![allow(dead_code)]

use kernel_runtime::{Buffer, Stream};
use kernels::attention::{
    flash_backward_with, flash_backward_workspace, reference, Attention, AttentionPath, Batch,
    HalfElement, Heads, Mask,
};

/// xorshift64*: small, seeded, good enough for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// Uniform in `[-1, 1)`, never exactly zero.
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let u = (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f64 / (1u64 << 24) as f64;
        let v = 2.0 * u - 1.0;
        if v == 0.0 {
            0.5
        } else {
            v
        }
    }

    pub fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.next()).collect()
    }
}

/// One backward problem: sequence lengths of a packed batch, heads, mask.
#[derive(Clone, Debug)]
pub struct Case {
    pub lens: Vec<usize>,
    pub heads: Heads,
    pub mask: Mask,
    pub seed: u64,
}

impl Case {
    pub fn tokens(&self) -> usize {
        self.lens.iter().sum()
    }

    pub fn cu_seqlens(&self) -> Vec<u32> {
        let mut cu = vec![0u32];
        for &l in &self.lens {
            cu.push(cu.last().unwrap() + l as u32);
        }
        cu
    }

    pub fn scale(&self) -> f32 {
        1.0 / (self.heads.dim as f32).sqrt()
    }
}

/// Host values rounded to `T`, widened back to f64 (what the kernel sees).
pub fn round<T: HalfElement>(x: &[f64]) -> Vec<f64> {
    x.iter()
        .map(|&v| T::from_f32(v as f32).to_f32() as f64)
        .collect()
}

fn upload<T: HalfElement>(stream: &Stream, x: &[f64]) -> Buffer<T> {
    let host: Vec<T> = x.iter().map(|&v| T::from_f32(v as f32)).collect();
    Buffer::from_host(stream, &host).expect("upload")
}

pub fn download<T: HalfElement>(stream: &Stream, b: &Buffer<T>) -> Vec<f64> {
    b.to_host(stream)
        .expect("download")
        .iter()
        .map(|v| v.to_f32() as f64)
        .collect()
}

pub fn bits<T: HalfElement>(stream: &Stream, b: &Buffer<T>) -> Vec<u32> {
    b.to_host(stream)
        .expect("download")
        .iter()
        .map(|v| v.to_f32().to_bits())
        .collect()
}

/// The inputs of a case on the host (rounded to `T`; `o` and `lse` from the f64 reference
/// forward, rounded to `T` and f32) and on the device.
pub struct Problem<T: HalfElement> {
    pub case: Case,
    pub q: Vec<f64>,
    pub k: Vec<f64>,
    pub v: Vec<f64>,
    pub d_o: Vec<f64>,
    pub bufs: [Buffer<T>; 5],
    pub lse: Buffer<f32>,
    pub cu: Buffer<u32>,
}

impl<T: HalfElement> Problem<T> {
    pub fn new(stream: &Stream, case: &Case) -> Problem<T> {
        let h = case.heads;
        let n = case.tokens();
        let mut rng = Rng::new(case.seed);
        let q = round::<T>(&rng.vec(n * h.q * h.dim));
        let k = round::<T>(&rng.vec(n * h.kv * h.dim));
        let v = round::<T>(&rng.vec(n * h.kv * h.dim));
        let d_o = round::<T>(&rng.vec(n * h.q * h.dim));
        let cu = case.cu_seqlens();
        let f = reference::forward(&q, &k, &v, &cu, h, case.mask, case.scale() as f64);
        let lse: Vec<f32> = f.lse.iter().map(|&x| x as f32).collect();
        let bufs = [
            upload::<T>(stream, &q),
            upload::<T>(stream, &k),
            upload::<T>(stream, &v),
            upload::<T>(stream, &f.o),
            upload::<T>(stream, &d_o),
        ];
        Problem {
            case: case.clone(),
            q,
            k,
            v,
            d_o,
            bufs,
            lse: Buffer::from_host(stream, &lse).expect("upload lse"),
            cu: Buffer::from_host(stream, &cu).expect("upload cu_seqlens"),
        }
    }

    pub fn batch(&self) -> Batch<'_> {
        Batch {
            cu_seqlens: &self.cu,
            seqs: self.case.lens.len(),
            tokens: self.case.tokens(),
            max_len: self.case.lens.iter().copied().max().unwrap_or(0),
        }
    }

    pub fn attention(&self) -> Attention {
        Attention {
            heads: self.case.heads,
            mask: self.case.mask,
            scale: self.case.scale(),
        }
    }

    /// Runs the kernel into NaN-poisoned outputs; returns `[dq, dk, dv]` on the device.
    pub fn run(&self, stream: &Stream) -> [Buffer<T>; 3] {
        self.run_on(stream, AttentionPath::for_target(stream.device().target()))
    }

    /// [`Problem::run`] on the kernels of `path`.
    pub fn run_on(&self, stream: &Stream, path: AttentionPath) -> [Buffer<T>; 3] {
        let h = self.case.heads;
        let n = self.case.tokens();
        let nan =
            |len: usize| Buffer::from_host(stream, &vec![T::from_f32(f32::NAN); len]).unwrap();
        let (mut dq, mut dk, mut dv) = (
            nan(n * h.q * h.dim),
            nan(n * h.kv * h.dim),
            nan(n * h.kv * h.dim),
        );
        let mut ws = Buffer::<f32>::from_host(
            stream,
            &vec![f32::NAN; flash_backward_workspace(n, h).unwrap()],
        )
        .unwrap();
        let [q, k, v, o, d_o] = &self.bufs;
        flash_backward_with(
            stream,
            path,
            q,
            k,
            v,
            o,
            d_o,
            &self.lse,
            self.batch(),
            self.attention(),
            &mut dq,
            &mut dk,
            &mut dv,
            &mut ws,
        )
        .expect("flash_backward_with");
        [dq, dk, dv]
    }

    /// The f64 reference gradients of the rounded inputs.
    pub fn reference(&self) -> reference::Backward {
        let c = &self.case;
        reference::backward(
            &self.q,
            &self.k,
            &self.v,
            &self.d_o,
            &c.cu_seqlens(),
            c.heads,
            c.mask,
            c.scale() as f64,
        )
    }
}

/// Checks the kernel's gradients against the reference. The kernel rounds `o` (through
/// delta), `P` and `dS` to `T` before they enter a product and rounds its outputs to `T`;
/// each is a relative error of at most `unit` (2⁻⁸ for bf16, 2⁻¹¹ for f16) on terms whose
/// sum is bounded by the gradient's largest magnitude, so an element may be off by a few
/// `unit`s of that magnitude: `4·unit·max|want| + 2·unit·|want|` per element.
pub fn assert_gradients<T: HalfElement>(
    what: &str,
    got: [Vec<f64>; 3],
    want: &reference::Backward,
) {
    let unit = if T::from_f32(1.0 + 1.0 / 1024.0).to_f32() == 1.0 {
        1.0 / 256.0
    } else {
        1.0 / 2048.0
    };
    let names = ["dq", "dk", "dv"];
    let wants = [&want.dq, &want.dk, &want.dv];
    for ((name, got), want) in names.iter().zip(got).zip(wants) {
        assert_eq!(got.len(), want.len(), "{what} {name}: length");
        let big = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for (i, (&g, &w)) in got.iter().zip(want.iter()).enumerate() {
            let tol = 4.0 * unit * big + 2.0 * unit * w.abs();
            assert!(
                (g - w).abs() <= tol,
                "{what} {name}[{i}] = {g}, expected {w} (tolerance {tol:.3e}, largest {big:.3e})"
            );
        }
    }
}

/// Runs a case and checks it against the reference.
pub fn check<T: HalfElement>(stream: &Stream, case: &Case) {
    let p = Problem::<T>::new(stream, case);
    let [dq, dk, dv] = p.run(stream);
    let got = [
        download(stream, &dq),
        download(stream, &dk),
        download(stream, &dv),
    ];
    assert_gradients::<T>(&format!("{case:?}"), got, &p.reference());
}
