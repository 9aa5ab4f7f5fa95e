//! `FileLock` reading a lock file with arbitrary content, through the public API only.
//!
//! The input bytes become the lock file (in a private directory under `$TMPDIR`); then
//! `get()` reads it and, depending on what it returned, one write is tried. Invariants:
//! - nothing panics (also not on the blocking threads the lock uses);
//! - `get()` returns a record only when the file really is `{"version":N,"record":{...}}`
//!   (checked by an independent decode through `serde_json::Value`), with version `N`;
//!   `Ok(None)` only for a file with a valid version and a null or absent record; any
//!   other file is `LockError::Corrupt`, never a backend error;
//! - a UTF-8 file the independent decode accepts and that has no duplicate keys is not
//!   refused;
//! - a corrupt file is never overwritten: `create` fails with `Corrupt` and leaves the bytes;
//! - writing on top of a valid file gives the next version (`N + 1`), never a smaller one,
//!   and the record then reads back (times truncated to whole seconds).

#![no_main]

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lease_elect::{FileLock, LeaderElectionRecord, LockError, ResourceLock, Version};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

struct Harness {
    rt: tokio::runtime::Runtime,
    path: PathBuf,
    lock: FileLock,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("file-lock-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the fuzz lock directory");
        let path = dir.join("leader.json");
        Harness {
            rt: tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a tokio runtime"),
            lock: FileLock::new(&path, "fuzz"),
            path,
        }
    })
}

/// What the file holds, decoded without `FileLock`.
#[derive(Debug)]
enum Expected {
    Held(u64, LeaderElectionRecord),
    Released(u64),
    Invalid,
}

fn decode_independently(data: &[u8]) -> Expected {
    // serde_json::from_slice (what FileLock uses) skips the values of unknown keys without
    // checking their UTF-8; everything it keeps is valid UTF-8, so a lossy decode agrees.
    let text = String::from_utf8_lossy(data);
    let Ok(doc) = serde_json::from_str::<Value>(&text) else {
        return Expected::Invalid;
    };
    let (version, record) = match &doc {
        Value::Object(map) => {
            if map.keys().any(|k| k != "version" && k != "record") {
                return Expected::Invalid;
            }
            (map.get("version"), map.get("record"))
        }
        // serde's derived decoders also take a struct as the sequence of its fields:
        // `[version, record]`, both present.
        Value::Array(items) if items.len() == 2 => (items.first(), items.get(1)),
        _ => return Expected::Invalid,
    };
    let Some(version) = version.and_then(Value::as_u64) else {
        return Expected::Invalid;
    };
    match record {
        None | Some(Value::Null) => Expected::Released(version),
        Some(r) => match serde_json::from_value::<LeaderElectionRecord>(r.clone()) {
            Ok(r) => Expected::Held(version, r),
            Err(_) => Expected::Invalid,
        },
    }
}

fuzz_target!(|data: &[u8]| {
    let h = harness();
    // Each input is a lock file on its own: the version floor an earlier input left in
    // `<path>.lock` (the highest version written there) is cleared first.
    std::fs::write(h.path.with_extension("json.lock"), b"").expect("clear the version floor");
    std::fs::write(&h.path, data).expect("write the lock file");
    let expected = decode_independently(data);
    let got = h.rt.block_on(h.lock.get());
    match (&got, &expected) {
        (Ok(Some((record, version))), Expected::Held(n, r)) => {
            assert_eq!(version.sequence(), Some(*n), "version of {expected:?}");
            assert_eq!(version.tag(), n.to_string());
            assert_eq!(record, r);
        }
        (Ok(None), Expected::Released(_)) => {}
        (Err(LockError::Corrupt { .. }), Expected::Invalid) => {}
        (Err(LockError::Corrupt { .. }), _) => assert!(
            has_duplicate_keys(data) || std::str::from_utf8(data).is_err(),
            "a valid lock file ({expected:?}) was refused: {got:?}"
        ),
        (Err(e), _) => panic!("reading a lock file must succeed or be Corrupt, got {e:?}"),
        (Ok(r), _) => panic!("read {r:?} from a file that decodes to {expected:?}"),
    }

    match got {
        Err(_) => {
            // Never overwrite a file that cannot be read: it may name a live leader.
            let r = h.rt.block_on(h.lock.create(&sample_record()));
            assert!(
                matches!(r, Err(LockError::Corrupt { .. })),
                "create over a corrupt file: {r:?}"
            );
            let r =
                h.rt.block_on(h.lock.update(&Version::from_sequence(1), &sample_record()));
            assert!(r.is_err(), "update over a corrupt file: {r:?}");
            assert_eq!(
                std::fs::read(&h.path).unwrap(),
                data,
                "a corrupt file was changed"
            );
        }
        Ok(Some((record, version))) => {
            let old = version.sequence().unwrap();
            let written = h.rt.block_on(h.lock.update(&version, &record));
            check_next_version(old, written.as_ref().map(Version::sequence), data);
            if let Ok(v) = written {
                let again =
                    h.rt.block_on(h.lock.get())
                        .expect("read back our own write");
                let (r, v2) = again.expect("the record just written");
                assert_eq!(v2, v);
                assert_eq!(r.acquire_time, record.acquire_time.map(whole_seconds));
                assert_eq!(r.renew_time, record.renew_time.map(whole_seconds));
                assert_eq!(r.holder_identity, record.holder_identity);
                assert_eq!(r.leader_transitions, record.leader_transitions);
            }
        }
        Ok(None) => {
            let Expected::Released(old) = expected else {
                unreachable!()
            };
            let written = h.rt.block_on(h.lock.create(&sample_record()));
            check_next_version(old, written.as_ref().map(Version::sequence), data);
        }
    }
});

/// A write on top of version `old` gives `old + 1`; when there is no next version it fails.
fn check_next_version(old: u64, written: Result<Option<u64>, &LockError>, data: &[u8]) {
    match (old.checked_add(1), written) {
        (Some(next), Ok(v)) => assert_eq!(v, Some(next), "write after version {old}"),
        (Some(_), Err(e)) => panic!(
            "write over the valid file {:?} failed: {e:?}",
            String::from_utf8_lossy(data)
        ),
        // Fencing tokens come from versions: wrapping around would hand out a smaller one.
        (None, Ok(v)) => panic!("write after version {old} returned version {v:?}"),
        (None, Err(_)) => {}
    }
}

fn sample_record() -> LeaderElectionRecord {
    LeaderElectionRecord::new("fuzz", 15, UNIX_EPOCH + Duration::from_secs(1_795_000_000))
}

fn whole_seconds(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(e) => {
            let d = e.duration();
            UNIX_EPOCH - Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
        }
    }
}

/// Whether some JSON object in `data` repeats a key (serde's derived decoders refuse that,
/// `serde_json::Value` keeps the last one).
fn has_duplicate_keys(data: &[u8]) -> bool {
    serde_json::from_slice::<NoDuplicates>(data).is_err()
}

struct NoDuplicates;

impl<'de> serde::Deserialize<'de> for NoDuplicates {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicatesVisitor)
    }
}

struct NoDuplicatesVisitor;

impl<'de> serde::de::Visitor<'de> for NoDuplicatesVisitor {
    type Value = NoDuplicates;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON without repeated keys")
    }
    fn visit_bool<E>(self, _: bool) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_i64<E>(self, _: i64) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_u64<E>(self, _: u64) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_f64<E>(self, _: f64) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_str<E>(self, _: &str) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_unit<E>(self) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<NoDuplicates, A::Error> {
        while seq.next_element::<NoDuplicates>()?.is_some() {}
        Ok(NoDuplicates)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<NoDuplicates, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key) {
                return Err(serde::de::Error::custom("repeated key"));
            }
            map.next_value::<NoDuplicates>()?;
        }
        Ok(NoDuplicates)
    }
}
