//! Golden values from a real JVM, computed at test time: `String.hashCode`, `List.hashCode` and the bucket
//! formula for the bucket index, and the Java `toString` forms the key text of values copies (`Double`, `Float`,
//! `BigDecimal`, `LocalDate`, `java.sql.Timestamp`).
//!
//! A small Java program is written to a temporary directory, compiled with `javac` and run with `java`. Inputs go to
//! Java as hex-encoded UTF-8 in a file, so that any string (newlines, NUL, emoji) survives the trip. A missing JDK
//! fails the test: these checks must never be skipped silently.

use std::fmt::Write as _;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::process::Command;

use hudi_sink::index::bucket::{bucket_id, java_list_hash, java_string_hash};
use hudi_sink::record::value::{
    write_java_big_decimal, write_java_double, write_java_float, write_java_local_date,
    write_java_sql_timestamp,
};

const BUCKET_COUNTS: [u32; 4] = [1, 7, 16, 256];

const PROGRAM: &str = r#"
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

public class JvmGolden {
    static String text(String hex) {
        byte[] bytes = new byte[hex.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    static String buckets(int hash) {
        StringBuilder sb = new StringBuilder();
        for (int n : new int[] {1, 7, 16, 256}) {
            sb.append(' ').append((hash & Integer.MAX_VALUE) % n);
        }
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder();
        for (String line : lines) {
            String[] parts = line.split(" ", -1);
            switch (parts[0]) {
                case "S": {
                    int hash = text(parts[1]).hashCode();
                    out.append(hash).append(buckets(hash));
                    break;
                }
                case "L": {
                    List<String> values = new ArrayList<>();
                    for (int i = 1; i < parts.length; i++) {
                        values.add(parts[i].equals("~") ? null : text(parts[i].substring(1)));
                    }
                    int hash = values.hashCode();
                    out.append(hash).append(buckets(hash));
                    break;
                }
                case "D":
                    out.append(Double.toString(Double.longBitsToDouble(Long.parseUnsignedLong(parts[1], 16))));
                    break;
                case "F":
                    out.append(Float.toString(Float.intBitsToFloat(Integer.parseUnsignedInt(parts[1], 16))));
                    break;
                case "B":
                    out.append(new BigDecimal(new BigInteger(parts[1]), Integer.parseInt(parts[2])).toString());
                    break;
                case "T":
                    out.append(java.time.LocalDate.ofEpochDay(Long.parseLong(parts[1])).toString());
                    break;
                case "P":
                    out.append(new java.sql.Timestamp(Long.parseLong(parts[1])).toString());
                    break;
                default:
                    throw new IllegalArgumentException("unknown line " + line);
            }
            out.append('\n');
        }
        Files.write(Paths.get(args[1]), out.toString().getBytes(StandardCharsets.UTF_8));
    }
}
"#;

/// A JDK tool: on the PATH, else in /usr/bin. Panics (fails the test) when there is none.
fn jdk_tool(name: &str) -> PathBuf {
    for candidate in [PathBuf::from(name), Path::new("/usr/bin").join(name)] {
        if Command::new(&candidate)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return candidate;
        }
    }
    panic!(
        "`{name}` was not found (PATH or /usr/bin): these tests compare against a real JVM and must not be skipped; \
         install a JDK (Java 17 is expected)"
    );
}

/// Runs the Java program on `input` lines and returns its output lines.
fn run_jvm(input: &[String]) -> Vec<String> {
    let javac = jdk_tool("javac");
    let java = jdk_tool("java");
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("JvmGolden.java");
    std::fs::write(&source, PROGRAM).expect("write java source");
    let compiled = Command::new(&javac)
        .arg("-d")
        .arg(dir.path())
        .arg(&source)
        .output()
        .expect("run javac");
    assert!(
        compiled.status.success(),
        "javac failed: {}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let input_path = dir.path().join("input.txt");
    let output_path = dir.path().join("output.txt");
    std::fs::write(&input_path, input.join("\n")).expect("write input");
    let ran = Command::new(&java)
        .arg("-Duser.timezone=UTC")
        .arg("-cp")
        .arg(dir.path())
        .arg("JvmGolden")
        .arg(&input_path)
        .arg(&output_path)
        .output()
        .expect("run java");
    assert!(
        ran.status.success(),
        "java failed: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let version = String::from_utf8_lossy(
        &Command::new(&java)
            .arg("-version")
            .output()
            .expect("java")
            .stderr,
    )
    .lines()
    .next()
    .unwrap_or_default()
    .to_string();
    println!("JVM: {version}");
    let output = std::fs::read_to_string(&output_path).expect("read output");
    let lines: Vec<String> = output.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), input.len(), "one output line per input line");
    lines
}

fn hex(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// A deterministic xorshift generator, so that failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn string(&mut self, max_len: u64) -> String {
        const ALPHABET: &[char] = &[
            'a',
            'z',
            'A',
            'Z',
            '0',
            '9',
            '-',
            '_',
            ':',
            ',',
            ' ',
            '/',
            '=',
            '\n',
            '\t',
            '\0',
            'é',
            'ü',
            'ß',
            'ø',
            '中',
            '文',
            '字',
            'Ω',
            '€',
            '😀',
            '𝄞',
            '🎉',
            '\u{ffff}',
            '\u{10000}',
            '\u{10ffff}',
        ];
        let len = self.below(max_len + 1);
        (0..len)
            .map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize])
            .collect()
    }
}

fn fixed_keys() -> Vec<String> {
    let mut keys: Vec<String> = [
        "",
        "a",
        "id1",
        "user-123",
        "hello",
        "1",
        "42",
        "-7",
        "Alice",
        "é",
        "ü",
        "Zürich",
        "中文",
        "😀",
        "𝄞",
        "a😀b",
        "a:b",
        "a,b",
        "a:b,c",
        "id:1,name:Alice",
        "id:__null__,name:x",
        "col1:val1,col2:2014-10-22 13:50:42",
        "tab\there",
        "new\nline",
        "nul\0byte",
        "polygenelubricants",
        "__null__",
        "__empty__",
        "00000000-0000-0000-0000-000000000000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    keys.push("x".repeat(1000));
    keys.push("😀é中".repeat(3000));
    keys.push(
        (0..5000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect(),
    );
    keys
}

fn buckets_of(hash: i32) -> String {
    BUCKET_COUNTS
        .iter()
        .map(|n| ((hash & i32::MAX) as u32 % n).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn string_list_hashes_and_buckets_match_the_jvm() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut strings = fixed_keys();
    strings.extend((0..2000).map(|_| rng.string(40)));
    let mut lists: Vec<Vec<Option<String>>> = vec![
        vec![],
        vec![None],
        vec![None, None],
        vec![Some(String::new())],
        vec![Some("a".to_string()), None],
        vec![None, Some("a".to_string())],
        vec![Some("1".to_string()), Some("Alice".to_string())],
        vec![Some("😀".to_string()), Some(String::new()), None],
    ];
    for _ in 0..1000 {
        let n = rng.below(5);
        lists.push(
            (0..n)
                .map(|_| {
                    if rng.below(5) == 0 {
                        None
                    } else {
                        Some(rng.string(12))
                    }
                })
                .collect(),
        );
    }
    let mut input: Vec<String> = strings.iter().map(|s| format!("S {}", hex(s))).collect();
    for list in &lists {
        let mut line = String::from("L");
        for value in list {
            match value {
                None => line.push_str(" ~"),
                Some(v) => {
                    line.push_str(" =");
                    line.push_str(&hex(v));
                }
            }
        }
        input.push(line);
    }
    let output = run_jvm(&input);

    let mut mismatches = Vec::new();
    for (i, s) in strings.iter().enumerate() {
        let hash = java_string_hash(s);
        let ours = format!("{hash} {}", buckets_of(hash));
        if ours != output[i] {
            mismatches.push(format!("String {s:?}: rust {ours}, jvm {}", output[i]));
        }
        // A key without both ':' and ',' is a simple key: its bucket hashes the one-element list [key].
        if !(s.contains(':') && s.contains(',')) {
            let list_hash = java_list_hash(&[Some(s)]);
            for n in BUCKET_COUNTS {
                let expected = (list_hash & i32::MAX) as u32 % n;
                let got = bucket_id(s, &["id"], NonZeroU32::new(n).expect("non-zero"));
                assert_eq!(got, expected, "simple key {s:?}, {n} buckets");
            }
        }
    }
    let mut complex_keys_checked = 0;
    for (j, list) in lists.iter().enumerate() {
        let values: Vec<Option<&str>> = list.iter().map(|v| v.as_deref()).collect();
        let hash = java_list_hash(&values);
        let ours = format!("{hash} {}", buckets_of(hash));
        let jvm = &output[strings.len() + j];
        if &ours != jvm {
            mismatches.push(format!("List {list:?}: rust {ours}, jvm {jvm}"));
        }
        // Complex keys whose values have no separators round-trip: the bucket of the key written by a complex key
        // generator is the bucket of the JVM's List.hashCode of its values.
        let clean = list.len() >= 2
            && list
                .iter()
                .flatten()
                .all(|v| !v.contains([':', ',']) && !v.is_empty());
        if clean && list.iter().any(Option::is_some) {
            let fields: Vec<String> = (0..list.len()).map(|i| format!("f{i}")).collect();
            let key = fields
                .iter()
                .zip(list)
                .map(|(f, v)| format!("{f}:{}", v.as_deref().unwrap_or("__null__")))
                .collect::<Vec<_>>()
                .join(",");
            let jvm_buckets: Vec<&str> = jvm.split(' ').skip(1).collect();
            for (k, n) in BUCKET_COUNTS.iter().enumerate() {
                let got =
                    bucket_id(&key, &fields, NonZeroU32::new(*n).expect("non-zero")).to_string();
                assert_eq!(got, jvm_buckets[k], "complex key {key:?}, {n} buckets");
            }
            complex_keys_checked += 1;
        }
    }
    println!(
        "compared with the JVM: {} strings, {} lists ({} as complex record keys), bucket counts {:?}",
        strings.len(),
        lists.len(),
        complex_keys_checked,
        BUCKET_COUNTS
    );
    assert!(
        complex_keys_checked > 100,
        "too few complex keys were checked: {complex_keys_checked}"
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches, first: {:#?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(10)]
    );
}

#[test]
fn value_strings_match_the_jvm() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut input = Vec::new();
    let mut expected = Vec::new();
    let mut counts = [0usize; 5];

    let mut doubles: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0,
        0.1,
        0.5,
        100.0,
        1e7,
        9_999_999.0,
        1e-3,
        1e-4,
        2e23,
        1e23,
        1e21,
        1e22,
        5e-324,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::EPSILON,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        3.0e-5,
        123_456.789,
        2.468,
    ];
    doubles.extend((-1074..1024).map(|e| 2f64.powi(e)));
    doubles.extend((0..20_000).map(|_| f64::from_bits(rng.next())));
    doubles.extend((0..5_000).map(|_| (rng.next() >> 1) as f64));
    doubles.extend((0..5_000).map(|_| rng.below(10_000_000) as f64 / 1000.0));
    doubles.extend((0..2_000).map(|_| f64::from_bits(rng.below(1 << 52))));
    for v in &doubles {
        input.push(format!("D {:x}", v.to_bits()));
        let mut out = String::new();
        write_java_double(*v, &mut out);
        expected.push(out);
    }
    counts[0] = doubles.len();

    let mut floats: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        0.1,
        1e10,
        1.1,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        f32::NAN,
    ];
    floats.extend((-149..128).map(|e| 2f32.powi(e)));
    floats.extend((0..20_000).map(|_| f32::from_bits(rng.next() as u32)));
    floats.extend((0..5_000).map(|_| (rng.next() >> 1) as f32));
    floats.extend((0..5_000).map(|_| rng.below(10_000_000) as f32 / 1000.0));
    for v in &floats {
        input.push(format!("F {:x}", v.to_bits()));
        let mut out = String::new();
        write_java_float(*v, &mut out);
        expected.push(out);
    }
    counts[1] = floats.len();

    let mut decimals: Vec<(i128, i8)> = vec![
        (0, 0),
        (0, 2),
        (0, -2),
        (1, 7),
        (12, 8),
        (1, -3),
        (i128::MIN, 0),
        (i128::MAX, 38),
    ];
    for _ in 0..5_000 {
        let digits = rng.below(38) as u32 + 1;
        let unscaled = (rng.next() as i128).wrapping_mul(rng.next() as i128) % 10i128.pow(digits);
        decimals.push((unscaled, rng.below(40) as i8 - 10));
    }
    for (unscaled, scale) in &decimals {
        input.push(format!("B {unscaled} {scale}"));
        let mut out = String::new();
        write_java_big_decimal(*unscaled, *scale, &mut out);
        expected.push(out);
    }
    counts[2] = decimals.len();

    let mut days: Vec<i64> = vec![
        0,
        -1,
        19448,
        -719_528,
        -719_893,
        -719_894,
        -1_085_000,
        2_932_896,
        2_932_897,
        95_000_000,
        -95_000_000,
    ];
    // chrono covers years -262143..=262143 (about 95.7 million days each way); beyond it the library refuses.
    days.extend((0..3_000).map(|_| rng.below(190_000_000) as i64 - 95_000_000));
    days.extend((0..3_000).map(|_| rng.below(4_000_000) as i64 - 2_000_000));
    for d in &days {
        input.push(format!("T {d}"));
        let mut out = String::new();
        write_java_local_date(*d, &mut out).expect("in range");
        expected.push(out);
    }
    counts[3] = days.len();

    // java.sql.Timestamp in UTC, years 1583-9999 (the range the library accepts).
    let mut instants: Vec<i64> = vec![
        0,
        1,
        -1,
        1_680_368_460_123,
        1_680_368_460_000,
        -12_212_553_600_000,
        253_402_300_799_999,
    ];
    instants.extend((0..3_000).map(|_| rng.below(265_000_000_000_000) as i64 - 12_000_000_000_000));
    for ms in &instants {
        input.push(format!("P {ms}"));
        let mut out = String::new();
        write_java_sql_timestamp(*ms, &mut out).expect("in range");
        expected.push(out);
    }
    counts[4] = instants.len();

    let output = run_jvm(&input);
    let mismatches: Vec<String> = input
        .iter()
        .zip(&expected)
        .zip(&output)
        .filter(|((_, ours), jvm)| ours != jvm)
        .map(|((line, ours), jvm)| format!("{line}: rust {ours}, jvm {jvm}"))
        .collect();
    println!(
        "compared with the JVM: {} doubles, {} floats, {} decimals, {} dates, {} timestamps",
        counts[0], counts[1], counts[2], counts[3], counts[4]
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches, first: {:#?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(20)]
    );
}
