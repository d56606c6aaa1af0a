//! The layout moves and the paged KV-cache append on the GPU at real shapes, each against the
//! reference.

use crate::common_rowwise::{assert_close, download, gpu_stream, poisoned, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::layout::{
    heads_from_interleaved, interleaved_from_heads, kv_cache_append, transpose, PagedLayout,
};
use kernels::Float;

fn layout_at<T: Float>(s: &Stream) {
    let mut rng = Rng::new(105);
    // Llama-like heads (16-byte chunks) and an odd head size (one element at a time).
    for (tokens, heads, d) in [(4096, 32, 128), (1000, 7, 34)] {
        let n = tokens * heads * d;
        let (x, xs) = upload::<T>(s, &rng.vec(n, -1.0, 1.0));
        let mut y = poisoned::<T>(s, n);
        let mut back = poisoned::<T>(s, n);
        heads_from_interleaved(s, &x, &mut y, tokens, heads, d).unwrap();
        interleaved_from_heads(s, &y, &mut back, tokens, heads, d).unwrap();
        let want: Vec<f64> = kernels::layout::reference::swap_outer(&xs, tokens, heads, d)
            .into_iter()
            .map(f64::from)
            .collect();
        let what = format!("[S,H·D]→[H,S,D] {tokens}×{heads}×{d}");
        assert_close(&what, &download(s, &y), &want, 0.0, 0.0);
        let xs: Vec<f64> = xs.into_iter().map(f64::from).collect();
        assert_close(
            &format!("{what} and back"),
            &download(s, &back),
            &xs,
            0.0,
            0.0,
        );
    }

    // Odd sides (one element a lane) and even ones (bf16 pairs).
    for (rows, cols) in [(1000, 3001), (4096, 1026)] {
        let (m, ms) = upload::<T>(s, &rng.vec(rows * cols, -1.0, 1.0));
        let mut mt = poisoned::<T>(s, rows * cols);
        transpose(s, &m, &mut mt, rows, cols).unwrap();
        let want: Vec<f64> = kernels::layout::reference::swap_outer(&ms, rows, cols, 1)
            .into_iter()
            .map(f64::from)
            .collect();
        let what = format!("transpose {rows}×{cols}");
        assert_close(&what, &download(s, &mt), &want, 0.0, 0.0);
    }

    // A warp a row (1024) and a block a row (4099, one element at a time).
    for width in [1024, 4099] {
        let layout = PagedLayout {
            num_blocks: 300,
            block_size: 16,
            width,
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
        let what = format!("kv_cache_append width {width}");
        assert_close(&what, &download(s, &cache), &want, 0.0, 0.0);
    }
}

#[test]
fn layouts_match_reference_on_gpu() {
    let Some(s) = gpu_stream() else { return };
    layout_at::<f32>(&s);
    layout_at::<Bf16>(&s);
}
