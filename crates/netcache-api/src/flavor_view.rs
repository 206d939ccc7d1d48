//! Nova's flavor views, per microversion: the summary of a list (`description`
//! from 2.55) and the detail (`description` from 2.55, `extra_specs` from 2.61
//! for callers allowed to list them, `swap` a number from 2.75, no
//! `OS-FLV-DISABLED:disabled` nor `rxtx_factor` from 2.102).

use netcache_domain::flavor::Flavor;
use serde_json::{Value, json};

use crate::microversion::Microversion;
use crate::wire::links;

/// How a request shows flavors.
#[derive(Clone, Copy, Debug)]
pub struct FlavorView<'a> {
    pub base: &'a str,
    pub version: Microversion,
    /// 2.61's `extra_specs`: only for callers the policy lets list them.
    pub extra_specs: bool,
}

impl FlavorView<'_> {
    /// A flavor of `GET /flavors`.
    #[must_use]
    pub fn summary(&self, flavor: &Flavor) -> Value {
        let mut view = json!({
            "id": flavor.id,
            "name": flavor.name,
            "links": links(self.base, "flavors", &flavor.id),
        });
        if self.version.at_least(55) {
            view["description"] = json!(flavor.description);
        }
        view
    }

    /// A flavor of `GET /flavors/detail`, `GET /flavors/{id}` and the answers
    /// to a create or an update.
    #[must_use]
    pub fn detail(&self, flavor: &Flavor) -> Value {
        // Nova shows a swap of 0 as "" before 2.75 (`swap or ""`).
        let swap = if flavor.swap_mb == 0 && !self.version.at_least(75) {
            json!("")
        } else {
            json!(flavor.swap_mb)
        };
        let mut view = json!({
            "id": flavor.id,
            "name": flavor.name,
            "ram": flavor.ram_mb,
            "disk": flavor.disk_gb,
            "vcpus": flavor.vcpus,
            "swap": swap,
            "OS-FLV-EXT-DATA:ephemeral": flavor.ephemeral_gb,
            "os-flavor-access:is_public": flavor.is_public,
            "links": links(self.base, "flavors", &flavor.id),
        });
        if !self.version.at_least(102) {
            view["OS-FLV-DISABLED:disabled"] = json!(false);
            view["rxtx_factor"] = json!(flavor.rxtx_factor);
        }
        if self.version.at_least(55) {
            view["description"] = json!(flavor.description);
        }
        if self.extra_specs && self.version.at_least(61) {
            view["extra_specs"] = json!(flavor.extra_specs);
        }
        view
    }
}
