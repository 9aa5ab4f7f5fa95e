//! `str::parse::<Quantity>()` and Quantity's serde form.
//!
//! Invariants checked on every input:
//! - parsing never panics;
//! - an accepted quantity has `value() == ceil(x)` and `milli_value() == ceil(x * 1000)`
//!   (saturating at the i64 bounds), where `x` is the exact number the text denotes, computed
//!   here independently of the parser with exact integer arithmetic;
//! - text the reference grammar rejects is rejected, and text whose exact value fits in an
//!   i64 is accepted;
//! - `value()` and `milli_value()` agree with each other (`value == ceil(milli / 1000)` when
//!   `milli` is not saturated);
//! - serializing to JSON and back gives the same quantity (and the original text);
//! - a quantity read from any JSON value (string or number) obeys the same consistency rule;
//! - `Quantity::from_value` / `from_milli` equal parsing their own text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sched_core::model::{Quantity, QuantityError};

fuzz_target!(|data: &[u8]| {
    constructors(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = text.parse::<Quantity>();
    match (&parsed, reference(text)) {
        (Ok(q), Expect::Invalid) => panic!("{text:?} accepted as {q:?}, but it is not a quantity"),
        (Err(QuantityError::Syntax { .. }), Expect::Invalid) | (Err(_), Expect::Unknown) => {}
        (Err(e), Expect::Invalid) => panic!("{text:?}: syntax error expected, got {e:?}"),
        (Ok(_), Expect::Unknown) => {}
        (Ok(q), Expect::OutOfRange) => {
            panic!("{text:?} accepted as {q:?}, but its value does not fit in an i64")
        }
        (Err(QuantityError::OutOfRange { .. }), Expect::OutOfRange) => {}
        (Err(e), Expect::OutOfRange) => panic!("{text:?}: out of range expected, got {e:?}"),
        (Ok(q), Expect::Value { value, milli }) => {
            assert_eq!(q.value(), value, "{text:?}: value() is not ceil(x)");
            assert_eq!(
                q.milli_value(),
                milli,
                "{text:?}: milli_value() is not ceil(x * 1000) saturated"
            );
        }
        (Err(e), Expect::Value { value, .. }) => {
            panic!("{text:?} rejected ({e}) although its value {value} fits in an i64")
        }
        // The parser refuses decimal exponents outside -10000..=10000 (as out of range, or as a
        // bad exponent when it does not even fit in an i32).
        (Ok(q), Expect::ExponentOutOfRange) => {
            panic!("{text:?} accepted as {q:?} despite an exponent outside -10000..=10000")
        }
        (Err(_), Expect::ExponentOutOfRange) => {}
    }
    if let Ok(q) = &parsed {
        assert_eq!(q.as_str(), text);
        assert_eq!(q.to_string(), text);
        consistent(q);
        let json = serde_json::to_string(q).expect("a quantity serializes");
        assert_eq!(json, serde_json::to_string(text).unwrap());
        let back: Quantity = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("{text:?}: serialized as {json}, which fails: {e}"));
        assert_eq!(&back, q, "serde round trip changed {text:?}");
    }
    // The same bytes as a JSON document: strings and numbers both deserialize.
    if let Ok(q) = serde_json::from_str::<Quantity>(text) {
        consistent(&q);
        let again: Quantity = serde_json::from_str(&serde_json::to_string(&q).unwrap())
            .unwrap_or_else(|e| panic!("{text:?}: read as {q:?}, which does not round trip: {e}"));
        assert_eq!(again, q);
    }
});

/// `value` and `milli_value` describe one number.
fn consistent(q: &Quantity) {
    let (v, m) = (q.value(), q.milli_value());
    if m == i64::MAX {
        // ceil(1000x) >= i64::MAX, so x > (i64::MAX - 1) / 1000.
        assert!(
            v > i64::MAX / 1000,
            "{q:?}: milli saturated high but value is {v}"
        );
    } else if m == i64::MIN {
        assert!(
            v <= i64::MIN / 1000,
            "{q:?}: milli saturated low but value is {v}"
        );
    } else {
        assert_eq!(
            v,
            m.div_euclid(1000) + i64::from(m.rem_euclid(1000) != 0),
            "{q:?}: value is not ceil(milli / 1000)"
        );
    }
}

fn constructors(data: &[u8]) {
    let mut raw = [0u8; 8];
    let n = data.len().min(8);
    raw[..n].copy_from_slice(&data[..n]);
    let x = i64::from_le_bytes(raw);
    let from_value = Quantity::from_value(x);
    assert_eq!(Ok(from_value.clone()), x.to_string().parse::<Quantity>());
    consistent(&from_value);
    let from_milli = Quantity::from_milli(x);
    assert_eq!(Ok(from_milli.clone()), format!("{x}m").parse::<Quantity>());
    consistent(&from_milli);
}

/// What the text must parse to, by an independent exact computation.
enum Expect {
    /// Not `<sign?><digits with at most one point><suffix>`.
    Invalid,
    /// A decimal exponent outside -10000..=10000 (the parser refuses those as out of range).
    ExponentOutOfRange,
    /// Valid, but `ceil(x)` does not fit in an i64.
    OutOfRange,
    /// Valid, with these rounded views.
    Value { value: i64, milli: i64 },
    /// Valid, but too many significant digits for the exact check here.
    Unknown,
}

/// `ceil(x * k)` computed exactly, or `Huge` when it certainly exceeds 10^38 in magnitude.
enum Exact {
    Int(i128),
    Huge { negative: bool },
}

fn reference(text: &str) -> Expect {
    let b = text.as_bytes();
    let mut i = 0;
    let negative = matches!(b.first(), Some(b'-'));
    if matches!(b.first(), Some(b'-' | b'+')) {
        i = 1;
    }
    let mut digits = Vec::new();
    let mut frac_len: i64 = 0;
    let mut point = false;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                digits.push(c - b'0');
                if point {
                    frac_len += 1;
                }
            }
            b'.' if !point => point = true,
            _ => break,
        }
        i += 1;
    }
    if digits.is_empty() {
        return Expect::Invalid;
    }
    let mut exp10: i64 = -frac_len;
    let mut bin_pow = 0u32;
    match &text[i..] {
        "" => {}
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        "Ki" => bin_pow = 1,
        "Mi" => bin_pow = 2,
        "Gi" => bin_pow = 3,
        "Ti" => bin_pow = 4,
        "Pi" => bin_pow = 5,
        "Ei" => bin_pow = 6,
        s if s.starts_with(['e', 'E']) => {
            let rest = &s[1..];
            // An optional sign, then at least one ASCII digit, nothing else.
            let unsigned = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if unsigned.is_empty() || !unsigned.bytes().all(|c| c.is_ascii_digit()) {
                return Expect::Invalid;
            }
            let Ok(e) = rest.parse::<i32>() else {
                // Syntactically fine, but does not fit in an i32.
                return Expect::ExponentOutOfRange;
            };
            if !(-10_000..=10_000).contains(&e) {
                return Expect::ExponentOutOfRange;
            }
            exp10 += i64::from(e);
        }
        _ => return Expect::Invalid,
    }
    // Normalise the significand: no leading zeros, trailing zeros moved into the exponent.
    let first = digits.iter().position(|&d| d != 0);
    let Some(first) = first else {
        return Expect::Value { value: 0, milli: 0 };
    };
    let last = digits.iter().rposition(|&d| d != 0).unwrap();
    exp10 += (digits.len() - 1 - last) as i64;
    let significant = &digits[first..=last];
    if significant.len() > 37 {
        return Expect::Unknown;
    }
    let mut n: i128 = 0;
    for &d in significant {
        n = n * 10 + i128::from(d);
    }
    if negative {
        n = -n;
    }
    let bin = 1024i128.pow(bin_pow);
    let (Some(value), Some(milli)) = (
        exact_ceil(n, exp10, bin, negative),
        exact_ceil(n, exp10, bin * 1000, negative),
    ) else {
        return Expect::Unknown;
    };
    let value = match value {
        Exact::Int(v) => match i64::try_from(v) {
            Ok(v) => v,
            Err(_) => return Expect::OutOfRange,
        },
        Exact::Huge { .. } => return Expect::OutOfRange,
    };
    let milli = match milli {
        Exact::Int(m) => m.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
        Exact::Huge { negative: true } => i64::MIN,
        Exact::Huge { negative: false } => i64::MAX,
    };
    Expect::Value { value, milli }
}

/// `ceil(n * 10^exp10 * scale)` for `n != 0`; `None` when this check cannot tell.
fn exact_ceil(n: i128, exp10: i64, scale: i128, negative: bool) -> Option<Exact> {
    let num = n.checked_mul(scale)?;
    if exp10 >= 0 {
        let huge = Exact::Huge { negative };
        let Some(p) = u32::try_from(exp10)
            .ok()
            .and_then(|e| 10i128.checked_pow(e))
        else {
            return Some(huge);
        };
        Some(num.checked_mul(p).map_or(huge, Exact::Int))
    } else {
        match u32::try_from(-exp10)
            .ok()
            .and_then(|e| 10i128.checked_pow(e))
        {
            Some(den) => {
                let q = num.div_euclid(den);
                Some(Exact::Int(if num.rem_euclid(den) != 0 { q + 1 } else { q }))
            }
            // |num| < 2^127 < 10^39 <= den: the quotient is in (-1, 1), not an integer.
            None => Some(Exact::Int(if num > 0 { 1 } else { 0 })),
        }
    }
}
