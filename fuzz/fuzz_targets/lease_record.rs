//! `LeaderElectionRecord` decoding (client-go's annotation JSON) and its RFC 3339 times.
//!
//! Invariants checked on every input:
//! - decoding never panics;
//! - a decoded record re-encodes, and the encoding decodes again to the same record with its
//!   times truncated to whole seconds (the format's precision); encoding that record gives the
//!   same text again (the encoding is a fixed point);
//! - `parse_rfc3339` never panics, and a time it accepts formats to text it accepts again,
//!   denoting the same second.

#![no_main]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lease_elect::{LeaderElectionRecord, format_rfc3339, parse_rfc3339};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Backends read bytes (serde_json::from_slice, as FileLock does) or text (from_json).
    // From bytes, serde_json skips the values of unknown keys without checking their UTF-8.
    let from_bytes = serde_json::from_slice::<LeaderElectionRecord>(data);
    let Ok(text) = std::str::from_utf8(data) else {
        if let Ok(record) = from_bytes {
            round_trip(&String::from_utf8_lossy(data), &record);
        }
        return;
    };
    let from_text = LeaderElectionRecord::from_json(text);
    match (&from_text, &from_bytes) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "text and bytes decode differently"),
        (Err(_), Err(_)) => {}
        _ => panic!("text and bytes disagree: {from_text:?} / {from_bytes:?}"),
    }
    if let Ok(record) = from_text {
        round_trip(text, &record);
    }
    if let Ok(time) = parse_rfc3339(text) {
        let formatted = format_rfc3339(time);
        let back = parse_rfc3339(&formatted).unwrap_or_else(|e| {
            panic!("{text:?} parsed, but its formatted form {formatted:?} does not: {e}")
        });
        assert_eq!(back, whole_seconds(time), "{text:?} -> {formatted:?}");
    }
});

/// A decoded record re-encodes to text that decodes to the same record (at whole seconds),
/// and encoding is then a fixed point.
fn round_trip(input: &str, first: &LeaderElectionRecord) {
    let json = first.to_json().expect("a record encodes");
    let second = LeaderElectionRecord::from_json(&json).unwrap_or_else(|e| {
        panic!("{input:?} decoded to {first:?}, which encodes to {json:?}, which fails: {e}")
    });
    let expected = LeaderElectionRecord {
        acquire_time: first.acquire_time.map(whole_seconds),
        renew_time: first.renew_time.map(whole_seconds),
        ..first.clone()
    };
    assert_eq!(second, expected, "round trip of {input:?} through {json:?}");
    assert_eq!(
        second.to_json().unwrap(),
        json,
        "encoding is not a fixed point"
    );
}

/// The time truncated toward the past to a whole second.
fn whole_seconds(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(e) => {
            let d = e.duration();
            let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
            UNIX_EPOCH - Duration::from_secs(secs)
        }
    }
}
