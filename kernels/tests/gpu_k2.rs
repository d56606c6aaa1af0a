//! The row-wise and index-mapping ops on a real GPU at real shapes, against the same f64
//! references as the emulator tests. Each test prints `skipping: no CUDA driver/GPU present`
//! and returns where there is none.

mod common_k2;

use common_k2::{assert_close, bits, download, gpu_stream, poisoned, tol, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::argmax::argmax;
use kernels::cast::Element;
use kernels::cross_entropy::cross_entropy;
use kernels::embedding::{embedding, embedding_backward};
use kernels::layout::{heads_from_interleaved, kv_cache_append, transpose, PagedLayout};
use kernels::rope::{rope, rope_backward, Rope, RopeLayout};
use kernels::softmax::{softmax, softmax_backward, Mask};

fn softmax_at<T: Element>(s: &Stream, rows: usize, cols: usize, mask: Mask) {
    let mut rng = Rng::new(101);
    let (x, xs) = upload::<T>(s, &rng.vec(rows * cols, -6.0, 6.0));
    let mut y = poisoned::<T>(s, rows * cols);
    softmax(s, &x, &mut y, rows, cols, 0.3, mask).unwrap();
    let got = download(s, &y);
    let want = kernels::softmax::reference::softmax(&xs, rows, cols, 0.3, mask);
    assert_close(
        &format!("softmax {rows}×{cols}"),
        &got,
        &want,
        1e-7,
        tol::<T>(2e-5),
    );
    let first = bits(s, &y);
    softmax(s, &x, &mut y, rows, cols, 0.3, mask).unwrap();
    assert_eq!(bits(s, &y), first, "two runs are bit-identical");

    let (dy, dys) = upload::<T>(s, &rng.vec(rows * cols, -1.0, 1.0));
    let mut dx = poisoned::<T>(s, rows * cols);
    softmax_backward(s, &y, &dy, &mut dx, rows, cols, 0.3).unwrap();
    let want = kernels::softmax::reference::softmax_backward(&got, &dys, rows, cols, 0.3);
    assert_close(
        "softmax_backward",
        &download(s, &dx),
        &want,
        1e-6,
        tol::<T>(1e-4),
    );
}

#[test]
fn softmax_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    softmax_at::<f32>(&s, 64, 4096, Mask::None);
    softmax_at::<Bf16>(&s, 64, 4096, Mask::Causal { queries: 64 });
    softmax_at::<f32>(&s, 6, 32001, Mask::None);
    softmax_at::<Bf16>(&s, 3, 50000, Mask::Causal { queries: 3 });
}

fn rope_at<T: Element>(s: &Stream, layout: RopeLayout, rotary_dim: usize) {
    let (tokens, heads, head_dim) = (512, 32, 128);
    let n = tokens * heads * head_dim;
    let mut rng = Rng::new(102);
    let spec = Rope {
        layout,
        theta: 10000.0,
        rotary_dim,
    };
    let (x, xs) = upload::<T>(s, &rng.vec(n, -2.0, 2.0));
    let pos: Vec<u32> = (0..tokens).map(|_| rng.below(4096)).collect();
    let positions = Buffer::from_host(s, &pos).unwrap();
    let mut y = poisoned::<T>(s, n);
    rope(s, &x, &positions, &mut y, tokens, heads, head_dim, spec).unwrap();
    let want = kernels::rope::reference::rope(&xs, &pos, heads, head_dim, spec);
    // At positions up to 4095, f32 angles carry up to ~1.2e-3 rad of error (ex2.approx and
    // the f32 product), times |x| ≤ 2.
    assert_close("rope", &download(s, &y), &want, 5e-3, tol::<T>(1e-5));
    let mut dx = poisoned::<T>(s, n);
    rope_backward(s, &x, &positions, &mut dx, tokens, heads, head_dim, spec).unwrap();
    let want = kernels::rope::reference::rope_backward(&xs, &pos, heads, head_dim, spec);
    assert_close(
        "rope_backward",
        &download(s, &dx),
        &want,
        5e-3,
        tol::<T>(1e-5),
    );
}

#[test]
fn rope_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    rope_at::<f32>(&s, RopeLayout::NeoX, 128);
    rope_at::<Bf16>(&s, RopeLayout::NeoX, 64);
    rope_at::<f32>(&s, RopeLayout::Interleaved, 128);
    rope_at::<Bf16>(&s, RopeLayout::Interleaved, 96);
}

fn cross_entropy_at<T: Element>(s: &Stream, rows: usize, vocab: usize) {
    let mut rng = Rng::new(103);
    let (logits, held) = upload::<T>(s, &rng.vec(rows * vocab, -8.0, 8.0));
    let t: Vec<i32> = (0..rows)
        .map(|r| {
            if r % 5 == 2 {
                -100
            } else {
                rng.below(vocab as u32) as i32
            }
        })
        .collect();
    let tb = Buffer::from_host(s, &t).unwrap();
    let mut dlogits = poisoned::<T>(s, rows * vocab);
    let mut row_loss = poisoned::<f32>(s, rows);
    let mut loss = poisoned::<f32>(s, 2);
    cross_entropy(
        s,
        &logits,
        &tb,
        &mut dlogits,
        &mut row_loss,
        &mut loss,
        rows,
        vocab,
        -100,
    )
    .unwrap();
    let want = kernels::cross_entropy::reference(&held, &t, rows, vocab, -100);
    let got = download(s, &loss);
    assert_eq!(got[1], want.count as f32);
    assert_close("loss", &got[..1], &[want.loss], 1e-4, 1e-5);
    assert_close(
        "row_loss",
        &download(s, &row_loss),
        &want.row_loss,
        1e-4,
        1e-5,
    );
    assert_close(
        "dlogits",
        &download(s, &dlogits),
        &want.dlogits,
        1e-9,
        tol::<T>(1e-4),
    );
    let first = bits(s, &dlogits);
    cross_entropy(
        s,
        &logits,
        &tb,
        &mut dlogits,
        &mut row_loss,
        &mut loss,
        rows,
        vocab,
        -100,
    )
    .unwrap();
    assert_eq!(bits(s, &dlogits), first, "two runs are bit-identical");

    let mut index = Buffer::from_host(s, &vec![u32::MAX; rows]).unwrap();
    let mut ws = Buffer::<u32>::zeros(s, kernels::argmax::argmax_workspace(rows, vocab)).unwrap();
    argmax(s, &logits, &mut index, &mut ws, rows, vocab).unwrap();
    let want = kernels::argmax::reference(&held, rows, vocab);
    assert_eq!(index.to_host(s).unwrap(), want, "argmax");
    // A second call on the same workspace (its counters are back at zero).
    let mut again = Buffer::from_host(s, &vec![u32::MAX; rows]).unwrap();
    argmax(s, &logits, &mut again, &mut ws, rows, vocab).unwrap();
    assert_eq!(again.to_host(s).unwrap(), want, "argmax, second call");
}

#[test]
fn cross_entropy_and_argmax_match_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    cross_entropy_at::<Bf16>(&s, 32, 151936);
    cross_entropy_at::<f32>(&s, 16, 151936);
    cross_entropy_at::<f32>(&s, 16, 50257);
    cross_entropy_at::<Bf16>(&s, 8, 50257);
}

fn embedding_at<T: Element>(s: &Stream) {
    let (tokens, vocab, hidden) = (4096, 5000, 256);
    let mut rng = Rng::new(104);
    let (table, held) = upload::<T>(s, &rng.vec(vocab * hidden, -1.0, 1.0));
    let ids: Vec<u32> = (0..tokens).map(|_| rng.below(vocab as u32)).collect();
    let idb = Buffer::from_host(s, &ids).unwrap();
    let mut out = poisoned::<T>(s, tokens * hidden);
    embedding(s, &table, &idb, &mut out, tokens, vocab, hidden).unwrap();
    let want = kernels::embedding::reference::embedding(&held, &ids, vocab, hidden);
    assert_close("embedding", &download(s, &out), &want, 0.0, 0.0);
    let (dout, dheld) = upload::<T>(s, &rng.vec(tokens * hidden, -1.0, 1.0));
    let mut dtable = poisoned::<T>(s, vocab * hidden);
    embedding_backward(s, &dout, &idb, &mut dtable, tokens, vocab, hidden).unwrap();
    let want = kernels::embedding::reference::embedding_backward(&dheld, &ids, vocab, hidden);
    assert_close(
        "embedding_backward",
        &download(s, &dtable),
        &want,
        2e-2,
        tol::<T>(1e-5),
    );
    let first = bits(s, &dtable);
    embedding_backward(s, &dout, &idb, &mut dtable, tokens, vocab, hidden).unwrap();
    assert_eq!(bits(s, &dtable), first, "two runs are bit-identical");
}

#[test]
fn embedding_matches_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    embedding_at::<f32>(&s);
    embedding_at::<Bf16>(&s);
}

fn layout_at<T: Element>(s: &Stream) {
    let mut rng = Rng::new(105);
    let (tokens, heads, d) = (4096, 32, 128);
    let n = tokens * heads * d;
    let (x, xs) = upload::<T>(s, &rng.vec(n, -1.0, 1.0));
    let mut y = poisoned::<T>(s, n);
    heads_from_interleaved(s, &x, &mut y, tokens, heads, d).unwrap();
    let want: Vec<f64> = kernels::layout::reference::swap_outer(&xs, tokens, heads, d)
        .into_iter()
        .map(f64::from)
        .collect();
    assert_close("[S,H·D]→[H,S,D]", &download(s, &y), &want, 0.0, 0.0);

    let (rows, cols) = (1000, 3001);
    let (m, ms) = upload::<T>(s, &rng.vec(rows * cols, -1.0, 1.0));
    let mut mt = poisoned::<T>(s, rows * cols);
    transpose(s, &m, &mut mt, rows, cols).unwrap();
    let want: Vec<f64> = kernels::layout::reference::swap_outer(&ms, rows, cols, 1)
        .into_iter()
        .map(f64::from)
        .collect();
    assert_close("transpose", &download(s, &mt), &want, 0.0, 0.0);

    let layout = PagedLayout {
        num_blocks: 300,
        block_size: 16,
        width: 1024,
        seqs: 4,
        blocks_per_seq: 64,
    };
    let table: Vec<u32> = (0..256).map(|i| (i * 37 % 300) as u32).collect();
    let tokens = 1000;
    let seq_ids: Vec<u32> = (0..tokens).map(|t| (t % 4) as u32).collect();
    let positions: Vec<u32> = (0..tokens).map(|t| (t / 4) as u32).collect();
    let (cache0, cache_held) = upload::<T>(s, &rng.vec(layout.cache_len(), -1.0, 1.0));
    let mut cache = cache0;
    let (new, new_held) = upload::<T>(s, &rng.vec(tokens * layout.width, 2.0, 3.0));
    let (sb, pb, tb) = (
        Buffer::from_host(s, &seq_ids).unwrap(),
        Buffer::from_host(s, &positions).unwrap(),
        Buffer::from_host(s, &table).unwrap(),
    );
    kv_cache_append(s, &new, &sb, &pb, &tb, &mut cache, tokens, layout).unwrap();
    let want: Vec<f64> = kernels::layout::reference::kv_cache_append(
        &cache_held,
        &new_held,
        &seq_ids,
        &positions,
        &table,
        layout,
    )
    .into_iter()
    .map(f64::from)
    .collect();
    assert_close("kv_cache_append", &download(s, &cache), &want, 0.0, 0.0);
}

#[test]
fn layouts_match_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    layout_at::<f32>(&s);
    layout_at::<Bf16>(&s);
}
