//! Paged decode attention on the GPU at real shapes: a ragged batch of 16 sequences up to 8192
//! tokens, 32 query heads over 8 kv heads of 128, bf16 caches in shuffled pages of 16 and 64,
//! unsplit and split, against the reference; reruns are bit-identical.

use crate::common_rowwise::{assert_close, bits, download, gpu_stream, poisoned, upload, Rng};
use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::attention::{decode_splits, paged_decode, paged_decode_workspace, reference};
use kernels::attention::{Decode, Heads};
use kernels::layout::PagedLayout;

/// A permutation of `0..n`.
fn shuffled(rng: &mut Rng, n: usize) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        v.swap(i, rng.below(i as u32 + 1) as usize);
    }
    v
}

fn decode_at(s: &Stream, block_size: usize) {
    let mut rng = Rng::new(211 + block_size as u64);
    let heads = Heads {
        q: 32,
        kv: 8,
        dim: 128,
    };
    let lens: Vec<u32> = vec![
        8192, 1, 7, 33, 257, 1000, 2048, 16, 17, 63, 64, 65, 500, 129, 3000, 4095,
    ];
    let seqs = lens.len();
    let max_len = 8192;
    let per_seq = max_len / block_size;
    let used: usize = lens
        .iter()
        .map(|&l| (l as usize).div_ceil(block_size))
        .sum();
    // The pages a sequence does not reach point at blocks nobody fills: a decode must not read
    // them, so they hold NaNs.
    let num_blocks = used + 1;
    let layout = PagedLayout {
        num_blocks,
        block_size,
        width: heads.kv * heads.dim,
        seqs,
        blocks_per_seq: per_seq,
    };
    let order = shuffled(&mut rng, used);
    let mut table = vec![used as u32; seqs * per_seq];
    let mut next = 0;
    for (seq, &len) in lens.iter().enumerate() {
        for b in 0..(len as usize).div_ceil(block_size) {
            table[seq * per_seq + b] = order[next];
            next += 1;
        }
    }
    let cache = |rng: &mut Rng| {
        let mut x = rng.vec(layout.cache_len(), -1.0, 1.0);
        let tail = used * block_size * layout.width;
        x[tail..].fill(f32::NAN);
        upload::<Bf16>(s, &x)
    };
    let (k, ks) = cache(&mut rng);
    let (v, vs) = cache(&mut rng);
    let (q, qs) = upload::<Bf16>(s, &rng.vec(seqs * heads.q * heads.dim, -1.0, 1.0));
    let f64s = |x: Vec<f32>| -> Vec<f64> { x.into_iter().map(f64::from).collect() };
    let scale = 1.0 / (heads.dim as f32).sqrt();
    let want = reference::decode(
        &f64s(qs),
        &f64s(ks),
        &f64s(vs),
        &table,
        &lens,
        layout,
        heads,
        1,
        scale as f64,
    );
    let table = Buffer::from_host(s, &table).unwrap();
    let lens = Buffer::from_host(s, &lens).unwrap();
    let sms = s.device().props().sm_count as usize;
    for splits in [1, 4, decode_splits(seqs, heads, max_len, sms)] {
        let decode = Decode {
            heads,
            scale,
            new: 1,
            max_len,
            splits,
        };
        let ws = paged_decode_workspace(seqs, decode).unwrap();
        let mut workspace = Buffer::<f32>::zeros(s, ws.max(1)).unwrap();
        let mut o = poisoned::<Bf16>(s, want.len());
        let mut run = |o: &mut Buffer<Bf16>| {
            paged_decode(
                s,
                &q,
                &k,
                &v,
                &table,
                &lens,
                layout,
                decode,
                &mut workspace,
                o,
            )
            .unwrap()
        };
        run(&mut o);
        // Convex combinations of values in [-1, 1], rounded once to bf16.
        let what = format!("pages of {block_size}, {splits} splits");
        assert_close(&what, &download(s, &o), &want, 4e-3, 0.0);
        let first = bits(s, &o);
        run(&mut o);
        assert_eq!(first, bits(s, &o), "{what}: a rerun differs");
    }
}

#[test]
fn paged_decode_matches_reference_at_real_shapes() {
    let Some(s) = gpu_stream() else { return };
    decode_at(&s, 16);
    decode_at(&s, 64);
}
