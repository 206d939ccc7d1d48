//! Security group rules and Neutron's basic checks of them: the attribute
//! conversions of its API layer (direction, protocol, ports, ethertype, prefix),
//! then its plugin's (port ranges, remotes, ethertype against prefix) and
//! duplicates.

use std::collections::BTreeSet;
use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input::{Attr, AttrType, Attributes, StdBody, pystr, required};
use super::{Caller, Kind, Obj, StdAttrs, Store, found};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Direction {
    Ingress,
    Egress,
}

#[derive(Debug, Clone)]
pub(super) struct SecurityGroupRule {
    pub id: String,
    pub security_group_id: String,
    pub project_id: String,
    pub direction: Direction,
    pub ethertype: &'static str,
    pub protocol: Option<String>,
    pub port_range_min: Option<u16>,
    pub port_range_max: Option<u16>,
    pub remote_ip_prefix: Option<IpNet>,
    pub remote_group_id: Option<String>,
    pub std: StdAttrs,
}

impl SecurityGroupRule {
    /// A rule of a group's template: all traffic in one direction, from anywhere or
    /// from a group's members. Its id is set when it is stored.
    pub fn open(
        group: &str,
        project: &str,
        direction: Direction,
        ethertype: &'static str,
        remote: Option<&str>,
    ) -> Self {
        Self {
            id: String::new(),
            security_group_id: group.to_string(),
            project_id: project.to_string(),
            direction,
            ethertype,
            protocol: None,
            port_range_min: None,
            port_range_max: None,
            remote_ip_prefix: None,
            remote_group_id: remote.map(String::from),
            std: StdAttrs::new(String::new(), BTreeSet::new(), 0),
        }
    }

    /// What makes two rules the same rule (Neutron's `_rule_to_key`): a prefix that
    /// is everything counts as none, a protocol by its number.
    fn key(&self) -> String {
        let prefix = self
            .remote_ip_prefix
            .filter(|p| p.prefix_len() != 0)
            .map(|p| p.to_string());
        format!(
            "{:?}_{}_{:?}_{:?}_{:?}_{:?}_{:?}_{}",
            self.direction,
            self.ethertype,
            self.port_range_max,
            self.port_range_min,
            self.protocol.as_deref().map(protocol_number),
            self.remote_group_id,
            prefix,
            self.security_group_id
        )
    }
}

const RULE_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &[],
    create_only: &[
        "security_group_id",
        "remote_group_id",
        "direction",
        "protocol",
        "port_range_min",
        "port_range_max",
        "ethertype",
        "remote_ip_prefix",
        "remote_address_group_id",
    ],
    create_only_unknown_to_update: &[],
    update_only: &[],
    read_only: &["normalized_cidr", "belongs_to_default_sg"],
};

/// Protocols Neutron knows by name, with their numbers.
const PROTOCOLS: &[(&str, u8)] = &[
    ("ah", 51),
    ("dccp", 33),
    ("egp", 8),
    ("esp", 50),
    ("gre", 47),
    ("hopopt", 0),
    ("icmp", 1),
    ("igmp", 2),
    ("ip", 0),
    ("ipip", 4),
    ("ipv6-encap", 41),
    ("ipv6-frag", 44),
    ("ipv6-icmp", 58),
    ("icmpv6", 58),
    ("ipv6-nonxt", 59),
    ("ipv6-opts", 60),
    ("ipv6-route", 43),
    ("ospf", 89),
    ("pgm", 113),
    ("rsvp", 46),
    ("sctp", 132),
    ("tcp", 6),
    ("udp", 17),
    ("udplite", 136),
    ("vrrp", 112),
];

/// Protocols whose rules may name ports (tcp, udp, dccp, sctp, udplite).
const PORT_PROTOCOLS: &[u8] = &[6, 17, 33, 132, 136];

fn protocol_number(protocol: &str) -> u8 {
    PROTOCOLS
        .iter()
        .find(|(name, _)| *name == protocol)
        .map_or_else(|| protocol.parse().unwrap_or(u8::MAX), |(_, n)| *n)
}

/// A rule's `protocol`: a known name, a number from 0 to 255, or none (`any`).
#[derive(Debug, Clone)]
struct Protocol(Option<String>);

impl AttrType for Protocol {
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(Protocol(None)),
            Value::String(s) if s.eq_ignore_ascii_case("any") => Some(Protocol(None)),
            Value::String(s) if s.parse::<u8>().is_ok() => Some(Protocol(Some(s.clone()))),
            Value::Number(n) if n.as_u64().is_some_and(|n| n <= 255) => Some(Protocol(Some(n.to_string()))),
            Value::String(s) => {
                let lower = s.to_lowercase();
                PROTOCOLS
                    .iter()
                    .any(|(name, _)| *name == lower)
                    .then_some(Protocol(Some(lower)))
            }
            _ => None,
        }
    }
    fn error(_: &str, v: &Value) -> Error {
        let names: Vec<String> = PROTOCOLS.iter().map(|(n, _)| format!("'{n}'")).collect();
        Error::BadRequest(
            "SecurityGroupRuleInvalidProtocol",
            format!(
                "Security group rule protocol {} not supported. Only protocol values (None, 'any', {}) and integer representations [0 to 255] are supported.",
                pystr(v),
                names.join(", ")
            ),
        )
    }
}

/// A rule's port bound: 0 to 65535, as a number or digits.
#[derive(Debug, Clone)]
struct PortValue(u16);

impl AttrType for PortValue {
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()).map(PortValue),
            Value::String(s) => s.parse().ok().map(PortValue),
            _ => None,
        }
    }
    fn error(_: &str, v: &Value) -> Error {
        Error::BadRequest(
            "SecurityGroupInvalidPortValue",
            format!("Invalid value for port {}", pystr(v)),
        )
    }
}

#[derive(Debug, Clone)]
struct Ethertype(&'static str);

impl AttrType for Ethertype {
    fn from_json(v: &Value) -> Option<Self> {
        let s = v.as_str()?;
        ["IPv4", "IPv6"]
            .into_iter()
            .find(|e| e.eq_ignore_ascii_case(s))
            .map(Ethertype)
    }
    fn error(_: &str, v: &Value) -> Error {
        Error::BadRequest(
            "SecurityGroupRuleInvalidEtherType",
            format!(
                "Security group rule for ethertype '{}' not supported. Allowed values are ['IPv4', 'IPv6'].",
                pystr(v)
            ),
        )
    }
}

impl AttrType for Direction {
    fn from_json(v: &Value) -> Option<Self> {
        match v.as_str()? {
            "ingress" => Some(Direction::Ingress),
            "egress" => Some(Direction::Egress),
            _ => None,
        }
    }
    fn error(key: &str, v: &Value) -> Error {
        Error::bad(format!(
            "Invalid input for {key}. Reason: {} is not in valid_values.",
            pystr(v)
        ))
    }
}

/// `remote_ip_prefix`: a CIDR, or an address (a host prefix).
#[derive(Debug, Clone)]
struct Prefix(Option<IpNet>);

impl AttrType for Prefix {
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(Prefix(None)),
            Value::String(s) if s.is_empty() => Some(Prefix(None)),
            Value::String(s) => s
                .parse::<IpNet>()
                .ok()
                .or_else(|| s.parse::<IpAddr>().ok().map(IpNet::from))
                .map(|p| Prefix(Some(p))),
            _ => None,
        }
    }
    fn error(_: &str, v: &Value) -> Error {
        Error::BadRequest("InvalidCIDR", format!("Invalid CIDR {} given as IP prefix.", pystr(v)))
    }
}

/// A rule create body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RuleBody {
    #[serde(flatten)]
    std: StdBody,
    security_group_id: Attr<String>,
    remote_group_id: Attr<String>,
    direction: Attr<Direction>,
    protocol: Attr<Protocol>,
    port_range_min: Attr<PortValue>,
    port_range_max: Attr<PortValue>,
    ethertype: Attr<Ethertype>,
    remote_ip_prefix: Attr<Prefix>,
}

fn invalid_input(kind: &'static str, msg: impl Into<String>) -> Error {
    Error::BadRequest(kind, msg.into())
}

/// Neutron's checks of a rule's ports against its protocol.
fn check_ports(protocol: Option<&str>, min: Option<u16>, max: Option<u16>) -> Result<()> {
    if min.is_none() && max.is_none() {
        return Ok(());
    }
    let Some(protocol) = protocol else {
        return Err(invalid_input(
            "SecurityGroupProtocolRequiredWithPorts",
            "Must also specify protocol if port range is given.",
        ));
    };
    let number = protocol_number(protocol);
    if PORT_PROTOCOLS.contains(&number) {
        if min == Some(0) || max == Some(0) {
            return Err(invalid_input(
                "SecurityGroupInvalidPortValue",
                "Invalid value for port 0",
            ));
        }
        if !matches!((min, max), (Some(lo), Some(hi)) if lo <= hi) {
            return Err(invalid_input(
                "SecurityGroupInvalidPortRange",
                "For TCP/UDP protocols, port_range_min must be <= port_range_max",
            ));
        }
    } else if number == 1 || number == 58 {
        for (value, field, attr) in [(min, "type", "port_range_min"), (max, "code", "port_range_max")] {
            if let Some(v) = value.filter(|v| *v > 255) {
                return Err(invalid_input(
                    "SecurityGroupInvalidIcmpValue",
                    format!("Invalid value for ICMP {field} ({attr}) {v}. It must be 0 to 255."),
                ));
            }
        }
        if let (None, Some(code)) = (min, max) {
            return Err(invalid_input(
                "SecurityGroupMissingIcmpType",
                format!("ICMP code (port-range-max) {code} is provided but ICMP type (port-range-min) is missing."),
            ));
        }
    } else {
        return Err(invalid_input(
            "SecurityGroupInvalidProtocolForPort",
            format!(
                "Ports cannot be specified for protocol {number}. Only ports for TCP, UDP, DCCP, SCTP, UDPLITE are supported."
            ),
        ));
    }
    Ok(())
}

impl Store {
    /// Stores a rule under a new id.
    pub(super) fn insert_rule(&mut self, mut rule: SecurityGroupRule) -> String {
        rule.id = self.new_id();
        let id = rule.id.clone();
        self.sg_rules.insert(id.clone(), rule);
        id
    }

    pub fn create_security_group_rule(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        let b: RuleBody = RULE_ATTRIBUTES.parse(obj, true)?;
        // The API layer: required attributes first, then each value in the attribute map's order.
        let _ = required(b.security_group_id.raw(), "security_group_id")?;
        let _ = required(b.direction.raw(), "direction")?;
        let group = b.security_group_id.required("security_group_id")?;
        let remote_group = b.remote_group_id.get("remote_group_id")?;
        let direction = b.direction.required("direction")?;
        let protocol = b.protocol.get("protocol")?.and_then(|p| p.0);
        let mut min = b.port_range_min.get("port_range_min")?.map(|p| p.0);
        let mut max = b.port_range_max.get("port_range_max")?.map(|p| p.0);
        let ethertype = b.ethertype.get("ethertype")?.map_or("IPv4", |e| e.0);
        let prefix = b.remote_ip_prefix.get("remote_ip_prefix")?.and_then(|p| p.0);
        let description = b.std.description.get("description")?.unwrap_or_default();
        let project = Self::project_for(caller, b.std.project()?);
        // The plugin: the whole port range is no range.
        if (min, max) == (Some(1), Some(65535)) {
            (min, max) = (None, None);
        }
        check_ports(protocol.as_deref(), min, max)?;
        if let Some(p) = prefix
            && ethertype != if p.addr().is_ipv4() { "IPv4" } else { "IPv6" }
        {
            return Err(invalid_input(
                "SecurityGroupRuleParameterConflict",
                format!("Conflicting value ethertype {ethertype} for CIDR {p}"),
            ));
        }
        if prefix.is_some() && remote_group.is_some() {
            return Err(invalid_input(
                "SecurityGroupMultipleRemoteEntites",
                "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may be provided.",
            ));
        }
        if let Some(remote) = &remote_group {
            self.check_visible(caller, Kind::SecurityGroup, remote)?;
        }
        self.check_visible(caller, Kind::SecurityGroup, &group)?;
        let rule = SecurityGroupRule {
            id: String::new(),
            security_group_id: group,
            project_id: project,
            direction,
            ethertype,
            protocol,
            port_range_min: min,
            port_range_max: max,
            remote_ip_prefix: prefix,
            remote_group_id: remote_group,
            std: StdAttrs::new(description, BTreeSet::new(), 0),
        };
        let key = rule.key();
        if let Some(existing) = self.sg_rules.values().find(|r| r.key() == key) {
            return Err(Error::Conflict(
                "SecurityGroupRuleExists",
                format!("Security group rule already exists. Rule id is {}.", existing.id),
            ));
        }
        let group = rule.security_group_id.clone();
        let id = self.insert_rule(rule);
        if let Some(sg) = self.security_groups.get_mut(&group) {
            sg.std.bump();
        }
        Ok(id)
    }

    /// Only the description of a rule changes.
    pub fn update_security_group_rule(&mut self, obj: &Obj, id: &str) -> Result<()> {
        let b: RuleBody = RULE_ATTRIBUTES.parse(obj, false)?;
        let description = b.std.description.get("description")?;
        let rule = found(self.sg_rules.get_mut(id), Kind::SecurityGroupRule, id)?;
        rule.std.update(description);
        Ok(())
    }

    pub fn delete_security_group_rule(&mut self, id: &str) -> Result<()> {
        let rule = found(self.sg_rules.remove(id), Kind::SecurityGroupRule, id)?;
        if let Some(sg) = self.security_groups.get_mut(&rule.security_group_id) {
            sg.std.bump();
        }
        Ok(())
    }

    pub(super) fn rule_json(&self, rule: &SecurityGroupRule) -> Value {
        let default = self
            .security_groups
            .get(&rule.security_group_id)
            .is_some_and(|sg| sg.is_default);
        serde_json::to_value(RuleView::new(rule, default)).expect("serializable")
    }
}

/// A rule as the API shows it.
#[derive(Serialize)]
pub(super) struct RuleView<'a> {
    id: &'a str,
    project_id: &'a str,
    tenant_id: &'a str,
    security_group_id: &'a str,
    ethertype: &'a str,
    direction: Direction,
    protocol: Option<&'a str>,
    port_range_min: Option<u16>,
    port_range_max: Option<u16>,
    remote_ip_prefix: Option<String>,
    remote_address_group_id: Option<&'a str>,
    normalized_cidr: Option<String>,
    remote_group_id: Option<&'a str>,
    belongs_to_default_sg: bool,
    description: &'a str,
    created_at: &'a str,
    updated_at: &'a str,
    revision_number: u64,
}

impl<'a> RuleView<'a> {
    pub fn new(r: &'a SecurityGroupRule, default_group: bool) -> Self {
        RuleView {
            id: &r.id,
            project_id: &r.project_id,
            tenant_id: &r.project_id,
            security_group_id: &r.security_group_id,
            ethertype: r.ethertype,
            direction: r.direction,
            protocol: r.protocol.as_deref(),
            port_range_min: r.port_range_min,
            port_range_max: r.port_range_max,
            remote_ip_prefix: r.remote_ip_prefix.map(|p| p.to_string()),
            remote_address_group_id: None,
            normalized_cidr: r.remote_ip_prefix.map(|p| p.trunc().to_string()),
            remote_group_id: r.remote_group_id.as_deref(),
            belongs_to_default_sg: default_group,
            description: &r.std.description,
            created_at: &r.std.created_at,
            updated_at: &r.std.updated_at,
            revision_number: r.std.revision,
        }
    }
}
