//! What every object lock of this crate holds: the API handle and the object's place, the
//! request timeout, the object as last read, and the shared wait-for-a-change piece with its
//! watch task.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use kube::api::{Api, DeleteParams, Preconditions};
use lease_elect::{ChangeFeed, LockError, Version};

use crate::{call, watch_object};

/// One object (`namespace/name`) a lock keeps its record in.
pub(crate) struct Target<K> {
    pub(crate) api: Api<K>,
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) identity: String,
    /// `namespace/name`, for messages.
    pub(crate) describe: String,
    /// How long one API request may take.
    pub(crate) timeout: Duration,
    /// The object as last read or written, to keep its metadata (and content) on update.
    pub(crate) last: Mutex<Option<K>>,
    /// What the watch task reports, and the last read (the shared wait piece).
    pub(crate) feed: Arc<ChangeFeed>,
    /// The watch task, started by the first `wait_for_change`, stopped on drop.
    pub(crate) watcher: OnceLock<tokio::task::AbortHandle>,
    /// How the object's `resourceVersion` is read.
    pub(crate) versions: ResourceVersions,
}

/// How a lock reads its object's `metadata.resourceVersion`, and so where its fencing tokens
/// come from.
///
/// Kubernetes 1.35 made resource versions comparable (KEP-5504, stable): for objects of one
/// resource, a resource version is a positive decimal integer without leading zeros, and a
/// later write has a larger one. An API server on etcd has always handed them out that way
/// (they are etcd's revisions, global to the store, so a deleted and re-created object gets a
/// larger one too), which is what 1.35 promises for every server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceVersions {
    /// Comparable (the default): the version carries the resource version as its
    /// [sequence](Version::sequence), and fencing tokens are the resource versions of the
    /// writes that began the terms, so they keep increasing when the object is deleted and
    /// created again. A resource version that is not a positive decimal integer below 2^64
    /// without leading zeros is [`LockError::Corrupt`] naming it: use [`Opaque`](Self::Opaque)
    /// with a server that hands out such versions.
    #[default]
    Comparable,
    /// Opaque: compared for equality only (the API's rule before 1.35). Fencing tokens come
    /// from the record's `leaderTransitions`, which start again from 0 when somebody deletes
    /// the object.
    Opaque,
}

impl ResourceVersions {
    /// The version of an object whose `metadata.resourceVersion` is `rv`; `describe` and
    /// `what` name the object in errors.
    pub(crate) fn version(
        self,
        rv: Option<&str>,
        describe: &str,
        what: &str,
    ) -> Result<Version, LockError> {
        let corrupt = |detail: String| LockError::Corrupt {
            detail,
            source: None,
        };
        let rv = rv
            .filter(|rv| !rv.is_empty())
            .ok_or_else(|| corrupt(format!("{describe}: the {what} has no resourceVersion")))?;
        match self {
            ResourceVersions::Opaque => Ok(Version::new(rv)),
            ResourceVersions::Comparable => {
                comparable(rv).map(Version::from_sequence).ok_or_else(|| {
                    let shown: String = rv.chars().take(64).collect();
                    corrupt(format!(
                        "{describe}: the {what}'s resourceVersion {shown:?} is not a comparable \
                     resource version (a positive decimal integer below 2^64 without leading \
                     zeros); a lock on a server that hands out other versions needs \
                     ResourceVersions::Opaque"
                    ))
                })
            }
        }
    }
}

/// `rv` as a comparable resource version (KEP-5504's form), if it is one that fits a `u64`.
fn comparable(rv: &str) -> Option<u64> {
    let digits = rv.bytes().all(|b| b.is_ascii_digit());
    if !digits || rv.starts_with('0') {
        return None;
    }
    rv.parse().ok()
}

impl<K> Target<K>
where
    K: Resource<Scope = NamespaceResourceScope>,
    <K as Resource>::DynamicType: Default,
{
    pub(crate) fn new(
        client: kube::Client,
        namespace: String,
        name: String,
        identity: String,
    ) -> Self {
        Target {
            api: Api::namespaced(client, &namespace),
            describe: format!("{namespace}/{name}"),
            namespace,
            name,
            identity,
            timeout: Duration::from_secs(5),
            last: Mutex::new(None),
            feed: Arc::new(ChangeFeed::new()),
            watcher: OnceLock::new(),
            versions: ResourceVersions::Comparable,
        }
    }
}

impl<K> Target<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    /// Deletes the object if it is still at version `expected` (`what` names its kind in
    /// errors).
    pub(crate) async fn delete(&self, expected: &Version, what: &str) -> Result<(), LockError> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: Some(expected.tag().to_owned()),
                uid: None,
            }),
            ..DeleteParams::default()
        };
        call(
            self.timeout,
            &self.describe,
            what,
            self.api.delete(&self.name, &params),
        )
        .await?;
        Ok(())
    }

    /// Starts the one watch of this handle on the object, if not yet started.
    pub(crate) fn ensure_watch(&self) {
        self.watcher.get_or_init(|| {
            tokio::spawn(watch_object(
                self.api.clone(),
                self.name.clone(),
                Arc::clone(&self.feed),
                self.timeout,
            ))
            .abort_handle()
        });
    }
}

impl<K> Drop for Target<K> {
    fn drop(&mut self) {
        if let Some(watcher) = self.watcher.get() {
            watcher.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ResourceVersions, comparable};

    #[test]
    fn comparable_resource_versions_are_kep_5504_integers() {
        assert_eq!(comparable("1"), Some(1));
        assert_eq!(comparable("18446744073709551615"), Some(u64::MAX));
        for bad in [
            "",
            "0",
            "012",
            "-3",
            "+3",
            "12a",
            "1.5",
            " 7",
            "18446744073709551616",
        ] {
            assert_eq!(comparable(bad), None, "{bad:?}");
        }
        let v = ResourceVersions::Comparable
            .version(Some("4711"), "ns/a", "Lease")
            .unwrap();
        assert_eq!((v.tag(), v.sequence()), ("4711", Some(4711)));
        let v = ResourceVersions::Opaque
            .version(Some("4711"), "ns/a", "Lease")
            .unwrap();
        assert_eq!((v.tag(), v.sequence()), ("4711", None));
        let e = ResourceVersions::Comparable
            .version(Some("abc"), "ns/a", "Lease")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ns/a") && e.contains("\"abc\"") && e.contains("Opaque"),
            "{e}"
        );
        let e = ResourceVersions::Opaque
            .version(None, "ns/a", "ConfigMap")
            .unwrap_err()
            .to_string();
        assert!(e.contains("the ConfigMap has no resourceVersion"), "{e}");
    }
}
