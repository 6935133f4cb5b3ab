//! The sizes of decimal `fixed` types, as Spark and arrow-rs compute them.

/// Fewest bytes of a two's-complement `fixed` that hold every decimal of `precision` digits: the smallest
/// `n` with 2^(8n-1) > 10^precision. Spark sizes decimal `fixed` types this way, and arrow-rs writes
/// FIXED_LEN_BYTE_ARRAY decimals with exactly this length.
pub fn decimal_min_bytes(precision: u32) -> usize {
    if precision <= 38 {
        let limit = 10u128.pow(precision);
        // 2^(8n-1) for n = 1..=16 fits u128 and 10^38 < 2^127, so the loop ends by n = 16.
        (1..=16usize)
            .find(|n| (1u128 << (8 * n - 1)) > limit)
            .unwrap_or(16)
    } else {
        // Beyond i128: the same bound in floating point, as Spark computes it.
        let bits = f64::from(precision) * std::f64::consts::LOG2_10;
        ((bits + 1.0) / 8.0).ceil() as usize
    }
}

/// Most decimal digits a `fixed` of `size` bytes can hold: floor(log10(2^(8·size-1) - 1)).
pub fn decimal_max_precision(size: usize) -> u32 {
    if size == 0 {
        return 0;
    }
    if size <= 16 {
        let max = (1u128 << (8 * size - 1)) - 1;
        // Number of decimal digits of `max`, minus one.
        let mut digits = 0u32;
        let mut v = max;
        while v >= 10 {
            v /= 10;
            digits += 1;
        }
        digits
    } else {
        ((8 * size - 1) as f64 * std::f64::consts::LOG10_2).floor() as u32
    }
}
