//! The layout moves and the paged KV-cache append on the GPU at real shapes.

use crate::common_rowwise::{assert_close, download, gpu_stream, poisoned, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::cast::Element;
use kernels::layout::{heads_from_interleaved, kv_cache_append, transpose, PagedLayout};

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
