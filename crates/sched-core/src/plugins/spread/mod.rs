//! Spreading: SelectorSpreadPriority, ServiceSpreadingPriority and ServiceAntiAffinity.
