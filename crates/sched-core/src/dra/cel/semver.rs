//! Kubernetes' CEL semver library (`k8s.io/apiserver/pkg/cel/library/semverlib.go`, version 1
//! as kube v1.34's base environment loads it): the `kubernetes.Semver` value and `semver()`,
//! `isSemver()` (both with the optional `normalize` argument), `major()`, `minor()`, `patch()`,
//! `isGreaterThan()`, `isLessThan()` and `compareTo()`.
//!
//! Parsing and ordering follow `github.com/blang/semver/v4`, which kube uses for both the
//! functions and version attributes: `major.minor.patch[-prerelease][+build]`, no leading zeros,
//! build metadata ignored when comparing.

use std::any::Any;
use std::cmp::Ordering;
use std::sync::LazyLock;

use cel::common::types::{BOOL_TYPE, CelBool, CelInt, CelString, STRING_TYPE, Type};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

/// The CEL type name kube gives semantic versions.
pub const TYPE_NAME: &str = "kubernetes.Semver";

static SEMVER_TYPE: LazyLock<Type> = LazyLock::new(|| Type::new_opaque_type(TYPE_NAME));

/// One dot-separated pre-release identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Alpha(String),
}

impl Pre {
    fn compare(&self, other: &Pre) -> Ordering {
        match (self, other) {
            (Pre::Num(a), Pre::Num(b)) => a.cmp(b),
            (Pre::Num(_), Pre::Alpha(_)) => Ordering::Less,
            (Pre::Alpha(_), Pre::Num(_)) => Ordering::Greater,
            (Pre::Alpha(a), Pre::Alpha(b)) => a.cmp(b),
        }
    }
}

/// A semantic version.
#[derive(Clone, Debug)]
pub struct CelSemver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
}

fn only(s: &str, allowed: impl Fn(u8) -> bool) -> bool {
    s.bytes().all(allowed)
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn number(part: &str, which: &str) -> Result<u64, String> {
    if !only(part, |b| b.is_ascii_digit()) {
        return Err(format!(
            "Invalid character(s) found in {which} number {part:?}"
        ));
    }
    if part.len() > 1 && part.starts_with('0') {
        return Err(format!(
            "{} number must not contain leading zeroes {part:?}",
            capitalized(which)
        ));
    }
    part.parse()
        .map_err(|_| format!("strconv.ParseUint: parsing {part:?}: invalid syntax"))
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

impl CelSemver {
    /// Parses strictly (`semver.Parse`); the error is blang/semver's message.
    pub fn parse(s: &str) -> Result<CelSemver, String> {
        if s.is_empty() {
            return Err("Version string empty".to_owned());
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        if parts.len() != 3 {
            return Err("No Major.Minor.Patch elements found".to_owned());
        }
        let major = number(parts[0], "major")?;
        let minor = number(parts[1], "minor")?;
        let mut patch_str = parts[2];
        let mut build: Option<&str> = None;
        if let Some(i) = patch_str.find('+') {
            build = Some(&patch_str[i + 1..]);
            patch_str = &patch_str[..i];
        }
        let mut pre_str: Option<&str> = None;
        if let Some(i) = patch_str.find('-') {
            pre_str = Some(&patch_str[i + 1..]);
            patch_str = &patch_str[..i];
        }
        let patch = number(patch_str, "patch")?;
        let mut pre = Vec::new();
        if let Some(p) = pre_str {
            for id in p.split('.') {
                if id.is_empty() {
                    return Err("Prerelease is empty".to_owned());
                }
                if only(id, |b| b.is_ascii_digit()) {
                    if id.len() > 1 && id.starts_with('0') {
                        return Err(format!(
                            "Numeric PreRelease version must not contain leading zeroes {id:?}"
                        ));
                    }
                    let n = id.parse().map_err(|_| {
                        format!("strconv.ParseUint: parsing {id:?}: value out of range")
                    })?;
                    pre.push(Pre::Num(n));
                } else if only(id, alnum) {
                    pre.push(Pre::Alpha(id.to_owned()));
                } else {
                    return Err(format!("Invalid character(s) found in prerelease {id:?}"));
                }
            }
        }
        if let Some(b) = build {
            for id in b.split('.') {
                if id.is_empty() {
                    return Err("Build meta data is empty".to_owned());
                }
                if !only(id, alnum) {
                    return Err(format!(
                        "Invalid character(s) found in build meta data {id:?}"
                    ));
                }
            }
        }
        Ok(CelSemver {
            major,
            minor,
            patch,
            pre,
        })
    }

    /// Parses with kube's normalization: a leading `v` dropped, leading zeros removed, missing
    /// minor and patch numbers taken as 0.
    pub fn parse_normalized(s: &str) -> Result<CelSemver, String> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_owned).collect();
        for p in &mut parts {
            if p.len() > 1 {
                let mut t = p.trim_start_matches('0').to_owned();
                if !t.starts_with(|c: char| c.is_ascii_digit()) {
                    t.insert(0, '0');
                }
                *p = t;
            }
        }
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
                return Err("short version cannot contain PreRelease/Build meta data".to_owned());
            }
            while parts.len() < 3 {
                parts.push("0".to_owned());
            }
        }
        CelSemver::parse(&parts.join("."))
    }

    /// semver.org precedence (`Version.Compare`).
    pub fn compare(&self, o: &CelSemver) -> Ordering {
        let core = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            (false, false) => {}
        }
        for (a, b) in self.pre.iter().zip(&o.pre) {
            let c = a.compare(b);
            if c != Ordering::Equal {
                return c;
            }
        }
        self.pre.len().cmp(&o.pre.len())
    }
}

impl Val for CelSemver {
    fn get_type(&self) -> &Type {
        &SEMVER_TYPE
    }

    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<CelSemver>()
            .is_some_and(|o| o.compare(self) == Ordering::Equal)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for CelSemver {}

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn overload_error(f: &str, args: &[CowVal<'_, '_>]) -> ExecutionError {
    ExecutionError::no_such_overload(
        f,
        args.iter()
            .map(|a| a.get_type().name().to_owned())
            .collect(),
    )
}

fn versions<'a>(
    args: &'a [CowVal<'_, '_>],
    f: &str,
) -> Result<(&'a CelSemver, &'a CelSemver), ExecutionError> {
    match (
        args.first().and_then(|a| a.downcast_ref::<CelSemver>()),
        args.get(1).and_then(|a| a.downcast_ref::<CelSemver>()),
    ) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(overload_error(f, args)),
    }
}

fn text_and_normalize<'a>(
    args: &'a [CowVal<'_, '_>],
    f: &str,
) -> Result<(&'a str, bool), ExecutionError> {
    let text = args
        .first()
        .and_then(|a| a.downcast_ref::<CelString>())
        .ok_or_else(|| overload_error(f, args))?;
    let normalize = match args.get(1) {
        None => false,
        Some(a) => *a
            .downcast_ref::<CelBool>()
            .ok_or_else(|| overload_error(f, args))?
            .inner(),
    };
    Ok((text.inner(), normalize))
}

fn parse_either(text: &str, normalize: bool) -> Result<CelSemver, String> {
    if normalize {
        CelSemver::parse_normalized(text)
    } else {
        CelSemver::parse(text)
    }
}

fn semver<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (text, normalize) = text_and_normalize(&args, "semver")?;
    parse_either(text, normalize)
        .map(CowVal::owned)
        .map_err(|e| ExecutionError::function_error("semver", e))
}

fn is_semver<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (text, normalize) = text_and_normalize(&args, "isSemver")?;
    Ok(CowVal::owned(CelBool::from(
        parse_either(text, normalize).is_ok(),
    )))
}

fn part<'b, 'v>(args: &[CowVal<'b, 'v>], f: &str, get: fn(&CelSemver) -> u64) -> Ret<'b, 'v> {
    let v = args
        .first()
        .and_then(|a| a.downcast_ref::<CelSemver>())
        .ok_or_else(|| overload_error(f, args))?;
    // blang/semver keeps uint64 parts; kube converts them to int64 as Go does (wrapping).
    Ok(CowVal::owned(CelInt::from(get(v) as i64)))
}

fn major<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    part(&args, "major", |v| v.major)
}

fn minor<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    part(&args, "minor", |v| v.minor)
}

fn patch<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    part(&args, "patch", |v| v.patch)
}

fn is_greater_than<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = versions(&args, "isGreaterThan")?;
    Ok(CowVal::owned(CelBool::from(
        a.compare(b) == Ordering::Greater,
    )))
}

fn is_less_than<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = versions(&args, "isLessThan")?;
    Ok(CowVal::owned(CelBool::from(a.compare(b) == Ordering::Less)))
}

fn compare_to<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (a, b) = versions(&args, "compareTo")?;
    Ok(CowVal::owned(CelInt::from(a.compare(b) as i64)))
}

/// Declares the library's functions on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let s = || (*SEMVER_TYPE).to_owned();
    env.add_type(s())?;
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], semver)?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        semver,
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver,
    )?;
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        s(),
        vec![s()],
        is_greater_than,
    )?;
    env.add_member_overload(
        "isLessThan",
        "semver_is_less_than",
        s(),
        vec![s()],
        is_less_than,
    )?;
    env.add_member_overload("compareTo", "semver_compare_to", s(), vec![s()], compare_to)?;
    env.add_member_overload("major", "semver_major", s(), vec![], major)?;
    env.add_member_overload("minor", "semver_minor", s(), vec![], minor)?;
    env.add_member_overload("patch", "semver_patch", s(), vec![], patch)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> CelSemver {
        CelSemver::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn semver_org_precedence() {
        // The ordering example of semver.org, item 11.
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "2.0.0",
            "2.1.0",
            "2.1.1",
        ];
        for w in ordered.windows(2) {
            assert_eq!(
                v(w[0]).compare(&v(w[1])),
                Ordering::Less,
                "{} < {}",
                w[0],
                w[1]
            );
        }
        assert_eq!(v("1.0.0+a").compare(&v("1.0.0+b")), Ordering::Equal);
    }

    #[test]
    fn blang_semver_errors() {
        let err = |s: &str| CelSemver::parse(s).unwrap_err();
        assert_eq!(err(""), "Version string empty");
        assert_eq!(err("1.0"), "No Major.Minor.Patch elements found");
        assert_eq!(
            err("a.0.0"),
            "Invalid character(s) found in major number \"a\""
        );
        assert_eq!(
            err("01.0.0"),
            "Major number must not contain leading zeroes \"01\""
        );
        assert_eq!(err("1.0.0-"), "Prerelease is empty");
        assert_eq!(
            err("1.0.0-a_b"),
            "Invalid character(s) found in prerelease \"a_b\""
        );
        assert_eq!(err("1.0.0+"), "Build meta data is empty");
    }

    #[test]
    fn normalization() {
        let n = |s: &str| CelSemver::parse_normalized(s);
        assert_eq!(n("v1").unwrap().compare(&v("1.0.0")), Ordering::Equal);
        assert_eq!(n("v01.02").unwrap().compare(&v("1.2.0")), Ordering::Equal);
        assert_eq!(n("1.00.3").unwrap().compare(&v("1.0.3")), Ordering::Equal);
        assert!(n("1.0-beta").is_err());
    }
}
