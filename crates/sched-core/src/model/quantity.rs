//! Kubernetes resource quantities: "100m", "1Gi", "1.5", "2e3", "128974848", "1Ki".

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A parsed Kubernetes quantity.
///
/// Any number of digits is evaluated exactly; a decimal exponent (`e`/`E` notation) must lie in
/// -10000..=10000, and the value must fit in an i64 ([`QuantityError::OutOfRange`] otherwise).
///
/// Keeps the text it was parsed from (so it serializes back unchanged) and the two integer
/// views the scheduler uses, rounded up as Kubernetes rounds them: [`Quantity::value`] (whole
/// units, e.g. bytes) and [`Quantity::milli_value`] (thousandths, e.g. milli-CPU).
///
/// ```
/// use sched_core::model::Quantity;
/// let q: Quantity = "1.5".parse()?;
/// assert_eq!((q.value(), q.milli_value()), (2, 1500));
/// assert_eq!("1Gi".parse::<Quantity>()?.value(), 1 << 30);
/// assert_eq!("100m".parse::<Quantity>()?.milli_value(), 100);
/// assert_eq!("2e3".parse::<Quantity>()?.value(), 2000);
/// # Ok::<(), sched_core::model::QuantityError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Quantity {
    text: String,
    value: i64,
    milli: i64,
}

/// Why a quantity string is not valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantityError {
    /// The text is not of the form `<number><suffix>`.
    #[error("invalid quantity {text:?}: {why}")]
    Syntax {
        /// The text given.
        text: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The value does not fit in a signed 64-bit integer.
    #[error("quantity {text:?} is out of range")]
    OutOfRange {
        /// The text given.
        text: String,
    },
}

impl Quantity {
    /// Whole units, rounded up (bytes for memory, cores for CPU).
    pub fn value(&self) -> i64 {
        self.value
    }

    /// Thousandths of a unit, rounded up (milli-CPU). Saturates at `i64::MAX` for values that
    /// only fit in whole units (such as exabytes of memory).
    pub fn milli_value(&self) -> i64 {
        self.milli
    }

    /// The text the quantity was parsed from.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// A quantity of `v` whole units.
    pub fn from_value(v: i64) -> Quantity {
        Quantity {
            text: v.to_string(),
            value: v,
            milli: v.saturating_mul(1000),
        }
    }

    /// A quantity of `m` thousandths (written with the `m` suffix).
    pub fn from_milli(m: i64) -> Quantity {
        Quantity {
            text: format!("{m}m"),
            value: div_ceil(m as i128, 1000) as i64,
            milli: m,
        }
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    let q = a.div_euclid(b);
    if a.rem_euclid(b) != 0 { q + 1 } else { q }
}

/// A quantity's text read as a number: `(-1)^negative * digits * 10^exp10 * 1024^binary_pow`
/// ([`scan`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Parts {
    /// A leading `-`.
    pub(crate) negative: bool,
    /// Significant decimal digits, without leading zeros (empty for zero).
    pub(crate) digits: String,
    /// The power of ten of the last digit, the decimal suffix or exponent included.
    pub(crate) exp10: i64,
    /// The power of 1024 of a binary suffix.
    pub(crate) binary_pow: u32,
}

/// Why a text is not a quantity's number, as [`scan`] finds it (each parser words it its way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// Nothing at all.
    Empty,
    /// No digit before the suffix.
    NoDigits,
    /// `e`/`E` not followed by an optionally signed integer.
    BadExponent,
    /// A decimal exponent beyond +-10,000 (or beyond an i64).
    ExponentOutOfRange,
    /// A suffix that is none of kube's; it starts at byte `at`.
    UnknownSuffix {
        /// Where the suffix starts in the text.
        at: usize,
    },
}

/// Reads `text` as `resource.ParseQuantity` reads it: sign, digits with at most one point,
/// then a decimal (`n` .. `E`), binary (`Ki` .. `Ei`) or exponent (`e3`) suffix.
pub(crate) fn scan(text: &str) -> Result<Parts, ScanError> {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return Err(ScanError::Empty);
    }
    let mut i = 0;
    let mut negative = false;
    if bytes[0] == b'+' || bytes[0] == b'-' {
        negative = bytes[0] == b'-';
        i = 1;
    }
    // Collect the significant digits and the power of ten of the last one.
    let mut digits = String::new();
    let mut exp10: i64 = 0;
    let mut any_digit = false;
    let mut seen_point = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            any_digit = true;
            if !(digits.is_empty() && c == b'0') {
                digits.push(c as char);
            }
            if seen_point {
                exp10 -= 1;
            }
        } else if c == b'.' && !seen_point {
            seen_point = true;
        } else {
            break;
        }
        i += 1;
    }
    if !any_digit {
        return Err(ScanError::NoDigits);
    }
    let mut binary_pow: u32 = 0;
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
        "Ki" => binary_pow = 1,
        "Mi" => binary_pow = 2,
        "Gi" => binary_pow = 3,
        "Ti" => binary_pow = 4,
        "Pi" => binary_pow = 5,
        "Ei" => binary_pow = 6,
        s if s.starts_with(['e', 'E']) => {
            let rest = &s[1..];
            let body = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ScanError::BadExponent);
            }
            let exp: i64 = rest.parse().map_err(|_| ScanError::ExponentOutOfRange)?;
            if !(-10_000..=10_000).contains(&exp) {
                return Err(ScanError::ExponentOutOfRange);
            }
            exp10 += exp;
        }
        _ => return Err(ScanError::UnknownSuffix { at: i }),
    }
    Ok(Parts {
        negative,
        digits,
        exp10,
        binary_pow,
    })
}

impl Parts {
    /// `ceil(value * scale)` exactly, or `None` when it does not fit in an i64.
    fn ceil_scaled(&self, scale: u32) -> Option<i64> {
        if self.digits.is_empty() {
            return Some(0);
        }
        self.fast(scale).or_else(|| self.exact(scale))
    }

    /// i128 arithmetic; `None` when an intermediate overflows (then [`Parts::exact`] decides).
    fn fast(&self, scale: u32) -> Option<i64> {
        if self.digits.len() > 30 || self.exp10.unsigned_abs() > 30 {
            return None;
        }
        let m: i128 = self.digits.parse().ok()?;
        let m = if self.negative { -m } else { m };
        let n = m
            .checked_mul(1024i128.checked_pow(self.binary_pow)?)?
            .checked_mul(i128::from(scale))?;
        let v = if self.exp10 >= 0 {
            n.checked_mul(10i128.checked_pow(self.exp10 as u32)?)?
        } else {
            div_ceil(n, 10i128.checked_pow((-self.exp10) as u32)?)
        };
        i64::try_from(v).ok()
    }

    /// Arbitrary precision, for long digit strings and large exponents.
    fn exact(&self, scale: u32) -> Option<i64> {
        use num_bigint::BigInt;
        let mut n: BigInt = self.digits.parse().ok()?;
        n *= BigInt::from(1024u32).pow(self.binary_pow);
        n *= scale;
        if self.negative {
            n = -n;
        }
        let v = if self.exp10 >= 0 {
            // Beyond 10^40 no non-zero value fits in an i64.
            if self.exp10 > 40 {
                return None;
            }
            n * BigInt::from(10u32).pow(self.exp10 as u32)
        } else {
            let d = BigInt::from(10u32).pow(u32::try_from(-self.exp10).ok()?);
            // Ceiling division: floor for the negative side, floor + 1 with a remainder otherwise.
            let (q, r) = (&n / &d, &n % &d);
            if r > BigInt::from(0) { q + 1 } else { q }
        };
        i64::try_from(v).ok()
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let syntax = |why| QuantityError::Syntax {
            text: text.to_string(),
            why,
        };
        let parts = scan(text).map_err(|e| match e {
            ScanError::Empty => syntax("empty string"),
            ScanError::NoDigits => syntax("no digits"),
            ScanError::BadExponent => syntax("bad decimal exponent"),
            ScanError::ExponentOutOfRange => QuantityError::OutOfRange {
                text: text.to_string(),
            },
            ScanError::UnknownSuffix { .. } => syntax("unknown suffix"),
        })?;
        let negative = parts.negative;
        let value = parts
            .ceil_scaled(1)
            .ok_or_else(|| QuantityError::OutOfRange {
                text: text.to_string(),
            })?;
        let milli = parts
            .ceil_scaled(1000)
            .unwrap_or(if negative { i64::MIN } else { i64::MAX });
        Ok(Quantity {
            text: text.to_string(),
            value,
            milli,
        })
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Quantity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a quantity string such as \"500m\" or \"1Gi\", or a number")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
                Ok(Quantity::from_value(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
                i64::try_from(v)
                    .map(Quantity::from_value)
                    .map_err(|_| E::custom(format!("quantity {v} is out of range")))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
                v.to_string().parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> (i64, i64) {
        let q: Quantity = s.parse().unwrap();
        (q.value(), q.milli_value())
    }

    #[test]
    fn parses_kubernetes_forms() {
        assert_eq!(q("100m"), (1, 100));
        assert_eq!(q("1Gi"), (1 << 30, (1i64 << 30) * 1000));
        assert_eq!(q("1.5"), (2, 1500));
        assert_eq!(q("2e3"), (2000, 2_000_000));
        assert_eq!(q("128974848"), (128974848, 128974848000));
        assert_eq!(q("1Ki"), (1024, 1024000));
        assert_eq!(q("129e6"), (129_000_000, 129_000_000_000));
        assert_eq!(q("123Mi"), (123 * 1024 * 1024, 123 * 1024 * 1024 * 1000));
        assert_eq!(q("0.5Gi"), (1 << 29, (1i64 << 29) * 1000));
        assert_eq!(q("1n"), (1, 1));
        assert_eq!(q("250u"), (1, 1));
        assert_eq!(q("32"), (32, 32000));
        assert_eq!(q("1k"), (1000, 1_000_000));
        assert_eq!(q("1E"), (1_000_000_000_000_000_000, i64::MAX));
        assert_eq!(q("0"), (0, 0));
        assert_eq!(q(".5"), (1, 500));
        assert_eq!(q("-100m"), (0, -100));
        assert_eq!(q("1e-3"), (1, 1));
        assert_eq!(q("+2"), (2, 2000));
        // Found by fuzzing: exact rounding whatever the digit count or exponent.
        assert_eq!(q("0E40"), (0, 0));
        assert_eq!(q("1.0000000000000000000000000000001"), (2, 1001));
        assert_eq!(q("0.250000000000000000000Ei"), (1 << 58, i64::MAX));
        assert_eq!(
            q("0.001000000000000000001Ei"),
            (1_152_921_504_606_847, 1_152_921_504_606_846_978)
        );
        assert_eq!(q("1e-10000"), (1, 1));
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "", "abc", "1x", "1.2.3", "m", "1Gib", "--1", "1e", "1e+", "Gi",
        ] {
            assert!(bad.parse::<Quantity>().is_err(), "{bad:?} should fail");
        }
        assert!(matches!(
            "100Ei".parse::<Quantity>(),
            Err(QuantityError::OutOfRange { .. })
        ));
    }

    #[test]
    fn serde_round_trip_keeps_text() {
        let q: Quantity = serde_json::from_str("\"500m\"").unwrap();
        assert_eq!(serde_json::to_string(&q).unwrap(), "\"500m\"");
        let n: Quantity = serde_json::from_str("4").unwrap();
        assert_eq!(n.value(), 4);
    }
}
