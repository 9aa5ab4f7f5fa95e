//! [`BoxPredicate`] and [`BoxPriority`]: plugins of any type behind one shared, cheap-to-clone
//! handle, as a profile holds them. The state a plugin prepares for a pod travels as an
//! [`ErasedState`] and is turned back into the plugin's own `State` type in exactly one
//! place, the blanket implementations below.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use super::{CycleContext, PluginError, Predicate, Prepared, PreparedScore, Priority, Reason};
use crate::fast_path::{FastFilter, FastScore, SEALED};
use crate::model::Pod;
use crate::snapshot::{NodeRef, Snapshot, VolumeBinderId};

/// A plugin's per-pod state with its type erased; only the plugin that prepared it reads it.
pub(crate) struct ErasedState(Box<dyn Any + Send + Sync>);

impl ErasedState {
    fn new<S: Send + Sync + 'static>(state: S) -> ErasedState {
        ErasedState(Box::new(state))
    }

    /// The state as the plugin's own type. A profile hands a state only to the plugin that
    /// made it, so the type always matches.
    #[inline]
    fn get<S: 'static>(&self) -> &S {
        match self.0.downcast_ref::<S>() {
            Some(s) => s,
            None => unreachable!("a plugin state reached a plugin that did not prepare it"),
        }
    }
}

impl fmt::Debug for ErasedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ErasedState(..)")
    }
}

/// A predicate's preparation for a pod, its state erased.
type PreparedFilter = Prepared<ErasedState>;
/// A priority's preparation for a pod, its state erased.
pub(crate) type PreparedScoring = PreparedScore<ErasedState>;

/// The object-safe form of [`Predicate`].
trait DynPredicate: Send + Sync {
    fn name(&self) -> &str;
    fn prepare(&self, cx: &CycleContext<'_>) -> Result<PreparedFilter, PluginError>;
    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason>;
    fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    );
    fn fast_filter(&self, cx: &CycleContext<'_>, state: &ErasedState) -> Option<FastFilter>;
    fn filter_error(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        node: NodeRef<'_>,
    ) -> Option<String>;
    fn explain(&self, code: u32) -> Cow<'static, str>;
    fn volume_binder(&self) -> Option<VolumeBinderId>;
    fn may_error(&self) -> bool;
    fn pre_enqueue(&self, pod: &Pod, snapshot: &Snapshot) -> Result<(), String>;
}

impl<P: Predicate> DynPredicate for P {
    fn name(&self) -> &str {
        Predicate::name(self)
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<PreparedFilter, PluginError> {
        Ok(match Predicate::prepare(self, cx)? {
            Prepared::Skip => Prepared::Skip,
            Prepared::Pass => Prepared::Pass,
            Prepared::Run(s) => Prepared::Run(ErasedState::new(s)),
            Prepared::RunOn(s, nodes) => Prepared::RunOn(ErasedState::new(s), nodes),
            Prepared::Reject(r) => Prepared::Reject(r),
        })
    }

    #[inline]
    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        Predicate::filter(self, cx, state.get::<P::State>(), node)
    }

    fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    ) {
        Predicate::filter_batch(self, cx, state.get::<P::State>(), nodes, out)
    }

    fn fast_filter(&self, cx: &CycleContext<'_>, state: &ErasedState) -> Option<FastFilter> {
        Predicate::fast_filter(self, cx, state.get::<P::State>(), SEALED)
    }

    fn filter_error(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        node: NodeRef<'_>,
    ) -> Option<String> {
        Predicate::filter_error(self, cx, state.get::<P::State>(), node)
    }

    fn explain(&self, code: u32) -> Cow<'static, str> {
        Predicate::explain(self, code)
    }

    fn volume_binder(&self) -> Option<VolumeBinderId> {
        Predicate::volume_binder(self, SEALED)
    }

    fn may_error(&self) -> bool {
        Predicate::may_error(self, SEALED)
    }

    fn pre_enqueue(&self, pod: &Pod, snapshot: &Snapshot) -> Result<(), String> {
        Predicate::pre_enqueue(self, pod, snapshot)
    }
}

/// Any [`Predicate`], shared: what a profile holds. Cloning shares the plugin.
///
/// ```
/// use sched_core::framework::{BoxPredicate, predicate_fn};
/// let p = BoxPredicate::new(predicate_fn("Always", |_, _| Ok(())));
/// assert_eq!(p.name(), "Always");
/// ```
#[derive(Clone)]
pub struct BoxPredicate(Arc<dyn DynPredicate>);

impl BoxPredicate {
    /// Boxes a predicate.
    pub fn new(predicate: impl Predicate) -> BoxPredicate {
        BoxPredicate(Arc::new(predicate))
    }

    /// The predicate's name.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// The same predicate under another name (a configuration names its plugins).
    #[must_use]
    pub fn with_name(self, name: impl Into<String>) -> BoxPredicate {
        BoxPredicate(Arc::new(Renamed {
            inner: self,
            name: name.into(),
        }))
    }

    pub(crate) fn prepare(&self, cx: &CycleContext<'_>) -> Result<PreparedFilter, PluginError> {
        self.0.prepare(cx)
    }

    #[inline]
    pub(crate) fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        self.0.filter(cx, state, node)
    }

    pub(crate) fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    ) {
        self.0.filter_batch(cx, state, nodes, out)
    }

    pub(crate) fn fast_filter(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
    ) -> Option<FastFilter> {
        self.0.fast_filter(cx, state)
    }

    pub(crate) fn explain(&self, code: u32) -> Cow<'static, str> {
        self.0.explain(code)
    }

    /// The plugin's [`Predicate::filter_error`].
    pub(crate) fn filter_error(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        node: NodeRef<'_>,
    ) -> Option<String> {
        self.0.filter_error(cx, state, node)
    }

    /// The volume binder of a built-in VolumeBinding.
    pub(crate) fn volume_binder(&self) -> Option<VolumeBinderId> {
        self.0.volume_binder()
    }

    /// The plugin's [`Predicate::may_error`].
    pub(crate) fn may_error(&self) -> bool {
        self.0.may_error()
    }

    /// The plugin's PreEnqueue ([`Predicate::pre_enqueue`]).
    pub(crate) fn pre_enqueue(&self, pod: &Pod, snapshot: &Snapshot) -> Result<(), String> {
        self.0.pre_enqueue(pod, snapshot)
    }
}

impl<P: Predicate> From<P> for BoxPredicate {
    fn from(p: P) -> BoxPredicate {
        BoxPredicate::new(p)
    }
}

impl fmt::Debug for BoxPredicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BoxPredicate").field(&self.name()).finish()
    }
}

/// The object-safe form of [`Priority`].
trait DynPriority: Send + Sync {
    fn name(&self) -> &str;
    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScoring, PluginError>;
    fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        nodes: &[u32],
        out: &mut [i64],
    );
    fn normalize(&self, cx: &CycleContext<'_>, state: &ErasedState, scores: &mut [i64]);
    fn fast_score(&self, cx: &CycleContext<'_>, state: &ErasedState) -> Option<FastScore>;
}

impl<P: Priority> DynPriority for P {
    fn name(&self) -> &str {
        Priority::name(self)
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScoring, PluginError> {
        Ok(match Priority::prepare(self, cx, feasible)? {
            PreparedScore::Constant(c) => PreparedScore::Constant(c),
            PreparedScore::Run(s) => PreparedScore::Run(ErasedState::new(s)),
        })
    }

    fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        nodes: &[u32],
        out: &mut [i64],
    ) {
        Priority::score_batch(self, cx, state.get::<P::State>(), nodes, out)
    }

    fn normalize(&self, cx: &CycleContext<'_>, state: &ErasedState, scores: &mut [i64]) {
        Priority::normalize(self, cx, state.get::<P::State>(), scores)
    }

    fn fast_score(&self, cx: &CycleContext<'_>, state: &ErasedState) -> Option<FastScore> {
        Priority::fast_score(self, cx, state.get::<P::State>(), SEALED)
    }
}

/// Any [`Priority`], shared: what a profile holds. Cloning shares the plugin.
#[derive(Clone)]
pub struct BoxPriority(Arc<dyn DynPriority>);

impl BoxPriority {
    /// Boxes a priority.
    pub fn new(priority: impl Priority) -> BoxPriority {
        BoxPriority(Arc::new(priority))
    }

    /// The priority's name.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// The same priority under another name (a configuration names its plugins).
    #[must_use]
    pub fn with_name(self, name: impl Into<String>) -> BoxPriority {
        BoxPriority(Arc::new(Renamed {
            inner: self,
            name: name.into(),
        }))
    }

    pub(crate) fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScoring, PluginError> {
        self.0.prepare(cx, feasible)
    }

    pub(crate) fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        nodes: &[u32],
        out: &mut [i64],
    ) {
        self.0.score_batch(cx, state, nodes, out)
    }

    pub(crate) fn normalize(&self, cx: &CycleContext<'_>, state: &ErasedState, scores: &mut [i64]) {
        self.0.normalize(cx, state, scores)
    }

    pub(crate) fn fast_score(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
    ) -> Option<FastScore> {
        self.0.fast_score(cx, state)
    }
}

impl<P: Priority> From<P> for BoxPriority {
    fn from(p: P) -> BoxPriority {
        BoxPriority::new(p)
    }
}

impl fmt::Debug for BoxPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BoxPriority").field(&self.name()).finish()
    }
}

/// A boxed plugin under another name.
struct Renamed<B> {
    inner: B,
    name: String,
}

impl DynPredicate for Renamed<BoxPredicate> {
    fn name(&self) -> &str {
        &self.name
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<PreparedFilter, PluginError> {
        self.inner.prepare(cx)
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        self.inner.filter(cx, state, node)
    }

    fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    ) {
        self.inner.filter_batch(cx, state, nodes, out)
    }

    fn fast_filter(&self, cx: &CycleContext<'_>, state: &ErasedState) -> Option<FastFilter> {
        self.inner.fast_filter(cx, state)
    }

    fn filter_error(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        node: NodeRef<'_>,
    ) -> Option<String> {
        self.inner.filter_error(cx, state, node)
    }

    fn explain(&self, code: u32) -> Cow<'static, str> {
        self.inner.explain(code)
    }

    fn volume_binder(&self) -> Option<VolumeBinderId> {
        self.inner.volume_binder()
    }

    fn may_error(&self) -> bool {
        self.inner.may_error()
    }

    fn pre_enqueue(&self, pod: &Pod, snapshot: &Snapshot) -> Result<(), String> {
        self.inner.pre_enqueue(pod, snapshot)
    }
}

impl DynPriority for Renamed<BoxPriority> {
    fn name(&self) -> &str {
        &self.name
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScoring, PluginError> {
        self.inner.prepare(cx, feasible)
    }

    fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &ErasedState,
        nodes: &[u32],
        out: &mut [i64],
    ) {
        self.inner.score_batch(cx, state, nodes, out)
    }

    fn normalize(&self, cx: &CycleContext<'_>, state: &ErasedState, scores: &mut [i64]) {
        self.inner.normalize(cx, state, scores)
    }

    fn fast_score(&self, cx: &CycleContext<'_>, state: &ErasedState) -> Option<FastScore> {
        self.inner.fast_score(cx, state)
    }
}
