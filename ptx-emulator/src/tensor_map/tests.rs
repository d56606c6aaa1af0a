use super::*;

/// A valid 3-D map with every field distinct, so a swapped field in the encoding shows.
fn sample() -> TensorMap {
    TensorMap {
        elem_bytes: 2,
        rank: 3,
        address: 0x7_0000_1230,
        dims: [200, 70, 9, 1, 1],
        strides: [2, 416, 416 * 70, 0, 0],
        boxes: [64, 32, 2, 1, 1],
        swizzle: TensorSwizzle::B128,
    }
}

#[test]
fn encoding_round_trips_every_field() {
    let maps = [
        sample(),
        TensorMap {
            elem_bytes: 8,
            rank: 5,
            address: 16,
            dims: [3, 4, 5, 6, 7],
            strides: [8, 32, 128, 640, 3840],
            boxes: [2, 1, 256, 3, 4],
            swizzle: TensorSwizzle::None,
        },
        TensorMap {
            swizzle: TensorSwizzle::B32,
            boxes: [16, 1, 1, 1, 1],
            ..sample()
        },
        TensorMap {
            swizzle: TensorSwizzle::B64,
            boxes: [32, 8, 1, 1, 1],
            ..sample()
        },
    ];
    for map in maps {
        map.check().unwrap();
        assert_eq!(TensorMap::decode(&map.encode()), Ok(map));
    }
}

#[test]
fn an_invalid_map_still_round_trips_so_the_kernel_can_name_what_is_wrong() {
    let map = TensorMap {
        elem_bytes: 3,
        ..sample()
    };
    assert_eq!(TensorMap::decode(&map.encode()), Ok(map));
}

#[test]
fn bytes_that_are_not_a_map_do_not_decode() {
    let good = sample().encode();
    let expect = |bytes: [u8; 128], words: &[&str]| {
        let err = TensorMap::decode(&bytes).unwrap_err();
        for w in words {
            assert!(err.contains(w), "`{w}` missing from: {err}");
        }
    };
    expect([0; 128], &["magic", "PXTM"]);
    let mut v = good;
    v[4] = 9;
    expect(v, &["version 9", "version 1"]);
    let mut flipped = good;
    flipped[30] ^= 1;
    expect(flipped, &["checksum", "altered"]);
    // A bad swizzle code or reserved byte with a matching checksum: built, not just corrupted.
    for (at, value, word) in [(6, 4, "swizzle code 4"), (7, 1, "reserved byte 7")] {
        let mut v = good;
        v[at] = value;
        let sum = checksum(&v[..124]);
        v[124..].copy_from_slice(&sum.to_le_bytes());
        expect(v, &[word]);
    }
}

#[test]
fn check_names_the_field_the_rule_and_the_value() {
    let cases: Vec<(TensorMap, &[&str])> = vec![
        (
            TensorMap {
                elem_bytes: 3,
                strides: [3, 416, 416 * 70, 0, 0],
                ..sample()
            },
            &["elem_bytes", "1, 2, 4 or 8", "is 3"],
        ),
        (
            TensorMap {
                rank: 0,
                ..sample()
            },
            &["rank", "1..=5", "is 0"],
        ),
        (
            TensorMap {
                rank: 6,
                ..sample()
            },
            &["rank", "is 6"],
        ),
        (
            TensorMap {
                address: 0x1008,
                ..sample()
            },
            &["address", "16-byte aligned", "0x1008"],
        ),
        (
            TensorMap {
                dims: [200, 0, 9, 1, 1],
                ..sample()
            },
            &["dims[1]", "is 0"],
        ),
        (
            TensorMap {
                dims: [200, 70, 9, 2, 1],
                ..sample()
            },
            &["dims[3]", "past rank 3", "must be 1", "are 2 and 1"],
        ),
        (
            TensorMap {
                boxes: [64, 32, 2, 1, 5],
                ..sample()
            },
            &["boxes[4]", "past rank 3", "are 1 and 5"],
        ),
        (
            TensorMap {
                boxes: [64, 257, 2, 1, 1],
                ..sample()
            },
            &["boxes[1]", "1..=256", "is 257"],
        ),
        (
            TensorMap {
                boxes: [64, 32, 0, 1, 1],
                ..sample()
            },
            &["boxes[2]", "is 0"],
        ),
        (
            TensorMap {
                strides: [4, 416, 416 * 70, 0, 0],
                ..sample()
            },
            &["strides[0]", "elem_bytes (2)", "is 4"],
        ),
        (
            TensorMap {
                strides: [2, 408, 416 * 70, 0, 0],
                ..sample()
            },
            &["strides[1]", "multiple of 16", "is 408"],
        ),
        (
            TensorMap {
                strides: [2, 416, 0, 0, 0],
                ..sample()
            },
            &["strides[2]", "is 0"],
        ),
        (
            TensorMap {
                boxes: [20, 32, 2, 1, 1],
                swizzle: TensorSwizzle::None,
                ..sample()
            },
            &["boxes[0] * elem_bytes", "multiple of 16", "20 * 2 = 40"],
        ),
        (
            TensorMap {
                boxes: [128, 32, 2, 1, 1],
                ..sample()
            },
            &["at most 128 bytes", "B128", "128 * 2 = 256"],
        ),
        (
            TensorMap {
                boxes: [32, 32, 2, 1, 1],
                swizzle: TensorSwizzle::B32,
                ..sample()
            },
            &["at most 32 bytes", "B32", "= 64"],
        ),
    ];
    for (map, words) in cases {
        let err = map
            .check()
            .expect_err(&format!("{map:?} should break: {words:?}"));
        for w in words {
            assert!(err.contains(w), "`{w}` missing from: {err}");
        }
    }
}

#[test]
fn swizzles_xor_line_bits_into_the_chunk_index() {
    for a in (0..4096u64).step_by(16) {
        let line = a >> 7;
        assert_eq!(TensorSwizzle::B128.apply(a), a ^ ((line & 7) << 4));
        assert_eq!(TensorSwizzle::B64.apply(a), a ^ ((line & 3) << 4));
        assert_eq!(TensorSwizzle::B32.apply(a), a ^ ((line & 1) << 4));
        assert_eq!(TensorSwizzle::None.apply(a), a);
    }
}

#[test]
fn box_bytes_counts_only_the_dimensions_in_rank() {
    assert_eq!(sample().box_bytes(), 64 * 32 * 2 * 2);
}
