//! Paged decode attention on the emulator against `attention::reference::decode`.
//!
//! Tolerance: the reference runs in f64 on the very values the kernel reads (the rounded bf16
//! or f16 inputs), so what remains is f32 accumulation, `ex2.approx` (a couple of f32 ulp) and
//! the final rounding of `o` to 16 bits. Outputs are convex combinations of values in [-1, 1],
//! so that rounding is at most half an ulp at 1: 2^-9 for bf16, 2^-12 for f16; the tolerances
//! are twice that.

use kernel_runtime::{Bf16, Buffer, Device, Stream, F16};
use kernels::attention::{
    decode_splits, paged_decode, paged_decode_workspace, reference, Decode, HalfElement, Heads,
};
use kernels::layout::{kv_cache_append, PagedLayout};
use kernels::Error;

fn stream() -> Stream {
    Device::emulator().stream().unwrap()
}

/// A seeded xorshift generator of values in [-1, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
    /// A permutation of `0..n`.
    fn shuffled(&mut self, n: usize) -> Vec<u32> {
        let mut v: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            let j = (self.0 % (i as u64 + 1)) as usize;
            self.next();
            v.swap(i, j);
        }
        v
    }
}

fn tolerance<T: HalfElement>() -> f64 {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<Bf16>() {
        4e-3
    } else {
        5e-4
    }
}

/// Device buffer of `x` rounded to `T`, and the rounded values in f64.
fn upload<T: HalfElement>(s: &Stream, x: &[f32]) -> (Buffer<T>, Vec<f64>) {
    let t: Vec<T> = x.iter().map(|&v| T::from_f32(v)).collect();
    let back = t.iter().map(|v| v.to_f32() as f64).collect();
    (Buffer::from_host(s, &t).unwrap(), back)
}

fn download<T: HalfElement>(s: &Stream, b: &Buffer<T>) -> Vec<f64> {
    b.to_host(s)
        .unwrap()
        .iter()
        .map(|v| v.to_f32() as f64)
        .collect()
}

/// A decode problem: a ragged batch in a shuffled paged cache.
struct Case<T: HalfElement> {
    layout: PagedLayout,
    decode: Decode,
    q: Buffer<T>,
    k: Buffer<T>,
    v: Buffer<T>,
    table: Buffer<u32>,
    lens: Buffer<u32>,
    want: Vec<f64>,
}

fn case<T: HalfElement>(
    s: &Stream,
    seed: u64,
    heads: Heads,
    lens: &[u32],
    block_size: usize,
    new: usize,
) -> Case<T> {
    let mut rng = Rng(seed);
    let max_len = *lens.iter().max().unwrap() as usize;
    let per_seq = max_len.div_ceil(block_size).max(1);
    let seqs = lens.len();
    let layout = PagedLayout {
        num_blocks: seqs * per_seq + 1,
        block_size,
        width: heads.kv * heads.dim,
        seqs,
        blocks_per_seq: per_seq,
    };
    let table_host: Vec<u32> = rng.shuffled(layout.num_blocks)[..seqs * per_seq].to_vec();
    let (q, qs) = upload::<T>(s, &rng.vec(seqs * new * heads.q * heads.dim));
    let (k, ks) = upload::<T>(s, &rng.vec(layout.cache_len()));
    let (v, vs) = upload::<T>(s, &rng.vec(layout.cache_len()));
    let scale = 1.0 / (heads.dim as f32).sqrt();
    let want = reference::decode(
        &qs,
        &ks,
        &vs,
        &table_host,
        lens,
        layout,
        heads,
        new,
        scale as f64,
    );
    Case {
        layout,
        decode: Decode {
            heads,
            scale,
            new,
            max_len,
            splits: 1,
        },
        q,
        k,
        v,
        table: Buffer::from_host(s, &table_host).unwrap(),
        lens: Buffer::from_host(s, lens).unwrap(),
        want,
    }
}

fn run<T: HalfElement>(s: &Stream, c: &Case<T>, splits: usize) -> Vec<f64> {
    let decode = Decode { splits, ..c.decode };
    let n = c.want.len();
    let mut o = Buffer::from_host(s, &vec![T::from_f32(f32::NAN); n]).unwrap();
    let ws = paged_decode_workspace(c.layout.seqs, decode).unwrap();
    let mut workspace = Buffer::from_host(s, &vec![f32::NAN; ws.max(1)]).unwrap();
    paged_decode(
        s,
        &c.q,
        &c.k,
        &c.v,
        &c.table,
        &c.lens,
        c.layout,
        decode,
        &mut workspace,
        &mut o,
    )
    .unwrap();
    download(s, &o)
}

fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol,
            "{what}: element {i} is {g}, expected {w}"
        );
    }
}

/// Decodes the case unsplit and with `splits`, checks both against the reference, the split
/// result against the unsplit one, and that a rerun is bit-identical.
fn check_case<T: HalfElement>(s: &Stream, what: &str, c: &Case<T>, splits: usize) {
    let tol = tolerance::<T>();
    let one = run(s, c, 1);
    assert_close(&format!("{what}, unsplit"), &one, &c.want, tol);
    let many = run(s, c, splits);
    assert_close(&format!("{what}, {splits} splits"), &many, &c.want, tol);
    assert_close(&format!("{what}, split vs unsplit"), &many, &one, 2.0 * tol);
    let again = run(s, c, splits);
    assert!(
        again
            .iter()
            .zip(&many)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "{what}: a rerun differs"
    );
}

const RAGGED: [u32; 4] = [1, 7, 33, 257];

#[test]
fn bf16_gqa4_head64_pages16_matches_reference() {
    let heads = Heads {
        q: 4,
        kv: 1,
        dim: 64,
    };
    let s = stream();
    let c = case::<Bf16>(&s, 3, heads, &RAGGED, 16, 1);
    check_case(&s, "bf16 4/1 d64 pages 16 new 1", &c, 3);
}

#[test]
fn f16_mha_head128_odd_pages_two_new_tokens_matches_reference() {
    let heads = Heads {
        q: 2,
        kv: 2,
        dim: 128,
    };
    let s = stream();
    let c = case::<F16>(&s, 5, heads, &[2, 7, 33, 257], 5, 2);
    check_case(&s, "f16 2/2 d128 pages 5 new 2", &c, 4);
}

#[test]
fn bf16_gqa8_head256_pages32_two_new_tokens_matches_reference() {
    // Sixteen query rows per kv head: two tiles of eight.
    let heads = Heads {
        q: 8,
        kv: 1,
        dim: 256,
    };
    let s = stream();
    let c = case::<Bf16>(&s, 7, heads, &[7, 33, 257, 2], 32, 2);
    check_case(&s, "bf16 8/1 d256 pages 32 new 2", &c, 2);
}

#[test]
fn f16_gqa4_head64_pages64_matches_reference() {
    let heads = Heads {
        q: 8,
        kv: 2,
        dim: 64,
    };
    let s = stream();
    let c = case::<F16>(&s, 11, heads, &RAGGED, 64, 1);
    check_case(&s, "f16 8/2 d64 pages 64 new 1", &c, 5);
}

/// Sequences of length 0 or shorter than `new` attend nothing: their rows are zeros, and the
/// other sequences are unaffected.
#[test]
fn short_sequences_give_zero_rows() {
    let s = stream();
    let heads = Heads {
        q: 2,
        kv: 1,
        dim: 64,
    };
    // The reference over lengths 2 and 2 in their place gives the other rows; the device
    // sees lengths 0 and 1.
    let mut c = case::<Bf16>(&s, 13, heads, &[2, 9, 2, 40], 16, 2);
    c.lens = Buffer::from_host(&s, &[0u32, 9, 1, 40]).unwrap();
    let row = 2 * heads.q * heads.dim;
    for seq in [0, 2] {
        c.want[seq * row..(seq + 1) * row].fill(0.0);
    }
    for splits in [1, 3] {
        let got = run(&s, &c, splits);
        assert_close("short sequences", &got, &c.want, tolerance::<Bf16>());
    }
}

/// Table entries past a sequence's length may name any block: the decode never reads them.
/// Every cache row that no attended position maps to holds NaN, which would reach the output
/// through a zero probability times a NaN value.
#[test]
fn positions_past_a_sequence_are_never_read() {
    let s = stream();
    let heads = Heads {
        q: 8,
        kv: 2,
        dim: 128,
    };
    let block_size = 16;
    let mut c = case::<F16>(&s, 29, heads, &RAGGED, block_size, 1);
    let table = c.table.to_host(&s).unwrap();
    let per_seq = c.layout.blocks_per_seq;
    let mut attended = vec![false; c.layout.num_blocks * block_size];
    for (seq, &len) in RAGGED.iter().enumerate() {
        for pos in 0..len as usize {
            let block = table[seq * per_seq + pos / block_size] as usize;
            attended[block * block_size + pos % block_size] = true;
        }
    }
    assert!(
        attended.iter().any(|&a| !a),
        "the case has rows nobody attends"
    );
    let width = c.layout.width;
    let poison = |b: &Buffer<F16>| {
        let mut x = b.to_host(&s).unwrap();
        for (row, &a) in attended.iter().enumerate() {
            if !a {
                x[row * width..(row + 1) * width].fill(F16::from_f32(f32::NAN));
            }
        }
        Buffer::from_host(&s, &x).unwrap()
    };
    c.k = poison(&c.k);
    c.v = poison(&c.v);
    check_case(&s, "NaN past each length", &c, 3);
}

/// Keys and values appended with `kv_cache_append` (f16 included) decode as the reference
/// over the same rows.
#[test]
fn decodes_a_cache_filled_by_kv_cache_append() {
    let s = stream();
    let heads = Heads {
        q: 4,
        kv: 2,
        dim: 64,
    };
    let lens = [20u32, 3];
    let (block_size, per_seq) = (8, 3);
    let layout = PagedLayout {
        num_blocks: 6,
        block_size,
        width: heads.kv * heads.dim,
        seqs: 2,
        blocks_per_seq: per_seq,
    };
    let table_host = [4u32, 1, 5, 0, 3, 2];
    let mut rng = Rng(17);
    let tokens = (lens[0] + lens[1]) as usize;
    let seq_ids: Vec<u32> = (0..tokens).map(|t| (t >= 20) as u32).collect();
    let positions: Vec<u32> = (0..tokens as u32)
        .map(|t| if t < 20 { t } else { t - 20 })
        .collect();
    let (knew, ks) = upload::<F16>(&s, &rng.vec(tokens * layout.width));
    let (vnew, vs) = upload::<F16>(&s, &rng.vec(tokens * layout.width));
    let seq_ids = Buffer::from_host(&s, &seq_ids).unwrap();
    let positions = Buffer::from_host(&s, &positions).unwrap();
    let table = Buffer::from_host(&s, &table_host).unwrap();
    let mut kc = Buffer::<F16>::zeros(&s, layout.cache_len()).unwrap();
    let mut vc = Buffer::<F16>::zeros(&s, layout.cache_len()).unwrap();
    kv_cache_append(
        &s, &knew, &seq_ids, &positions, &table, &mut kc, tokens, layout,
    )
    .unwrap();
    kv_cache_append(
        &s, &vnew, &seq_ids, &positions, &table, &mut vc, tokens, layout,
    )
    .unwrap();
    // The rows the append wrote, placed by hand.
    let mut kh = vec![0.0; layout.cache_len()];
    let mut vh = vec![0.0; layout.cache_len()];
    for t in 0..tokens {
        let (seq, pos) = ((t >= 20) as usize, if t < 20 { t } else { t - 20 });
        let block = table_host[seq * per_seq + pos / block_size] as usize;
        let at = (block * block_size + pos % block_size) * layout.width;
        kh[at..at + layout.width].copy_from_slice(&ks[t * layout.width..][..layout.width]);
        vh[at..at + layout.width].copy_from_slice(&vs[t * layout.width..][..layout.width]);
    }
    assert_close("appended keys", &download(&s, &kc), &kh, 0.0);
    let (q, qs) = upload::<F16>(&s, &rng.vec(2 * heads.q * heads.dim));
    let want = reference::decode(&qs, &kh, &vh, &table_host, &lens, layout, heads, 1, 0.125);
    let decode = Decode {
        heads,
        scale: 0.125,
        new: 1,
        max_len: 24,
        splits: 1,
    };
    let lens = Buffer::from_host(&s, &lens).unwrap();
    let mut o = Buffer::<F16>::zeros(&s, want.len()).unwrap();
    let mut ws = Buffer::<f32>::zeros(&s, 1).unwrap();
    paged_decode(
        &s, &q, &kc, &vc, &table, &lens, layout, decode, &mut ws, &mut o,
    )
    .unwrap();
    assert_close(
        "appended cache",
        &download(&s, &o),
        &want,
        tolerance::<F16>(),
    );
}

/// The split chooser splits a lone long sequence and leaves a full batch alone.
#[test]
fn decode_splits_fills_the_device() {
    let heads = Heads {
        q: 32,
        kv: 8,
        dim: 128,
    };
    let one = decode_splits(1, heads, 8192, 132);
    assert!((16..=32).contains(&one), "{one}");
    assert_eq!(decode_splits(64, heads, 2048, 132), 1);
    assert_eq!(decode_splits(4, heads, 0, 132), 1);
}

fn bad<T: HalfElement>(
    s: &Stream,
    c: &Case<T>,
    layout: PagedLayout,
    decode: Decode,
    o_len: usize,
) -> Error {
    let mut o = Buffer::from_host(s, &vec![T::from_f32(3.0); o_len]).unwrap();
    let mut ws = Buffer::from_host(s, &vec![5.0f32; 64]).unwrap();
    let err = paged_decode(
        s, &c.q, &c.k, &c.v, &c.table, &c.lens, layout, decode, &mut ws, &mut o,
    )
    .unwrap_err();
    // Nothing written.
    assert!(download(s, &o).iter().all(|&x| x == 3.0));
    assert!(ws.to_host(s).unwrap().iter().all(|&x| x == 5.0));
    err
}

/// Every bad shape is a typed error before launch, and leaves `o` and the workspace alone.
#[test]
fn bad_shapes_are_typed_errors_and_write_nothing() {
    let s = stream();
    let heads = Heads {
        q: 4,
        kv: 2,
        dim: 64,
    };
    let c = case::<Bf16>(&s, 19, heads, &[5, 9], 4, 1);
    let (l, d, n) = (c.layout, c.decode, c.want.len());
    let unsupported = |e: Error, needle: &str| match e {
        Error::Unsupported { detail, .. } => assert!(detail.contains(needle), "{detail}"),
        other => panic!("expected Unsupported ({needle}), got {other}"),
    };
    let length = |e: Error, buffer: &str| match e {
        Error::Length { buffer: b, .. } => assert_eq!(b, buffer),
        other => panic!("expected a length error for {buffer}, got {other}"),
    };
    let dims = Heads { dim: 96, ..heads };
    unsupported(
        bad(&s, &c, l, Decode { heads: dims, ..d }, n),
        "head dim 96",
    );
    let ratio = Heads { q: 3, ..heads };
    unsupported(
        bad(&s, &c, l, Decode { heads: ratio, ..d }, n),
        "query heads",
    );
    let wide = PagedLayout { width: 64, ..l };
    unsupported(bad(&s, &c, wide, d, n), "width");
    unsupported(bad(&s, &c, l, Decode { new: 0, ..d }, n), "new is 0");
    unsupported(bad(&s, &c, l, Decode { splits: 0, ..d }, n), "splits is 0");
    unsupported(bad(&s, &c, l, Decode { max_len: 13, ..d }, n), "max_len 13");
    let huge = Decode {
        max_len: usize::MAX / 2,
        ..d
    };
    let roomy = PagedLayout {
        blocks_per_seq: usize::MAX / 8,
        ..l
    };
    assert!(matches!(
        bad(&s, &c, roomy, huge, n),
        Error::Unsupported { .. } | Error::Length { .. }
    ));
    length(bad(&s, &c, l, d, n + 1), "o");
    length(bad(&s, &c, l, Decode { new: 2, ..d }, n), "q");
    let more = PagedLayout { num_blocks: 6, ..l };
    length(bad(&s, &c, more, d, n), "k_cache");
    let longer = PagedLayout {
        blocks_per_seq: 4,
        ..l
    };
    length(bad(&s, &c, longer, d, n), "block_table");
    // 64 workspace elements are too few for 8 splits of 8 rows of 65.
    length(bad(&s, &c, l, Decode { splits: 8, ..d }, n), "workspace");
}
