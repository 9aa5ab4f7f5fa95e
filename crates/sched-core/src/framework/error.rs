//! [`PluginError`]: a plugin could not prepare for a pod, or could not be built.

use std::error::Error;

/// What kind of failure a [`PluginError`] is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PluginErrorKind {
    /// The plugin's argument (its configuration) is not valid; kube refuses such a plugin when
    /// the scheduler starts.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The pod, or an object in the snapshot the plugin reads for it, holds a value the plugin
    /// cannot use (kube fails the pod's cycle with an error, as for an unparsable label
    /// selector). Scheduling the same pod again gives the same error.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The pod needs something the plugin does not evaluate (kube would, with a plugin this
    /// crate does not implement); the pod is not placed rather than placed wrongly.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A custom plugin's own failure.
    #[error("{0}")]
    Other(String),
}

/// A plugin failed: its name, what kind of failure, and the underlying error if there is one.
/// During scheduling the pod is not placed and the error is returned to the caller.
///
/// ```
/// use sched_core::framework::{PluginError, PluginErrorKind};
/// let e = PluginError::new("MyPlugin", PluginErrorKind::InvalidInput("no team label".into()));
/// assert_eq!(e.plugin(), "MyPlugin");
/// assert_eq!(e.to_string(), "plugin MyPlugin: invalid input: no team label");
/// ```
#[derive(Debug, thiserror::Error)]
#[error("plugin {plugin}: {kind}")]
pub struct PluginError {
    plugin: String,
    kind: PluginErrorKind,
    #[source]
    source: Option<Box<dyn Error + Send + Sync>>,
}

impl PluginError {
    /// An error of `plugin` of this kind.
    pub fn new(plugin: impl Into<String>, kind: PluginErrorKind) -> PluginError {
        PluginError {
            plugin: plugin.into(),
            kind,
            source: None,
        }
    }

    /// The same error with the error that caused it.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<Box<dyn Error + Send + Sync>>) -> PluginError {
        self.source = Some(source.into());
        self
    }

    /// The plugin's name.
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    /// What kind of failure.
    pub fn kind(&self) -> &PluginErrorKind {
        &self.kind
    }
}
