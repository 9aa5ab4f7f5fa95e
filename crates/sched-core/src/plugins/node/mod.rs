//! Node-level predicates and priorities: resources fit, ports, host name, node affinity, taints, conditions, labels, disks.
