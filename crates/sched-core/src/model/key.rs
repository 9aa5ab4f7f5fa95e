//! [`PodKey`]: a pod's `namespace/name`, the key kube's scheduler files a pod under.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A pod's `namespace/name`: the key the engine, its queue, its nominator and its steps file a
/// pod under (kube's `cache.MetaNamespaceKeyFunc`).
///
/// Cloning is a reference count, not a copy: one key is made per pod event and shared by every
/// structure that holds the pod. The key reads as its string (`Deref<Target = str>`,
/// `Borrow<str>`, equality with `&str`), so maps keyed by `PodKey` are searched with a `&str`
/// and a `&PodKey` is passed where a `&str` is asked. A key without `/` is a name in no
/// namespace (kube's key of a cluster-scoped object).
///
/// ```
/// use sched_core::model::PodKey;
///
/// let key = PodKey::new("team-a", "trainer-0");
/// assert_eq!(key, "team-a/trainer-0");
/// assert_eq!((key.namespace(), key.name()), ("team-a", "trainer-0"));
/// let same: PodKey = "team-a/trainer-0".into();
/// assert_eq!(key, same);
/// let mut set = std::collections::HashSet::new();
/// set.insert(key.clone());
/// assert!(set.contains("team-a/trainer-0"));
/// assert_eq!(PodKey::from("lonely").namespace(), "");
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodKey(Arc<str>);

impl PodKey {
    /// The key of the pod `name` in `namespace`.
    pub fn new(namespace: &str, name: &str) -> PodKey {
        // Joined on the stack and copied once into the shared allocation (a `String` would be
        // a second allocation): Kubernetes names fit (a namespace is at most 63 bytes, a pod
        // name 253).
        let len = namespace.len() + 1 + name.len();
        let mut buf = [0u8; 320];
        if len <= buf.len() {
            buf[..namespace.len()].copy_from_slice(namespace.as_bytes());
            buf[namespace.len()] = b'/';
            buf[namespace.len() + 1..len].copy_from_slice(name.as_bytes());
            if let Ok(joined) = std::str::from_utf8(&buf[..len]) {
                return PodKey(Arc::from(joined));
            }
        }
        PodKey(format!("{namespace}/{name}").into())
    }

    /// The namespace (before the first `/`; empty for a key without one).
    pub fn namespace(&self) -> &str {
        self.0.split_once('/').map_or("", |(ns, _)| ns)
    }

    /// The name (after the first `/`; the whole key for a key without one).
    pub fn name(&self) -> &str {
        self.0.split_once('/').map_or(&self.0, |(_, name)| name)
    }

    /// The key as `namespace/name`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for PodKey {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for PodKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for PodKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PodKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for PodKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for PodKey {
    fn from(key: &str) -> PodKey {
        PodKey(key.into())
    }
}

impl From<String> for PodKey {
    fn from(key: String) -> PodKey {
        PodKey(key.into())
    }
}

impl From<&String> for PodKey {
    fn from(key: &String) -> PodKey {
        PodKey(key.as_str().into())
    }
}

impl From<PodKey> for String {
    fn from(key: PodKey) -> String {
        key.0.to_string()
    }
}

impl PartialEq<str> for PodKey {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for PodKey {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for PodKey {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<PodKey> for str {
    fn eq(&self, other: &PodKey) -> bool {
        self == &*other.0
    }
}

impl PartialEq<PodKey> for &str {
    fn eq(&self, other: &PodKey) -> bool {
        *self == &*other.0
    }
}

impl PartialEq<PodKey> for String {
    fn eq(&self, other: &PodKey) -> bool {
        **self == *other.0
    }
}

impl serde::Serialize for PodKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}
