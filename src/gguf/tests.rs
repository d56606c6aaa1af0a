//! The reader and writer: round trips, a battery of malformed files each refused with its
//! error, and mutated files that must never panic.

use super::*;

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A file with every value type, a nested array and tensors of three types.
fn sample() -> GgufWriter {
    let mut w = GgufWriter::new();
    let kv: Vec<(&str, Value)> = vec![
        ("general.architecture", "llama".into()),
        ("general.alignment", Value::U32(32)),
        ("u8", Value::U8(200)),
        ("i8", Value::I8(-5)),
        ("u16", Value::U16(60000)),
        ("i16", Value::I16(-30000)),
        ("u32", Value::U32(4_000_000_000)),
        ("i32", Value::I32(-2_000_000_000)),
        ("f32", Value::F32(1.5)),
        ("bool", Value::Bool(true)),
        ("u64", Value::U64(u64::MAX)),
        ("i64", Value::I64(i64::MIN)),
        ("f64", Value::F64(-0.25)),
        (
            "strings",
            Value::Array(
                ValueType::String,
                vec!["x".into(), "".into(), "héllo".into()],
            ),
        ),
        (
            "nested",
            Value::Array(
                ValueType::Array,
                vec![
                    Value::Array(ValueType::I32, vec![Value::I32(1), Value::I32(-2)]),
                    Value::Array(ValueType::I32, vec![]),
                ],
            ),
        ),
        ("empty", Value::Array(ValueType::F32, vec![])),
    ];
    for (k, v) in kv {
        w.set(k, v).unwrap();
    }
    w.add_tensor(
        "norm",
        &[5],
        TensorType::F32,
        f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0]),
    )
    .unwrap();
    let q8: Vec<u8> = (0..3 * 2 * 34).map(|i| (i * 7) as u8).collect();
    w.add_tensor("q8", &[64, 3], TensorType::Q8_0, q8).unwrap();
    let q4: Vec<u8> = (0..2 * 144).map(|i| (i * 13 + 1) as u8).collect();
    w.add_tensor("q4", &[256, 1, 2], TensorType::Q4K, q4)
        .unwrap();
    w
}

#[test]
fn a_written_file_reads_back_with_every_value_and_writes_the_same_bytes() {
    let w = sample();
    let bytes = w.to_bytes().unwrap();
    let file = Gguf::parse(bytes.clone()).unwrap();
    assert_eq!(file.version(), 3);
    assert_eq!(file.metadata().len(), 16);
    assert_eq!(file.get("i64"), Some(&Value::I64(i64::MIN)));
    assert_eq!(file.get("u16"), Some(&Value::U16(60000)));
    assert_eq!(
        file.get("strings"),
        Some(&Value::Array(
            ValueType::String,
            vec!["x".into(), "".into(), "héllo".into()]
        ))
    );
    let q4 = file.tensor("q4").unwrap();
    assert_eq!(
        (q4.shape.clone(), q4.ty, q4.offset % 32),
        (vec![256, 1, 2], TensorType::Q4K, 0)
    );
    assert_eq!(
        file.tensor_data("norm").unwrap(),
        f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0])
    );
    let q8: Vec<u8> = (0..3 * 2 * 34).map(|i| (i * 7) as u8).collect();
    assert_eq!(file.tensor_data("q8").unwrap(), &q8[..]);
    assert_eq!(
        GgufWriter::from_file(&file).unwrap().to_bytes().unwrap(),
        bytes
    );
}

#[test]
fn tensors_start_at_aligned_offsets_in_the_order_added() {
    let file = Gguf::parse(sample().to_bytes().unwrap()).unwrap();
    let offsets: Vec<u64> = file.tensors().iter().map(|t| t.offset).collect();
    // 20 bytes of f32 padded to 32, then 204 bytes of q8_0 padded to 224.
    assert_eq!(offsets, vec![0, 32, 256]);
    assert_eq!(file.data_start % 32, 0);
}

/// The byte offsets of a file's parts, found by writing it in pieces.
struct Layout {
    bytes: Vec<u8>,
    /// Where the first tensor info starts.
    tensor_infos: usize,
    data_start: usize,
}

fn layout() -> Layout {
    let bytes = sample().to_bytes().unwrap();
    let file = Gguf::parse(bytes.clone()).unwrap();
    // The infos are `name len, name, dims, ne…, type, offset` each; the first is "norm".
    let needle = [&4u64.to_le_bytes()[..], b"norm"].concat();
    let tensor_infos = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    Layout {
        data_start: file.data_start,
        bytes,
        tensor_infos,
    }
}

fn refuse(bytes: Vec<u8>) -> GgufError {
    Gguf::parse(bytes).expect_err("a malformed file must be refused")
}

#[test]
fn a_file_truncated_anywhere_is_refused_as_truncated_or_out_of_file() {
    let l = layout();
    for cut in 0..l.bytes.len() {
        match refuse(l.bytes[..cut].to_vec()) {
            GgufError::Truncated { .. } | GgufError::CountTooLarge { .. } => {
                assert!(cut <= l.data_start, "cut at {cut}")
            }
            GgufError::TensorOutOfFile { .. } => assert!(cut >= l.tensor_infos, "cut at {cut}"),
            e => panic!("cut at {cut}: unexpected {e}"),
        }
    }
}

#[test]
fn a_bad_magic_or_version_is_refused() {
    let mut b = layout().bytes;
    b[0] = b'X';
    assert!(matches!(refuse(b.clone()), GgufError::BadMagic { found } if &found == b"XGUF"));
    b[0] = b'G';
    b[4] = 2;
    assert!(matches!(refuse(b), GgufError::UnsupportedVersion(2)));
}

#[test]
fn huge_counts_are_refused_before_allocating() {
    let b = layout().bytes;
    let mut tensors = b.clone();
    tensors[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        refuse(tensors),
        GgufError::CountTooLarge {
            what: "tensors",
            ..
        }
    ));
    let mut kv = b.clone();
    kv[16..24].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    assert!(matches!(
        refuse(kv),
        GgufError::CountTooLarge {
            what: "metadata keys",
            ..
        }
    ));
    // The first key's length.
    let mut key = b;
    key[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(matches!(
        refuse(key),
        GgufError::Truncated {
            what: "a metadata key",
            ..
        }
    ));
}

/// Replaces the first `from` after `start` with `to` (same length).
fn patch(bytes: &mut [u8], start: usize, from: &[u8], to: &[u8]) {
    let at = start
        + bytes[start..]
            .windows(from.len())
            .position(|w| w == from)
            .expect("pattern present");
    bytes[at..at + to.len()].copy_from_slice(to);
}

/// The bytes of a file with one metadata entry `key` of type id `ty` and payload `value`.
fn one_kv(key: &str, ty: u32, value: &[u8]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    b.extend((key.len() as u64).to_le_bytes());
    b.extend(key.as_bytes());
    b.extend(ty.to_le_bytes());
    b.extend(value);
    b
}

#[test]
fn bad_metadata_values_are_refused_with_their_key() {
    assert!(matches!(
        refuse(one_kv("k", 13, &[0; 8])),
        GgufError::UnknownValueType { id: 13, .. }
    ));
    assert!(matches!(
        refuse(one_kv("k", 7, &[2])),
        GgufError::BadBool { byte: 2, .. }
    ));
    let bad_utf8 = [&2u64.to_le_bytes()[..], &[0xff, 0xfe]].concat();
    assert!(matches!(
        refuse(one_kv("k", 8, &bad_utf8)),
        GgufError::BadUtf8 { .. }
    ));
    // An array of 2^50 u32 in a few bytes.
    let huge = [&4u32.to_le_bytes()[..], &(1u64 << 50).to_le_bytes()].concat();
    assert!(matches!(
        refuse(one_kv("k", 9, &huge)),
        GgufError::CountTooLarge {
            what: "array elements",
            ..
        }
    ));
    // Arrays nested five deep, each holding one array.
    let mut deep = Vec::new();
    for _ in 0..5 {
        deep.extend(9u32.to_le_bytes());
        deep.extend(1u64.to_le_bytes());
    }
    deep.extend(4u32.to_le_bytes());
    deep.extend(0u64.to_le_bytes());
    assert!(matches!(
        refuse(one_kv("k", 9, &deep)),
        GgufError::ArrayTooDeep { .. }
    ));
    assert!(matches!(
        refuse(one_kv("general.alignment", 4, &24u32.to_le_bytes())),
        GgufError::BadAlignment(24)
    ));
    assert!(matches!(
        refuse(one_kv(
            "general.alignment",
            8,
            &[&1u64.to_le_bytes()[..], b"x"].concat()
        )),
        GgufError::WrongValueType { .. }
    ));
    let mut dup = one_kv("k", 0, &[1]);
    dup[16..24].copy_from_slice(&2u64.to_le_bytes());
    dup.extend(1u64.to_le_bytes());
    dup.extend(b"k");
    dup.extend(0u32.to_le_bytes());
    dup.push(2);
    assert!(matches!(refuse(dup), GgufError::DuplicateKey(k) if k == "k"));
}

/// Rewrites a field of tensor info `name`: `field` 0 is the dims count, 1.. the dims, then
/// the type id and the offset.
fn patch_info(l: &Layout, name: &str, edit: impl FnOnce(&mut [u8], usize)) -> Vec<u8> {
    let mut b = l.bytes.clone();
    let needle = [&(name.len() as u64).to_le_bytes()[..], name.as_bytes()].concat();
    let at = l.tensor_infos
        + b[l.tensor_infos..]
            .windows(needle.len())
            .position(|w| w == needle)
            .unwrap();
    edit(&mut b, at + needle.len());
    b
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn bad_tensor_infos_are_refused_with_the_tensor_named() {
    let l = layout();
    // "q8" is [64, 3]: dims at +0, ne at +4 and +12, type at +20, offset at +24.
    let e = refuse(patch_info(&l, "q8", |b, at| put_u32(b, at, 5)));
    assert!(
        matches!(e, GgufError::BadDimensionCount { dims: 5, .. }),
        "{e}"
    );
    let e = refuse(patch_info(&l, "q8", |b, at| put_u32(b, at, 0)));
    assert!(
        matches!(e, GgufError::BadDimensionCount { dims: 0, .. }),
        "{e}"
    );
    let e = refuse(patch_info(&l, "q8", |b, at| put_u64(b, at + 12, 0)));
    assert!(matches!(e, GgufError::BadShape { .. }), "{e}");
    let e = refuse(patch_info(&l, "q8", |b, at| {
        put_u64(b, at + 4, 1 << 40);
        put_u64(b, at + 12, 1 << 40)
    }));
    assert!(matches!(e, GgufError::BadShape { .. }), "{e}");
    let e = refuse(patch_info(&l, "q8", |b, at| put_u32(b, at + 20, 99)));
    assert!(
        matches!(e, GgufError::UnknownTensorType { id: 99, .. }),
        "{e}"
    );
    let e = refuse(patch_info(&l, "q8", |b, at| put_u64(b, at + 4, 48)));
    assert!(
        matches!(&e, GgufError::NotWholeBlocks { name, ne0: 48, block: 32, .. } if name == "q8"),
        "{e}"
    );
    let e = refuse(patch_info(&l, "q8", |b, at| put_u64(b, at + 24, 33)));
    assert!(matches!(e, GgufError::Misaligned { offset: 33, .. }), "{e}");
    let e = refuse(patch_info(&l, "q8", |b, at| put_u64(b, at + 24, 1 << 20)));
    assert!(matches!(e, GgufError::TensorOutOfFile { .. }), "{e}");
    let e = refuse(patch_info(&l, "q8", |b, at| {
        put_u64(b, at + 24, u64::MAX - 31)
    }));
    assert!(matches!(e, GgufError::TensorOutOfFile { .. }), "{e}");
    // q8 moved onto norm's bytes.
    let e = refuse(patch_info(&l, "q8", |b, at| put_u64(b, at + 24, 0)));
    assert!(matches!(e, GgufError::Overlap { .. }), "{e}");
    // More rows than its bytes: runs into q4's bytes.
    let e = refuse(patch_info(&l, "q8", |b, at| put_u64(b, at + 12, 4)));
    assert!(matches!(e, GgufError::Overlap { .. }), "{e}");
    // A second tensor named "q8".
    let mut dup = l.bytes.clone();
    patch(&mut dup, l.tensor_infos, b"q4", b"q8");
    assert!(matches!(refuse(dup), GgufError::DuplicateTensor(n) if n == "q8"));
}

#[test]
fn the_writer_refuses_what_the_reader_would() {
    let mut w = GgufWriter::new();
    let e = w
        .add_tensor("x", &[32, 2], TensorType::Q8_0, vec![0; 67])
        .unwrap_err();
    assert!(
        matches!(
            e,
            GgufError::DataSize {
                expected: 68,
                actual: 67,
                ..
            }
        ),
        "{e}"
    );
    let e = w
        .add_tensor("x", &[100], TensorType::Q4K, vec![])
        .unwrap_err();
    assert!(matches!(e, GgufError::NotWholeBlocks { .. }), "{e}");
    let e = w
        .add_tensor(&"n".repeat(64), &[1], TensorType::F32, vec![0; 4])
        .unwrap_err();
    assert!(matches!(e, GgufError::NameTooLong { len: 64, .. }), "{e}");
    let e = w
        .add_tensor("x", &[1, 1, 1, 1, 1], TensorType::F32, vec![0; 4])
        .unwrap_err();
    assert!(
        matches!(e, GgufError::BadDimensionCount { dims: 5, .. }),
        "{e}"
    );
    let mixed = Value::Array(ValueType::U32, vec![Value::U32(1), Value::I32(1)]);
    assert!(matches!(
        w.set("m", mixed).unwrap_err(),
        GgufError::MixedArray { .. }
    ));
    assert!(matches!(
        w.set("general.alignment", Value::U32(0)).unwrap_err(),
        GgufError::BadAlignment(0)
    ));
    w.set("k", Value::Bool(false)).unwrap();
    assert!(matches!(
        w.set("k", Value::U8(1)).unwrap_err(),
        GgufError::DuplicateKey(_)
    ));
}

/// splitmix64: a fixed-seed stream for the fuzz loop.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn mutated_files_are_read_or_refused_without_panicking() {
    let base = layout().bytes;
    let mut s = 0x5eed_u64;
    let (mut read, mut refused) = (0, 0);
    for _ in 0..4000 {
        let mut b = base.clone();
        // A few bytes set at random, a field overwritten with an extreme value, or a cut.
        for _ in 0..1 + next(&mut s) % 4 {
            let at = (next(&mut s) % b.len() as u64) as usize;
            match next(&mut s) % 4 {
                0 => b[at] = next(&mut s) as u8,
                1 => b[at] ^= 1 << (next(&mut s) % 8),
                2 => {
                    let v = [0u64, 1, u64::MAX, 1 << 32, 255][(next(&mut s) % 5) as usize];
                    let end = (at + 8).min(b.len());
                    b[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
                }
                _ => b.truncate(at),
            }
            if b.is_empty() {
                break;
            }
        }
        match Gguf::parse(b) {
            Ok(f) => {
                read += 1;
                // Whatever was accepted must be readable in full.
                for t in f.tensors() {
                    assert_eq!(f.tensor_data(&t.name).unwrap().len() as u64, t.bytes());
                }
                let _ = GgufWriter::from_file(&f).and_then(|w| w.to_bytes());
            }
            Err(e) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(read > 0 && refused > 0, "read {read}, refused {refused}");
}
