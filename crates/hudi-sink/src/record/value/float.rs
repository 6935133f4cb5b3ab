//! Java's `Double.toString` and `Float.toString` digit for digit (JDK 8–18 `FloatingDecimal`).

use super::*;

/// Appends Java's `Double.toString(value)` exactly as JDK 8–18 print it (the JVMs Hudi 0.14–1.0 run on).
///
/// Those JDKs do not always print the shortest decimal: integer values below 2^63 keep all the digits of the
/// integer (`1.64606760795392717E18`), powers of two and subnormals may get an extra digit (`4.9E-324`), and the
/// E-form always has a digit after the point. Layout: plain (`100.0`, `0.001`) for 10^-3 ≤ |v| < 10^7, otherwise
/// `d.dddE±n`; `NaN`, `Infinity`, `-Infinity`, `-0.0`.
pub fn write_java_double(value: f64, out: &mut String) {
    if let Some(text) = special_float_text(
        value.is_nan(),
        value.is_infinite(),
        value == 0.0,
        value.is_sign_negative(),
    ) {
        out.push_str(text);
        return;
    }
    let bits = value.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let mut fract = bits & ((1u64 << 52) - 1);
    let (bin_exp, significant_bits) = if biased == 0 {
        // Subnormal: normalise so that the leading one sits at bit 52.
        let leading = fract.leading_zeros() as i32;
        let shift = leading - 11;
        fract <<= shift;
        (1 - shift - 1023, 64 - leading)
    } else {
        fract |= 1u64 << 52;
        (biased - 1023, 53)
    };
    write_jdk_floating_decimal(
        value.is_sign_negative(),
        bin_exp,
        fract,
        significant_bits,
        out,
    );
}

/// Appends Java's `Float.toString(value)` exactly as JDK 8–18 print it; see [`write_java_double`].
pub fn write_java_float(value: f32, out: &mut String) {
    if let Some(text) = special_float_text(
        value.is_nan(),
        value.is_infinite(),
        value == 0.0,
        value.is_sign_negative(),
    ) {
        out.push_str(text);
        return;
    }
    let bits = value.to_bits();
    let biased = ((bits >> 23) & 0xff) as i32;
    let mut fract = bits & ((1u32 << 23) - 1);
    let (bin_exp, significant_bits) = if biased == 0 {
        let leading = fract.leading_zeros() as i32;
        let shift = leading - 8;
        fract <<= shift;
        (1 - shift - 127, 32 - leading)
    } else {
        fract |= 1u32 << 23;
        (biased - 127, 24)
    };
    // The JDK develops float digits in the double's 53-bit frame.
    write_jdk_floating_decimal(
        value.is_sign_negative(),
        bin_exp,
        u64::from(fract) << 29,
        significant_bits,
        out,
    );
}

pub(super) fn special_float_text(
    nan: bool,
    infinite: bool,
    zero: bool,
    negative: bool,
) -> Option<&'static str> {
    match (nan, infinite, zero, negative) {
        (true, _, _, _) => Some("NaN"),
        (_, true, _, false) => Some("Infinity"),
        (_, true, _, true) => Some("-Infinity"),
        (_, _, true, false) => Some("0.0"),
        (_, _, true, true) => Some("-0.0"),
        _ => None,
    }
}

pub(super) fn write_jdk_floating_decimal(
    negative: bool,
    bin_exp: i32,
    fract: u64,
    significant_bits: i32,
    out: &mut String,
) {
    let mut digits = DigitBuf::default();
    let dec_exponent = match jdk_digits(bin_exp, fract, significant_bits, &mut digits) {
        Some(dec_exponent) => dec_exponent,
        None => {
            // Not reachable for finite non-zero input; fall back to the shortest digits rather than fail.
            digits = DigitBuf::default();
            let _ = write!(
                digits,
                "{:e}",
                f64::from_bits(((bin_exp + 1023) as u64) << 52 | (fract & ((1 << 52) - 1)))
            );
            digits.split_scientific()
        }
    };
    write_java_float_layout(negative, digits.as_str(), dec_exponent, out);
}

/// Bit length of 5^i as the JDK tabulates it (`N_5_BITS`), with its `3·i` estimate past the table.
pub(super) fn n5_bits(i: i32) -> i32 {
    if i == 0 {
        0
    } else if i < 27 {
        (64 - 5u64.pow(i as u32).leading_zeros()) as i32
    } else {
        i * 3
    }
}

/// The JDK's estimate of ⌊log10(value)⌋ (`FloatingDecimal.estimateDecExp`), reproduced bit for bit because the
/// digit loop below depends on it when the estimate is one too high.
// The JDK's literal 0.301029995663981 is a truncated log10(2); it must stay as written to match bit for bit.
#[allow(clippy::approx_constant)]
pub(super) fn estimate_dec_exp(fract: u64, bin_exp: i32) -> i32 {
    let d2 = f64::from_bits(0x3ff0_0000_0000_0000 | (fract & ((1u64 << 52) - 1)));
    let d = (d2 - 1.5) * 0.289529654 + 0.176091259 + f64::from(bin_exp) * 0.301029995663981;
    d.floor() as i32
}

/// Decimal digits of a positive finite value `fract × 2^(bin_exp − 52)` (`fract` normalised with bit 52 set) as
/// JDK 8–18 `FloatingDecimal.BinaryToASCIIBuffer.dtoa` develops them: an exact path for integers below 2^63, and
/// otherwise Steele & White's free-format generation with a symmetric half-ULP margin, at least two digits in
/// E-form, and round-half-even on a tie. The integer and 64-bit variants use wrapping arithmetic like Java's
/// `int`/`long`. Returns Java's `decExponent` (value = 0.d1d2… × 10^decExponent); `None` only on an impossible
/// digit.
pub(super) fn jdk_digits(
    bin_exp: i32,
    fract: u64,
    significant_bits: i32,
    digits: &mut DigitBuf,
) -> Option<i32> {
    let tail_zeros = fract.trailing_zeros() as i32;
    let n_fract_bits = 53 - tail_zeros;
    let n_tiny_bits = (n_fract_bits - bin_exp - 1).max(0);
    if (-21..=62).contains(&bin_exp) && n_tiny_bits == 0 {
        let value = if bin_exp >= 52 {
            fract << (bin_exp - 52)
        } else {
            fract >> (52 - bin_exp)
        };
        return Some(integer_digits(value, bin_exp, significant_bits, digits));
    }
    let mut dec_exp = estimate_dec_exp(fract, bin_exp);
    let b5 = (-dec_exp).max(0);
    let mut b2 = b5 + n_tiny_bits + bin_exp;
    let s5 = dec_exp.max(0);
    let mut s2 = s5 + n_tiny_bits;
    let m5 = b5;
    let mut m2 = b2 - significant_bits;
    let fract = fract >> tail_zeros;
    b2 -= n_fract_bits - 1;
    let common = b2.min(s2);
    b2 -= common;
    s2 -= common;
    m2 -= common;
    if n_fract_bits == 1 {
        // Below a power of two the next smaller value is only half an ULP away.
        m2 -= 1;
    }
    if m2 < 0 {
        b2 -= m2;
        s2 -= m2;
        m2 = 0;
    }
    let b_bits = n_fract_bits + b2 + n5_bits(b5);
    let ten_s_bits = s2 + 1 + n5_bits(s5 + 1);
    let (high, low, low_digit_difference) = if b_bits < 32 && ten_s_bits < 32 {
        let b = (fract as i32)
            .wrapping_mul(5i32.wrapping_pow(b5 as u32))
            .wrapping_shl(b2 as u32);
        let s = 5i32.wrapping_pow(s5 as u32).wrapping_shl(s2 as u32);
        let m = 5i32.wrapping_pow(m5 as u32).wrapping_shl(m2 as u32);
        let (high, low, b, tens) = small_digit_loop(b, s, m, &mut dec_exp, digits)?;
        (high, low, i64::from(b.wrapping_shl(1).wrapping_sub(tens)))
    } else if b_bits < 64 && ten_s_bits < 64 {
        let b = (fract as i64)
            .wrapping_mul(5i64.wrapping_pow(b5 as u32))
            .wrapping_shl(b2 as u32);
        let s = 5i64.wrapping_pow(s5 as u32).wrapping_shl(s2 as u32);
        let m = 5i64.wrapping_pow(m5 as u32).wrapping_shl(m2 as u32);
        let (high, low, b, tens) = small_digit_loop(b, s, m, &mut dec_exp, digits)?;
        (high, low, b.wrapping_shl(1).wrapping_sub(tens))
    } else {
        big_digit_loop(fract, (b5, b2), (s5, s2), (m5, m2), &mut dec_exp, digits)?
    };
    let mut dec_exponent = dec_exp + 1;
    if high {
        let round_up = if low {
            low_digit_difference > 0 || (low_digit_difference == 0 && digits.last_digit_is_odd())
        } else {
            true
        };
        if round_up && digits.round_up() {
            dec_exponent += 1;
        }
    }
    Some(dec_exponent)
}

/// Java's `int`/`long` arithmetic, with its wrap-around.
pub(super) trait JavaInt: Copy + PartialOrd {
    const ZERO: Self;
    const TEN: Self;
    fn w_mul(self, other: Self) -> Self;
    fn w_add(self, other: Self) -> Self;
    fn w_div(self, other: Self) -> Self;
    fn w_rem(self, other: Self) -> Self;
    fn digit(self) -> Option<u8>;
}

macro_rules! java_int {
    ($t:ty) => {
        impl JavaInt for $t {
            const ZERO: Self = 0;
            const TEN: Self = 10;
            fn w_mul(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
            fn w_add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            fn w_div(self, other: Self) -> Self {
                if other == 0 {
                    0
                } else {
                    self.wrapping_div(other)
                }
            }
            fn w_rem(self, other: Self) -> Self {
                if other == 0 {
                    0
                } else {
                    self.wrapping_rem(other)
                }
            }
            fn digit(self) -> Option<u8> {
                u8::try_from(self).ok().filter(|d| *d < 10)
            }
        }
    };
}
java_int!(i32);
java_int!(i64);

/// The digit loop of the JDK's `int` and `long` variants; returns `(high, low, b, tens)` at the end.
pub(super) fn small_digit_loop<T: JavaInt>(
    mut b: T,
    s: T,
    mut m: T,
    dec_exp: &mut i32,
    digits: &mut DigitBuf,
) -> Option<(bool, bool, T, T)> {
    let tens = s.w_mul(T::TEN);
    let q = b.w_div(s);
    b = T::TEN.w_mul(b.w_rem(s));
    m = m.w_mul(T::TEN);
    let mut low = b < m;
    let mut high = b.w_add(m) > tens;
    let q = q.digit()?;
    if q == 0 && !high {
        *dec_exp -= 1;
    } else {
        digits.push_digit(q)?;
    }
    if *dec_exp < -3 || *dec_exp >= 8 {
        high = false;
        low = false;
    }
    while !low && !high {
        let q = b.w_div(s);
        b = T::TEN.w_mul(b.w_rem(s));
        m = m.w_mul(T::TEN);
        if m > T::ZERO {
            low = b < m;
            high = b.w_add(m) > tens;
        } else {
            // m wrapped around: it is certainly larger than b, and b + m larger than 10·s.
            low = true;
            high = true;
        }
        digits.push_digit(q.digit()?)?;
    }
    Some((high, low, b, tens))
}

/// The digit loop of the JDK's big-integer variant (note `>=` in the high test where the small variants use `>`).
pub(super) fn big_digit_loop(
    fract: u64,
    (b5, b2): (i32, i32),
    (s5, s2): (i32, i32),
    (m5, m2): (i32, i32),
    dec_exp: &mut i32,
    digits: &mut DigitBuf,
) -> Option<(bool, bool, i64)> {
    let mut b = BigUint::from_u64(fract);
    b.mul_pow5(b5 as u32)?;
    b.shl(b2 as u32)?;
    let mut s = BigUint::from_u64(1);
    s.mul_pow5(s5 as u32)?;
    s.shl(s2 as u32)?;
    let mut m = BigUint::from_u64(1);
    m.mul_pow5(m5 as u32)?;
    m.shl(m2 as u32)?;
    let mut ten_s = s.clone();
    ten_s.mul_small(10)?;
    let q = b.quo_rem_times_ten(&s)?;
    m.mul_small(10)?;
    let mut low = b.cmp(&m).is_lt();
    let mut high = BigUint::sum_cmp(&b, &m, &ten_s).is_ge();
    if q == 0 && !high {
        *dec_exp -= 1;
    } else {
        digits.push_digit(q)?;
    }
    if *dec_exp < -3 || *dec_exp >= 8 {
        high = false;
        low = false;
    }
    while !low && !high {
        let q = b.quo_rem_times_ten(&s)?;
        m.mul_small(10)?;
        low = b.cmp(&m).is_lt();
        high = BigUint::sum_cmp(&b, &m, &ten_s).is_ge();
        digits.push_digit(q)?;
    }
    let low_digit_difference = if high && low {
        b.shl(1)?;
        match b.cmp(&ten_s) {
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => 1,
        }
    } else {
        0
    };
    Some((high, low, low_digit_difference))
}

/// A fixed-capacity unsigned big integer (little-endian 32-bit limbs) for the JDK's big-integer digit loop; large
/// enough for every double (about 1,200 bits at the extremes), on the stack.
#[derive(Clone)]
pub(super) struct BigUint {
    pub(super) limbs: [u32; 48],
    pub(super) len: usize,
}

impl BigUint {
    pub(super) fn from_u64(value: u64) -> Self {
        let mut n = Self {
            limbs: [0; 48],
            len: 2,
        };
        n.limbs[0] = value as u32;
        n.limbs[1] = (value >> 32) as u32;
        n.trim();
        n
    }

    pub(super) fn trim(&mut self) {
        while self.len > 0 && self.limbs[self.len - 1] == 0 {
            self.len -= 1;
        }
    }

    pub(super) fn mul_small(&mut self, factor: u32) -> Option<()> {
        let mut carry = 0u64;
        for limb in &mut self.limbs[..self.len] {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry > 0 {
            *self.limbs.get_mut(self.len)? = carry as u32;
            self.len += 1;
        }
        Some(())
    }

    pub(super) fn mul_pow5(&mut self, mut exponent: u32) -> Option<()> {
        // 5^13 is the largest power of five below 2^32.
        while exponent >= 13 {
            self.mul_small(1_220_703_125)?;
            exponent -= 13;
        }
        if exponent > 0 {
            self.mul_small(5u32.pow(exponent))?;
        }
        Some(())
    }

    pub(super) fn shl(&mut self, bits: u32) -> Option<()> {
        if self.len == 0 {
            return Some(());
        }
        let limbs = (bits / 32) as usize;
        let bits = bits % 32;
        let new_len = self.len + limbs + 1;
        if new_len > self.limbs.len() {
            return None;
        }
        for i in (0..new_len).rev() {
            let hi = if i >= limbs && i - limbs < self.len {
                self.limbs[i - limbs]
            } else {
                0
            };
            let lo = if bits > 0 && i > limbs && i - limbs - 1 < self.len {
                self.limbs[i - limbs - 1]
            } else {
                0
            };
            self.limbs[i] = if bits == 0 {
                hi
            } else {
                (hi << bits) | (lo >> (32 - bits))
            };
        }
        self.len = new_len;
        self.trim();
        Some(())
    }

    pub(super) fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.len.cmp(&other.len).then_with(|| {
            for i in (0..self.len).rev() {
                match self.limbs[i].cmp(&other.limbs[i]) {
                    std::cmp::Ordering::Equal => continue,
                    unequal => return unequal,
                }
            }
            std::cmp::Ordering::Equal
        })
    }

    /// Compares `a + b` with `c`.
    pub(super) fn sum_cmp(a: &Self, b: &Self, c: &Self) -> std::cmp::Ordering {
        let mut sum = a.clone();
        let mut carry = 0u64;
        let len = a.len.max(b.len);
        for i in 0..len {
            let x = u64::from(if i < a.len { a.limbs[i] } else { 0 });
            let y = u64::from(if i < b.len { b.limbs[i] } else { 0 });
            let total = x + y + carry;
            sum.limbs[i] = total as u32;
            carry = total >> 32;
        }
        sum.len = len;
        if carry > 0 {
            if len >= sum.limbs.len() {
                return std::cmp::Ordering::Greater;
            }
            sum.limbs[len] = carry as u32;
            sum.len += 1;
        }
        sum.cmp(c)
    }

    pub(super) fn sub_assign(&mut self, other: &Self) {
        let mut borrow = 0i64;
        for i in 0..self.len {
            let y = i64::from(if i < other.len { other.limbs[i] } else { 0 });
            let mut diff = i64::from(self.limbs[i]) - y - borrow;
            borrow = 0;
            if diff < 0 {
                diff += 1 << 32;
                borrow = 1;
            }
            self.limbs[i] = diff as u32;
        }
        self.trim();
    }

    /// `q = self / divisor` (a single decimal digit), then `self = (self % divisor) · 10`.
    pub(super) fn quo_rem_times_ten(&mut self, divisor: &Self) -> Option<u8> {
        let mut q = 0u8;
        while self.cmp(divisor).is_ge() {
            self.sub_assign(divisor);
            q += 1;
            if q >= 10 {
                return None;
            }
        }
        self.mul_small(10)?;
        Some(q)
    }
}

/// Digits of an integer value below 2^63 the way the JDK's `developLongDigits` gives them: the exact integer,
/// with `⌊log10(2^(binExp − significandBits − 1))⌋` low-order digits rounded away (half up) when the binary
/// exponent exceeds the significand width, trailing zeros dropped. Returns Java's `decExponent`.
pub(super) fn integer_digits(
    mut value: u64,
    bin_exp: i32,
    significant_bits: i32,
    digits: &mut DigitBuf,
) -> i32 {
    let mut dec_exp: i32 = 0;
    let p2 = bin_exp - significant_bits - 1;
    let insignificant = if bin_exp > significant_bits && p2 > 1 {
        floor_log10_pow2(p2)
    } else {
        0
    };
    if insignificant > 0 {
        let pow10 = 10u64.pow(insignificant);
        let residue = value % pow10;
        value /= pow10;
        dec_exp += insignificant as i32;
        if residue >= pow10 / 2 {
            value += 1;
        }
    }
    while value % 10 == 0 && value != 0 {
        value /= 10;
        dec_exp += 1;
    }
    let _ = write!(digits, "{value}");
    dec_exp + digits.len() as i32
}

/// `⌊log10(2^p)⌋` for `0 <= p <= 63`.
pub(super) fn floor_log10_pow2(p: i32) -> u32 {
    let pow = 1u64 << p;
    let mut n = 0;
    let mut ten = 10u64;
    while ten <= pow {
        n += 1;
        match ten.checked_mul(10) {
            Some(next) => ten = next,
            None => break,
        }
    }
    n
}

/// Lays out `0.digits × 10^dec_exp` the way `Double.toString`/`Float.toString` specify.
pub(super) fn write_java_float_layout(
    negative: bool,
    digits: &str,
    dec_exp: i32,
    out: &mut String,
) {
    if negative {
        out.push('-');
    }
    if digits.is_empty() {
        out.push_str("0.0");
        return;
    }
    let n = digits.len() as i32;
    if dec_exp > 0 && dec_exp < 8 {
        let int_len = n.min(dec_exp) as usize;
        out.push_str(&digits[..int_len]);
        if (int_len as i32) < dec_exp {
            push_zeros(out, (dec_exp - int_len as i32) as usize);
            out.push_str(".0");
        } else {
            out.push('.');
            if int_len < digits.len() {
                out.push_str(&digits[int_len..]);
            } else {
                out.push('0');
            }
        }
    } else if dec_exp <= 0 && dec_exp > -3 {
        out.push_str("0.");
        push_zeros(out, (-dec_exp) as usize);
        out.push_str(digits);
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        if digits.len() > 1 {
            out.push_str(&digits[1..]);
        } else {
            out.push('0');
        }
        out.push('E');
        write_display(out, dec_exp - 1);
    }
}

/// A small stack buffer for digits, so that number formatting allocates nothing.
#[derive(Clone)]
pub(super) struct DigitBuf {
    pub(super) buf: [u8; 96],
    pub(super) len: usize,
}

impl Default for DigitBuf {
    fn default() -> Self {
        Self {
            buf: [0; 96],
            len: 0,
        }
    }
}

impl DigitBuf {
    pub(super) fn of_u128(value: u128) -> Self {
        let mut digits = Self::default();
        let _ = write!(digits, "{value}");
        digits
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn push_digit(&mut self, digit: u8) -> Option<()> {
        if digit > 9 || self.len >= self.buf.len() {
            return None;
        }
        self.buf[self.len] = b'0' + digit;
        self.len += 1;
        Some(())
    }

    pub(super) fn last_digit_is_odd(&self) -> bool {
        self.len > 0 && (self.buf[self.len - 1] - b'0') % 2 == 1
    }

    /// Adds one to the last digit with carry, as the JDK's `roundup`; digits that carry become `0` and stay.
    /// Returns true when the carry ran out of digits (the first digit becomes `1` and the exponent must grow).
    pub(super) fn round_up(&mut self) -> bool {
        let mut i = self.len;
        while i > 0 {
            i -= 1;
            if self.buf[i] == b'9' {
                if i == 0 {
                    self.buf[0] = b'1';
                    return true;
                }
                self.buf[i] = b'0';
            } else {
                self.buf[i] += 1;
                return false;
            }
        }
        false
    }

    pub(super) fn as_str(&self) -> &str {
        // Only ASCII is ever written into the buffer (see `write_str`).
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }

    /// Removes a leading '-' and reports whether there was one.
    pub(super) fn strip_minus(&mut self) -> bool {
        if self.len > 0 && self.buf[0] == b'-' {
            self.buf.copy_within(1..self.len, 0);
            self.len -= 1;
            true
        } else {
            false
        }
    }

    /// Turns Rust's `{:e}` text (`1.2345e-7`) into its digits (`12345`, kept in the buffer) and Java's
    /// `decExponent` (value = 0.d1d2… × 10^decExponent).
    pub(super) fn split_scientific(&mut self) -> i32 {
        let text = &self.buf[..self.len];
        let e_pos = text.iter().position(|&b| b == b'e').unwrap_or(self.len);
        let exponent: i32 = std::str::from_utf8(&text[(e_pos + 1).min(self.len)..])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut digits = [0u8; 96];
        let mut n = 0;
        for &b in &text[..e_pos] {
            if b.is_ascii_digit() {
                digits[n] = b;
                n += 1;
            }
        }
        // Rust's shortest form never has trailing zeros in the mantissa except for a lone "0".
        while n > 1 && digits[n - 1] == b'0' {
            n -= 1;
        }
        self.buf[..n].copy_from_slice(&digits[..n]);
        self.len = n;
        exponent + 1
    }
}

impl std::fmt::Write for DigitBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let bytes = s.as_bytes();
        if !s.is_ascii() || self.len + bytes.len() > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
        Ok(())
    }
}
