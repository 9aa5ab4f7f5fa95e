//! DRA CEL device selectors: `CompiledSelector::compile` and `matches`.
//!
//! The input is `<expression>\n<attribute value>\n<capacity>`: the expression is compiled, and
//! evaluated against a device with string, int, bool and version attributes and quantity
//! capacities, some of them taken from the input.
//!
//! Invariants checked on every input:
//! - neither compiling nor evaluating panics;
//! - an accepted expression's estimated cost is within kube's limit (`SELECTOR_MAX_COST`), and
//!   its length within `SELECTOR_MAX_LENGTH`;
//! - evaluating twice gives the same result (no hidden state).

#![no_main]

use libfuzzer_sys::fuzz_target;
use sched_core::dra::cel::{CompiledSelector, SELECTOR_MAX_COST, SELECTOR_MAX_LENGTH};
use sched_core::model::{Device, DeviceAttribute, DeviceCapacity};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.splitn(3, '\n');
    let expression = parts.next().unwrap_or("");
    let value = parts.next().unwrap_or("fish");
    let capacity = parts.next().unwrap_or("1Gi");
    let Ok(selector) = CompiledSelector::compile(expression) else {
        return;
    };
    assert!(expression.len() <= SELECTOR_MAX_LENGTH);
    assert!(
        selector.estimated_cost() <= SELECTOR_MAX_COST,
        "{expression:?} accepted with cost {}",
        selector.estimated_cost()
    );
    let device = device(value, capacity);
    let first = selector.matches("dra.example.com", &device);
    let second = selector.matches("dra.example.com", &device);
    assert_eq!(first, second, "{expression:?}");
});

fn device(value: &str, capacity: &str) -> Device {
    let mut d = Device {
        name: "dev".to_owned(),
        allow_multiple_allocations: Some(value.len() % 2 == 0),
        ..Default::default()
    };
    let attr = |f: fn(&mut DeviceAttribute)| {
        let mut a = DeviceAttribute::default();
        f(&mut a);
        a
    };
    d.attributes.insert("name".into(), DeviceAttribute {
        string_value: Some(value.to_owned()),
        ..Default::default()
    });
    d.attributes.insert("version".into(), DeviceAttribute {
        version_value: Some(if value.starts_with(|c: char| c.is_ascii_digit()) {
            value.to_owned()
        } else {
            "1.2.3".to_owned()
        }),
        ..Default::default()
    });
    d.attributes.insert("count".into(), attr(|a| a.int_value = Some(7)));
    d.attributes.insert("other.example.com/flag".into(), attr(|a| a.bool_value = Some(true)));
    if let Ok(q) = capacity.parse() {
        d.capacity.insert("memory".into(), DeviceCapacity { value: q });
    }
    d.capacity.insert("other.example.com/slots".into(), DeviceCapacity {
        value: "4".parse().expect("a quantity"),
    });
    d
}
