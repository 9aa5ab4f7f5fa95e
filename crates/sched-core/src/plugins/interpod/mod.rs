//! Inter-pod affinity and anti-affinity: the MatchInterPodAffinity predicate and InterPodAffinityPriority.
