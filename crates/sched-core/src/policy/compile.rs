//! A [`PolicyPlan`] turned into a [`ProfileBuilder`] holding the built-in plugins.

use super::names::{PredicateKind, PriorityKind};
use super::plan::{PolicyPlan, PredicateSpec, PriorityArgs, PrioritySpec};
use super::{FeatureGates, Policy, PolicyError};
use crate::config::{DEFAULT_SCHEDULER_NAME, Profiles};
use crate::framework::{BoxPredicate, BoxPriority, KubeVersion};
use crate::plugins::resource::{ResourceSpec, UtilizationShapePoint};
use crate::plugins::{interpod, node, resource, spread, volume};
use crate::profile::{Profile, ProfileBuilder};

/// A priority with its weight.
type Weighted = (BoxPriority, i64);

impl Policy {
    /// Validates the Policy and returns a [`ProfileBuilder`] with its predicates, priorities
    /// and settings, so that threads, the RNG seed or extra plugins can be set before building.
    ///
    /// # Errors
    /// A [`PolicyError`] for the first rule the document breaks.
    pub fn builder(&self) -> Result<ProfileBuilder, PolicyError> {
        self.plan()?.builder()
    }

    /// [`Policy::builder`] under these feature gates.
    ///
    /// # Errors
    /// A [`PolicyError`] for the first rule the document breaks.
    pub fn builder_with(&self, gates: FeatureGates) -> Result<ProfileBuilder, PolicyError> {
        self.plan_with(gates)?.builder()
    }

    /// Validates the Policy and builds the profile (default threads, RNG seeded from the OS;
    /// use [`Policy::builder`] to choose them).
    ///
    /// # Errors
    /// A [`PolicyError`] for the first rule the document breaks.
    pub fn compile(&self) -> Result<Profile, PolicyError> {
        Ok(self.builder()?.build()?)
    }

    /// The Policy as kube-scheduler v1.20 runs it: [`Policy::compile`]'s profile as the one
    /// profile of the scheduler [`DEFAULT_SCHEDULER_NAME`]. kube schedules only the pods whose
    /// `spec.schedulerName` it serves; [`Profiles::for_pod`] reports any other
    /// ([`UnknownProfile`](crate::config::UnknownProfile)), as for the profiles of a
    /// `KubeSchedulerConfiguration`. For another scheduler name, or a profile built from
    /// [`Policy::builder`], use [`Profiles::single`].
    ///
    /// ```
    /// use sched_core::model::Pod;
    /// use sched_core::policy::Policy;
    ///
    /// let profiles = Policy::kube_default().profiles()?;
    /// let mut pod = Pod::default();
    /// pod.metadata.namespace = "ml".into();
    /// pod.metadata.name = "train".into();
    /// assert!(profiles.for_pod(&pod).is_ok()); // no name: default-scheduler
    /// pod.spec.scheduler_name = "gpu-scheduler".into();
    /// assert_eq!(
    ///     profiles.for_pod(&pod).unwrap_err().to_string(),
    ///     "pod ml/train asks for scheduler \"gpu-scheduler\", which no profile has (profiles: default-scheduler)"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A [`PolicyError`] for the first rule the document breaks.
    pub fn profiles(&self) -> Result<Profiles, PolicyError> {
        Ok(Profiles::single(DEFAULT_SCHEDULER_NAME, self.compile()?))
    }
}

impl PolicyPlan {
    /// A [`ProfileBuilder`] with the plan's built-ins and settings.
    ///
    /// Plugins are built as kube 1.18+ configures them from a Policy:
    /// - `GeneralPredicates` stands for PodFitsResources, HostName, PodFitsHostPorts and
    ///   MatchNodeSelector, which are then not run a second time when also listed. With
    ///   `alwaysCheckAllPredicates` the four run as separate predicates so that every reason is
    ///   reported; otherwise the combined predicate runs them in the same order and stops at the
    ///   first failure, which gives the same result with one pass.
    /// - all `labelsPresence` predicates form one `CheckNodeLabelPresence` (labels required
    ///   present and labels required absent), and all `labelPreference` priorities form one
    ///   `NodeLabelPriority` averaging over the labels, with weight n x w (kube's NodeLabel
    ///   plugin; validation made the n weights equal).
    /// - all `serviceAntiAffinity` priorities form one `ServiceAntiAffinity` averaging over the
    ///   labels, with weight n x w (kube's ServiceAffinity plugin).
    /// - `hardPodAffinitySymmetricWeight` goes to `InterPodAffinityPriority`.
    ///
    /// # Errors
    /// [`PolicyError::InvalidShape`] if a requestedToCapacityRatio argument is refused by the
    /// priority itself (validation normally catches it first).
    pub fn builder(&self) -> Result<ProfileBuilder, PolicyError> {
        let mut b = ProfileBuilder::new()
            .kube_version(KubeVersion::V1_20)
            .always_check_all_predicates(self.always_check_all_predicates())
            .percentage_of_nodes_to_score(u32::from(self.percentage_of_nodes_to_score()));
        for p in self.build_predicates() {
            b = b.predicate(p);
        }
        for (p, w) in self.build_priorities()? {
            b = b.priority(p, w);
        }
        Ok(b)
    }

    fn build_predicates(&self) -> Vec<BoxPredicate> {
        let specs = self.predicates();
        let general = specs
            .iter()
            .any(|s| s.kind() == PredicateKind::GeneralPredicates);
        let split_general = self.always_check_all_predicates();
        let mut out: Vec<BoxPredicate> = Vec::with_capacity(specs.len() + 3);
        let mut labels_done = false;
        for spec in specs {
            match spec.kind() {
                PredicateKind::CheckNodeCondition => {
                    out.push(BoxPredicate::new(node::CheckNodeCondition::new()));
                }
                PredicateKind::CheckNodeUnschedulable => {
                    out.push(BoxPredicate::new(node::CheckNodeUnschedulable::new()));
                }
                PredicateKind::GeneralPredicates if split_general => {
                    out.push(BoxPredicate::new(node::PodFitsResources::new()));
                    out.push(BoxPredicate::new(node::HostName::new()));
                    out.push(BoxPredicate::new(node::PodFitsHostPorts::new()));
                    out.push(BoxPredicate::new(node::MatchNodeSelector::new()));
                }
                PredicateKind::GeneralPredicates => {
                    out.push(BoxPredicate::new(node::GeneralPredicates::new()));
                }
                PredicateKind::HostName
                | PredicateKind::PodFitsHostPorts
                | PredicateKind::MatchNodeSelector
                | PredicateKind::PodFitsResources
                    if general => {}
                PredicateKind::HostName => out.push(BoxPredicate::new(node::HostName::new())),
                PredicateKind::PodFitsHostPorts => {
                    out.push(BoxPredicate::new(node::PodFitsHostPorts::new()));
                }
                PredicateKind::MatchNodeSelector => {
                    out.push(BoxPredicate::new(node::MatchNodeSelector::new()));
                }
                PredicateKind::PodFitsResources => {
                    out.push(BoxPredicate::new(node::PodFitsResources::new()));
                }
                PredicateKind::NoDiskConflict => {
                    out.push(BoxPredicate::new(node::NoDiskConflict::new()))
                }
                PredicateKind::PodToleratesNodeTaints => {
                    out.push(BoxPredicate::new(node::PodToleratesNodeTaints::new()));
                }
                PredicateKind::CheckNodeLabelPresence if labels_done => {}
                PredicateKind::CheckNodeLabelPresence => {
                    labels_done = true;
                    let (mut present, mut absent) = (Vec::new(), Vec::new());
                    for s in specs {
                        if let PredicateSpec::LabelsPresence {
                            labels, presence, ..
                        } = s
                        {
                            let list = if *presence { &mut present } else { &mut absent };
                            list.extend(labels.iter().cloned());
                        }
                    }
                    out.push(BoxPredicate::new(node::CheckNodeLabelPresence::from_lists(
                        present, absent,
                    )));
                }
                PredicateKind::CheckServiceAffinity => {
                    if let PredicateSpec::ServiceAffinity { labels, .. } = spec {
                        out.push(BoxPredicate::new(spread::ServiceAffinity::new(
                            labels.clone(),
                        )));
                    }
                }
                PredicateKind::MaxEBSVolumeCount => {
                    out.push(BoxPredicate::new(volume::InTreeVolumeLimits::ebs()));
                }
                PredicateKind::MaxGCEPDVolumeCount => {
                    out.push(BoxPredicate::new(volume::InTreeVolumeLimits::gce_pd()));
                }
                PredicateKind::MaxCSIVolumeCountPred => {
                    out.push(BoxPredicate::new(volume::NodeVolumeLimits::legacy()));
                }
                PredicateKind::MaxAzureDiskVolumeCount => {
                    out.push(BoxPredicate::new(volume::InTreeVolumeLimits::azure_disk()));
                }
                PredicateKind::MaxCinderVolumeCount => {
                    out.push(BoxPredicate::new(volume::InTreeVolumeLimits::cinder()));
                }
                PredicateKind::CheckVolumeBinding => {
                    out.push(BoxPredicate::new(volume::VolumeBinding::legacy()));
                }
                PredicateKind::NoVolumeZoneConflict => {
                    out.push(BoxPredicate::new(volume::VolumeZone::legacy()));
                }
                PredicateKind::CheckNodeMemoryPressure => {
                    out.push(BoxPredicate::new(node::CheckNodeMemoryPressure::new()));
                }
                PredicateKind::CheckNodePIDPressure => {
                    out.push(BoxPredicate::new(node::CheckNodePIDPressure::new()));
                }
                PredicateKind::CheckNodeDiskPressure => {
                    out.push(BoxPredicate::new(node::CheckNodeDiskPressure::new()));
                }
                PredicateKind::EvenPodsSpread => {
                    out.push(BoxPredicate::new(
                        spread::PodTopologySpread::without_defaults(),
                    ));
                }
                PredicateKind::MatchInterPodAffinity => {
                    out.push(BoxPredicate::new(interpod::MatchInterPodAffinity::new()));
                }
            }
        }
        out
    }

    fn build_priorities(&self) -> Result<Vec<Weighted>, PolicyError> {
        let specs = self.priorities();
        let mut out: Vec<Weighted> = Vec::with_capacity(specs.len());
        let (mut labels_done, mut anti_affinity_done) = (false, false);
        for spec in specs {
            let w = spec.weight;
            let p: BoxPriority = match spec.kind {
                PriorityKind::LeastRequestedPriority => {
                    BoxPriority::new(resource::LeastRequestedPriority::new())
                }
                PriorityKind::MostRequestedPriority => {
                    BoxPriority::new(resource::MostRequestedPriority::new())
                }
                PriorityKind::BalancedResourceAllocation => {
                    BoxPriority::new(resource::BalancedResourceAllocation::new())
                }
                PriorityKind::SelectorSpreadPriority => {
                    BoxPriority::new(spread::SelectorSpreadPriority::new())
                }
                // The plan runs it as SelectorSpreadPriority, as kube v1.20 does.
                PriorityKind::ServiceSpreadingPriority => {
                    BoxPriority::new(spread::SelectorSpreadPriority::new())
                }
                PriorityKind::InterPodAffinityPriority => {
                    BoxPriority::new(interpod::InterPodAffinityPriority::new(
                        self.hard_pod_affinity_symmetric_weight(),
                    ))
                }
                PriorityKind::NodeAffinityPriority => {
                    BoxPriority::new(node::NodeAffinityPriority::new())
                }
                PriorityKind::TaintTolerationPriority => {
                    BoxPriority::new(node::TaintTolerationPriority::new())
                }
                PriorityKind::ImageLocalityPriority => {
                    BoxPriority::new(resource::ImageLocalityPriority::new())
                }
                PriorityKind::NodePreferAvoidPodsPriority => {
                    BoxPriority::new(resource::NodePreferAvoidPodsPriority::new())
                }
                PriorityKind::RequestedToCapacityRatioPriority => ratio_priority(spec)?,
                PriorityKind::ResourceLimitsPriority => {
                    BoxPriority::new(resource::ResourceLimitsPriority::new())
                }
                PriorityKind::NodeLabelPriority if labels_done => continue,
                PriorityKind::NodeLabelPriority => {
                    labels_done = true;
                    let (mut present, mut absent) = (Vec::new(), Vec::new());
                    for s in specs {
                        if let PriorityArgs::LabelPreference { label, presence } = &s.argument {
                            let list = if *presence { &mut present } else { &mut absent };
                            list.push(label.clone());
                        }
                    }
                    // kube: weight x number of labels; the weights are equal (validated) and
                    // their sum x 100 fits in i64, so this cannot overflow.
                    let n = (present.len() + absent.len()) as i64;
                    out.push((
                        BoxPriority::new(node::NodeLabelPriority::from_lists(present, absent)),
                        w.saturating_mul(n),
                    ));
                    continue;
                }
                PriorityKind::ServiceAntiAffinity if anti_affinity_done => continue,
                PriorityKind::ServiceAntiAffinity => {
                    anti_affinity_done = true;
                    let labels: Vec<String> = specs
                        .iter()
                        .filter_map(|s| match &s.argument {
                            PriorityArgs::ServiceAntiAffinity { label } => Some(label.clone()),
                            _ => None,
                        })
                        .collect();
                    // kube: one ServiceAffinity plugin over every label, weight x number of
                    // labels; the weights are equal (validated).
                    let n = labels.len() as i64;
                    out.push((
                        BoxPriority::new(spread::ServiceAntiAffinity::over_labels(labels)),
                        w.saturating_mul(n),
                    ));
                    continue;
                }
                // The plan skips it, as kube v1.20 does; built only from a hand-made plan.
                PriorityKind::EqualPriority => BoxPriority::new(resource::EqualPriority::new()),
                PriorityKind::EvenPodsSpreadPriority if self.spread_system_defaults() => {
                    BoxPriority::new(spread::PodTopologySpread::new())
                }
                PriorityKind::EvenPodsSpreadPriority => {
                    BoxPriority::new(spread::PodTopologySpread::without_defaults())
                }
            };
            out.push((p, w));
        }
        Ok(out)
    }
}

fn ratio_priority(spec: &PrioritySpec) -> Result<BoxPriority, PolicyError> {
    let PriorityArgs::RequestedToCapacityRatio(r) = &spec.argument else {
        return Err(argument_mismatch(spec, &spec.argument));
    };
    let path = format!(
        "requestedToCapacityRatioArguments of priority {:?}",
        spec.name
    );
    let mut shape = Vec::with_capacity(r.shape.len());
    for &(u, s) in &r.shape {
        // Validated to 0..=100 and 0..=10.
        shape.push(UtilizationShapePoint::new(u, s));
    }
    let resources: Vec<ResourceSpec> = r
        .resources
        .iter()
        .map(|(n, w)| ResourceSpec::new(n.clone(), *w))
        .collect();
    let p = resource::RequestedToCapacityRatioPriority::new(&shape, &resources).map_err(|e| {
        PolicyError::InvalidShape {
            path,
            message: e.to_string(),
        }
    })?;
    Ok(BoxPriority::new(p))
}

/// A plan whose argument does not fit its kind; validation never produces one.
fn argument_mismatch(spec: &PrioritySpec, found: &PriorityArgs) -> PolicyError {
    PolicyError::InvalidArgument {
        path: format!("priority {:?}", spec.name),
        message: format!("argument {found:?} does not fit {}", spec.kind.name()),
    }
}
