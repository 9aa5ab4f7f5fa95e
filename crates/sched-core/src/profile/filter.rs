//! Filtering: the fast pass over the snapshot's `NodeFree` rows, and the general passes
//! (sequential in batches, or parallel in chunks with early stop) through the predicates.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::cache::{Cache, ChunkBuf, Outcome};
use super::{Profile, ScheduleError};
use crate::fast_path::FastFilter;
use crate::framework::{BoxPredicate, CycleContext, ErasedState, Prepared, Reason};

/// The predicate index of a failure whose reason is not computed yet (see
/// [`Profile::filter_fast`]).
const PENDING: u16 = u16::MAX;

const CHUNK: usize = 256;

/// Nodes per batch in sequential filtering (fewer when fewer feasible nodes are still needed,
/// so early stop wastes little work).
const SEQ_BATCH: usize = 128;

impl ChunkBuf {
    /// Filters `self.nodes` into `self.out`. Without alwaysCheckAllPredicates each predicate
    /// runs (through `filter_batch`) on the nodes that passed the ones before it, so every
    /// node gets exactly the first failing predicate's reason, as the node-by-node loop gives.
    fn filter(
        &mut self,
        predicates: &[BoxPredicate],
        active: &[(u16, ErasedState)],
        always_all: bool,
        cx: &CycleContext<'_>,
    ) {
        self.out.clear();
        if always_all {
            self.out.extend(
                self.nodes
                    .iter()
                    .map(|&i| Profile::check_node(predicates, active, true, cx, i as usize)),
            );
            return;
        }
        self.out.resize(self.nodes.len(), Ok(()));
        self.alive.clear();
        self.alive.extend_from_slice(&self.nodes);
        self.alive_pos.clear();
        self.alive_pos.extend(0..self.nodes.len() as u32);
        self.filter_alive(predicates, active, None, cx);
    }

    /// Filters `self.nodes` into `self.out` led by the predicate at position `lead` of
    /// `active` (see [`Profile::lead_position`]): it runs first, on every node. A node it
    /// rejects is recorded with [`PENDING`] (its reason, the first failing predicate in order,
    /// is computed only if no node fits: [`Profile::resolve_pending`]), unless the rejection
    /// is a Filter error, whose node is checked in order at once (an earlier predicate may
    /// reject it first, and then the error does not count). The nodes it passes go through
    /// the other predicates in order, so they get exactly the first failing predicate's
    /// reason. Feasible nodes are the same as [`ChunkBuf::filter`]'s: a node passes all the
    /// predicates in any order or none. Returns how many nodes the lead rejected.
    fn filter_led(
        &mut self,
        predicates: &[BoxPredicate],
        active: &[(u16, ErasedState)],
        lead: usize,
        cx: &CycleContext<'_>,
    ) -> usize {
        let len = self.nodes.len();
        self.out.clear();
        self.out.resize(len, Ok(()));
        self.res.clear();
        self.res.resize(len, Ok(()));
        let (pi, state) = &active[lead];
        predicates[*pi as usize].filter_batch(cx, state, &self.nodes, &mut self.res);
        self.alive.clear();
        self.alive_pos.clear();
        let mut rejected = 0;
        for (k, (&node, r)) in self.nodes.iter().zip(&self.res).enumerate() {
            match r {
                Ok(()) => {
                    self.alive.push(node);
                    self.alive_pos.push(k as u32);
                }
                Err(r) if r.is_error() => {
                    self.out[k] = Profile::check_node(predicates, active, false, cx, node as usize);
                }
                Err(_) => {
                    self.out[k] = Err((PENDING, Reason::Custom(0)));
                    rejected += 1;
                }
            }
        }
        self.filter_alive(predicates, active, Some(lead), cx);
        rejected
    }

    /// Runs the predicates of `active` but the one at position `skip` in order on
    /// `self.alive`, each on the nodes the ones before passed, recording each node's first
    /// failure in `self.out` at its `alive_pos`.
    fn filter_alive(
        &mut self,
        predicates: &[BoxPredicate],
        active: &[(u16, ErasedState)],
        skip: Option<usize>,
        cx: &CycleContext<'_>,
    ) {
        let Some(last) = (0..active.len()).rev().find(|&j| Some(j) != skip) else {
            return;
        };
        for (j, (pi, state)) in active.iter().enumerate() {
            if Some(j) == skip {
                continue;
            }
            if self.alive.is_empty() {
                break;
            }
            self.res.clear();
            self.res.resize(self.alive.len(), Ok(()));
            predicates[*pi as usize].filter_batch(cx, state, &self.alive, &mut self.res);
            if j == last {
                // The last predicate: record failures, no survivors to keep.
                for (r, &at) in self.res.iter().zip(&self.alive_pos) {
                    if let Err(r) = *r {
                        self.out[at as usize] = Err((*pi, r));
                    }
                }
                break;
            }
            if self.res.iter().all(Result::is_ok) {
                continue;
            }
            // Keep the passing nodes in order (written unconditionally, advanced on pass).
            let mut kept = 0;
            for k in 0..self.alive.len() {
                let (node, at) = (self.alive[k], self.alive_pos[k]);
                self.alive[kept] = node;
                self.alive_pos[kept] = at;
                match self.res[k] {
                    Ok(()) => kept += 1,
                    Err(r) => self.out[at as usize] = Err((*pi, r)),
                }
            }
            self.alive.truncate(kept);
            self.alive_pos.truncate(kept);
        }
    }

    /// Runs [`ChunkBuf::filter_led`] when `lead` is set, else [`ChunkBuf::filter`]; returns
    /// the lead's rejections (0 without a lead).
    fn filter_maybe_led(
        &mut self,
        predicates: &[BoxPredicate],
        active: &[(u16, ErasedState)],
        lead: Option<usize>,
        always_all: bool,
        cx: &CycleContext<'_>,
    ) -> usize {
        match lead {
            Some(j) => self.filter_led(predicates, active, j, cx),
            None => {
                self.filter(predicates, active, always_all, cx);
                0
            }
        }
    }
}

/// Replaces `nodes` with the node indices at evaluation positions `pos..pos + len` when
/// evaluation starts at `start` (`pos + len <= n`): at most two plain ranges.
fn fill_positions(nodes: &mut Vec<u32>, start: usize, pos: usize, len: usize, n: usize) {
    nodes.clear();
    let first = wrap(start, pos, n);
    let straight = len.min(n - first);
    nodes.extend((first..first + straight).map(|i| i as u32));
    nodes.extend((0..len - straight).map(|i| i as u32));
}

/// The node index at evaluation position `pos` when evaluation starts at `start` (both < n).
#[inline]
fn wrap(start: usize, pos: usize, n: usize) -> usize {
    if pos < n - start {
        start + pos
    } else {
        pos - (n - start)
    }
}

impl Profile {
    /// [`Profile::schedule`] where the nodes of `blocked` fail with the given predicate and
    /// reason before any filter runs on them (nodes where the pod does not fit beside the pods
    /// nominated there); the pod is not assumed.
    pub(crate) fn schedule_blocked(
        &self,
        cache: &mut Cache,
        pod: &crate::model::Pod,
        snapshot: &crate::snapshot::Snapshot,
        blocked: &[(u32, u16, Reason)],
    ) -> Result<super::ScheduleResult, super::ScheduleError> {
        let cx = CycleContext::for_version(pod, snapshot, self.version);
        self.schedule_blocking(cache, &cx, blocked, None)
    }

    /// Which predicates skip `pod` on `snapshot` (their prepare says [`Prepared::Skip`]):
    /// kube decides that once, at PreFilter, and its cycle state keeps it while nominated pods
    /// are added to a node or preemption's victims are removed from it.
    ///
    /// # Errors
    /// A predicate that fails to prepare.
    pub(crate) fn skipped_predicates(
        &self,
        pod: &crate::model::Pod,
        snapshot: &crate::snapshot::Snapshot,
    ) -> Result<Vec<bool>, super::ScheduleError> {
        let cx = CycleContext::for_version(pod, snapshot, self.version);
        let mut skipped = Vec::with_capacity(self.predicates.len());
        for p in &self.predicates {
            skipped.push(matches!(p.prepare(&cx)?, Prepared::Skip));
        }
        Ok(skipped)
    }

    /// Preemption's plan for `pod` on `snapshot`, whose `requests` the caller computed for
    /// this profile: which predicates skip the pod ([`Profile::skipped_predicates`]) and,
    /// when every other one prepares to run with a [`FastFilter`] that reads only flags no pod
    /// sets ([`FastFilter::reads_only_node_flags`]), their combined filter. Such predicates
    /// then decide a node with some of its pods taken off on the node's numbers alone (the
    /// resource check on the requests left, the node's own flags), so the dry run needs no
    /// change to the snapshot. No filter with the fast path off, with
    /// alwaysCheckAllPredicates (whose reasons list every failing predicate), or when a
    /// predicate narrows the nodes or rejects the pod.
    ///
    /// # Errors
    /// A predicate that fails to prepare.
    pub(crate) fn preemption_plan(
        &self,
        pod: &crate::model::Pod,
        snapshot: &crate::snapshot::Snapshot,
        requests: &crate::framework::PodRequests,
    ) -> Result<(Vec<bool>, Option<FastFilter>), super::ScheduleError> {
        let cx = CycleContext::with_requests(pod, snapshot, requests);
        let mut skipped = Vec::with_capacity(self.predicates.len());
        let mut fast =
            (self.fast_path && !self.always_check_all_predicates).then_some(FastFilter::ALL);
        for p in &self.predicates {
            let prepared = p.prepare(&cx)?;
            skipped.push(matches!(prepared, Prepared::Skip));
            fast = match prepared {
                Prepared::Skip | Prepared::Pass => fast,
                Prepared::Run(state) => fast.and_then(|f| Some(f.and(p.fast_filter(&cx, &state)?))),
                Prepared::RunOn(..) | Prepared::Reject(_) => None,
            };
        }
        Ok((skipped, fast.filter(FastFilter::reads_only_node_flags)))
    }

    /// [`Profile::fits_on_indexed`] with the predicates that `skipped` marks skipped whatever
    /// their prepare says on this snapshot (see [`Profile::skipped_predicates`]); the pod's
    /// `requests` when the caller computed them for this profile's version.
    ///
    /// # Errors
    /// A predicate that fails to prepare.
    pub(crate) fn fits_on_skipping(
        &self,
        pod: &crate::model::Pod,
        snapshot: &crate::snapshot::Snapshot,
        index: usize,
        skipped: &[bool],
        requests: Option<&crate::framework::PodRequests>,
    ) -> Result<Result<(), Vec<(u16, Reason)>>, super::ScheduleError> {
        let cx = match requests {
            Some(r) => CycleContext::with_requests(pod, snapshot, r),
            None => CycleContext::for_version(pod, snapshot, self.version),
        };
        let node = snapshot.node(index);
        let mut prepared = Vec::with_capacity(self.predicates.len());
        for (i, p) in self.predicates.iter().enumerate() {
            if skipped.get(i).copied().unwrap_or(false) {
                continue;
            }
            match p.prepare(&cx)? {
                Prepared::Skip | Prepared::Pass => {}
                Prepared::Run(state) => prepared.push((i as u16, Some(state))),
                Prepared::RunOn(state, names) => prepared.push((
                    i as u16,
                    names.contains(node.info().name()).then_some(state),
                )),
                Prepared::Reject(r) => return Ok(Err(vec![(i as u16, r.reason())])),
            }
        }
        let mut reasons = Vec::new();
        for (i, state) in &prepared {
            let outcome = match state {
                Some(state) => self.predicates[*i as usize].filter(&cx, state, node),
                None => Err(Reason::OutsidePreFilterResult),
            };
            if let Err(r) = outcome {
                reasons.push((*i, r));
                if !self.always_check_all_predicates {
                    break;
                }
            }
        }
        Ok(if reasons.is_empty() {
            Ok(())
        } else {
            Err(reasons)
        })
    }

    #[inline]
    pub(super) fn check_node(
        predicates: &[BoxPredicate],
        active: &[(u16, ErasedState)],
        always_all: bool,
        cx: &CycleContext<'_>,
        idx: usize,
    ) -> Outcome {
        let node = cx.snapshot().node(idx);
        let mut first: Option<(u16, Reason)> = None;
        for (pi, state) in active {
            if let Err(r) = predicates[*pi as usize].filter(cx, state, node) {
                if first.is_none() {
                    first = Some((*pi, r));
                }
                if !always_all {
                    break;
                }
            }
        }
        match first {
            None => Ok(()),
            Some(f) => Err(f),
        }
    }

    /// Filters with the predicates' combined [`FastFilter`] (every active predicate has one),
    /// in one pass over the snapshot's `NodeFree` rows. A node that fails is recorded with
    /// [`PENDING`] for its reason: reasons are only read when no node fits, and then
    /// [`Profile::resolve_pending`] asks the predicates' own `filter`. Same result as
    /// [`Profile::filter_sequential`].
    pub(super) fn filter_fast(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        filter: FastFilter,
        start: usize,
        to_find: usize,
    ) -> usize {
        const _: () = assert!(SEQ_BATCH.is_power_of_two());
        let fit = cx.snapshot().free();
        let n = fit.len();
        let s = &mut cache.scratch;
        s.feasible.clear();
        s.failures.clear();
        // Batches of nodes into buffers on the stack, whose counts stay in registers (pushing
        // to the scratch vectors node by node reloads their lengths from memory).
        let mut passed = [0u32; SEQ_BATCH];
        let mut failed = [0u32; SEQ_BATCH];
        let mut pos = 0;
        for range in [start..n, 0..start] {
            let mut base = range.start;
            while base < range.end {
                // No more nodes than still needed (at least 8), so an early stop wastes little.
                let needed = to_find - s.feasible.len();
                let batch = &fit[base..base + needed.clamp(8, SEQ_BATCH).min(range.end - base)];
                let (mut ok, mut bad) = (0usize, 0usize);
                for (j, node) in batch.iter().enumerate() {
                    let i = (base + j) as u32;
                    // The counts stay below the batch length; the masks let the compiler
                    // see it.
                    if filter.passes(node) {
                        passed[ok & (SEQ_BATCH - 1)] = i;
                        ok += 1;
                    } else {
                        failed[bad & (SEQ_BATCH - 1)] = i;
                        bad += 1;
                    }
                }
                let mut len = batch.len();
                if ok >= needed {
                    // Stop right after the `to_find`-th feasible node.
                    let last = passed[needed - 1];
                    ok = needed;
                    bad = failed[..bad].partition_point(|&i| i < last);
                    len = (last as usize - base) + 1;
                }
                s.feasible.extend_from_slice(&passed[..ok]);
                s.failures.extend(
                    failed[..bad]
                        .iter()
                        .map(|&i| (i, PENDING, Reason::Custom(0))),
                );
                pos += len;
                if s.feasible.len() >= to_find {
                    return pos;
                }
                base += len;
            }
        }
        pos
    }

    /// The first Filter error among the failures ([`Reason::is_error`]), with its text from
    /// its plugin ([`crate::framework::Predicate::filter_error`]).
    pub(super) fn filter_error(
        &self,
        cache: &Cache,
        cx: &CycleContext<'_>,
        active: &[(u16, ErasedState)],
    ) -> Option<ScheduleError> {
        let &(idx, pi, _) = cache.scratch.failures.iter().find(|f| f.2.is_error())?;
        let plugin = &self.predicates[usize::from(pi)];
        let state = &active.iter().find(|(p, _)| *p == pi)?.1;
        let node = cx.snapshot().node(idx as usize);
        let name = node.node().metadata.name.clone();
        let message = plugin
            .filter_error(cx, state, node)
            .unwrap_or_else(|| format!("filter error on node {name}"));
        Some(ScheduleError::Filter {
            plugin: plugin.name().to_string(),
            node: name,
            message,
        })
    }

    /// Gives the failures recorded with [`PENDING`] (by [`Profile::filter_fast`] or a lead,
    /// [`ChunkBuf::filter_led`]) their reasons: the first failing predicate and its reason,
    /// from the predicates' `filter_batch` in order.
    pub(super) fn resolve_pending(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        active: &[(u16, ErasedState)],
    ) {
        let s = &mut cache.scratch;
        let buf = &mut s.seq;
        buf.nodes.clear();
        buf.nodes
            .extend(s.failures.iter().filter(|f| f.1 == PENDING).map(|f| f.0));
        if buf.nodes.is_empty() {
            return;
        }
        // In order, predicate by predicate, as the sequential pass filters.
        buf.filter(&self.predicates, active, false, cx);
        let mut answers = buf.out.iter();
        let mut kept = 0;
        for k in 0..s.failures.len() {
            let f = s.failures[k];
            if f.1 == PENDING {
                match answers.next() {
                    Some(&Err((pi, r))) => s.failures[kept] = (f.0, pi, r),
                    // Fast filters and leads match their predicates exactly (tested), so this
                    // does not happen; were it to, the predicates' answer wins.
                    _ => {
                        s.feasible.push(f.0);
                        continue;
                    }
                }
            } else {
                s.failures[kept] = f;
            }
            kept += 1;
        }
        s.failures.truncate(kept);
    }

    /// Filters the nodes the predicates narrowed the cycle to (the cache's `narrowed`, kube's
    /// `findNodesThatPassFilters` over a PreFilterResult's nodes): from position
    /// `next_start_index % len` of that list on, in batches, until one node more than
    /// `to_find` fits, which is dropped as kube drops it. A node of `blocked` fails with its
    /// blocked reason (kube's filter with nominated pods fails first). Returns the nodes
    /// processed (the dropped one not counted).
    pub(super) fn filter_narrowed(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        active: &[(u16, ErasedState)],
        to_find: usize,
        blocked: &[(u32, u16, Reason)],
    ) -> usize {
        let s = &mut cache.scratch;
        s.feasible.clear();
        s.failures.clear();
        let nodes = std::mem::take(&mut s.narrowed);
        let len = nodes.len();
        let mut pos = 0;
        if len > 0 && to_find > 0 {
            let start = cache.next_start_index % len;
            let buf = &mut s.seq;
            'search: while pos < len {
                let needed = to_find + 1 - s.feasible.len();
                let batch = needed.clamp(8, SEQ_BATCH).min(len - pos);
                buf.nodes.clear();
                buf.nodes
                    .extend((pos..pos + batch).map(|p| nodes[(start + p) % len]));
                buf.filter(
                    &self.predicates,
                    active,
                    self.always_check_all_predicates,
                    cx,
                );
                for (&idx, o) in buf.nodes.iter().zip(&buf.out) {
                    pos += 1;
                    let outcome = match blocked.iter().find(|b| b.0 == idx) {
                        Some(&(_, pi, r)) => Err((pi, r)),
                        None => *o,
                    };
                    match outcome {
                        Ok(()) if s.feasible.len() == to_find => {
                            // One too many: kube stops here and drops it.
                            pos -= 1;
                            break 'search;
                        }
                        Ok(()) => s.feasible.push(idx),
                        Err((pi, r)) => s.failures.push((idx, pi, r)),
                    }
                }
            }
        }
        s.narrowed = nodes;
        pos
    }

    pub(super) fn filter_sequential(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        active: &[(u16, ErasedState)],
        start: usize,
        to_find: usize,
    ) -> usize {
        let n = cx.snapshot().len();
        let s = &mut cache.scratch;
        s.feasible.clear();
        s.failures.clear();
        if active.is_empty() {
            // No filter to run: kube takes the first `to_find` nodes from the start index.
            s.feasible
                .extend((start..n).chain(0..start).take(to_find).map(|i| i as u32));
            return to_find;
        }
        // Positions start..n, then 0..start, in batches filtered predicate by predicate.
        let buf = &mut s.seq;
        let mut lead = self.lead_position(active, s.lead);
        let mut pos = 0;
        while pos < n {
            let needed = to_find - s.feasible.len();
            let len = needed.clamp(8, SEQ_BATCH).min(n - pos);
            fill_positions(&mut buf.nodes, start, pos, len, n);
            let rejected = buf.filter_maybe_led(
                &self.predicates,
                active,
                lead,
                self.always_check_all_predicates,
                cx,
            );
            let failed = buf.out.iter().filter_map(|o| o.err().map(|e| e.0));
            self.learn_lead(
                &mut s.lead,
                &mut s.lead_counts,
                active,
                failed,
                rejected,
                len,
            );
            lead = self.lead_position(active, s.lead);
            for (&idx, o) in buf.nodes.iter().zip(&buf.out) {
                pos += 1;
                match *o {
                    Ok(()) => {
                        s.feasible.push(idx);
                        if s.feasible.len() >= to_find {
                            return pos;
                        }
                    }
                    Err((pi, r)) => s.failures.push((idx, pi, r)),
                }
            }
        }
        n
    }

    /// Filters on the pool. Workers take chunks of positions in increasing order; a chunk is
    /// skipped only when the chunks before it that are done already hold `to_find` feasible
    /// nodes, so the merged result (feasible nodes in position order, cut at `to_find`)
    /// equals the sequential one. (Counting every finished chunk instead would let a later
    /// chunk, finished while a worker that took an earlier one was descheduled, make that
    /// worker skip the earlier chunk.)
    pub(super) fn filter_parallel(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        active: &[(u16, ErasedState)],
        start: usize,
        to_find: usize,
    ) -> usize {
        let n = cx.snapshot().len();
        let chunks = n.div_ceil(CHUNK);
        while cache.scratch.chunks.len() < chunks {
            cache.scratch.chunks.push(Mutex::new(ChunkBuf::default()));
        }
        while cache.scratch.chunk_found.len() < chunks {
            cache.scratch.chunk_found.push(AtomicUsize::new(0));
        }
        for f in &cache.scratch.chunk_found[..chunks] {
            f.store(0, Ordering::Relaxed);
        }
        let next = AtomicUsize::new(0);
        let lead = self.lead_position(active, cache.scratch.lead);
        {
            let predicates = &self.predicates;
            let always_all = self.always_check_all_predicates;
            let slots = &cache.scratch.chunks[..chunks];
            let found = &cache.scratch.chunk_found[..chunks];
            let work = || {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= chunks {
                        break;
                    }
                    let mut buf = slots[k].lock().unwrap_or_else(|e| e.into_inner());
                    buf.out.clear();
                    // Feasible nodes in the earlier chunks that are done (a lower bound of
                    // what the earlier chunks hold).
                    let before: usize = found[..k]
                        .iter()
                        .map(|f| f.load(Ordering::Acquire).saturating_sub(1))
                        .sum();
                    if before >= to_find {
                        // Enough feasible nodes in earlier chunks: leave this one unevaluated.
                        found[k].store(1, Ordering::Release);
                        continue;
                    }
                    let lo = k * CHUNK;
                    let hi = (lo + CHUNK).min(n);
                    fill_positions(&mut buf.nodes, start, lo, hi - lo, n);
                    buf.filter_maybe_led(predicates, active, lead, always_all, cx);
                    let ok = buf.out.iter().filter(|o| o.is_ok()).count();
                    found[k].store(ok + 1, Ordering::Release);
                }
            };
            let threads = self.threads.min(chunks);
            match &self.pool {
                Some(pool) => pool.scope(|sc| {
                    for _ in 1..threads {
                        sc.spawn(|_| work());
                    }
                    work();
                }),
                None => work(),
            }
        }
        let s = &mut cache.scratch;
        s.feasible.clear();
        s.failures.clear();
        for k in 0..chunks {
            let buf = s.chunks[k].lock().unwrap_or_else(|e| e.into_inner());
            for (j, o) in buf.out.iter().enumerate() {
                let pos = k * CHUNK + j;
                let idx = wrap(start, pos, n) as u32;
                match o {
                    Ok(()) => {
                        s.feasible.push(idx);
                        if s.feasible.len() >= to_find {
                            return pos + 1;
                        }
                    }
                    Err((pi, r)) => s.failures.push((idx, *pi, *r)),
                }
            }
        }
        self.learn_from_failures(cache, active, n);
        n
    }

    /// [`Profile::learn_lead`] from the failures of a whole pass over `processed` nodes.
    fn learn_from_failures(
        &self,
        cache: &mut Cache,
        active: &[(u16, ErasedState)],
        processed: usize,
    ) {
        let s = &mut cache.scratch;
        let failed = s.failures.iter().map(|f| f.1);
        let rejected = s.failures.iter().filter(|f| f.1 == PENDING).count();
        self.learn_lead(
            &mut s.lead,
            &mut s.lead_counts,
            active,
            failed,
            rejected,
            processed,
        );
    }

    /// The predicate the filter pass runs first on every node with `cache`, learned from the
    /// nodes it rejected in earlier batches and cycles (see [`super::ProfileBuilder::filter_lead`]),
    /// if any.
    pub fn filter_lead(&self, cache: &Cache) -> Option<&str> {
        let lead = cache.scratch.lead?;
        Some(self.predicates.get(usize::from(lead))?.name())
    }

    /// The position in `active` of the predicate `lead` names, when the filter pass may run it
    /// first on every node ([`ChunkBuf::filter_led`]): not when the profile was built without
    /// ([`super::ProfileBuilder::filter_lead`]), not with alwaysCheckAllPredicates
    /// (every failing predicate is reported), not when it comes first anyway, and not when a
    /// predicate before it may give a Filter error ([`crate::framework::Predicate::may_error`]:
    /// kube's in-order run would fail the attempt on a node the lead rejects).
    pub(super) fn lead_position(
        &self,
        active: &[(u16, ErasedState)],
        lead: Option<u16>,
    ) -> Option<usize> {
        let lead = lead?;
        if !self.filter_lead || self.always_check_all_predicates {
            return None;
        }
        let j = active.iter().position(|(pi, _)| *pi == lead)?;
        let may_error = active[..j]
            .iter()
            .any(|(pi, _)| self.predicates[*pi as usize].may_error());
        (j > 0 && !may_error).then_some(j)
    }

    /// Learns which predicate leads the filter pass from a batch of `len` nodes: a lead that
    /// rejected (`rejected`) fewer than half of them is dropped; without one, the predicate
    /// that was the first to fail on at least three quarters of them (`failed`: the failing
    /// predicate of each failed node) leads from the next batch (and the next cycles) on.
    /// Which predicate leads never changes an answer ([`ChunkBuf::filter_led`]), only the
    /// work: a predicate late in the order that rejects most nodes (DynamicResources for a
    /// pod whose claim is allocated on one node) then runs on every node alone.
    fn learn_lead(
        &self,
        lead: &mut Option<u16>,
        counts: &mut Vec<u32>,
        active: &[(u16, ErasedState)],
        failed: impl Iterator<Item = u16>,
        rejected: usize,
        len: usize,
    ) {
        if self.lead_position(active, *lead).is_some() {
            if rejected * 2 < len {
                *lead = None;
            }
            return;
        }
        if len < 8 || self.always_check_all_predicates {
            return;
        }
        counts.clear();
        counts.resize(self.predicates.len(), 0);
        for pi in failed {
            if let Some(c) = counts.get_mut(usize::from(pi)) {
                *c += 1;
            }
        }
        let Some((top, &most)) = counts.iter().enumerate().max_by_key(|(_, c)| **c) else {
            return;
        };
        if most as usize * 4 >= len * 3 {
            let candidate = Some(top as u16);
            if self.lead_position(active, candidate).is_some() {
                *lead = candidate;
            }
        }
    }
}
