//! The flash-attention backward on the emulator against the f64 reference, a directional
//! finite-difference check, bit-identical reruns and the typed errors. Shapes are small (the
//! emulator is slow) but cover every head size, both element types and masks, GQA ratios 1,
//! 4 and 8, and lengths 1, 7, 33 and 257 in packed ragged batches.

mod common_attention;

use common_attention::*;
use kernel_dsl::Target;
use kernel_runtime::{Bf16, Buffer, Device, Stream, F16};
use kernels::attention::{
    flash_backward, flash_backward_with, flash_backward_workspace, reference, Attention,
    AttentionPath, Batch, Heads, Mask,
};
use kernels::Error;

fn emulator() -> Stream {
    Device::emulator().stream().expect("emulator stream")
}

/// An sm_90a emulator: `flash_backward` takes the `wgmma` kernels there.
fn hopper() -> Stream {
    Device::emulator_for(Target::Sm90a)
        .stream()
        .expect("emulator stream")
}

fn case(lens: &[usize], q: usize, kv: usize, dim: usize, mask: Mask, seed: u64) -> Case {
    Case {
        lens: lens.to_vec(),
        heads: Heads { q, kv, dim },
        mask,
        seed,
    }
}

#[test]
fn bf16_causal_ragged_batch_with_gqa_4_matches_reference() {
    check::<Bf16>(&emulator(), &case(&[1, 7, 33], 4, 1, 64, Mask::Causal, 1));
}

#[test]
fn f16_full_with_gqa_8_at_head_dim_128_matches_reference() {
    check::<F16>(&emulator(), &case(&[33, 7], 8, 1, 128, Mask::Full, 2));
}

#[test]
fn bf16_full_and_f16_causal_at_head_dim_256_match_reference() {
    let stream = emulator();
    check::<Bf16>(&stream, &case(&[7], 1, 1, 256, Mask::Full, 3));
    check::<F16>(&stream, &case(&[33], 2, 2, 256, Mask::Causal, 4));
}

#[test]
fn f16_causal_sequence_of_257_matches_reference() {
    check::<F16>(&emulator(), &case(&[257], 1, 1, 64, Mask::Causal, 5));
}

#[test]
fn bf16_causal_head_dim_128_matches_reference() {
    check::<Bf16>(&emulator(), &case(&[1, 33], 2, 1, 128, Mask::Causal, 6));
}

#[test]
fn on_hopper_bf16_causal_ragged_batch_with_gqa_4_matches_reference() {
    check::<Bf16>(&hopper(), &case(&[1, 7, 33], 4, 1, 64, Mask::Causal, 11));
}

#[test]
fn on_hopper_f16_full_with_gqa_8_at_head_dim_128_matches_reference() {
    check::<F16>(&hopper(), &case(&[33, 7], 8, 1, 128, Mask::Full, 12));
}

/// Two key blocks, three query tiles of the dQ kernel's 128 rows, and a partial last tile
/// of each.
#[test]
fn on_hopper_bf16_causal_sequence_of_257_at_head_dim_128_matches_reference() {
    check::<Bf16>(&hopper(), &case(&[257], 1, 1, 128, Mask::Causal, 13));
}

/// Head size 256 runs the `mma.sync` kernels on Hopper.
#[test]
fn on_hopper_head_dim_256_matches_reference() {
    let stream = hopper();
    check::<Bf16>(&stream, &case(&[7], 1, 1, 256, Mask::Full, 14));
}

#[test]
fn on_hopper_reruns_are_bit_identical_and_match_mma_sync() {
    let stream = hopper();
    let p = Problem::<Bf16>::new(&stream, &case(&[33, 1], 4, 2, 64, Mask::Full, 15));
    let first = p.run_on(&stream, AttentionPath::Wgmma);
    let second = p.run_on(&stream, AttentionPath::Wgmma);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(bits(&stream, a), bits(&stream, b));
    }
    let mma_sync = p.run_on(&stream, AttentionPath::MmaSync);
    let got = |bufs: &[Buffer<Bf16>; 3]| bufs.each_ref().map(|b| download(&stream, b));
    assert_gradients::<Bf16>("wgmma", got(&first), &p.reference());
    assert_gradients::<Bf16>("mma.sync", got(&mma_sync), &p.reference());
}

/// The kernel's gradients against central differences of `L = ⟨o, d_o⟩` from the f64
/// reference forward, along one random direction per input.
#[test]
fn gradients_match_directional_finite_differences() {
    let stream = emulator();
    let c = case(&[7, 33], 2, 1, 64, Mask::Causal, 7);
    let p = Problem::<Bf16>::new(&stream, &c);
    let [dq, dk, dv] = p.run(&stream);
    let grads = [
        download(&stream, &dq),
        download(&stream, &dk),
        download(&stream, &dv),
    ];
    let cu = c.cu_seqlens();
    let scale = c.scale() as f64;
    let loss = |q: &[f64], k: &[f64], v: &[f64]| -> f64 {
        let f = reference::forward(q, k, v, &cu, c.heads, c.mask, scale);
        f.o.iter().zip(&p.d_o).map(|(a, b)| a * b).sum()
    };
    let mut rng = Rng::new(70);
    let eps = 1e-4;
    for (which, grad) in grads.iter().enumerate() {
        let u = rng.vec(grad.len());
        let moved = |sign: f64| {
            let mut x = [p.q.clone(), p.k.clone(), p.v.clone()];
            for (a, b) in x[which].iter_mut().zip(&u) {
                *a += sign * eps * b;
            }
            loss(&x[0], &x[1], &x[2])
        };
        let fd = (moved(1.0) - moved(-1.0)) / (2.0 * eps);
        let dot: f64 = grad.iter().zip(&u).map(|(g, x)| g * x).sum();
        let size: f64 = grad.iter().zip(&u).map(|(g, x)| (g * x).abs()).sum();
        // bf16 rounding of P, dS and the outputs: a few parts in 2⁸ of the terms' size.
        assert!(
            (fd - dot).abs() <= 2e-2 * size,
            "input {which}: finite difference {fd}, kernel {dot} (terms {size})"
        );
    }
}

#[test]
fn reruns_are_bit_identical() {
    let stream = emulator();
    let p = Problem::<Bf16>::new(&stream, &case(&[33, 1], 4, 1, 64, Mask::Full, 8));
    let first = p.run(&stream);
    let second = p.run(&stream);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(bits(&stream, a), bits(&stream, b));
    }
}

/// Offsets past the packed tokens (they live on the device, unchecked) clip the sequence to
/// the tokens there are, rather than reading or writing past the buffers.
#[test]
fn a_sequence_past_the_tokens_is_clipped() {
    let stream = emulator();
    let mut p = Problem::<Bf16>::new(&stream, &case(&[2, 3], 2, 1, 64, Mask::Causal, 9));
    p.cu = Buffer::from_host(&stream, &[0u32, 2, 9]).unwrap();
    let [dq, dk, dv] = p.run(&stream);
    let got = [
        download(&stream, &dq),
        download(&stream, &dk),
        download(&stream, &dv),
    ];
    assert_gradients::<Bf16>("clipped", got, &p.reference());
}

/// What `flash_backward` is called with in the error tests.
struct Call {
    heads: Heads,
    scale: f32,
    seqs: usize,
    tokens: usize,
    max_len: usize,
    cu_len: usize,
    q_len: usize,
    ws_len: usize,
}

impl Call {
    fn ok() -> Call {
        Call {
            heads: Heads {
                q: 2,
                kv: 1,
                dim: 64,
            },
            scale: 0.125,
            seqs: 1,
            tokens: 3,
            max_len: 3,
            cu_len: 2,
            q_len: 3 * 2 * 64,
            ws_len: 6,
        }
    }

    /// Runs it on outputs filled with 7.0 and returns the error, checking that nothing was
    /// written.
    fn run(&self, stream: &Stream) -> Result<(), Error> {
        let h = self.heads;
        let kv_len = 3 * h.kv.max(1) * h.dim;
        let fill = |n: usize| Buffer::from_host(stream, &vec![Bf16::from_f32(7.0); n]).unwrap();
        let q = fill(self.q_len);
        let (k, v) = (fill(kv_len), fill(kv_len));
        let (o, d_o) = (fill(3 * h.q * h.dim), fill(3 * h.q * h.dim));
        let lse = Buffer::from_host(stream, &vec![0.0f32; h.q * 3]).unwrap();
        let cu = Buffer::from_host(stream, &[0u32, 3, 3, 3][..self.cu_len]).unwrap();
        let (mut dq, mut dk, mut dv) = (fill(3 * h.q * h.dim), fill(kv_len), fill(kv_len));
        let mut ws = Buffer::from_host(stream, &vec![7.0f32; self.ws_len]).unwrap();
        let batch = Batch {
            cu_seqlens: &cu,
            seqs: self.seqs,
            tokens: self.tokens,
            max_len: self.max_len,
        };
        let attn = Attention {
            heads: h,
            mask: Mask::Causal,
            scale: self.scale,
        };
        let r = flash_backward(
            stream, &q, &k, &v, &o, &d_o, &lse, batch, attn, &mut dq, &mut dk, &mut dv, &mut ws,
        );
        if r.is_err() {
            for b in [&dq, &dk, &dv] {
                assert!(
                    download(stream, b).iter().all(|&x| x == 7.0),
                    "written on error"
                );
            }
            assert!(ws.to_host(stream).unwrap().iter().all(|&x| x == 7.0));
        }
        r
    }
}

#[test]
fn bad_shapes_are_typed_errors_and_write_nothing() {
    let stream = emulator();
    Call::ok().run(&stream).expect("the valid call");
    let length = |c: Call, buffer: &str| match c.run(&stream) {
        Err(Error::Length { buffer: b, .. }) => assert_eq!(b, buffer),
        r => panic!("{buffer}: expected a length error, got {r:?}"),
    };
    length(
        Call {
            q_len: 100,
            ..Call::ok()
        },
        "q",
    );
    length(
        Call {
            ws_len: 5,
            ..Call::ok()
        },
        "workspace",
    );
    length(
        Call {
            cu_len: 3,
            ..Call::ok()
        },
        "cu_seqlens",
    );
    let unsupported = |c: Call, needle: &str| match c.run(&stream) {
        Err(e @ Error::Unsupported { .. }) => {
            assert!(e.to_string().contains(needle), "{e}")
        }
        r => panic!("{needle}: expected an unsupported error, got {r:?}"),
    };
    let heads = |q, kv, dim| Heads { q, kv, dim };
    unsupported(
        Call {
            heads: heads(2, 1, 96),
            q_len: 3 * 2 * 96,
            ..Call::ok()
        },
        "head size 96",
    );
    unsupported(
        Call {
            heads: heads(3, 2, 64),
            q_len: 3 * 3 * 64,
            ..Call::ok()
        },
        "evenly",
    );
    unsupported(
        Call {
            heads: heads(0, 1, 64),
            q_len: 0,
            ..Call::ok()
        },
        "at least one",
    );
    unsupported(
        Call {
            scale: f32::NAN,
            ..Call::ok()
        },
        "not finite",
    );
    unsupported(
        Call {
            scale: f32::INFINITY,
            ..Call::ok()
        },
        "not finite",
    );
    unsupported(
        Call {
            tokens: usize::MAX / 4,
            ..Call::ok()
        },
        "overflows",
    );
    unsupported(
        Call {
            max_len: 4,
            ..Call::ok()
        },
        "max_len",
    );
}

#[test]
fn zero_tokens_is_ok() {
    let stream = emulator();
    let heads = Heads {
        q: 2,
        kv: 1,
        dim: 64,
    };
    let empty = Buffer::<Bf16>::zeros(&stream, 0).unwrap();
    let (mut dq, mut dk, mut dv) = (
        Buffer::<Bf16>::zeros(&stream, 0).unwrap(),
        Buffer::<Bf16>::zeros(&stream, 0).unwrap(),
        Buffer::<Bf16>::zeros(&stream, 0).unwrap(),
    );
    let lse = Buffer::<f32>::zeros(&stream, 0).unwrap();
    let cu = Buffer::from_host(&stream, &[0u32]).unwrap();
    let mut ws =
        Buffer::<f32>::zeros(&stream, flash_backward_workspace(0, heads).unwrap()).unwrap();
    let batch = Batch {
        cu_seqlens: &cu,
        seqs: 0,
        tokens: 0,
        max_len: 0,
    };
    let attn = Attention {
        heads,
        mask: Mask::Full,
        scale: 0.125,
    };
    flash_backward(
        &stream, &empty, &empty, &empty, &empty, &empty, &lse, batch, attn, &mut dq, &mut dk,
        &mut dv, &mut ws,
    )
    .expect("zero tokens");
}

/// The `wgmma` path on a device without it is a typed error before anything runs: the
/// gradients and the workspace keep what they held.
#[test]
fn the_wgmma_path_off_hopper_is_refused_and_writes_nothing() {
    let stream = emulator();
    let p = Problem::<Bf16>::new(&stream, &case(&[7], 2, 1, 64, Mask::Causal, 16));
    let n = p.case.tokens() * 2 * 64;
    let fill = |len: usize| Buffer::from_host(&stream, &vec![Bf16::from_f32(7.0); len]).unwrap();
    let (mut dq, mut dk, mut dv) = (fill(n), fill(n / 2), fill(n / 2));
    let ws_len = flash_backward_workspace(p.case.tokens(), p.case.heads).unwrap();
    let mut ws = Buffer::from_host(&stream, &vec![7.0f32; ws_len]).unwrap();
    let [q, k, v, o, d_o] = &p.bufs;
    let r = flash_backward_with(
        &stream,
        AttentionPath::Wgmma,
        q,
        k,
        v,
        o,
        d_o,
        &p.lse,
        p.batch(),
        p.attention(),
        &mut dq,
        &mut dk,
        &mut dv,
        &mut ws,
    );
    match r {
        Err(e @ Error::Unsupported { .. }) => assert!(e.to_string().contains("Hopper"), "{e}"),
        r => panic!("expected an unsupported error, got {r:?}"),
    }
    for b in [&dq, &dk, &dv] {
        assert!(download(&stream, b).iter().all(|&x| x == 7.0), "written");
    }
    assert!(ws.to_host(&stream).unwrap().iter().all(|&x| x == 7.0));
}
