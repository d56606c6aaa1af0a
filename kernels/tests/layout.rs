//! Layout ops on the emulator against the references: every element lands exactly.

mod common_rowwise;

use common_rowwise::{download, poisoned, stream, upload, Rng};
use kernel_runtime::{Bf16, Buffer};
use kernels::layout::{
    heads_from_interleaved, interleaved_from_heads, kv_cache_append, reference, transpose,
    PagedLayout,
};
use kernels::Error;
use kernels::Float;

fn assert_exact(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "{what}: element {i} is {g}, expected {w}"
        );
    }
}

fn heads_round_trip<T: Float>() {
    let s = stream();
    let mut rng = Rng::new(61);
    // Odd head sizes move one element at a time; 64 and 128 in 16-byte vectors, over one
    // block's tile (4 × 256 chunks) and several.
    let shapes = [
        (1, 1, 1),
        (3, 2, 7),
        (5, 3, 33),
        (2, 4, 64),
        (3, 1, 4097),
        (9, 33, 128),
    ];
    for &(tokens, heads, d) in &shapes {
        let n = tokens * heads * d;
        let (x, xs) = upload::<T>(&s, &rng.vec(n, -1.0, 1.0));
        let mut y = poisoned::<T>(&s, n);
        heads_from_interleaved(&s, &x, &mut y, tokens, heads, d).unwrap();
        let want = reference::swap_outer(&xs, tokens, heads, d);
        let what = format!("[S,H·D]→[H,S,D] {tokens}×{heads}×{d}");
        assert_exact(&what, &download(&s, &y), &want);
        let mut back = poisoned::<T>(&s, n);
        interleaved_from_heads(&s, &y, &mut back, tokens, heads, d).unwrap();
        assert_exact(&format!("{what} and back"), &download(&s, &back), &xs);
    }
}

#[test]
fn f32_head_layouts_swap_and_return() {
    heads_round_trip::<f32>();
}

#[test]
fn bf16_head_layouts_swap_and_return() {
    heads_round_trip::<Bf16>();
}

fn transposes<T: Float>() {
    let s = stream();
    let mut rng = Rng::new(62);
    // An odd side moves one element a lane; bf16 with both sides even moves pairs. Tiles are
    // 64 rows × 32 lanes' columns: partial ones at every edge.
    let shapes = [
        (1, 1),
        (3, 7),
        (33, 65),
        (1, 4097),
        (70, 3),
        (2, 2),
        (64, 130),
        (130, 66),
        (200, 96),
    ];
    for &(rows, cols) in &shapes {
        let (x, xs) = upload::<T>(&s, &rng.vec(rows * cols, -1.0, 1.0));
        let mut y = poisoned::<T>(&s, rows * cols);
        transpose(&s, &x, &mut y, rows, cols).unwrap();
        let want = reference::swap_outer(&xs, rows, cols, 1);
        assert_exact(
            &format!("transpose {rows}×{cols}"),
            &download(&s, &y),
            &want,
        );
    }
}

#[test]
fn f32_transpose_matches_reference() {
    transposes::<f32>();
}

#[test]
fn bf16_transpose_matches_reference() {
    transposes::<Bf16>();
}

fn appends<T: Float>() {
    let s = stream();
    let mut rng = Rng::new(63);
    // Narrow rows go a warp each; 1031 and 2056 are wider than a warp holds, a block each.
    for &(width, block_size) in &[(1, 1), (7, 3), (64, 16), (33, 4), (1031, 2), (2056, 3)] {
        let layout = PagedLayout {
            num_blocks: 9,
            block_size,
            width,
            seqs: 3,
            blocks_per_seq: 4,
        };
        // A shuffled block table with one entry past the cache (skipped by design).
        let mut table: Vec<u32> = (0..12).map(|i| (i * 5 % 9) as u32).collect();
        table[7] = 99;
        let tokens = 10;
        let seq_ids: Vec<u32> = (0..tokens).map(|t| (t % 4) as u32).collect(); // seq 3: none
        let positions: Vec<u32> = (0..tokens)
            .map(|t| (t as u32 * 3) % (4 * block_size as u32 + 2))
            .collect();
        let (cache, cache_held) = upload::<T>(&s, &rng.vec(layout.cache_len(), -1.0, 1.0));
        let mut cache = cache;
        let (new, new_held) = upload::<T>(&s, &rng.vec(tokens * width, 2.0, 3.0));
        let sb = Buffer::from_host(&s, &seq_ids).unwrap();
        let pb = Buffer::from_host(&s, &positions).unwrap();
        let tb = Buffer::from_host(&s, &table).unwrap();
        kv_cache_append(&s, &new, &sb, &pb, &tb, &mut cache, tokens, layout).unwrap();
        let want = reference::kv_cache_append(
            &cache_held,
            &new_held,
            &seq_ids,
            &positions,
            &table,
            layout,
        );
        assert_ne!(want, cache_held, "the test must move something");
        assert_exact(
            &format!("append w{width} b{block_size}"),
            &download(&s, &cache),
            &want,
        );
    }
}

#[test]
fn f32_kv_cache_append_lands_in_mapped_slots() {
    appends::<f32>();
}

#[test]
fn bf16_kv_cache_append_lands_in_mapped_slots() {
    appends::<Bf16>();
}

#[test]
fn mismatched_shapes_are_errors_before_launch() {
    let s = stream();
    let (x, _) = upload::<f32>(&s, &[1.0; 12]);
    let mut y = poisoned::<f32>(&s, 11);
    let err = transpose(&s, &x, &mut y, 3, 4).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "y",
                expected: 12,
                ..
            }
        ),
        "{err}"
    );
    let err = heads_from_interleaved(&s, &x, &mut y, 2, 2, 3).unwrap_err();
    assert!(matches!(err, Error::Length { buffer: "y", .. }), "{err}");
    let layout = PagedLayout {
        num_blocks: 2,
        block_size: 2,
        width: 3,
        seqs: 1,
        blocks_per_seq: 2,
    };
    let ids = Buffer::from_host(&s, &[0u32]).unwrap();
    let table = Buffer::from_host(&s, &[0u32]).unwrap();
    let (new, _) = upload::<f32>(&s, &[1.0; 3]);
    let mut cache = poisoned::<f32>(&s, 12);
    let err = kv_cache_append(&s, &new, &ids, &ids, &table, &mut cache, 1, layout).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "block_table",
                ..
            }
        ),
        "{err}"
    );
    assert!(download(&s, &cache).iter().all(|v| v.is_nan()));
}
