//! DRA CEL device selectors against kube's own tables.
//!
//! `TestCEL` of `staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go`
//! (kubernetes/kubernetes; the cases of features on in v1.34: not the list-valued attributes
//! and `includes()` of v1.36), with its expected results and estimated costs; and cases of the
//! quantity and semver libraries from `staging/src/k8s.io/apiserver/pkg/cel/library`.

use sched_core::dra::cel::{CelError, CompiledSelector, SELECTOR_MAX_COST, SELECTOR_MAX_LENGTH};
use sched_core::model::{Device, DeviceAttribute, DeviceCapacity};

const DRIVER: &str = "dra.example.com";

fn int(v: i64) -> DeviceAttribute {
    DeviceAttribute {
        int_value: Some(v),
        ..Default::default()
    }
}

fn boolean(v: bool) -> DeviceAttribute {
    DeviceAttribute {
        bool_value: Some(v),
        ..Default::default()
    }
}

fn string(v: &str) -> DeviceAttribute {
    DeviceAttribute {
        string_value: Some(v.to_owned()),
        ..Default::default()
    }
}

fn version(v: &str) -> DeviceAttribute {
    DeviceAttribute {
        version_value: Some(v.to_owned()),
        ..Default::default()
    }
}

fn device(attributes: Vec<(&str, DeviceAttribute)>, capacity: Vec<(&str, &str)>) -> Device {
    Device {
        name: "dev".to_owned(),
        attributes: attributes
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        capacity: capacity
            .into_iter()
            .map(|(k, v)| {
                (
                    k.to_owned(),
                    DeviceCapacity {
                        value: v.parse().expect("quantity"),
                    },
                )
            })
            .collect(),
        ..Default::default()
    }
}

/// What a case expects.
enum Expect {
    Match(bool),
    MatchError(&'static str),
    CompileError(&'static str),
}

struct Case {
    name: &'static str,
    expression: &'static str,
    driver: &'static str,
    device: Device,
    expect: Expect,
    /// kube's `expectCost` (0: not given).
    cost: u64,
}

fn case(name: &'static str, expression: &'static str, expect: Expect, cost: u64) -> Case {
    Case {
        name,
        expression,
        driver: DRIVER,
        device: Device::default(),
        expect,
        cost,
    }
}

fn with(mut c: Case, device: Device) -> Case {
    c.device = device;
    c
}

fn kube_cases() -> Vec<Case> {
    use Expect::*;
    let mut empty_driver = case(
        "empty-driver-name",
        r#"device.driver == """#,
        Match(true),
        2,
    );
    empty_driver.driver = "";
    let mut check_negative = case(
        "check-negative",
        r#"!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
        Match(true),
        11,
    );
    check_negative.driver = "";
    vec![
        case("true", "true", Match(true), 0),
        case("false", "false", Match(false), 0),
        case("syntax-error", "?!", CompileError("Syntax error"), 0),
        case(
            "type-error",
            "1",
            CompileError("must evaluate to bool or the unknown type, not int"),
            0,
        ),
        case(
            "runtime-error-lookup-identifier",
            r#"device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))"#,
            MatchError("no such key: noSuchAttr"),
            6,
        ),
        case(
            "runtime-error-lookup-map",
            r#"device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))"#,
            MatchError("no such key: noSuchAttr"),
            6,
        ),
        case(
            "domain-check-negative",
            r#""no-such-domain" in device.attributes"#,
            Match(false),
            3,
        ),
        with(
            case(
                "domain-check-positive",
                r#""dra.example.com" in device.attributes"#,
                Match(true),
                3,
            ),
            device(vec![("dra.example.com/something", boolean(true))], vec![]),
        ),
        empty_driver,
        case(
            "real-driver-name",
            r#"device.driver == "dra.example.com""#,
            Match(true),
            4,
        ),
        with(
            case(
                "driver-name-qualifier",
                r#"device.attributes["dra.example.com"].name"#,
                Match(true),
                4,
            ),
            device(vec![("name", boolean(true))], vec![]),
        ),
        with(
            case(
                "driver-name-qualifier-map-lookup",
                r#"device.attributes["dra.example.com"]["name"]"#,
                Match(true),
                4,
            ),
            device(vec![("name", boolean(true))], vec![]),
        ),
        with(
            case(
                "bind",
                r#"cel.bind(dra, device.attributes["dra.example.com"], dra.name)"#,
                Match(true),
                15,
            ),
            device(vec![("name", boolean(true))], vec![]),
        ),
        with(
            case(
                "qualified-attribute-name",
                r#"device.attributes["other.example.com"].name"#,
                Match(true),
                4,
            ),
            device(vec![("other.example.com/name", boolean(true))], vec![]),
        ),
        with(
            case(
                "bool",
                r#"device.attributes["dra.example.com"].name"#,
                Match(true),
                4,
            ),
            device(vec![("name", boolean(true))], vec![]),
        ),
        with(
            case(
                "int",
                r#"device.attributes["dra.example.com"].name > 0"#,
                Match(true),
                5,
            ),
            device(vec![("name", int(1))], vec![]),
        ),
        with(
            case(
                "string",
                r#"device.attributes["dra.example.com"].name == "fish""#,
                Match(true),
                5,
            ),
            device(vec![("name", string("fish"))], vec![]),
        ),
        with(
            case(
                "version",
                r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))"#,
                Match(true),
                6,
            ),
            device(vec![("name", version("1.0.0"))], vec![]),
        ),
        with(
            case(
                "version_v",
                r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)"#,
                Match(true),
                7,
            ),
            device(vec![("name", version("1.0.0"))], vec![]),
        ),
        with(
            case(
                "quantity",
                r#"device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
                Match(true),
                6,
            ),
            device(vec![], vec![("name", "1Mi")]),
        ),
        with(
            case(
                "check-positive",
                r#""name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
                Match(true),
                10,
            ),
            device(vec![], vec![("name", "1Mi")]),
        ),
        check_negative,
        with(
            case(
                "all",
                r#"
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"#,
                Match(true),
                52,
            ),
            device(
                vec![
                    ("bool", boolean(true)),
                    ("int", int(1)),
                    ("string", string("fish")),
                    ("version", version("1.0.0")),
                ],
                vec![("quantity", "1Mi")],
            ),
        ),
        with(
            case(
                "many",
                r#"device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c"#,
                Match(true),
                12,
            ),
            device(
                vec![
                    ("a", boolean(true)),
                    ("b", boolean(true)),
                    ("c", boolean(true)),
                ],
                vec![],
            ),
        ),
        with(
            case(
                "check_attribute_domains",
                r#"device.attributes.exists_one(x, x == "dra.example.com")"#,
                Match(true),
                164,
            ),
            device(vec![("services", string("some_example_value"))], vec![]),
        ),
        with(
            case(
                "check_attribute_ids",
                r#"device.attributes["dra.example.com"].exists_one(x, x == "services")"#,
                Match(true),
                133,
            ),
            device(vec![("services", string("some_example_value"))], vec![]),
        ),
        with(
            case(
                "split_attribute",
                r#"device.attributes["dra.example.com"].services.split("example").size() >= 2"#,
                Match(true),
                19,
            ),
            device(vec![("services", string("some_example_value"))], vec![]),
        ),
        with(
            case(
                "regexp_attribute",
                r#"device.attributes["dra.example.com"].services.matches("[^a]?sym")"#,
                Match(true),
                18,
            ),
            device(vec![("services", string("asymetric"))], vec![]),
        ),
        with(
            case(
                "check_capacity_domains",
                r#"device.capacity.exists_one(x, x == "dra.example.com")"#,
                Match(true),
                164,
            ),
            device(vec![], vec![("memory", "1Mi")]),
        ),
        with(
            case(
                "check_capacity_ids",
                r#"device.capacity["dra.example.com"].exists_one(x, x == "memory")"#,
                Match(true),
                133,
            ),
            device(vec![], vec![("memory", "1Mi")]),
        ),
        // kube: `allow_multiple_allocations_default` (stored expressions, the scheduler's).
        case(
            "allow_multiple_allocations_default",
            "device.allowMultipleAllocations == false",
            Match(true),
            3,
        ),
        with(
            case(
                "allow_multiple_allocations",
                "device.allowMultipleAllocations == true",
                Match(true),
                3,
            ),
            Device {
                allow_multiple_allocations: Some(true),
                ..Default::default()
            },
        ),
    ]
}

#[test]
fn kube_compile_test_table() {
    let mut failures = Vec::new();
    for c in kube_cases() {
        let compiled = CompiledSelector::compile(c.expression);
        let outcome = match (&c.expect, compiled) {
            (Expect::CompileError(want), Err(e)) => {
                if e.to_string().contains(want) {
                    continue;
                }
                format!("compile error {e}, want one containing {want:?}")
            }
            (Expect::CompileError(want), Ok(_)) => format!("compiled, want error {want:?}"),
            (_, Err(e)) => format!("unexpected compile error {e}"),
            (expect, Ok(selector)) => {
                if c.cost != 0 && selector.estimated_cost() != c.cost {
                    failures.push(format!(
                        "{}: estimated cost {}, kube {}",
                        c.name,
                        selector.estimated_cost(),
                        c.cost
                    ));
                }
                match (expect, selector.matches(c.driver, &c.device)) {
                    (Expect::Match(want), Ok(got)) if *want == got => continue,
                    (Expect::MatchError(want), Err(CelError::Runtime { message }))
                        if message.contains(want) =>
                    {
                        continue;
                    }
                    (_, got) => format!("matches gave {got:?}"),
                }
            }
        };
        failures.push(format!("{}: {outcome}", c.name));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// kube's `expensive` case: a 10^7-iteration nest of comprehensions. kube estimates 85555551
/// and stops it at run time (`actual cost limit exceeded`); here it is refused with that same
/// estimate before it runs.
#[test]
fn kube_expensive_case_exceeds_the_cost_limit() {
    let expression = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))";
    assert_eq!(
        CompiledSelector::compile(expression).unwrap_err(),
        CelError::CostLimitExceeded {
            expression: expression.to_owned(),
            estimated: 85_555_551,
            limit: SELECTOR_MAX_COST,
        }
    );
    // One level fewer (8555551) is still over; three fewer (85551) is fine and runs.
    let cheap = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))";
    let s = CompiledSelector::compile(cheap).unwrap();
    assert_eq!(s.estimated_cost(), 8551);
    assert_eq!(s.matches(DRIVER, &Device::default()), Ok(true));
}

/// kube's `macro-exists-on-*` cases: iterating a scalar attribute is a runtime error (kube:
/// "got 'types.Int', expected iterable type"; the wording here is the `cel` crate's). The cost
/// is v1.34's: 5 + (3 + 3) * 64.
#[test]
fn iterating_a_scalar_attribute_is_a_runtime_error() {
    let s =
        CompiledSelector::compile(r#"device.attributes["dra.example.com"].name.exists(x, x > 0)"#)
            .unwrap();
    assert_eq!(s.estimated_cost(), 5 + 6 * 64);
    let d = device(vec![("name", int(1))], vec![]);
    assert!(matches!(
        s.matches(DRIVER, &d),
        Err(CelError::Runtime { .. })
    ));
}

#[test]
fn compile_errors_name_the_expression() {
    let e = CompiledSelector::compile("device.foo == 1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "CEL expression \"device.foo == 1\": compilation failed: ERROR: <input>:1:7: undefined field 'foo'"
    );
    let e = CompiledSelector::compile("ip('1.2.3.4') == ip('1.2.3.4')").unwrap_err();
    assert!(
        e.to_string().contains("undeclared reference to 'ip'"),
        "{e}"
    );
    let e = CompiledSelector::compile("nosuchvar").unwrap_err();
    assert!(
        e.to_string()
            .contains("undeclared reference to 'nosuchvar'"),
        "{e}"
    );
    let e = CompiledSelector::compile(r#""fish""#).unwrap_err();
    assert!(e.to_string().contains("not string"), "{e}");
}

#[test]
fn the_length_limit_holds() {
    let long = format!("true{}", " ".repeat(SELECTOR_MAX_LENGTH - 3));
    assert_eq!(
        CompiledSelector::compile(&long).unwrap_err(),
        CelError::TooLong {
            length: SELECTOR_MAX_LENGTH + 1,
            limit: SELECTOR_MAX_LENGTH
        }
    );
    let fits = format!("true{}", " ".repeat(SELECTOR_MAX_LENGTH - 4));
    assert!(CompiledSelector::compile(&fits).is_ok());
}

#[test]
fn non_bool_results_and_bad_attributes_are_errors() {
    let s = CompiledSelector::compile(r#"device.attributes["dra.example.com"].name"#).unwrap();
    let d = device(vec![("name", string("fish"))], vec![]);
    assert_eq!(
        s.matches(DRIVER, &d),
        Err(CelError::NotBool {
            type_name: "string".to_owned()
        })
    );
    let d = device(vec![("v", version("1.0"))], vec![]);
    assert!(matches!(
        s.matches(DRIVER, &d),
        Err(CelError::InvalidAttribute { name, reason }) if name == "v" && reason.starts_with("parse semantic version")
    ));
    let d = device(vec![("empty", DeviceAttribute::default())], vec![]);
    assert_eq!(
        s.matches(DRIVER, &d),
        Err(CelError::InvalidAttribute {
            name: "empty".to_owned(),
            reason: "unsupported attribute value".to_owned()
        })
    );
}

/// Evaluates a device-free expression that must be true.
fn holds(expression: &str) {
    let s = CompiledSelector::compile(expression).unwrap_or_else(|e| panic!("{expression}: {e}"));
    assert_eq!(
        s.matches(DRIVER, &Device::default()),
        Ok(true),
        "{expression}"
    );
}

/// Evaluates a device-free expression that must fail at run time with `message`.
fn fails(expression: &str, message: &str) {
    let s = CompiledSelector::compile(expression).unwrap_or_else(|e| panic!("{expression}: {e}"));
    match s.matches(DRIVER, &Device::default()) {
        Err(CelError::Runtime { message: m }) => assert!(m.contains(message), "{expression}: {m}"),
        other => panic!("{expression}: {other:?}"),
    }
}

/// `TestQuantity` of `apiserver/pkg/cel/library/quantity_test.go`, the functions v1.34 has
/// (`mul`, `div` and `divInt` came later). kube's `isQuantity_noOverload` is a compile error
/// there and a runtime one here.
#[test]
fn kube_quantity_library() {
    holds(r#"quantity("12Mi") == quantity("12582912")"#);
    fails(
        r#"quantity("10Mo") == quantity("1")"#,
        "quantities must match the regular expression",
    );
    fails(
        r#"quantity("10Mm") == quantity("1")"#,
        "unable to parse quantity's suffix",
    );
    holds(r#"isQuantity("20")"#);
    holds(r#"isQuantity("20M")"#);
    holds(r#"isQuantity("20Mi")"#);
    holds(r#"isQuantity("20Mo") == false"#);
    holds(r#"isQuantity("10Mm") == false"#);
    holds(r#"quantity("200M") == quantity("200M")"#);
    holds(r#"quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")"#);
    holds(
        r#"quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")"#,
    );
    holds(r#"(quantity("200M") == quantity("0.3G")) == false"#);
    holds(r#"quantity("50M").isLessThan(quantity("50Mi"))"#);
    holds(r#"quantity("50M").isLessThan(quantity("100M"))"#);
    holds(r#"quantity("100M").isLessThan(quantity("50M")) == false"#);
    holds(r#"quantity("50Mi").isGreaterThan(quantity("50M"))"#);
    holds(r#"quantity("150Mi").isGreaterThan(quantity("100Mi"))"#);
    holds(r#"quantity("50M").isGreaterThan(quantity("100M")) == false"#);
    holds(r#"quantity("200M").compareTo(quantity("0.2G")) == 0"#);
    holds(r#"quantity("50M").compareTo(quantity("50Mi")) == -1"#);
    holds(r#"quantity("50Mi").compareTo(quantity("50M")) == 1"#);
    holds(r#"quantity("50k").add(quantity("20")) == quantity("50.02k")"#);
    holds(r#"quantity("50k").add(20).isLessThan(quantity("50020")) == false"#);
    holds(r#"quantity("50k").sub(quantity("20")) == quantity("49.98k")"#);
    holds(r#"quantity("50k").sub(20) == quantity("49980")"#);
    holds(r#"quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980"#);
    holds(r#"quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20"#);
    holds(r#"quantity("50k").asInteger() == 50000"#);
    fails(
        r#"quantity("9999999999999999999999999999999999999G").asInteger() == 0"#,
        "cannot convert value to integer",
    );
    holds(r#"quantity("9999999999999999999999999999999999999G").isInteger() == false"#);
    holds(r#"quantity("50").isInteger()"#);
    holds(r#"quantity("50.703k").asApproximateFloat() == 50703.0"#);
    // Not in kube's table: sign() and a fractional quantity.
    holds(
        r#"quantity("-50k").sign() == -1 && quantity("0").sign() == 0 && quantity("1m").sign() == 1"#,
    );
    holds(r#"quantity("50m").isInteger() == false"#);
}

/// `TestSemver` of `apiserver/pkg/cel/library/semver_test.go` (version 1 of the library, as
/// v1.34's base environment loads it). kube's `isSemver_noOverload` is a compile error there
/// and a runtime one here.
#[test]
fn kube_semver_library() {
    holds(r#"semver("1.2.3") == semver("1.2.3")"#);
    fails(
        r#"semver("v1.0") == semver("1.0.0")"#,
        "No Major.Minor.Patch elements found",
    );
    holds(r#"isSemver("1.2.3-beta.1+build.1")"#);
    for no in [
        r#"isSemver("")"#,
        r#"isSemver("v1.0.0")"#,
        r#"isSemver(" 1.0.0")"#,
        r#"isSemver("1. 0.0")"#,
        r#"isSemver("1.0.0 ")"#,
        r#"isSemver("01.01.01")"#,
        r#"isSemver("1")"#,
        r#"isSemver("1.1")"#,
        r#"isSemver("", true)"#,
        r#"isSemver(" 1.0.0", true)"#,
        r#"isSemver("1. 0.0", true)"#,
        r#"isSemver("1.0.0 ", true)"#,
    ] {
        holds(&format!("{no} == false"));
    }
    holds(r#"isSemver("v1.0.0", true)"#);
    holds(r#"isSemver("01.01.01", true)"#);
    holds(r#"isSemver("1", true)"#);
    holds(r#"isSemver("1.1", true)"#);
    holds(r#"semver("v01.01", true) == semver("1.1.0")"#);
    holds(r#"(semver("1.2.3") == semver("1.0.0")) == false"#);
    holds(r#"semver("1.0.0").isLessThan(semver("1.2.3"))"#);
    holds(r#"semver("1.0.0").isLessThan(semver("1.0.0")) == false"#);
    holds(r#"semver("1.2.3").isGreaterThan(semver("1.0.0"))"#);
    holds(r#"semver("1.0.0").isGreaterThan(semver("1.0.0")) == false"#);
    holds(r#"semver("1.2.3").compareTo(semver("1.2.3")) == 0"#);
    holds(r#"semver("1.0.0").compareTo(semver("1.2.3")) == -1"#);
    holds(r#"semver("1.2.3").compareTo(semver("1.0.0")) == 1"#);
    holds(r#"semver("1.2.3").major() == 1"#);
    holds(r#"semver("1.2.3").minor() == 2"#);
    holds(r#"semver("1.2.3").patch() == 3"#);
    // Not in kube's table: semver.org precedence of pre-releases, build metadata ignored.
    holds(r#"semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))"#);
    holds(r#"semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))"#);
    holds(r#"semver("1.0.0-beta.11").isGreaterThan(semver("1.0.0-beta.2"))"#);
    holds(r#"semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))"#);
    holds(r#"semver("1.0.0+build.1") == semver("1.0.0+build.2")"#);
    fails(
        r#"semver("1.0.0-01") == semver("1.0.0")"#,
        "Numeric PreRelease version must not contain leading zeroes",
    );
}

/// Other parts of kube's base environment that selectors reach.
#[test]
fn strings_regex_and_lists_extensions() {
    holds(r#""a,b,c".split(",").size() == 3"#);
    holds(r#""ABC".lowerAscii() == "abc""#);
    holds(r#""abc123".find("[0-9]+") == "123""#);
    holds(r#""a1b2c3".findAll("[0-9]") == ["1", "2", "3"]"#);
    holds(r#""a1b2c3".findAll("[0-9]", 2) == ["1", "2"]"#);
    holds(r#""gpu-a100".matches("^gpu-")"#);
    holds(r#"[3, 1, 2].sort() == [1, 2, 3]"#);
    holds(r#"math.greatest(1, 5, 3) == 5"#);
    holds(r#"cel.bind(x, 2, x * x == 4)"#);
}

#[test]
fn attribute_domains() {
    let d = device(
        vec![
            ("model", string("a100")),
            ("gpu.example.com/memoryType", string("hbm")),
            ("other.example.com/zone", string("z1")),
        ],
        vec![("memory", "40Gi"), ("other.example.com/slots", "4")],
    );
    let yes = [
        r#"device.attributes["gpu.example.com"].model == "a100""#,
        r#"device.attributes["gpu.example.com"].memoryType == "hbm""#,
        r#"device.attributes["other.example.com"].zone == "z1""#,
        r#"device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) == 0"#,
        r#"device.capacity["other.example.com"].slots.asInteger() == 4"#,
        r#"size(device.attributes) == 2 && size(device.attributes["gpu.example.com"]) == 2"#,
        r#"size(device.attributes["nowhere.example.com"]) == 0"#,
        r#"!has(device.attributes["gpu.example.com"].nothing)"#,
        r#"has(device.attributes["gpu.example.com"].model)"#,
        r#"device.driver == "gpu.example.com""#,
    ];
    for e in yes {
        let s = CompiledSelector::compile(e).unwrap_or_else(|err| panic!("{e}: {err}"));
        assert_eq!(s.matches("gpu.example.com", &d), Ok(true), "{e}");
    }
}

#[test]
fn compiled_selectors_are_shared_across_threads() {
    let s = std::sync::Arc::new(
        CompiledSelector::compile(
            r#"device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0"#,
        )
        .unwrap(),
    );
    let big = device(vec![], vec![("memory", "80Gi")]);
    let small = device(vec![], vec![("memory", "20Gi")]);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            let s = std::sync::Arc::clone(&s);
            let (big, small) = (&big, &small);
            scope.spawn(move || {
                for _ in 0..100 {
                    assert_eq!(s.matches("gpu.example.com", big), Ok(true));
                    assert_eq!(s.matches("gpu.example.com", small), Ok(false));
                }
            });
        }
    });
}

/// What could allocate or loop without bound is charged for it, and refused above the limit.
#[test]
fn unbounded_work_is_refused_before_it_runs() {
    for e in [
        "size(lists.range(1000000000)) > 0",
        "lists.range(2000000).all(x, x >= 0)",
        r#"[1, 2, 3].map(x, string(x)).join("").split("").exists(s, s.replace("1", "22").matches("2+"))"#,
    ] {
        assert!(
            matches!(
                CompiledSelector::compile(e),
                Err(CelError::CostLimitExceeded { .. })
            ),
            "{e}"
        );
    }
    holds("size(lists.range(10)) == 10");
}
