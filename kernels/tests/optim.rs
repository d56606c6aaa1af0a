//! The AdamW step on the emulator against the f64 reference.

mod common_tensor;

use common_tensor::*;
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::clip;
use kernels::optim::{reference, AdamW, AdamWConfig, AdamWState, DeviceStep, ParamLayout};
use kernels::Float;

/// Odd lengths, one crossing a chunk boundary, one a tensor of one element.
const LENS: [usize; 7] = [1, 7, 33, 4097, 8193, 8, 1000];
const DECAY: [bool; 7] = [true, false, true, true, false, true, false];
const PAD: f32 = 12345.0;

struct Host {
    p: Vec<f32>,
    g: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
}

/// Random state for every tensor; the padding holds `PAD` so stray writes show.
fn random_state(layout: &ParamLayout, seed: u64) -> Host {
    let mut rng = Rng::new(seed);
    let n = layout.total();
    let mut h = Host {
        p: vec![PAD; n],
        g: vec![PAD; n],
        m: vec![PAD; n],
        v: vec![PAD; n],
    };
    for t in 0..layout.tensors() {
        let r = layout.range(t).unwrap();
        for i in r {
            h.p[i] = rng.uniform(-1.0, 1.0);
            h.g[i] = rng.uniform(-0.1, 0.1);
            h.m[i] = rng.uniform(-0.01, 0.01);
            h.v[i] = rng.uniform(1e-6, 1e-3);
        }
    }
    h
}

fn in_tensor(layout: &ParamLayout, i: usize) -> Option<usize> {
    (0..layout.tensors()).find(|&t| (layout.range(t).unwrap()).contains(&i))
}

/// Runs one step from `h` with gradients stored as `G`; checks every element against the
/// reference (padding unchanged) and returns the device results' bits.
fn step_case<G: Float>(stream: &Stream, step: u32, h: &Host, with_copy: bool) -> Vec<u32> {
    step_case_clipped::<G>(stream, step, h, with_copy, false)
}

/// As [`step_case`]; with `clipped`, the gradients' padding is zeroed, `clip::grad_norm`
/// computes a clip scale on the device and the step applies it.
fn step_case_clipped<G: Float>(
    stream: &Stream,
    step: u32,
    h: &Host,
    with_copy: bool,
    clipped: bool,
) -> Vec<u32> {
    let opt = AdamW::new(stream, &LENS, &DECAY).unwrap();
    let layout = opt.layout().clone();
    let n = layout.total();
    let cfg = AdamWConfig {
        lr: 3e-3,
        weight_decay: 0.1,
        ..AdamWConfig::default()
    };
    let mut params = Buffer::from_host(stream, &h.p).unwrap();
    let mut g_host = h.g.clone();
    if clipped {
        for (i, g) in g_host.iter_mut().enumerate() {
            if in_tensor(&layout, i).is_none() {
                *g = 0.0;
            }
        }
    }
    let grads_g = rounded::<G>(&g_host);
    let grads = Buffer::from_host(stream, &grads_g).unwrap();
    let mut norm_scale = Buffer::from_host(stream, &[f32::NAN; 2]).unwrap();
    let scale = if clipped {
        let mut ws = Buffer::<f32>::zeros(stream, clip::WORKSPACE_LEN as usize).unwrap();
        clip::grad_norm(stream, &grads, 0.5, &mut ws, &mut norm_scale).unwrap();
        let s = norm_scale.to_host(stream).unwrap()[1];
        assert!(s < 0.5, "the test wants real clipping, got scale {s}");
        s
    } else {
        1.0
    };
    let mut m = Buffer::from_host(stream, &h.m).unwrap();
    let mut v = Buffer::from_host(stream, &h.v).unwrap();
    let mut copy = Buffer::from_host(stream, &vec![Bf16::from_f32(PAD); n]).unwrap();
    let state = AdamWState {
        params: &mut params,
        grads: &grads,
        m: &mut m,
        v: &mut v,
        bf16_copy: with_copy.then_some(&mut copy),
        clip: clipped.then_some(&norm_scale),
    };
    opt.step(stream, step, &cfg, state).unwrap();
    let (p2, m2, v2) = (
        params.to_host(stream).unwrap(),
        m.to_host(stream).unwrap(),
        v.to_host(stream).unwrap(),
    );
    let c2 = copy.to_host(stream).unwrap();
    for i in 0..n {
        match in_tensor(&layout, i) {
            None => {
                assert_eq!(
                    (p2[i], m2[i], v2[i]),
                    (PAD, PAD, PAD),
                    "padding {i} written"
                );
                assert_eq!(c2[i], Bf16::from_f32(PAD), "copy padding {i} written");
            }
            Some(t) => {
                let g = (grads_g[i].to_f32() * scale) as f64;
                let (wp, wm, wv) = reference::adamw(
                    &cfg,
                    step,
                    DECAY[t],
                    h.p[i] as f64,
                    g,
                    h.m[i] as f64,
                    h.v[i] as f64,
                );
                let ok = |got: f32, want: f64, tol: f64| {
                    (got as f64 - want).abs() <= tol * (1.0 + want.abs())
                };
                assert!(
                    ok(p2[i], wp, 2e-6),
                    "p[{i}] = {} want {wp} (step {step})",
                    p2[i]
                );
                assert!(ok(m2[i], wm, 1e-6), "m[{i}] = {} want {wm}", m2[i]);
                assert!(ok(v2[i], wv, 1e-6), "v[{i}] = {} want {wv}", v2[i]);
                let want_copy = if with_copy {
                    Bf16::from_f32(p2[i])
                } else {
                    Bf16::from_f32(PAD)
                };
                assert_eq!(c2[i], want_copy, "copy[{i}]");
            }
        }
    }
    p2.iter()
        .chain(&m2)
        .chain(&v2)
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn adamw_matches_reference_over_many_odd_tensors_in_one_launch() {
    let stream = emulator();
    let layout = ParamLayout::new(&LENS).unwrap();
    for step in [1, 2, 10] {
        let h = random_state(&layout, step as u64);
        step_case::<f32>(&stream, step, &h, false);
    }
}

#[test]
fn adamw_reads_bf16_gradients_and_writes_a_bf16_copy() {
    let stream = emulator();
    let layout = ParamLayout::new(&LENS).unwrap();
    let h = random_state(&layout, 5);
    step_case::<Bf16>(&stream, 3, &h, true);
    step_case::<f32>(&stream, 3, &h, true);
    step_case::<Bf16>(&stream, 4, &h, false);
}

#[test]
fn adamw_applies_a_device_side_clip_scale_to_the_gradients() {
    let stream = emulator();
    let layout = ParamLayout::new(&LENS).unwrap();
    let h = random_state(&layout, 21);
    step_case_clipped::<f32>(&stream, 2, &h, false, true);
    step_case_clipped::<Bf16>(&stream, 2, &h, true, true);
}

#[test]
fn adamw_is_bit_identical_across_runs() {
    let stream = emulator();
    let layout = ParamLayout::new(&LENS).unwrap();
    let h = random_state(&layout, 8);
    assert_eq!(
        step_case::<f32>(&stream, 7, &h, false),
        step_case::<f32>(&stream, 7, &h, false)
    );
}

#[test]
fn adamw_rejects_step_zero_and_wrong_lengths_before_writing() {
    let stream = emulator();
    let opt = AdamW::new(&stream, &[5], &[true]).unwrap();
    let n = opt.layout().total();
    let mut params = Buffer::from_host(&stream, &vec![1.0f32; n]).unwrap();
    let grads = Buffer::from_host(&stream, &vec![1.0f32; n - 1]).unwrap();
    let (mut m, mut v) = (poisoned::<f32>(&stream, n), poisoned::<f32>(&stream, n));
    let state = AdamWState {
        params: &mut params,
        grads: &grads,
        m: &mut m,
        v: &mut v,
        bf16_copy: None,
        clip: None,
    };
    let err = opt
        .step(&stream, 1, &AdamWConfig::default(), state)
        .unwrap_err();
    assert!(
        err.to_string().contains("`grads` holds 7 elements but 8"),
        "{err}"
    );
    let grads = Buffer::from_host(&stream, &vec![1.0f32; n]).unwrap();
    let state = AdamWState {
        params: &mut params,
        grads: &grads,
        m: &mut m,
        v: &mut v,
        bf16_copy: None,
        clip: None,
    };
    let err = opt
        .step(&stream, 0, &AdamWConfig::default(), state)
        .unwrap_err();
    assert!(err.to_string().contains("steps count from 1"), "{err}");
    assert_eq!(params.to_host(&stream).unwrap(), vec![1.0; n]);
    let err = AdamW::new(&stream, &[1, 2], &[true]).err().unwrap();
    assert!(
        err.to_string().contains("`decay` holds 1 elements but 2"),
        "{err}"
    );
}

#[test]
fn a_clipped_adamw_step_replays_from_a_captured_graph() {
    let stream = emulator();
    let opt = AdamW::new(&stream, &LENS, &DECAY).unwrap();
    let layout = opt.layout().clone();
    let mut h = random_state(&layout, 31);
    for (i, g) in h.g.iter_mut().enumerate() {
        if in_tensor(&layout, i).is_none() {
            *g = 0.0;
        }
    }
    let cfg = AdamWConfig::default();
    let grads = Buffer::from_host(&stream, &h.g).unwrap();
    // Runs grad_norm + a clipped step on fresh state; returns the state buffers.
    let fresh = || {
        (
            Buffer::from_host(&stream, &h.p).unwrap(),
            Buffer::from_host(&stream, &h.m).unwrap(),
            Buffer::from_host(&stream, &h.v).unwrap(),
            Buffer::<f32>::zeros(&stream, clip::WORKSPACE_LEN as usize).unwrap(),
            Buffer::<f32>::zeros(&stream, 2).unwrap(),
        )
    };
    let step = |s: &Stream,
                p: &mut Buffer<f32>,
                m: &mut Buffer<f32>,
                v: &mut Buffer<f32>,
                ws: &mut Buffer<f32>,
                ns: &mut Buffer<f32>|
     -> Result<(), kernels::Error> {
        clip::grad_norm(s, &grads, 0.5, ws, ns)?;
        let state = AdamWState {
            params: p,
            grads: &grads,
            m,
            v,
            bf16_copy: None,
            clip: Some(ns),
        };
        opt.step(s, 4, &cfg, state)
    };
    let (mut p1, mut m1, mut v1, mut ws1, mut ns1) = fresh();
    step(&stream, &mut p1, &mut m1, &mut v1, &mut ws1, &mut ns1).unwrap();

    let (mut p2, mut m2, mut v2, mut ws2, mut ns2) = fresh();
    let graph = stream
        .capture(|s| {
            step(s, &mut p2, &mut m2, &mut v2, &mut ws2, &mut ns2).map_err(|e| match e {
                kernels::Error::Runtime(r) => r,
                other => panic!("{other}"),
            })
        })
        .unwrap();
    assert_eq!(graph.launches(), 3);
    assert_eq!(
        p2.to_host(&stream).unwrap(),
        h.p,
        "capture must not run the step"
    );
    graph.replay().unwrap();
    for (a, b) in [(&p1, &p2), (&m1, &m2), (&v1, &v2)] {
        let bits = |x: &Buffer<f32>| -> Vec<u32> {
            x.to_host(&stream)
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        assert_eq!(bits(a), bits(b));
    }
}

/// Copies every tensor of [`LENS`] out of a flat buffer and back into another, as `T`.
fn copy_round_trip<T: Float>(stream: &Stream) {
    let layout = ParamLayout::new(&LENS).unwrap();
    let h = random_state(&layout, 41);
    let flat = Buffer::from_host(stream, &rounded::<T>(&h.p)).unwrap();
    let mut back = Buffer::from_host(stream, &rounded::<T>(&vec![PAD; layout.total()])).unwrap();
    for i in 0..layout.tensors() {
        let mut tensor = poisoned::<T>(stream, layout.len(i).unwrap());
        layout.copy_out(stream, &flat, i, &mut tensor).unwrap();
        let want: Vec<u32> = rounded::<T>(&h.p[layout.range(i).unwrap()])
            .iter()
            .map(|v| v.to_f32().to_bits())
            .collect();
        assert_eq!(bits(stream, &tensor), want, "tensor {i} copied out");
        layout.copy_in(stream, &tensor, &mut back, i).unwrap();
    }
    // Every tensor arrives; the padding keeps PAD.
    assert_eq!(bits(stream, &back), bits(stream, &flat));
}

#[test]
fn param_layout_copies_tensors_out_of_and_into_flat_buffers_leaving_padding_alone() {
    let stream = emulator();
    copy_round_trip::<f32>(&stream);
    copy_round_trip::<Bf16>(&stream);
}

#[test]
fn param_layout_copies_reject_a_missing_tensor_and_wrong_lengths() {
    let stream = emulator();
    let layout = ParamLayout::new(&[5, 3]).unwrap();
    let mut flat = Buffer::<f32>::zeros(&stream, layout.total()).unwrap();
    let mut three = Buffer::<f32>::zeros(&stream, 3).unwrap();
    let err = layout.copy_out(&stream, &flat, 2, &mut three).unwrap_err();
    assert!(err.to_string().contains("tensor 2 does not exist"), "{err}");
    let err = layout.copy_out(&stream, &flat, 0, &mut three).unwrap_err();
    assert!(
        err.to_string().contains("`tensor` holds 3 elements but 5"),
        "{err}"
    );
    let mut short = Buffer::<f32>::zeros(&stream, 8).unwrap();
    let err = layout.copy_in(&stream, &three, &mut short, 1).unwrap_err();
    assert!(
        err.to_string().contains("`flat` holds 8 elements but 16"),
        "{err}"
    );
    layout.copy_in(&stream, &three, &mut flat, 1).unwrap();
}

/// Three steps from `h`, with the step number given by the host (`device: false`) or kept on
/// the device; the state's bits after each step.
fn three_steps<G: Float>(stream: &Stream, h: &Host, device: bool) -> Vec<Vec<u32>> {
    let opt = AdamW::new(stream, &LENS, &DECAY).unwrap();
    let cfg = AdamWConfig {
        lr: 3e-3,
        weight_decay: 0.1,
        ..AdamWConfig::default()
    };
    let grads = Buffer::from_host(stream, &rounded::<G>(&h.g)).unwrap();
    let mut p = Buffer::from_host(stream, &h.p).unwrap();
    let mut m = Buffer::from_host(stream, &h.m).unwrap();
    let mut v = Buffer::from_host(stream, &h.v).unwrap();
    let mut copy = Buffer::<Bf16>::zeros(stream, h.p.len()).unwrap();
    let mut counter = DeviceStep::new(stream).unwrap();
    let mut out = Vec::new();
    for step in 1..=3 {
        let state = AdamWState {
            params: &mut p,
            grads: &grads,
            m: &mut m,
            v: &mut v,
            bf16_copy: Some(&mut copy),
            clip: None,
        };
        if device {
            opt.step_on_device(stream, &mut counter, &cfg, state)
                .unwrap();
        } else {
            opt.step(stream, step, &cfg, state).unwrap();
        }
        let mut b = bits(stream, &p);
        b.extend(bits(stream, &m));
        b.extend(bits(stream, &v));
        b.extend(bits(stream, &copy));
        out.push(b);
    }
    if device {
        assert_eq!(counter.count(stream).unwrap(), 3);
    }
    out
}

#[test]
fn adamw_with_the_step_on_the_device_gives_the_bits_of_host_numbered_steps() {
    let stream = emulator();
    let layout = ParamLayout::new(&LENS).unwrap();
    let h = random_state(&layout, 43);
    assert_eq!(
        three_steps::<f32>(&stream, &h, true),
        three_steps::<f32>(&stream, &h, false)
    );
    assert_eq!(
        three_steps::<Bf16>(&stream, &h, true),
        three_steps::<Bf16>(&stream, &h, false)
    );
}

/// The device state of a clipped, device-numbered AdamW step.
struct DeviceRun {
    ws: Buffer<f32>,
    ns: Buffer<f32>,
    p: Buffer<f32>,
    m: Buffer<f32>,
    v: Buffer<f32>,
    counter: DeviceStep,
}

impl DeviceRun {
    fn new(stream: &Stream, h: &Host) -> DeviceRun {
        DeviceRun {
            ws: Buffer::zeros(stream, clip::WORKSPACE_LEN as usize).unwrap(),
            ns: Buffer::zeros(stream, 2).unwrap(),
            p: Buffer::from_host(stream, &h.p).unwrap(),
            m: Buffer::from_host(stream, &h.m).unwrap(),
            v: Buffer::from_host(stream, &h.v).unwrap(),
            counter: DeviceStep::new(stream).unwrap(),
        }
    }

    /// `clip::grad_norm` then a clipped `step_on_device`, as a training step queues them.
    fn record(
        &mut self,
        s: &Stream,
        opt: &AdamW,
        grads: &Buffer<f32>,
    ) -> Result<(), kernel_runtime::Error> {
        let mut run = || -> Result<(), kernels::Error> {
            clip::grad_norm(s, grads, 0.5, &mut self.ws, &mut self.ns)?;
            let state = AdamWState {
                params: &mut self.p,
                grads,
                m: &mut self.m,
                v: &mut self.v,
                bf16_copy: None,
                clip: Some(&self.ns),
            };
            opt.step_on_device(s, &mut self.counter, &AdamWConfig::default(), state)
        };
        run().map_err(|e| match e {
            kernels::Error::Runtime(r) => r,
            other => panic!("{other}"),
        })
    }
}

#[test]
fn a_captured_device_step_takes_the_next_step_on_every_replay() {
    let stream = emulator();
    let opt = AdamW::new(&stream, &LENS, &DECAY).unwrap();
    let layout = opt.layout().clone();
    let mut h = random_state(&layout, 47);
    for (i, g) in h.g.iter_mut().enumerate() {
        if in_tensor(&layout, i).is_none() {
            *g = 0.0;
        }
    }
    let grads = Buffer::from_host(&stream, &h.g).unwrap();
    // Kernels load outside a capture: one step on other buffers loads them.
    DeviceRun::new(&stream, &h)
        .record(&stream, &opt, &grads)
        .unwrap();
    let mut run = DeviceRun::new(&stream, &h);
    let graph = stream.capture(|s| run.record(s, &opt, &grads)).unwrap();
    assert_eq!(graph.launches(), 4);
    assert_eq!(
        run.counter.count(&stream).unwrap(),
        0,
        "capture runs nothing"
    );
    let scale = {
        let mut warm = DeviceRun::new(&stream, &h);
        warm.record(&stream, &opt, &grads).unwrap();
        warm.ns.to_host(&stream).unwrap()[1]
    };
    assert!(scale < 1.0, "the test wants real clipping, got {scale}");
    let cfg = AdamWConfig::default();
    let (mut wp, mut wm, mut wv): (Vec<f64>, Vec<f64>, Vec<f64>) = (
        h.p.iter().map(|&x| x as f64).collect(),
        h.m.iter().map(|&x| x as f64).collect(),
        h.v.iter().map(|&x| x as f64).collect(),
    );
    for step in 1..=3u32 {
        graph.replay().unwrap();
        let got = run.p.to_host(&stream).unwrap();
        for (t, &decay) in DECAY.iter().enumerate() {
            for i in layout.range(t).unwrap() {
                let g = (h.g[i] * scale) as f64;
                (wp[i], wm[i], wv[i]) = reference::adamw(&cfg, step, decay, wp[i], g, wm[i], wv[i]);
                let ok = (got[i] as f64 - wp[i]).abs() <= 2e-6 * (1.0 + wp[i].abs());
                assert!(ok, "step {step}: p[{i}] = {} want {}", got[i], wp[i]);
            }
        }
    }
    assert_eq!(run.counter.count(&stream).unwrap(), 3);
}
