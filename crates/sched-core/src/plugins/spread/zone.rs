//! kube's zone key (`k8s.io/component-helpers/node/topology.GetZoneKey`) over interned labels.

use crate::snapshot::{Interner, LabelIds, Sym};

/// The interned ids of the zone and region label keys.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ZoneKeys {
    beta_zone: Option<Sym>,
    zone: Option<Sym>,
    beta_region: Option<Sym>,
    region: Option<Sym>,
    empty: Option<Sym>,
}

impl ZoneKeys {
    pub(crate) fn new(interner: &Interner) -> Self {
        ZoneKeys {
            beta_zone: interner.get("failure-domain.beta.kubernetes.io/zone"),
            zone: interner.get("topology.kubernetes.io/zone"),
            beta_region: interner.get("failure-domain.beta.kubernetes.io/region"),
            region: interner.get("topology.kubernetes.io/region"),
            empty: interner.get(""),
        }
    }

    /// The node's zone as `(region, zone)` value ids, [`Sym::NONE`] standing for an empty
    /// value; `None` when both are empty. As kube, the `failure-domain.beta.kubernetes.io`
    /// label wins over the `topology.kubernetes.io` one whenever it is present.
    pub(crate) fn zone_of(&self, labels: &LabelIds) -> Option<(Sym, Sym)> {
        let get = |k: Option<Sym>| k.and_then(|k| labels.get(k));
        let pick = |beta: Option<Sym>, ga: Option<Sym>| {
            let v = get(beta).or_else(|| get(ga));
            match v {
                Some(v) if Some(v) != self.empty => v,
                _ => Sym::NONE,
            }
        };
        let zone = pick(self.beta_zone, self.zone);
        let region = pick(self.beta_region, self.region);
        if zone == Sym::NONE && region == Sym::NONE {
            None
        } else {
            Some((region, zone))
        }
    }
}
