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
