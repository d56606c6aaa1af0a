//! `rope_append` on the emulator: the same bits as `rope` on q and k, a cast of q, k and v to
//! the cache's type and two `kv_cache_append`s, for both layouts, partial rotary, GQA, every
//! cache type; tokens outside the layout append nothing; bad sizes refused before launch.

mod common_rowwise;

use common_rowwise::{bits, stream, Rng};
use kernel_runtime::{Bf16, Buffer, Stream, F16};
use kernels::attention::Heads;
use kernels::cast::cast;
use kernels::layout::{kv_cache_append, PagedLayout};
use kernels::rope::{rope, rope_append, Rope, RopeLayout};
use kernels::Error;
use kernels::Float;

/// (tokens, heads_q, heads_kv, head_dim, rotary_dim).
const SHAPES: &[(usize, usize, usize, usize, usize)] = &[
    (1, 1, 1, 2, 2),
    (3, 4, 2, 6, 6),
    (5, 2, 1, 8, 4),
    (2, 8, 1, 34, 34),
    (4, 2, 2, 64, 32),
];

struct Case {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    positions: Vec<u32>,
    seq_ids: Vec<u32>,
    table: Vec<u32>,
    layout: PagedLayout,
}

/// Sequences of up to 8 tokens in blocks of 4; the last token's sequence is outside the
/// table, and one table entry points past the cache, so both append nothing.
fn case(rng: &mut Rng, tokens: usize, heads: Heads) -> Case {
    let layout = PagedLayout {
        num_blocks: 5,
        block_size: 4,
        width: heads.kv * heads.dim,
        seqs: 3,
        blocks_per_seq: 2,
    };
    let table = vec![4, 0, 2, 9, 1, 3];
    let seq_ids: Vec<u32> = (0..tokens)
        .map(|t| {
            if t + 1 == tokens && tokens > 1 {
                7
            } else {
                (t % 3) as u32
            }
        })
        .collect();
    let positions: Vec<u32> = (0..tokens).map(|t| (t as u32 * 3 + 1) % 8).collect();
    let nq = tokens * heads.q * heads.dim;
    let nkv = tokens * heads.kv * heads.dim;
    Case {
        q: rng.vec(nq, -2.0, 2.0),
        k: rng.vec(nkv, -2.0, 2.0),
        v: rng.vec(nkv, -2.0, 2.0),
        positions,
        seq_ids,
        table,
        layout,
    }
}

fn host<T: kernel_runtime::Element>(s: &Stream, v: &[T]) -> Buffer<T> {
    Buffer::from_host(s, v).unwrap()
}

fn source<S: Float>(s: &Stream, v: &[f32]) -> Buffer<S> {
    host(s, &v.iter().map(|&x| S::from_f32(x)).collect::<Vec<_>>())
}

/// The fused op and the five it replaces, on the same inputs: every output bit for bit.
fn fused_matches_the_separate_ops<S: Float, T: Float>() {
    let s = stream();
    let mut rng = Rng::new(77);
    for layout in [RopeLayout::NeoX, RopeLayout::Interleaved] {
        for &(tokens, hq, hkv, dim, rotary_dim) in SHAPES {
            let heads = Heads {
                q: hq,
                kv: hkv,
                dim,
            };
            let spec = Rope {
                layout,
                theta: 10000.0,
                rotary_dim,
            };
            let c = case(&mut rng, tokens, heads);
            let (q, k, v) = (
                source::<S>(&s, &c.q),
                source::<S>(&s, &c.k),
                source::<S>(&s, &c.v),
            );
            let positions = host(&s, &c.positions);
            let seq_ids = host(&s, &c.seq_ids);
            let table = host(&s, &c.table);
            let filler: Vec<f32> = (0..c.layout.cache_len()).map(|i| i as f32 * 0.25).collect();
            let cache0: Buffer<f32> = host(&s, &filler);
            let fresh = |s: &Stream| {
                let mut b = Buffer::<T>::zeros(s, c.layout.cache_len()).unwrap();
                cast(s, &cache0, &mut b).unwrap();
                b
            };

            let mut q_out = Buffer::<T>::zeros(&s, c.q.len()).unwrap();
            let (mut kc, mut vc) = (fresh(&s), fresh(&s));
            rope_append(
                &s,
                [&q, &k, &v],
                &positions,
                &seq_ids,
                &table,
                &mut q_out,
                [&mut kc, &mut vc],
                tokens,
                heads,
                spec,
                c.layout,
            )
            .unwrap();

            let mut q_rot = Buffer::<S>::zeros(&s, c.q.len()).unwrap();
            let mut k_rot = Buffer::<S>::zeros(&s, c.k.len()).unwrap();
            rope(&s, &q, &positions, &mut q_rot, tokens, hq, dim, spec).unwrap();
            rope(&s, &k, &positions, &mut k_rot, tokens, hkv, dim, spec).unwrap();
            // The separate path rotates in f32 and rounds to S first; the fused op rounds
            // once, to T. They agree bit for bit where S is f32.
            let widen = |b: &Buffer<S>| -> Buffer<f32> {
                let mut w = Buffer::<f32>::zeros(&s, b.len()).unwrap();
                cast(&s, b, &mut w).unwrap();
                w
            };
            let narrow = |b: &Buffer<f32>| -> Buffer<T> {
                let mut n = Buffer::<T>::zeros(&s, b.len()).unwrap();
                cast(&s, b, &mut n).unwrap();
                n
            };
            let (qb, kb, vb) = (
                narrow(&widen(&q_rot)),
                narrow(&widen(&k_rot)),
                narrow(&widen(&v)),
            );
            let (mut kc2, mut vc2) = (fresh(&s), fresh(&s));
            kv_cache_append(
                &s, &kb, &seq_ids, &positions, &table, &mut kc2, tokens, c.layout,
            )
            .unwrap();
            kv_cache_append(
                &s, &vb, &seq_ids, &positions, &table, &mut vc2, tokens, c.layout,
            )
            .unwrap();
            let what = format!("{layout:?} {tokens}×{hq}/{hkv}×{dim} rotary {rotary_dim}");
            // Rounding to S and then to T is rounding to T where S is f32 or S is T.
            assert_eq!(widened(&s, &q_out), widened(&s, &qb), "q {what}");
            assert_eq!(widened(&s, &kc), widened(&s, &kc2), "k cache {what}");
            assert_eq!(widened(&s, &vc), widened(&s, &vc2), "v cache {what}");
        }
    }
}

/// The f32 bits of each element (widening bf16 and f16 is exact and one to one).
fn widened<T: Float>(s: &Stream, b: &Buffer<T>) -> Vec<u32> {
    let mut w = Buffer::<f32>::zeros(s, b.len()).unwrap();
    cast(s, b, &mut w).unwrap();
    bits(s, &w)
}

#[test]
fn rope_append_matches_rope_cast_and_append_from_f32() {
    fused_matches_the_separate_ops::<f32, Bf16>();
    fused_matches_the_separate_ops::<f32, F16>();
    fused_matches_the_separate_ops::<f32, f32>();
}

#[test]
fn rope_append_matches_rope_cast_and_append_from_bf16() {
    fused_matches_the_separate_ops::<Bf16, Bf16>();
}

#[test]
fn rope_append_refuses_mismatched_sizes_before_launch() {
    let s = stream();
    let heads = Heads {
        q: 2,
        kv: 1,
        dim: 4,
    };
    let layout = PagedLayout {
        num_blocks: 2,
        block_size: 2,
        width: 4,
        seqs: 1,
        blocks_per_seq: 2,
    };
    let spec = Rope {
        layout: RopeLayout::NeoX,
        theta: 10000.0,
        rotary_dim: 4,
    };
    let q = Buffer::<f32>::zeros(&s, 8).unwrap();
    let kv = Buffer::<f32>::zeros(&s, 4).unwrap();
    let one = Buffer::<u32>::zeros(&s, 1).unwrap();
    let table = Buffer::<u32>::zeros(&s, 2).unwrap();
    let poison = Bf16::from_f32(9.0);
    let mut q_out = Buffer::from_host(&s, &[poison; 8]).unwrap();
    let mut kc = Buffer::from_host(&s, &[poison; 16]).unwrap();
    let mut vc = Buffer::from_host(&s, &[poison; 16]).unwrap();
    let mut run = |layout: PagedLayout, heads: Heads, spec: Rope, k: &Buffer<f32>| {
        rope_append(
            &s,
            [&q, k, &kv],
            &one,
            &one,
            &table,
            &mut q_out,
            [&mut kc, &mut vc],
            1,
            heads,
            spec,
            layout,
        )
    };
    let short = Buffer::<f32>::zeros(&s, 3).unwrap();
    let err = run(layout, heads, spec, &short).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "k",
                expected: 4,
                actual: 3,
                ..
            }
        ),
        "{err}"
    );
    let wide = PagedLayout { width: 8, ..layout };
    assert!(run(wide, heads, spec, &kv)
        .unwrap_err()
        .to_string()
        .contains("heads.kv × heads.dim"));
    let odd = Rope {
        rotary_dim: 3,
        ..spec
    };
    assert!(run(layout, heads, odd, &kv)
        .unwrap_err()
        .to_string()
        .contains("odd"));
    let nothing = Heads { kv: 0, ..heads };
    assert!(run(layout, nothing, spec, &kv).is_err());
    for b in [&q_out, &kc, &vc] {
        assert!(
            b.to_host(&s).unwrap().iter().all(|&x| x == poison),
            "written on error"
        );
    }
}
