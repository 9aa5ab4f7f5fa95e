//! Kubernetes resource quantities: "100m", "1Gi", "1.5", "2e3", "128974848", "1Ki".

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A parsed Kubernetes quantity.
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

/// `ceil(mantissa * 10^exp10 * scale)`, or `None` on overflow of i128.
fn scaled_ceil(mantissa: i128, exp10: i32, scale: i128) -> Option<i128> {
    let n = mantissa.checked_mul(scale)?;
    if exp10 >= 0 {
        let p = 10i128.checked_pow(exp10 as u32)?;
        n.checked_mul(p)
    } else {
        let e = (-exp10) as u32;
        match 10i128.checked_pow(e) {
            Some(p) => Some(div_ceil(n, p)),
            // The divisor exceeds any representable numerator: the result is in (-1, 1).
            None => Some(if n > 0 { 1 } else { 0 }),
        }
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let syntax = |why| QuantityError::Syntax {
            text: text.to_string(),
            why,
        };
        let bytes = text.as_bytes();
        if bytes.is_empty() {
            return Err(syntax("empty string"));
        }
        let mut i = 0;
        let mut negative = false;
        if bytes[0] == b'+' || bytes[0] == b'-' {
            negative = bytes[0] == b'-';
            i = 1;
        }
        let mut mantissa: i128 = 0;
        let mut exp10: i32 = 0;
        let mut digits = 0usize;
        let mut seen_point = false;
        while i < bytes.len() {
            let c = bytes[i];
            if c.is_ascii_digit() {
                digits += 1;
                // Ignore digits past 30 significant places: they only shift the exponent.
                if mantissa < 10i128.pow(30) {
                    mantissa = mantissa * 10 + i128::from(c - b'0');
                    if seen_point {
                        exp10 -= 1;
                    }
                } else if !seen_point {
                    exp10 += 1;
                }
            } else if c == b'.' && !seen_point {
                seen_point = true;
            } else {
                break;
            }
            i += 1;
        }
        if digits == 0 {
            return Err(syntax("no digits"));
        }
        let suffix = &text[i..];
        let mut binary_pow: u32 = 0;
        match suffix {
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
                let exp: i32 = s[1..].parse().map_err(|_| syntax("bad decimal exponent"))?;
                if !(-100..=100).contains(&exp) {
                    return Err(QuantityError::OutOfRange {
                        text: text.to_string(),
                    });
                }
                if s[1..].starts_with('+') && s.len() == 2 {
                    return Err(syntax("bad decimal exponent"));
                }
                exp10 += exp;
            }
            _ => return Err(syntax("unknown suffix")),
        }
        if negative {
            mantissa = -mantissa;
        }
        let bin = 1024i128.pow(binary_pow);
        let out_of_range = || QuantityError::OutOfRange {
            text: text.to_string(),
        };
        let value = scaled_ceil(mantissa, exp10, bin).ok_or_else(out_of_range)?;
        let value = i64::try_from(value).map_err(|_| out_of_range())?;
        let milli = scaled_ceil(mantissa, exp10, bin * 1000)
            .and_then(|m| i64::try_from(m).ok())
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
