//! Embedding gather and its deterministic backward on the emulator against the references.

mod common_rowwise;

use common_rowwise::{assert_close, bits, download, poisoned, stream, tol, upload, Rng};
use kernel_runtime::{Bf16, Buffer};
use kernels::embedding::{embedding, embedding_backward, reference};
use kernels::Error;
use kernels::Float;

/// (tokens, vocab, hidden): repeated ids, odd widths, several warps' worth of rows.
const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (3, 5, 7),
    (33, 7, 33),
    (3, 40, 4097),
    (70, 300, 64),
    (5, 3, 16),
];

/// (tokens, vocab, hidden) beyond [`SHAPES`]: rows a block passes over more than once, and
/// more tokens than the backward's warps scan in one step.
const WIDE: &[(usize, usize, usize)] =
    &[(2, 3, 12288), (2, 3, 20480), (600, 40, 24), (300, 70, 40)];

fn ids(rng: &mut Rng, tokens: usize, vocab: usize) -> Vec<u32> {
    (0..tokens).map(|_| rng.below(vocab as u32)).collect()
}

fn gather_matches_reference<T: Float>() {
    let s = stream();
    let mut rng = Rng::new(51);
    for &(tokens, vocab, hidden) in SHAPES.iter().chain(WIDE) {
        let (table, held) = upload::<T>(&s, &rng.vec(vocab * hidden, -1.0, 1.0));
        let id = ids(&mut rng, tokens, vocab);
        let idb = Buffer::from_host(&s, &id).unwrap();
        let mut out = poisoned::<T>(&s, tokens * hidden);
        embedding(&s, &table, &idb, &mut out, tokens, vocab, hidden).unwrap();
        let want = reference::embedding(&held, &id, vocab, hidden);
        let what = format!("embedding {tokens}×{vocab}×{hidden}");
        assert_close(&what, &download(&s, &out), &want, 0.0, 0.0);
    }
}

#[test]
fn f32_embedding_gathers_rows() {
    gather_matches_reference::<f32>();
}

#[test]
fn bf16_embedding_gathers_rows() {
    gather_matches_reference::<Bf16>();
}

#[test]
fn an_unknown_id_gathers_nan() {
    let s = stream();
    let (table, _) = upload::<f32>(&s, &[1.0, 2.0]);
    let idb = Buffer::from_host(&s, &[0u32, 2]).unwrap();
    let mut out = poisoned::<f32>(&s, 2);
    embedding(&s, &table, &idb, &mut out, 2, 2, 1).unwrap();
    let got = download(&s, &out);
    assert!(got[0] == 1.0 && got[1].is_nan(), "{got:?}");
}

#[test]
fn an_unknown_id_gathers_nan_in_bf16_too() {
    let s = stream();
    let (table, _) = upload::<Bf16>(&s, &[1.0; 16]);
    let idb = Buffer::from_host(&s, &[1u32, 7, 0]).unwrap();
    let mut out = poisoned::<Bf16>(&s, 24);
    embedding(&s, &table, &idb, &mut out, 3, 2, 8).unwrap();
    let got = download(&s, &out);
    assert!(got[..8].iter().all(|&v| v == 1.0), "{got:?}");
    assert!(got[8..16].iter().all(|v| v.is_nan()), "{got:?}");
    assert!(got[16..].iter().all(|&v| v == 1.0), "{got:?}");
}

fn backward_matches_reference<T: Float>() {
    let s = stream();
    let mut rng = Rng::new(52);
    for &(tokens, vocab, hidden) in SHAPES.iter().chain(WIDE) {
        let (dout, held) = upload::<T>(&s, &rng.vec(tokens * hidden, -1.0, 1.0));
        let id = ids(&mut rng, tokens, vocab);
        let idb = Buffer::from_host(&s, &id).unwrap();
        let mut dtable = poisoned::<T>(&s, vocab * hidden);
        embedding_backward(&s, &dout, &idb, &mut dtable, tokens, vocab, hidden).unwrap();
        let want = reference::embedding_backward(&held, &id, vocab, hidden);
        let what = format!("embedding_backward {tokens}×{vocab}×{hidden}");
        let got = download(&s, &dtable);
        // Against the exact sum, within what a few roundings cost (the shapes with up to ~10
        // tokens a row)…
        if tokens <= 10 * vocab {
            assert_close(&what, &got, &want, tol::<T>(1e-6) * 2.0, tol::<T>(1e-6));
        }
        // …and bit for bit against the documented order: token order, each addition rounded
        // to the storage type.
        let ordered = ordered_sums::<T>(&held, &id, vocab, hidden);
        assert_eq!(got, ordered, "{what}: not the token-order sums");
    }
}

/// `dtable` as the op documents it: each row the sum of its tokens' gradient rows in token
/// order, each addition rounded to `T`.
fn ordered_sums<T: Float>(dout: &[f32], ids: &[u32], vocab: usize, hidden: usize) -> Vec<f32> {
    let mut acc = vec![0.0f32; vocab * hidden];
    for (t, &v) in ids.iter().enumerate() {
        let v = v as usize;
        if v >= vocab {
            continue;
        }
        for h in 0..hidden {
            let a = &mut acc[v * hidden + h];
            *a = T::from_f32(*a + dout[t * hidden + h]).to_f32();
        }
    }
    acc
}

#[test]
fn f32_embedding_backward_sums_repeated_ids() {
    backward_matches_reference::<f32>();
}

#[test]
fn bf16_embedding_backward_sums_repeated_ids() {
    backward_matches_reference::<Bf16>();
}

#[test]
fn embedding_backward_runs_are_bit_identical() {
    let s = stream();
    let mut rng = Rng::new(53);
    let (tokens, vocab, hidden) = (200, 50, 24);
    let (dout, _) = upload::<f32>(&s, &rng.vec(tokens * hidden, -1.0, 1.0));
    let idb = Buffer::from_host(&s, &ids(&mut rng, tokens, vocab)).unwrap();
    let run = || {
        let mut d = poisoned::<f32>(&s, vocab * hidden);
        embedding_backward(&s, &dout, &idb, &mut d, tokens, vocab, hidden).unwrap();
        bits(&s, &d)
    };
    assert_eq!(run(), run());
}

#[test]
fn a_short_table_is_an_error() {
    let s = stream();
    let (table, _) = upload::<f32>(&s, &[1.0; 5]);
    let idb = Buffer::from_host(&s, &[0u32]).unwrap();
    let mut out = poisoned::<f32>(&s, 2);
    let err = embedding(&s, &table, &idb, &mut out, 1, 3, 2).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "table",
                expected: 6,
                actual: 5,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn reference_backward_matches_finite_differences() {
    let mut rng = Rng::new(54);
    let (tokens, vocab, hidden) = (6, 4, 3);
    let id = [1u32, 3, 1, 0, 1, 3];
    let table = rng.vec(vocab * hidden, -1.0, 1.0);
    let w = rng.vec(tokens * hidden, -1.0, 1.0);
    // L = Σ w ⊙ embedding(table); dL/dout = w.
    let loss = |t: &[f64]| -> f64 {
        let tf: Vec<f32> = t.iter().map(|&v| v as f32).collect();
        let out = reference::embedding(&tf, &id, vocab, hidden);
        out.iter().zip(&w).map(|(a, &b)| a * b as f64).sum()
    };
    let analytic = reference::embedding_backward(&w, &id, vocab, hidden);
    let t64: Vec<f64> = table.iter().map(|&v| v as f64).collect();
    for i in 0..t64.len() {
        let h = 1e-2;
        let (mut up, mut down) = (t64.clone(), t64.clone());
        up[i] += h;
        down[i] -= h;
        let fd = (loss(&up) - loss(&down)) / (2.0 * h);
        assert!(
            (fd - analytic[i]).abs() < 1e-5,
            "element {i}: fd {fd}, analytic {}",
            analytic[i]
        );
    }
}
