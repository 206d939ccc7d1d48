//! What a user sets on a server that only the compute API shows back — Nova's
//! description (2.19), tags (2.26), lock reason (2.73), hostname (2.90), user
//! data, trusted image certificates (2.63), the zone a boot pinned (2.96), its
//! scheduler hints (2.100), its place in a multiple create (2.3) and its disk
//! config (`OS-DCF:diskConfig`) — kept
//! with the server's row as one document: no decision reads them.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::ServerId;

/// Nova's most tags on one server.
pub const MAX_TAGS: usize = 50;
/// Nova's longest tag.
pub const MAX_TAG_LENGTH: usize = 60;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerAttributes {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub tags: BTreeSet<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locked_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted_image_certificates: Option<Vec<String>>,
    /// The zone the boot asked for, if it asked for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_availability_zone: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub scheduler_hints: BTreeMap<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    /// This server's index among those one request booted.
    #[serde(skip_serializing_if = "is_zero")]
    pub launch_index: u32,
    /// Nova's `auto_disk_config` (`OS-DCF:diskConfig` `AUTO`): the guest's root
    /// partition grows to its disk at boot, rebuild and resize; `MANUAL` (the
    /// default) leaves the partitions as the image has them.
    #[serde(skip_serializing_if = "is_false")]
    pub auto_disk_config: bool,
}

impl ServerAttributes {
    /// The servers the boot's `same_host` hint names (Nova's SameHostFilter:
    /// a host of one of them) — one id or a list; what is not an id names none.
    #[must_use]
    pub fn same_host(&self) -> Vec<ServerId> {
        self.servers_hinted("same_host")
    }

    /// The servers the boot's `different_host` hint names (Nova's
    /// DifferentHostFilter: a host of none of them).
    #[must_use]
    pub fn different_host(&self) -> Vec<ServerId> {
        self.servers_hinted("different_host")
    }

    fn servers_hinted(&self, hint: &str) -> Vec<ServerId> {
        let ids = match self.scheduler_hints.get(hint) {
            Some(serde_json::Value::Array(items)) => items.iter().filter_map(serde_json::Value::as_str).collect(),
            Some(serde_json::Value::String(one)) => vec![one.as_str()],
            _ => Vec::new(),
        };
        ids.into_iter().filter_map(|id| id.parse().ok()).collect()
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Nova's hostname from a display name (`utils.sanitize_hostname`): the
/// Latin-1 characters, at most 63, spaces, underscores and dots as dashes,
/// only word characters and dashes kept, lower case, dots and dashes trimmed;
/// `None` when nothing is left (Nova then names it after the server's id).
#[must_use]
pub fn sanitize_hostname(name: &str) -> Option<String> {
    let kept: String = name
        .chars()
        .filter(|c| u32::from(*c) <= 0xff)
        .take(63)
        .map(|c| if matches!(c, ' ' | '_' | '.') { '-' } else { c })
        .filter(|c| c.is_alphanumeric() || *c == '-')
        .flat_map(char::to_lowercase)
        .collect();
    let trimmed = kept.trim_matches(|c| c == '.' || c == '-');
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_document_reads_and_writes_as_no_attributes() {
        let empty: ServerAttributes = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, ServerAttributes::default());
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
    }

    #[test]
    fn attributes_survive_their_document() {
        let attributes = ServerAttributes {
            description: Some("web".into()),
            tags: ["a".to_owned(), "b".to_owned()].into(),
            locked_reason: Some("maintenance".into()),
            hostname: Some("web-1".into()),
            launch_index: 2,
            auto_disk_config: true,
            scheduler_hints: [("group".to_owned(), serde_json::json!("g"))].into(),
            ..ServerAttributes::default()
        };
        let text = serde_json::to_string(&attributes).unwrap();
        assert_eq!(serde_json::from_str::<ServerAttributes>(&text).unwrap(), attributes);
    }

    #[test]
    fn host_hints_name_servers_by_one_id_or_a_list() {
        let (a, b) = (ServerId(crate::fixtures::uuid(1)), ServerId(crate::fixtures::uuid(2)));
        let attributes = ServerAttributes {
            scheduler_hints: [
                ("same_host".to_owned(), serde_json::json!(a.to_string())),
                (
                    "different_host".to_owned(),
                    serde_json::json!([a.to_string(), b.to_string(), "x"]),
                ),
            ]
            .into(),
            ..ServerAttributes::default()
        };
        assert_eq!(attributes.same_host(), vec![a]);
        assert_eq!(attributes.different_host(), vec![a, b]);
        assert!(ServerAttributes::default().same_host().is_empty());
    }

    #[test]
    fn hostnames_follow_novas_sanitizing() {
        assert_eq!(sanitize_hostname("My Server_1.web").as_deref(), Some("my-server-1-web"));
        assert_eq!(sanitize_hostname("--a!b--").as_deref(), Some("ab"));
        assert_eq!(sanitize_hostname("Ñu").as_deref(), Some("ñu"));
        assert_eq!(sanitize_hostname("服务器"), None);
        assert_eq!(sanitize_hostname(&"x".repeat(70)).map(|h| h.len()), Some(63));
    }
}
