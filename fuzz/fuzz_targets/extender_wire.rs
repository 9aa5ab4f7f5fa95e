//! Extender replies as an HTTP extender may send them, to the readers the engine calls:
//! `ExtenderFilterResult::from_json`, `HostPriority::list_from_json`,
//! `preemption_result_from_json`, `binding_result_from_json` (and the request readers
//! `ExtenderArgs::from_json`, `ExtenderBindingArgs::from_json`, which an extender written
//! with this crate uses).
//!
//! Invariants checked on every input:
//! - no reader panics, whatever the bytes;
//! - an accepted filter reply re-encodes (`to_json`) to a reply that reads back equal;
//! - an accepted prioritize reply re-encodes (as kube's `HostPriorityList`) to one that reads
//!   back equal;
//! - a binding request that reads re-encodes to one that reads back equal.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sched_core::extender::wire::{
    ExtenderArgs, ExtenderBindingArgs, ExtenderFilterResult, HostPriority,
    binding_result_from_json, preemption_result_from_json,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = ExtenderFilterResult::from_json(data) {
        let again = ExtenderFilterResult::from_json(&r.to_json())
            .unwrap_or_else(|e| panic!("{r:?} re-encoded does not read: {e}"));
        assert_eq!(again, r, "filter reply round trip");
    }
    if let Ok(list) = HostPriority::list_from_json(data) {
        let bytes = serde_json::to_vec(&list).expect("a HostPriorityList serializes");
        let again = HostPriority::list_from_json(&bytes)
            .unwrap_or_else(|e| panic!("{list:?} re-encoded does not read: {e}"));
        assert_eq!(again, list, "prioritize reply round trip");
    }
    let _ = preemption_result_from_json(data);
    let _ = binding_result_from_json(data);
    let _ = ExtenderArgs::from_json(data);
    if let Ok(args) = ExtenderBindingArgs::from_json(data) {
        let again = ExtenderBindingArgs::from_json(&args.to_json())
            .unwrap_or_else(|e| panic!("{args:?} re-encoded does not read: {e}"));
        assert_eq!(again, args, "binding args round trip");
    }
});
