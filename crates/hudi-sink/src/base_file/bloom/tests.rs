use super::*;

const KEY_VECTORS: &[(&str, i32, u32, [usize; 5])] = &[
    (
        "1",
        1_228_156_847,
        0x4934_2faf,
        [1_460_963, 105_785, 1_189_081, 2_066_078, 47_219],
    ),
    (
        "TXN-007",
        -693_178_798,
        0xd6ae_ee52,
        [2_191_876, 2_327_249, 2_515_256, 1_981_199, 454_638],
    ),
    (
        "id:1,name:Alice",
        71_696_166,
        0x0445_ff26,
        [1_821_084, 1_259_695, 2_258_328, 240_278, 789_559],
    ),
    (
        "abcd",
        646_393_889,
        0x2687_3021,
        [1_990_355, 1_895_795, 51_212, 2_131_065, 578_428],
    ),
    (
        "é",
        -384_040_333,
        0xe91c_0273,
        [1_021_365, 1_225_260, 586_514, 1_189_253, 2_525_069],
    ),
];

fn positions(key: &str) -> Vec<usize> {
    Positions::new(key.as_bytes(), DEFAULT_NUM_HASHES, DEFAULT_VECTOR_SIZE).collect()
}

#[test]
fn murmur_matches_spec_vectors() {
    assert_eq!("é".as_bytes(), [0xc3, 0xa9]);
    for &(key, signed, hex, _) in KEY_VECTORS {
        let h = murmur_hash(key.as_bytes(), 0);
        assert_eq!(h, signed, "{key}");
        assert_eq!(h as u32, hex, "{key}");
    }
}

#[test]
fn first_five_positions_match_spec() {
    for &(key, _, _, first) in KEY_VECTORS {
        assert_eq!(positions(key)[..5], first, "{key}");
    }
}

#[test]
fn all_positions_of_key_1() {
    let mut p = positions("1");
    assert_eq!(p.len(), 30);
    p.sort_unstable();
    assert_eq!(
        p,
        [
            47_219, 105_785, 222_072, 257_260, 352_770, 408_683, 411_489, 588_992, 589_946,
            641_450, 755_883, 883_953, 1_006_816, 1_176_393, 1_189_081, 1_310_977, 1_373_243,
            1_460_963, 1_488_581, 1_702_643, 1_755_127, 1_874_676, 1_902_059, 2_023_043, 2_066_078,
            2_090_518, 2_101_586, 2_137_834, 2_185_582, 2_490_016,
        ]
    );
}

#[test]
fn sizing_matches_hudi_defaults() {
    assert_eq!(
        sizing(DEFAULT_NUM_ENTRIES, DEFAULT_FPP).unwrap(),
        (2_587_966, 30)
    );
    assert_eq!((DEFAULT_VECTOR_SIZE, DEFAULT_NUM_HASHES), (2_587_966, 30));
    let built = BloomFilter::new(
        BloomFilterType::DynamicV0,
        DEFAULT_NUM_ENTRIES,
        DEFAULT_FPP,
        DEFAULT_DYNAMIC_MAX_ENTRIES,
    )
    .unwrap();
    assert_eq!(built.to_bytes(), BloomFilter::hudi_default().to_bytes());
    assert_eq!(BloomFilter::default().to_bytes(), built.to_bytes());
}

#[test]
fn invalid_parameters_are_rejected() {
    let bad = [
        (0, DEFAULT_FPP, 0),
        (u32::MAX, DEFAULT_FPP, 0),
        (10, 0.0, 0),
        (10, 1.0, 0),
        (10, -0.5, 0),
        (10, f64::NAN, 0),
        (10, DEFAULT_FPP, u32::MAX),
    ];
    for (n, p, max) in bad {
        let err = BloomFilter::new(BloomFilterType::DynamicV0, n, p, max).unwrap_err();
        assert!(
            matches!(err, BloomError::InvalidParameter { .. }),
            "{n} {p} {max}: {err}"
        );
    }
}

#[test]
fn serialised_lengths() {
    let dynamic = BloomFilter::hudi_default();
    assert_eq!(dynamic.to_bytes().len(), 323_534);
    assert_eq!(dynamic.serialized_len(), 323_534);
    assert_eq!(dynamic.to_base64().len(), 431_380);
    let simple = BloomFilter::new(BloomFilterType::Simple, 60_000, 1e-9, 0).unwrap();
    assert_eq!(simple.to_bytes().len(), 323_509);
    assert_eq!(simple.serialized_len(), 323_509);
}

/// The 4-key file of §6.4 (`v6_nonpartitioned`, keys `1`..`4`).
fn four_key_filter() -> BloomFilter {
    let mut f = BloomFilter::hudi_default();
    for key in ["1", "2", "3", "4"] {
        f.add(key.as_bytes()).unwrap();
    }
    f
}

#[test]
fn worked_example_prefix_and_digest() {
    let f = four_key_filter();
    let bytes = f.to_bytes();
    let prefix: [u8; 38] = [
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x1e, 0x01, 0x00, 0x27, 0x7d, 0x3e, //
        0x00, 0x00, 0xea, 0x60, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, //
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x1e, 0x01, 0x00, 0x27, 0x7d, 0x3e,
    ];
    assert_eq!(bytes[..38], prefix);
    let text = f.to_base64();
    assert!(text.starts_with("/////wAAAB4BACd9PgAA6mAAAAAEAAAAAf////8AAAAeAQAnfT4"));
    assert_eq!(text.len(), 431_380);
    assert!(!text.contains('\n'));
    assert_eq!(
        hex(&sha256(text.as_bytes())),
        "20a16e582a630b81b8ace9e815c5f8de06dddd22e5a2038797fc47f8337e431b"
    );
    // 4 keys × 30 positions, all set in the only row.
    let set: u32 = f.rows[0].iter().map(|b| b.count_ones()).sum();
    assert!(set > 100 && set <= 120, "{set}");
}

#[test]
fn round_trip_through_base64() {
    for filter_type in [BloomFilterType::Simple, BloomFilterType::DynamicV0] {
        let mut f = BloomFilter::new(filter_type, 1000, 1e-6, 5000).unwrap();
        let keys: Vec<String> = (0..500).map(|i| format!("key-{i}")).collect();
        for k in &keys {
            f.add(k.as_bytes()).unwrap();
        }
        let text = f.to_base64();
        let parsed = BloomFilter::from_base64(&text, filter_type).unwrap();
        assert_eq!(parsed.to_bytes(), f.to_bytes());
        assert_eq!(parsed.to_base64(), text);
        assert_eq!(parsed.filter_type(), filter_type);
        assert_eq!(parsed.type_code(), f.type_code());
        for k in &keys {
            assert!(parsed.might_contain(k.as_bytes()), "{k}");
        }
        let false_positives = (0..10_000)
            .filter(|i| parsed.might_contain(format!("other-{i}").as_bytes()))
            .count();
        assert!(false_positives < 5, "{false_positives}");
        // Java's decoder also accepts unpadded text.
        let unpadded = text.trim_end_matches('=');
        assert_eq!(
            BloomFilter::from_base64(unpadded, filter_type)
                .unwrap()
                .to_bytes(),
            f.to_bytes()
        );
    }
}

#[test]
fn simple_layout_and_type_code() {
    let mut f = BloomFilter::new(BloomFilterType::Simple, 60_000, 1e-9, 0).unwrap();
    f.add(b"1").unwrap();
    assert_eq!(f.type_code(), None);
    let bytes = f.to_bytes();
    assert_eq!(
        bytes[..13],
        [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x1e, 0x01, 0x00, 0x27, 0x7d, 0x3e]
    );
    // Bit 47219 is the smallest position of key `1`: byte 5902, value 1 << 3.
    assert_eq!(bytes[13 + 47_219 / 8] & (1 << (47_219 % 8)), 1 << 3);
    let ones: u32 = bytes[13..].iter().map(|b| b.count_ones()).sum();
    assert_eq!(ones, 30);
    assert_eq!(BloomFilter::hudi_default().type_code(), Some("DYNAMIC_V0"));
}

#[test]
fn last_byte_unused_bits_stay_zero() {
    // 2,587,966 = 8 × 323,495 + 6: the last byte holds 6 bits.
    let mut bytes = BloomFilter::new(BloomFilterType::Simple, 60_000, 1e-9, 0)
        .unwrap()
        .to_bytes();
    *bytes.last_mut().unwrap() = 0xff;
    let parsed = BloomFilter::from_bytes(&bytes, BloomFilterType::Simple).unwrap();
    assert_eq!(*parsed.to_bytes().last().unwrap(), 0x3f);
}

#[test]
fn empty_key_is_rejected_without_side_effects() {
    let mut f = BloomFilter::hudi_default();
    assert!(matches!(f.add(b""), Err(BloomError::EmptyKey)));
    assert_eq!(f.to_bytes(), BloomFilter::hudi_default().to_bytes());
    assert!(!f.might_contain(b""));
}

#[test]
fn dynamic_rows_with_defaults() {
    let mut f = BloomFilter::hudi_default();
    let key = |i: u32| format!("k{i}");
    for i in 1..=60_000 {
        f.add(key(i).as_bytes()).unwrap();
    }
    assert_eq!(f.row_count(), 1);
    assert_eq!(f.current_row_records, 60_000);
    f.add(key(60_001).as_bytes()).unwrap();
    assert_eq!(f.row_count(), 2);
    assert_eq!(f.current_row_records, 1);
    for i in 60_002..=120_000 {
        f.add(key(i).as_bytes()).unwrap();
    }
    assert_eq!(
        (f.row_count(), f.current_row_records, f.reached_max),
        (2, 60_000, false)
    );

    // 2 × 60000 ≥ 100000: no third row; key 120001 goes to row 0 without moving the cursor.
    let in_row = |f: &BloomFilter, row: usize, k: &str| {
        let one = BloomFilter {
            rows: vec![f.rows[row].clone()],
            ..f.clone()
        };
        one.might_contain(k.as_bytes())
    };
    f.add(key(120_001).as_bytes()).unwrap();
    assert!(f.reached_max);
    assert_eq!((f.row_count(), f.cursor), (2, 0));
    assert!(in_row(&f, 0, &key(120_001)) && !in_row(&f, 1, &key(120_001)));
    // Then rows 0, 1, 0, 1, …
    for (i, expected_row) in (120_002..=120_005).zip([0, 1, 0, 1]) {
        f.add(key(i).as_bytes()).unwrap();
        assert!(in_row(&f, expected_row, &key(i)), "{i}");
        assert!(!in_row(&f, 1 - expected_row, &key(i)), "{i}");
    }
    assert_eq!(f.current_row_records, 60_005);
    assert!(in_row(&f, 0, &key(1)) && in_row(&f, 1, &key(60_001)));

    let bytes = f.to_bytes();
    assert_eq!(bytes.len(), 13 + 12 + 2 * (13 + 323_496));
    assert_eq!(
        bytes[13..25],
        [0, 0, 0xea, 0x60, 0, 0, 0xea, 0x65, 0, 0, 0, 2]
    );
    let parsed = BloomFilter::from_base64(&f.to_base64(), BloomFilterType::DynamicV0).unwrap();
    assert_eq!(parsed.row_count(), 2);
    assert_eq!(parsed.to_bytes(), bytes);
    assert!((1..=120_005).all(|i| parsed.might_contain(key(i).as_bytes())));
}

#[test]
fn dynamic_rows_follow_the_bound() {
    // nr = 10, max = 25: rows grow while rows × 10 < 25, i.e. to 3, then keys cycle from row 0.
    let mut f = BloomFilter::new(BloomFilterType::DynamicV0, 10, 0.01, 25).unwrap();
    let mut rows_after = Vec::new();
    for i in 1..=30 {
        f.add(format!("{i}").as_bytes()).unwrap();
        rows_after.push(f.row_count());
    }
    assert_eq!(rows_after[9], 1);
    assert_eq!(rows_after[10], 2);
    assert_eq!(rows_after[20], 3);
    assert!(!f.reached_max);
    f.add(b"31").unwrap();
    assert!(f.reached_max);
    assert_eq!((f.row_count(), f.cursor), (3, 0));
    for expected_cursor in 1..=4 {
        f.add(b"more").unwrap();
        assert_eq!(f.cursor, expected_cursor);
    }

    // A parsed filter does not know the bound (0, as in Hudi): once full it cycles, never grows.
    let mut full = BloomFilter::new(BloomFilterType::DynamicV0, 10, 0.01, 1000).unwrap();
    for i in 0..10 {
        full.add(format!("{i}").as_bytes()).unwrap();
    }
    let mut parsed = BloomFilter::from_bytes(&full.to_bytes(), BloomFilterType::DynamicV0).unwrap();
    parsed.add(b"x").unwrap();
    assert_eq!(parsed.row_count(), 1);
    assert!(parsed.reached_max);
}

#[test]
fn filter_type_names() {
    for t in [BloomFilterType::Simple, BloomFilterType::DynamicV0] {
        assert_eq!(t.as_str().parse::<BloomFilterType>().unwrap(), t);
        assert_eq!(t.to_string(), t.as_str());
    }
    assert_eq!(
        "dynamic_v0".parse::<BloomFilterType>().unwrap(),
        BloomFilterType::DynamicV0
    );
    assert_eq!(
        "Simple".parse::<BloomFilterType>().unwrap(),
        BloomFilterType::Simple
    );
    for bad in ["", "DYNAMIC", "DYNAMIC_V1", " SIMPLE"] {
        assert!(matches!(
            bad.parse::<BloomFilterType>(),
            Err(BloomError::UnknownType { value }) if value == bad
        ));
    }
    assert_eq!(BloomFilterType::default(), BloomFilterType::DynamicV0);
    assert_eq!(
        BloomFilterType::from_footer_type_code(None).unwrap(),
        BloomFilterType::Simple
    );
    assert_eq!(
        BloomFilterType::from_footer_type_code(Some("DYNAMIC_V0")).unwrap(),
        BloomFilterType::DynamicV0
    );
}

#[test]
fn malformed_input_is_reported_with_offsets() {
    let good = four_key_filter().to_bytes();
    let dynamic = BloomFilterType::DynamicV0;

    let err = BloomFilter::from_bytes(&good[..good.len() - 1], dynamic).unwrap_err();
    assert!(
        matches!(
            err,
            BloomError::Truncated {
                offset: 38,
                field: "bit vector",
                needed: 323_496,
                available: 323_495
            }
        ),
        "{err}"
    );
    let err = BloomFilter::from_bytes(&good[..20], dynamic).unwrap_err();
    assert!(
        matches!(
            err,
            BloomError::Truncated {
                offset: 17,
                field: "currentNbRecord",
                ..
            }
        ),
        "{err}"
    );
    let err = BloomFilter::from_bytes(&[], dynamic).unwrap_err();
    assert!(
        matches!(err, BloomError::Truncated { offset: 0, .. }),
        "{err}"
    );

    let mut legacy = good.clone();
    legacy[..4].copy_from_slice(&30i32.to_be_bytes());
    let err = BloomFilter::from_bytes(&legacy, dynamic).unwrap_err();
    assert!(
        matches!(
            err,
            BloomError::UnsupportedVersion {
                offset: 0,
                version: 30
            }
        ),
        "{err}"
    );

    let mut jenkins = good.clone();
    jenkins[33] = 0;
    let err = BloomFilter::from_bytes(&jenkins, dynamic).unwrap_err();
    assert!(
        matches!(
            err,
            BloomError::UnsupportedHashType {
                offset: 33,
                hash_type: 0
            }
        ),
        "{err}"
    );

    let mut no_rows = good.clone();
    no_rows[21..25].copy_from_slice(&0i32.to_be_bytes());
    let err = BloomFilter::from_bytes(&no_rows, dynamic).unwrap_err();
    assert!(
        matches!(
            err,
            BloomError::InvalidField {
                offset: 21,
                field: "rowCount",
                value: 0
            }
        ),
        "{err}"
    );

    let mut other_row = good.clone();
    other_row[37] = 0x3f;
    let err = BloomFilter::from_bytes(&other_row, dynamic).unwrap_err();
    assert!(
        matches!(
            err,
            BloomError::RowMismatch {
                offset: 25,
                row: 0,
                ..
            }
        ),
        "{err}"
    );

    let mut zero_hashes = good.clone();
    zero_hashes[4..8].copy_from_slice(&0i32.to_be_bytes());
    let err = BloomFilter::from_bytes(&zero_hashes, dynamic).unwrap_err();
    assert!(
        matches!(
            err,
            BloomError::InvalidField {
                offset: 4,
                field: "nbHash",
                value: 0
            }
        ),
        "{err}"
    );

    let mut trailing = good.clone();
    trailing.push(0);
    let err = BloomFilter::from_bytes(&trailing, dynamic).unwrap_err();
    assert!(
        matches!(
            err,
            BloomError::TrailingBytes {
                offset: 323_534,
                len: 1
            }
        ),
        "{err}"
    );

    // A dynamic payload read as SIMPLE is caught by its leftover bytes.
    let err = BloomFilter::from_bytes(&good, BloomFilterType::Simple).unwrap_err();
    assert!(
        matches!(
            err,
            BloomError::TrailingBytes {
                offset: 323_509,
                len: 25
            }
        ),
        "{err}"
    );

    for text in ["not base64!", "/////wAAAB4\nBACd9Pg=="] {
        let err = BloomFilter::from_base64(text, dynamic).unwrap_err();
        assert!(matches!(err, BloomError::Base64 { .. }), "{err}");
    }
}

#[test]
fn debug_does_not_dump_bits() {
    let text = format!("{:?}", BloomFilter::hudi_default());
    assert!(text.len() < 400, "{text}");
    assert!(text.contains("DynamicV0"));
}

// A small SHA-256 (FIPS 180-4), only to check the spec's digest without a new dependency.
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes(word.try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn sha256_self_check() {
    assert_eq!(
        hex(&sha256(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        hex(&sha256(b"")),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}
