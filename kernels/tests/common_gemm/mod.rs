//! Test helpers for the GEMM suites: a seeded generator, uploads that round to the storage
//! type, NaN-poisoned outputs, and a runner that compares one launch with the f64 reference.
#![allow(dead_code)]

use kernel_runtime::{Buffer, Device, Stream};
use kernels::gemm::reference::{self, RefEpilogue};
use kernels::gemm::{gemm, Activation, Epilogue, GemmShape, Layout, Math};
use kernels::Float;

/// An emulated `target` that reports `sms` SMs, so the library plans persistent grids,
/// split-k and stream-K as it would on a GPU of that size.
pub fn emulated_with_sms(target: kernel_dsl::Target, sms: u32) -> Stream {
    let options = kernel_runtime::EmulatorOptions::new()
        .target(target)
        .sm_count(sms);
    Device::emulator_with(options)
        .stream()
        .expect("emulator stream")
}

/// [`emulated_with_sms`] for sm_90a.
pub fn hopper_with_sms(sms: u32) -> Stream {
    emulated_with_sms(kernel_dsl::Target::Sm90a, sms)
}

/// [`emulated_with_sms`] for sm_80.
pub fn ampere_with_sms(sms: u32) -> Stream {
    emulated_with_sms(kernel_dsl::Target::Sm80, sms)
}

/// xorshift64*: small, seeded, good enough for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// `n` values uniform in `[-1, 1)`, none exactly zero.
    pub fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| {
                let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
                let v = 2.0 * u - 1.0;
                if v == 0.0 {
                    0.5
                } else {
                    v
                }
            })
            .collect()
    }
}

pub fn emulator() -> Stream {
    Device::emulator().stream().expect("emulator stream")
}

/// Uploads `vals` rounded to `T`; returns the buffer and the stored values widened to f64.
pub fn upload<T: Float>(stream: &Stream, vals: &[f32]) -> (Buffer<T>, Vec<f64>) {
    let host: Vec<T> = vals.iter().map(|&v| T::from_f32(v)).collect();
    let exact = host.iter().map(|v| v.to_f32() as f64).collect();
    (Buffer::from_host(stream, &host).expect("upload"), exact)
}

pub fn download<T: Float>(stream: &Stream, buf: &Buffer<T>) -> Vec<f64> {
    buf.to_host(stream)
        .expect("download")
        .iter()
        .map(|v| v.to_f32() as f64)
        .collect()
}

pub fn bits<T: Float>(stream: &Stream, buf: &Buffer<T>) -> Vec<u32> {
    buf.to_host(stream)
        .expect("download")
        .iter()
        .map(|v| v.to_f32().to_bits())
        .collect()
}

/// Relative tolerance of a k-long dot product, scaled by `Σ|a·b|` (so cancellation does not
/// make the check meaningless) plus the output's own rounding.
#[derive(Clone, Copy, Debug)]
pub struct Tol {
    /// Error per unit of `Σ|a·b|` allowed from the inputs' and products' rounding.
    pub dot: f64,
    /// Relative rounding of the stored output.
    pub out: f64,
}

pub const F32_TOL: Tol = Tol {
    dot: 1e-5,
    out: 1e-6,
};
pub const TF32_TOL: Tol = Tol {
    dot: 2e-3,
    out: 1e-6,
};
pub const F32_OUT_16_IN: Tol = Tol {
    dot: 1e-5,
    out: 1e-6,
};
pub const BF16_OUT: Tol = Tol {
    dot: 1e-5,
    out: 1e-2,
};
pub const F16_OUT: Tol = Tol {
    dot: 1e-5,
    out: 2e-3,
};

/// Which epilogue parts a case exercises.
#[derive(Clone, Copy, Debug, Default)]
pub struct EpiCase {
    pub alpha: f32,
    pub beta: f32,
    pub bias: bool,
    pub activation: Activation,
    pub residual: bool,
}

impl EpiCase {
    pub fn plain() -> EpiCase {
        EpiCase {
            alpha: 1.0,
            ..EpiCase::default()
        }
    }

    /// Every part at once: α and β off one, bias, GELU and residual.
    pub fn every() -> EpiCase {
        EpiCase {
            alpha: 0.75,
            beta: 0.5,
            bias: true,
            activation: Activation::GeluTanh,
            residual: true,
        }
    }
}

/// Runs one GEMM on `stream` and checks every element of `C` (including padding, which must be
/// left untouched) against the reference. Returns the output bits.
pub fn check<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    epi: EpiCase,
    math: Math,
    tol: Tol,
    seed: u64,
) -> Vec<u32> {
    check_run::<T, O>(
        stream,
        shape,
        epi,
        tol,
        seed,
        &format!("{math:?}"),
        |c, e, a, b| gemm(stream, shape, a, b, c, e, math),
    )
}

/// [`check`] with the kernel `gemm` would pick on `target` (run through `gemm_with_plan`).
pub fn check_on_target<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    target: kernel_dsl::Target,
    tol: Tol,
    seed: u64,
) -> Vec<u32> {
    let plan = kernels::gemm::select(T::TYPE, O::TYPE, Math::Fp32, shape, target)
        .unwrap_or_else(|e| panic!("{shape:?} on {target:?}: {e}"));
    let how = format!("plan for {target:?}: {}", plan.kernel.kernel().name);
    check_run::<T, O>(
        stream,
        shape,
        EpiCase::plain(),
        tol,
        seed,
        &how,
        |c, e, a, b| kernels::gemm::gemm_with_plan(stream, &plan, shape, a, b, c, e),
    )
}

/// [`check`] with the kernel of `plan` (made by `select` for this problem, or its
/// `builder()` form), run through `gemm_with_plan`.
pub fn check_plan<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    epi: EpiCase,
    plan: &kernels::gemm::Plan,
    tol: Tol,
    seed: u64,
) -> Vec<u32> {
    let how = format!("plan {}", plan.kernel.kernel().name);
    check_run::<T, O>(stream, shape, epi, tol, seed, &how, |c, e, a, b| {
        kernels::gemm::gemm_with_plan(stream, plan, shape, a, b, c, e)
    })
}

/// One case per epilogue part, and all of them at once.
pub fn epilogue_cases() -> Vec<EpiCase> {
    let one = |f: fn(&mut EpiCase)| {
        let mut e = EpiCase::plain();
        f(&mut e);
        e
    };
    vec![
        EpiCase::plain(),
        one(|e| (e.alpha, e.beta) = (0.5, 1.5)),
        one(|e| e.bias = true),
        one(|e| e.activation = Activation::Silu),
        one(|e| e.activation = Activation::GeluTanh),
        one(|e| e.residual = true),
        EpiCase {
            alpha: -0.75,
            beta: -1.0,
            bias: true,
            activation: Activation::GeluTanh,
            residual: true,
        },
    ]
}

/// [`check`] through `gemm_split_k` with `splits` ranges.
pub fn check_split<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    epi: EpiCase,
    splits: usize,
    tol: Tol,
    seed: u64,
) -> Vec<u32> {
    let what = format!("split-k {splits}");
    check_run::<T, O>(stream, shape, epi, tol, seed, &what, |c, e, a, b| {
        kernels::gemm::gemm_split_k(stream, shape, a, b, c, e, splits)
    })
}

/// A problem's inputs, uploaded as `T`, with the stored values widened to f64.
struct Inputs<T: Float> {
    a: (Buffer<T>, Vec<f64>),
    b: (Buffer<T>, Vec<f64>),
    bias: (Buffer<T>, Vec<f64>),
    residual: (Buffer<T>, Vec<f64>),
    /// Elements of C (and of the residual and f32 copy) the shape spans.
    c_len: usize,
}

impl<T: Float> Inputs<T> {
    fn new(stream: &Stream, s: &GemmShape, rng: &mut Rng) -> Inputs<T> {
        let (ar, _) = s.layout.a_rows_cols(s.m, s.k);
        let (br, _) = s.layout.b_rows_cols(s.n, s.k);
        let len = |rows: usize, ld: usize, stride: usize| (s.batch - 1) * stride + rows * ld;
        let c_len = len(s.m, s.ldc, s.stride_c);
        Inputs {
            a: upload::<T>(stream, &rng.vec(len(ar, s.lda, s.stride_a))),
            b: upload::<T>(stream, &rng.vec(len(br, s.ldb, s.stride_b))),
            bias: upload::<T>(stream, &rng.vec(s.n.max(1))),
            residual: upload::<T>(stream, &rng.vec(c_len)),
            c_len,
        }
    }

    fn epilogue(&self, epi: EpiCase) -> Epilogue<'_, T> {
        let mut e = Epilogue::<T>::default()
            .scaled(epi.alpha, epi.beta)
            .with_activation(epi.activation);
        if epi.bias {
            e = e.with_bias(&self.bias.0);
        }
        if epi.residual {
            e = e.with_residual(&self.residual.0);
        }
        e
    }

    /// The reference output from the old values `c0`, and each element's `Σ|α·a·b|` (the
    /// scale of its dot product, for the tolerance).
    fn expected(&self, shape: &GemmShape, epi: EpiCase, c0: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut want = c0.to_vec();
        let r = RefEpilogue {
            alpha: epi.alpha as f64,
            beta: epi.beta as f64,
            bias: epi.bias.then(|| self.bias.1.clone()),
            activation: epi.activation,
            residual: epi.residual.then(|| self.residual.1.clone()),
        };
        reference::gemm(shape, &self.a.1, &self.b.1, &mut want, &r);
        let abs = |v: &[f64]| v.iter().map(|x| x.abs()).collect::<Vec<f64>>();
        let mut mag = vec![0.0; self.c_len];
        let mag_epi = RefEpilogue {
            alpha: epi.alpha.abs() as f64,
            ..RefEpilogue::default()
        };
        reference::gemm(shape, &abs(&self.a.1), &abs(&self.b.1), &mut mag, &mag_epi);
        (want, mag)
    }
}

/// Old values of C for a case: data where β reads them, else NaN so unwritten elements show.
fn old_values(rng: &mut Rng, epi: EpiCase, len: usize) -> Vec<f32> {
    if epi.beta != 0.0 {
        rng.vec(len)
    } else {
        vec![f32::NAN; len]
    }
}

/// Checks `got` against the reference `want` within `tol` of each element's scale `mag`;
/// where the old value and the reference are both NaN (padding), `got` must still be NaN.
fn assert_close(what: &str, got: &[f64], want: &[f64], mag: &[f64], old: &[f64], tol: Tol) {
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if old[i].is_nan() && w.is_nan() {
            // Padding the kernel must not touch: still the poison.
            assert!(g.is_nan(), "{what}: padding element {i} was written ({g})");
            continue;
        }
        let bound = tol.dot * (mag[i] + 1.0) + tol.out * w.abs() + 1e-6;
        assert!(
            (g - w).abs() <= bound,
            "{what}: element {i} is {g}, expected {w} (bound {bound:e})"
        );
    }
}

fn check_run<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    epi: EpiCase,
    tol: Tol,
    seed: u64,
    how: &str,
    run: impl FnOnce(&mut Buffer<O>, &Epilogue<T>, &Buffer<T>, &Buffer<T>) -> Result<(), kernels::Error>,
) -> Vec<u32> {
    let what = format!("{shape:?} {epi:?} {how}");
    let mut rng = Rng::new(seed);
    let inputs = Inputs::<T>::new(stream, shape, &mut rng);
    let (mut c, c0h) = upload::<O>(stream, &old_values(&mut rng, epi, inputs.c_len));
    let e = inputs.epilogue(epi);
    run(&mut c, &e, &inputs.a.0, &inputs.b.0).unwrap_or_else(|err| panic!("{what}: {err}"));
    let got = download(stream, &c);
    let (want, mag) = inputs.expected(shape, epi, &c0h);
    assert_close(&what, &got, &want, &mag, &c0h, tol);
    bits(stream, &c)
}

/// Runs `gemm_with_f32_copy` into a 16-bit `O` and checks the f32 copy against the reference
/// (β reading the copy's old values, C starting as NaN, never read), with the tolerance of an
/// f32 output, and that C is the copy rounded to `O`, bit for bit; padding of both must stay
/// NaN. Returns the copy's bits.
pub fn check_copy<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    epi: EpiCase,
    seed: u64,
) -> Vec<u32> {
    let what = format!("{shape:?} {epi:?} with an f32 copy");
    let mut rng = Rng::new(seed);
    let inputs = Inputs::<T>::new(stream, shape, &mut rng);
    let (mut copy, copy0) = upload::<f32>(stream, &old_values(&mut rng, epi, inputs.c_len));
    let (mut c, _) = upload::<O>(stream, &vec![f32::NAN; inputs.c_len]);
    let e = inputs.epilogue(epi);
    let (a, b) = (&inputs.a.0, &inputs.b.0);
    kernels::gemm::gemm_with_f32_copy(stream, shape, a, b, &mut c, &mut copy, &e, Math::Fp32)
        .unwrap_or_else(|err| panic!("{what}: {err}"));
    let got = download(stream, &copy);
    let (want, mag) = inputs.expected(shape, epi, &copy0);
    assert_close(&what, &got, &want, &mag, &copy0, F32_OUT_16_IN);
    let rounded = c.to_host(stream).expect("download");
    for (i, (r, &g)) in rounded.iter().zip(&got).enumerate() {
        let (r, g) = (r.to_f32(), g as f32);
        if g.is_nan() {
            assert!(
                r.is_nan(),
                "{what}: padding element {i} of C was written ({r})"
            );
        } else {
            assert_eq!(
                r.to_bits(),
                O::from_f32(g).to_f32().to_bits(),
                "{what}: C[{i}] is {r}, not the copy's {g} rounded"
            );
        }
    }
    bits(stream, &copy)
}

/// Shapes whose every dimension misses every tile size, plus edge cases.
pub const ODD: [(usize, usize, usize); 8] = [
    (1, 1, 1),
    (17, 63, 129),
    (129, 17, 63),
    (63, 129, 17),
    (1, 129, 63),
    (129, 1, 17),
    (17, 17, 1),
    (63, 63, 63),
];

/// Dense shapes for each layout.
pub fn shapes(layout: Layout, dims: &[(usize, usize, usize)]) -> Vec<GemmShape> {
    dims.iter()
        .map(|&(m, n, k)| GemmShape::new(layout, m, n, k))
        .collect()
}

/// A stream on CUDA device 0, or `None` after printing the one skip line.
pub fn gpu() -> Option<Stream> {
    match Device::cuda(0).and_then(|d| d.stream()) {
        Ok(stream) => Some(stream),
        Err(_) => {
            println!("skipping: no CUDA driver/GPU present");
            None
        }
    }
}

/// Runs a plain dense GEMM at a shape too large for a full f64 reference and checks `samples`
/// seeded elements (and that none is left as the NaN poison).
pub fn check_sampled<T: Float, O: Float>(
    stream: &Stream,
    shape: &GemmShape,
    math: Math,
    tol: Tol,
    samples: usize,
) {
    let s = shape;
    let (ar, _) = s.layout.a_rows_cols(s.m, s.k);
    let (br, _) = s.layout.b_rows_cols(s.n, s.k);
    let mut rng = Rng::new(s.m as u64 ^ (s.n as u64) << 20 ^ (s.k as u64) << 40);
    let (a, ah) = upload::<T>(stream, &rng.vec(ar * s.lda));
    let (b, bh) = upload::<T>(stream, &rng.vec(br * s.ldb));
    let (mut c, _) = upload::<O>(stream, &vec![f32::NAN; s.m * s.ldc]);
    gemm(stream, shape, &a, &b, &mut c, &Epilogue::default(), math).expect("gemm");
    let got = download(stream, &c);
    assert!(
        got.iter().all(|v| !v.is_nan()),
        "{shape:?}: an output was left unwritten"
    );
    let a_at = |i: usize, p: usize| {
        if s.layout.a_k_contiguous() {
            ah[i * s.lda + p]
        } else {
            ah[p * s.lda + i]
        }
    };
    let b_at = |p: usize, j: usize| {
        if s.layout.b_k_contiguous() {
            bh[j * s.ldb + p]
        } else {
            bh[p * s.ldb + j]
        }
    };
    let mut pick = Rng::new(7);
    for _ in 0..samples {
        let u = pick.vec(2);
        let i = (((u[0] + 1.0) * 0.5) as f64 * s.m as f64) as usize % s.m;
        let j = (((u[1] + 1.0) * 0.5) as f64 * s.n as f64) as usize % s.n;
        let (mut w, mut mag) = (0.0, 0.0);
        for p in 0..s.k {
            let t = a_at(i, p) * b_at(p, j);
            w += t;
            mag += t.abs();
        }
        let g = got[i * s.ldc + j];
        let bound = tol.dot * (mag + 1.0) + tol.out * w.abs() + 1e-6;
        assert!(
            (g - w).abs() <= bound,
            "{shape:?}: C[{i}][{j}] is {g}, expected {w} (bound {bound:e})"
        );
    }
}
