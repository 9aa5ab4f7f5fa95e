//! Kubernetes' CEL quantity library (`k8s.io/apiserver/pkg/cel/library/quantity.go`, v1.34):
//! the `kubernetes.Quantity` value and `quantity()`, `isQuantity()`, `sign()`,
//! `isGreaterThan()`, `isLessThan()`, `compareTo()`, `add()`, `sub()`, `asInteger()`,
//! `isInteger()` and `asApproximateFloat()`.
//!
//! A quantity is kept exactly, as `mantissa * 10^exponent` (binary suffixes are folded into the
//! mantissa), so comparisons and sums are exact as `resource.Quantity`'s are.

use std::any::Any;
use std::cmp::Ordering;
use std::sync::LazyLock;

use cel::common::types::{CelBool, CelDouble, CelInt, CelString, INT_TYPE, STRING_TYPE, Type};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use num_bigint::BigInt;

use crate::model::quantity::{ScanError, scan};
use num_traits_lite::{is_zero, sign_of};

/// The CEL type name kube gives quantities.
pub const TYPE_NAME: &str = "kubernetes.Quantity";

/// kube's message for text that is not a quantity (`resource.ErrFormatWrong`).
pub const FORMAT_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

static QUANTITY_TYPE: LazyLock<Type> = LazyLock::new(|| Type::new_opaque_type(TYPE_NAME));

/// An exact quantity: `mantissa * 10^exponent`.
#[derive(Clone, Debug)]
pub struct CelQuantity {
    mantissa: BigInt,
    exponent: i64,
}

/// Helpers over `BigInt` without another dependency.
mod num_traits_lite {
    use num_bigint::{BigInt, Sign};

    pub(super) fn is_zero(n: &BigInt) -> bool {
        n.sign() == Sign::NoSign
    }

    pub(super) fn sign_of(n: &BigInt) -> i64 {
        match n.sign() {
            Sign::Minus => -1,
            Sign::NoSign => 0,
            Sign::Plus => 1,
        }
    }
}

impl CelQuantity {
    /// Parses a quantity as `resource.ParseQuantity` does; the error is kube's message.
    pub fn parse(text: &str) -> Result<CelQuantity, &'static str> {
        const SUFFIX_ERROR: &str = "unable to parse quantity's suffix";
        let parts = scan(text).map_err(|e| match e {
            ScanError::Empty | ScanError::NoDigits | ScanError::BadExponent => FORMAT_ERROR,
            ScanError::ExponentOutOfRange => SUFFIX_ERROR,
            // Text the format allows but no suffix kube knows, or text it does not allow.
            ScanError::UnknownSuffix { at } => {
                if text[at..]
                    .bytes()
                    .all(|b| b"eEinumkKMGTP+-0123456789".contains(&b))
                {
                    SUFFIX_ERROR
                } else {
                    FORMAT_ERROR
                }
            }
        })?;
        let mut mantissa = if parts.digits.is_empty() {
            BigInt::default()
        } else {
            parts.digits.parse::<BigInt>().map_err(|_| FORMAT_ERROR)?
        };
        mantissa *= BigInt::from(1024u32).pow(parts.binary_pow);
        if parts.negative {
            mantissa = -mantissa;
        }
        let exponent = parts.exp10;
        Ok(CelQuantity { mantissa, exponent })
    }

    /// A quantity of `v` whole units.
    pub fn from_int(v: i64) -> CelQuantity {
        CelQuantity {
            mantissa: BigInt::from(v),
            exponent: 0,
        }
    }

    /// Both mantissas scaled to the smaller exponent.
    fn aligned(&self, other: &CelQuantity) -> (BigInt, BigInt, i64) {
        let e = self.exponent.min(other.exponent);
        let scale = |q: &CelQuantity| {
            let d = u32::try_from(q.exponent - e).unwrap_or(u32::MAX);
            &q.mantissa * BigInt::from(10u32).pow(d)
        };
        (scale(self), scale(other), e)
    }

    /// Exact comparison (`Quantity.Cmp`).
    pub fn compare(&self, other: &CelQuantity) -> Ordering {
        if self.exponent == other.exponent {
            return self.mantissa.cmp(&other.mantissa);
        }
        // Signs decide first, which avoids scaling by large powers.
        let (a, b) = (sign_of(&self.mantissa), sign_of(&other.mantissa));
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let (x, y, _) = self.aligned(other);
        x.cmp(&y)
    }

    /// The exact sum.
    pub fn add(&self, other: &CelQuantity) -> CelQuantity {
        let (x, y, exponent) = self.aligned(other);
        CelQuantity {
            mantissa: x + y,
            exponent,
        }
    }

    /// The exact difference.
    pub fn sub(&self, other: &CelQuantity) -> CelQuantity {
        let (x, y, exponent) = self.aligned(other);
        CelQuantity {
            mantissa: x - y,
            exponent,
        }
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i64 {
        sign_of(&self.mantissa)
    }

    /// The value as an i64 when it is a whole number that fits (`Quantity.AsInt64`).
    pub fn as_i64(&self) -> Option<i64> {
        if is_zero(&self.mantissa) {
            return Some(0);
        }
        if self.exponent >= 0 {
            if self.exponent > 19 {
                return None;
            }
            let v = &self.mantissa * BigInt::from(10u32).pow(self.exponent as u32);
            return i64::try_from(v).ok();
        }
        let d = BigInt::from(10u32).pow(u32::try_from(-self.exponent).ok()?);
        if !is_zero(&(&self.mantissa % &d)) {
            return None;
        }
        i64::try_from(&self.mantissa / &d).ok()
    }

    /// The nearest f64 (`Quantity.AsApproximateFloat64`).
    pub fn as_f64(&self) -> f64 {
        format!("{}e{}", self.mantissa, self.exponent)
            .parse()
            .unwrap_or(f64::NAN)
    }
}

impl PartialEq for CelQuantity {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Val for CelQuantity {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }

    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<CelQuantity>()
            .is_some_and(|o| o == self)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for CelQuantity {}

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn arg<'a, T: StaticVal>(
    args: &'a [CowVal<'_, '_>],
    i: usize,
    f: &str,
) -> Result<&'a T, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<T>())
        .ok_or_else(|| {
            ExecutionError::no_such_overload(
                f,
                args.iter()
                    .map(|a| a.get_type().name().to_owned())
                    .collect(),
            )
        })
}

fn str_arg<'a>(args: &'a [CowVal<'_, '_>], i: usize, f: &str) -> Result<&'a str, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(|s| s.inner())
        .ok_or_else(|| {
            ExecutionError::no_such_overload(
                f,
                args.iter()
                    .map(|a| a.get_type().name().to_owned())
                    .collect(),
            )
        })
}

fn int_arg(args: &[CowVal<'_, '_>], i: usize, f: &str) -> Result<i64, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelInt>())
        .map(|v| *v.inner())
        .ok_or_else(|| {
            ExecutionError::no_such_overload(
                f,
                args.iter()
                    .map(|a| a.get_type().name().to_owned())
                    .collect(),
            )
        })
}

fn quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = str_arg(&args, 0, "quantity")?;
    CelQuantity::parse(s)
        .map(CowVal::owned)
        .map_err(|e| ExecutionError::function_error("quantity", e))
}

fn is_quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = str_arg(&args, 0, "isQuantity")?;
    Ok(CowVal::owned(CelBool::from(CelQuantity::parse(s).is_ok())))
}

fn two<'a>(
    args: &'a [CowVal<'_, '_>],
    f: &str,
) -> Result<(&'a CelQuantity, &'a CelQuantity), ExecutionError> {
    Ok((
        arg::<CelQuantity>(args, 0, f)?,
        arg::<CelQuantity>(args, 1, f)?,
    ))
}

fn is_greater_than<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = two(&args, "isGreaterThan")?;
    Ok(CowVal::owned(CelBool::from(
        a.compare(b) == Ordering::Greater,
    )))
}

fn is_less_than<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = two(&args, "isLessThan")?;
    Ok(CowVal::owned(CelBool::from(a.compare(b) == Ordering::Less)))
}

fn compare_to<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = two(&args, "compareTo")?;
    Ok(CowVal::owned(CelInt::from(a.compare(b) as i64)))
}

fn add<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = two(&args, "add")?;
    Ok(CowVal::owned(a.add(b)))
}

fn add_int<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = arg::<CelQuantity>(&args, 0, "add")?;
    let b = int_arg(&args, 1, "add")?;
    Ok(CowVal::owned(a.add(&CelQuantity::from_int(b))))
}

fn sub<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = two(&args, "sub")?;
    Ok(CowVal::owned(a.sub(b)))
}

fn sub_int<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = arg::<CelQuantity>(&args, 0, "sub")?;
    let b = int_arg(&args, 1, "sub")?;
    Ok(CowVal::owned(a.sub(&CelQuantity::from_int(b))))
}

fn sign<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = arg::<CelQuantity>(&args, 0, "sign")?;
    Ok(CowVal::owned(CelInt::from(a.sign())))
}

fn as_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = arg::<CelQuantity>(&args, 0, "asInteger")?;
    a.as_i64()
        .map(|v| CowVal::owned(CelInt::from(v)))
        .ok_or_else(|| {
            ExecutionError::function_error("asInteger", "cannot convert value to integer")
        })
}

fn is_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = arg::<CelQuantity>(&args, 0, "isInteger")?;
    Ok(CowVal::owned(CelBool::from(a.as_i64().is_some())))
}

fn as_approximate_float<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = arg::<CelQuantity>(&args, 0, "asApproximateFloat")?;
    Ok(CowVal::owned(CelDouble::from(a.as_f64())))
}

/// Declares the library's functions on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let q = || (*QUANTITY_TYPE).to_owned();
    env.add_type(q())?;
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_member_overload("sign", "quantity_sign", q(), vec![], sign)?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q(),
        vec![q()],
        is_greater_than,
    )?;
    env.add_member_overload(
        "isLessThan",
        "quantity_is_less_than",
        q(),
        vec![q()],
        is_less_than,
    )?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        q(),
        vec![q()],
        compare_to,
    )?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        q(),
        vec![],
        as_approximate_float,
    )?;
    env.add_member_overload("asInteger", "quantity_get_int", q(), vec![], as_integer)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add_int)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub_int)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> CelQuantity {
        CelQuantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_every_suffix_exactly() {
        for (text, same) in [
            ("1Ki", "1024"),
            ("1Mi", "1048576"),
            ("1Ei", "1152921504606846976"),
            ("1k", "1000"),
            ("1E", "1000000000000000000"),
            ("100m", "0.1"),
            ("1n", "0.000000001"),
            ("1u", "0.000001"),
            ("2e3", "2000"),
            ("2E-3", "0.002"),
            ("+5", "5"),
            (".5", "0.5"),
            ("5.", "5"),
            ("-0", "0"),
        ] {
            assert_eq!(q(text), q(same), "{text} vs {same}");
        }
    }

    #[test]
    fn refuses_as_kube_does() {
        assert_eq!(CelQuantity::parse(""), Err(FORMAT_ERROR));
        assert_eq!(CelQuantity::parse("Mi"), Err(FORMAT_ERROR));
        assert_eq!(CelQuantity::parse("1.2.3"), Err(FORMAT_ERROR));
        assert_eq!(CelQuantity::parse("10Mo"), Err(FORMAT_ERROR));
        assert_eq!(
            CelQuantity::parse("10Mm"),
            Err("unable to parse quantity's suffix")
        );
        assert_eq!(
            CelQuantity::parse("1e10001"),
            Err("unable to parse quantity's suffix")
        );
    }

    #[test]
    fn compares_and_adds_exactly() {
        assert_eq!(q("1Gi").compare(&q("1G")), Ordering::Greater);
        assert_eq!(q("-1").compare(&q("1m")), Ordering::Less);
        assert_eq!(q("0.1").add(&q("0.2")), q("300m"));
        assert_eq!(q("1").sub(&q("1n")), q("999999999n"));
        // Beyond f64's precision, still exact.
        assert_eq!(
            q("9007199254740993").compare(&q("9007199254740992")),
            Ordering::Greater
        );
    }

    #[test]
    fn integer_views() {
        assert_eq!(q("50k").as_i64(), Some(50_000));
        assert_eq!(q("1500m").as_i64(), None);
        assert_eq!(q("2000m").as_i64(), Some(2));
        assert_eq!(q("8Ei").as_i64(), None);
        assert_eq!(q("-9223372036854775808").as_i64(), Some(i64::MIN));
        assert_eq!(q("1.5").as_f64(), 1.5);
        assert_eq!(q("-2").sign(), -1);
    }
}
