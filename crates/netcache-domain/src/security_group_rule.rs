//! A security group rule as Nova's `os-security-group-rules` makes one: the
//! checks of its protocol, ports and source, in Nova's order and words, and
//! the rule Neutron is asked for (always ingress, as Nova shows only those).
//! Also Nova's reading of a Neutron rule's ports and source.

use std::str::FromStr;

use ipnet::IpNet;

use crate::ProjectId;
use crate::neutron::{SecurityGroup, SecurityGroupRule};

/// The source Nova writes for a rule from anywhere.
pub const ANYWHERE: &str = "0.0.0.0/0";

/// A port as the request gave it: a number, or something that is not one.
pub type PortValue = Result<i64, NotAnInteger>;

/// A port value Python's `int()` would refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotAnInteger;

/// What a user asked for: each field as given (`None`: absent or null).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleRequest {
    pub protocol: Option<String>,
    pub from_port: Option<PortValue>,
    pub to_port: Option<PortValue>,
    pub cidr: Option<String>,
    pub group_id: Option<String>,
}

/// Where a new rule lets traffic in from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleSource {
    /// The members of a group (its id).
    Group(String),
    /// An address range, as the user wrote it (Neutron keeps host bits).
    Cidr(String),
}

/// The ingress rule Neutron is asked to make.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewIngressRule {
    pub security_group_id: String,
    /// The group's owner, the rule's too (Neutron checks a source group
    /// against the rule's owner, which would else be netcache's own project).
    pub project_id: ProjectId,
    pub protocol: Option<String>,
    /// Absent for Nova's `-1` (any type, code or port).
    pub port_range_min: Option<u16>,
    pub port_range_max: Option<u16>,
    pub source: RuleSource,
}

impl NewIngressRule {
    /// `IPv6` for an IPv6 range, else `IPv4` (a group's rule too, as Nova sends it).
    #[must_use]
    pub fn ethertype(&self) -> &'static str {
        match &self.source {
            RuleSource::Cidr(cidr) if cidr.parse::<IpNet>().is_ok_and(|n| n.addr().is_ipv6()) => "IPv6",
            _ => "IPv4",
        }
    }
}

/// Nova's ports of a Neutron rule: a protocol without ports spans all of them
/// (TCP's and UDP's 1-65535, `-1` for any other); no protocol, no ports.
#[must_use]
pub fn nova_ports(rule: &SecurityGroupRule) -> (Option<i64>, Option<i64>) {
    match (rule.protocol.as_deref(), rule.port_range_min, rule.port_range_max) {
        (Some(p), None, None) if is_tcp_or_udp(p) => (Some(1), Some(65535)),
        (Some(_), None, None) => (Some(-1), Some(-1)),
        (_, min, max) => (min.map(i64::from), max.map(i64::from)),
    }
}

fn is_tcp_or_udp(protocol: &str) -> bool {
    protocol.eq_ignore_ascii_case("tcp") || protocol.eq_ignore_ascii_case("udp")
}

/// The rule `request` asks for in `parent`, or Nova's 400 message. `parent`
/// must be read in full: a rule it has already is refused.
pub fn ingress_rule(parent: &SecurityGroup, request: &RuleRequest) -> Result<NewIngressRule, String> {
    let protocol = request.protocol.clone().filter(|p| !p.is_empty());
    let source = match &request.group_id {
        Some(group) => RuleSource::Group(group.clone()),
        None => RuleSource::Cidr(cidr(request.cidr.as_deref())?),
    };
    let mut rule = NewIngressRule {
        security_group_id: parent.id.clone(),
        project_id: parent.project_id.clone(),
        protocol: None,
        port_range_min: None,
        port_range_max: None,
        source,
    };
    let ports = match (&protocol, request.from_port, request.to_port) {
        (Some(protocol), Some(from), Some(to)) => Some(ports(protocol, from, to)?),
        // A group's rule without both ports is Nova's rule for any traffic from
        // the group, protocol and ports dropped.
        (Some(protocol), None, None) if matches!(rule.source, RuleSource::Group(_)) => {
            if protocol.eq_ignore_ascii_case("icmp") {
                Some((-1, -1))
            } else if is_tcp_or_udp(protocol) {
                Some((1, 65535))
            } else {
                None
            }
        }
        _ => None,
    };
    match ports {
        Some((from, to)) => {
            rule.protocol = protocol;
            rule.port_range_min = u16::try_from(from).ok();
            rule.port_range_max = u16::try_from(to).ok();
        }
        None if matches!(rule.source, RuleSource::Cidr(_)) => {
            return Err("Not enough parameters to build a valid rule.".into());
        }
        None => {}
    }
    if let RuleSource::Cidr(cidr) = &rule.source {
        let net: IpNet = cidr.parse().map_err(|_| invalid_cidr(cidr))?;
        if net.prefix_len() == 0 && !net.addr().is_unspecified() {
            return Err(format!("Bad prefix for network in cidr {cidr}"));
        }
    }
    if already_in(parent, &rule, ports) {
        return Err(format!("This rule already exists in group {}", parent.id));
    }
    Ok(rule)
}

/// Nova's `parse_cidr`: none is anywhere; else a network with its prefix.
fn cidr(given: Option<&str>) -> Result<String, String> {
    match given.filter(|c| !c.is_empty()) {
        None => Ok(ANYWHERE.into()),
        Some(c) if c.contains('/') && IpNet::from_str(c).is_ok() => Ok(c.to_owned()),
        Some(c) => Err(invalid_cidr(c)),
    }
}

fn invalid_cidr(cidr: &str) -> String {
    format!("{cidr} is not a valid IP network.")
}

/// Nova's checks of a protocol's ports, in its order and words.
fn ports(protocol: &str, from: PortValue, to: PortValue) -> Result<(i64, i64), String> {
    let upper = protocol.to_uppercase();
    let (Ok(from), Ok(to)) = (from, to) else {
        return Err(if upper == "ICMP" {
            "Invalid input received: Type and Code must be integers for ICMP protocol type".into()
        } else {
            "Invalid input received: To and From ports must be integers".into()
        });
    };
    match upper.as_str() {
        "TCP" | "UDP" if from > to => Err(format!(
            "Invalid port range {from}:{to}. Former value cannot be greater than the later"
        )),
        "TCP" | "UDP" if from < 1 || to > 65535 => Err(format!(
            "Invalid port range {from}:{to}. Valid {upper} ports should be between 1-65535"
        )),
        "TCP" | "UDP" => Ok((from, to)),
        "ICMP" if !(-1..=255).contains(&from) || !(-1..=255).contains(&to) => Err(format!(
            "Invalid port range {from}:{to}. For ICMP, the type:code must be valid"
        )),
        "ICMP" => Ok((from, to)),
        _ => Err(format!("Invalid IP protocol {protocol}.")),
    }
}

/// Nova's own check for a rule the group has: the same source, ports and
/// protocol as one of its ingress rules read as Nova reads them.
fn already_in(parent: &SecurityGroup, rule: &NewIngressRule, ports: Option<(i64, i64)>) -> bool {
    let (group, cidr) = match &rule.source {
        RuleSource::Group(g) => (Some(g.as_str()), None),
        RuleSource::Cidr(c) => (None, Some(c.as_str())),
    };
    let (from, to) = ports.map_or((None, None), |(f, t)| (Some(f), Some(t)));
    parent.rules.iter().filter(|r| r.ingress).any(|existing| {
        let existing_cidr = existing.remote_ip_prefix.as_deref().unwrap_or(ANYWHERE);
        existing.remote_group_id.as_deref() == group
            && Some(existing_cidr) == cidr
            && nova_ports(existing) == (from, to)
            && existing.protocol.as_deref() == rule.protocol.as_deref()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(rules: Vec<SecurityGroupRule>) -> SecurityGroup {
        SecurityGroup {
            id: "sg".into(),
            name: "web".into(),
            project_id: ProjectId::from("p"),
            description: String::new(),
            rules,
        }
    }

    fn tcp(from: i64, to: i64) -> RuleRequest {
        RuleRequest {
            protocol: Some("tcp".into()),
            from_port: Some(Ok(from)),
            to_port: Some(Ok(to)),
            ..RuleRequest::default()
        }
    }

    #[test]
    fn a_tcp_rule_from_anywhere_is_made_and_made_once() {
        let rule = ingress_rule(&group(vec![]), &tcp(22, 22)).unwrap();
        assert_eq!(rule.source, RuleSource::Cidr(ANYWHERE.into()));
        assert_eq!((rule.port_range_min, rule.port_range_max), (Some(22), Some(22)));
        assert_eq!(rule.ethertype(), "IPv4");
        let existing = SecurityGroupRule {
            id: "r".into(),
            security_group_id: "sg".into(),
            ingress: true,
            protocol: Some("tcp".into()),
            port_range_min: Some(22),
            port_range_max: Some(22),
            remote_ip_prefix: None,
            remote_group_id: None,
        };
        assert_eq!(
            ingress_rule(&group(vec![existing]), &tcp(22, 22)),
            Err("This rule already exists in group sg".into())
        );
    }

    #[test]
    fn ports_and_protocols_are_refused_in_novas_words() {
        let parent = group(vec![]);
        let refused = |request: RuleRequest, message: &str| {
            assert_eq!(ingress_rule(&parent, &request), Err(message.to_owned()), "{request:?}");
        };
        for (request, message) in [
            (
                tcp(65536, 22),
                "Invalid port range 65536:22. Former value cannot be greater than the later",
            ),
            (
                tcp(22, 65536),
                "Invalid port range 22:65536. Valid TCP ports should be between 1-65535",
            ),
            (
                tcp(22, 21),
                "Invalid port range 22:21. Former value cannot be greater than the later",
            ),
            (
                RuleRequest {
                    protocol: Some("icmp".into()),
                    ..tcp(-1, 256)
                },
                "Invalid port range -1:256. For ICMP, the type:code must be valid",
            ),
            (
                RuleRequest {
                    from_port: Some(Err(NotAnInteger)),
                    ..tcp(22, 22)
                },
                "Invalid input received: To and From ports must be integers",
            ),
        ] {
            refused(request, message);
        }
        // A valid SSH rule but for its protocol, then but for its CIDR.
        for (protocol, message) in [
            (Some("tempest-999"), "Invalid IP protocol tempest-999."),
            (None, "Not enough parameters to build a valid rule."),
        ] {
            let request = RuleRequest {
                protocol: protocol.map(str::to_owned),
                ..tcp(22, 22)
            };
            refused(request, message);
        }
        for (cidr, message) in [
            ("10.0.0.300/24", "10.0.0.300/24 is not a valid IP network."),
            ("15.0.0.0/0", "Bad prefix for network in cidr 15.0.0.0/0"),
        ] {
            let request = RuleRequest {
                cidr: Some(cidr.into()),
                ..tcp(22, 22)
            };
            refused(request, message);
        }
    }

    #[test]
    fn icmp_any_sends_no_ports_and_a_group_rule_keeps_its_source() {
        let icmp = RuleRequest {
            protocol: Some("icmp".into()),
            ..tcp(-1, -1)
        };
        let rule = ingress_rule(&group(vec![]), &icmp).unwrap();
        assert_eq!((rule.port_range_min, rule.port_range_max), (None, None));
        let from_group = RuleRequest {
            group_id: Some("other".into()),
            ..RuleRequest::default()
        };
        let rule = ingress_rule(&group(vec![]), &from_group).unwrap();
        assert_eq!(rule.source, RuleSource::Group("other".into()));
        assert_eq!(rule.protocol, None);
        let v6 = RuleRequest {
            cidr: Some("2001:db8::/64".into()),
            ..tcp(80, 80)
        };
        assert_eq!(ingress_rule(&group(vec![]), &v6).unwrap().ethertype(), "IPv6");
    }
}
