//! Security groups: each project's `default` group (made on first need, as Neutron
//! makes it, with the rules its templates give), the groups users make, and the
//! groups a port names.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input::{Attr, AttrType, Attributes, StdBody, pystr};
use super::sg_rules::{Direction, RuleView, SecurityGroupRule};
use super::{Caller, Kind, Obj, StdAttrs, Store, found, update_field};
use crate::error::{Error, Result};

#[derive(Debug)]
pub(super) struct SecurityGroup {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub stateful: bool,
    pub is_default: bool,
    pub std: StdAttrs,
}

const SECURITY_GROUP_ATTRIBUTES: Attributes = Attributes {
    create_and_update: &["name", "stateful"],
    create_only: &[],
    create_only_unknown_to_update: &[],
    update_only: &[],
    read_only: &["security_group_rules", "shared"],
};

const DEFAULT_NAME: &str = "default";

/// A security group create or update body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SecurityGroupBody {
    #[serde(flatten)]
    std: StdBody,
    name: Attr<GroupName>,
    stateful: Attr<bool>,
}

/// A group's name: a string of at most 255 characters, never `default` in any case
/// (Neutron answers that one with a 409, not a 400).
#[derive(Debug, Clone)]
struct GroupName(String);

impl AttrType for GroupName {
    fn from_json(v: &Value) -> Option<Self> {
        v.as_str()
            .filter(|s| s.chars().count() <= 255)
            .map(|s| GroupName(s.into()))
    }
    fn error(key: &str, v: &Value) -> Error {
        match v.as_str() {
            Some(s) => Error::bad(format!(
                "Invalid input for {key}. Reason: '{s}' exceeds maximum length of 255."
            )),
            None => String::error(key, v),
        }
    }
}

impl GroupName {
    fn checked(self) -> Result<String> {
        if self.0.eq_ignore_ascii_case(DEFAULT_NAME) {
            return Err(Error::Conflict(
                "SecurityGroupDefaultAlreadyExists",
                "Default security group already exists.".into(),
            ));
        }
        Ok(self.0)
    }
}

/// A port's `security_groups`: a list of distinct UUIDs; `null` is the empty list.
#[derive(Debug, Clone)]
pub(super) struct GroupIds(pub Vec<String>);

impl GroupIds {
    /// Why `v` is not a valid list, in Neutron's words (`None`: it is).
    fn problem(v: &Value) -> Option<String> {
        let Value::Array(items) = v else {
            return Some(format!("'{}' is not a list", pystr(v)));
        };
        let mut seen = BTreeSet::new();
        let dups: Vec<String> = items
            .iter()
            .map(pystr)
            .filter(|s| !seen.insert(s.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if !dups.is_empty() {
            return Some(format!("Duplicate items in the list: '{}'", dups.join(", ")));
        }
        items
            .iter()
            .find(|i| i.as_str().is_none_or(|s| uuid::Uuid::parse_str(s).is_err()))
            .map(|bad| format!("'{}' is not a valid UUID", pystr(bad)))
    }
}

impl AttrType for GroupIds {
    fn from_json(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(GroupIds(Vec::new())),
            Value::Array(items) if Self::problem(v).is_none() => Some(GroupIds(
                items.iter().filter_map(Value::as_str).map(String::from).collect(),
            )),
            _ => None,
        }
    }
    fn error(key: &str, v: &Value) -> Error {
        let reason = Self::problem(v).unwrap_or_default();
        Error::bad(format!("Invalid input for {key}. Reason: {reason}."))
    }
}

impl Store {
    /// The project's `default` group, made now (with the default template's rules)
    /// if it has none.
    pub(super) fn ensure_default_sg(&mut self, project: &str) -> String {
        if let Some(sg) = self.default_sgs.get(project) {
            return sg.clone();
        }
        let id = self.insert_group(
            project,
            DEFAULT_NAME.into(),
            "Default security group".into(),
            true,
            true,
        );
        self.default_sgs.insert(project.to_string(), id.clone());
        id
    }

    /// Neutron makes the default group of the project a list is about (the
    /// filter's, else the caller's) when the caller may have it made.
    pub fn ensure_default_for_list(&mut self, caller: &Caller, params: &[(String, String)]) {
        let project = params
            .iter()
            .find(|(k, _)| k == "project_id")
            .or_else(|| params.iter().find(|(k, _)| k == "tenant_id"))
            .map_or_else(|| caller.project_id.clone(), |(_, v)| v.clone());
        if caller.sees(&project) {
            self.ensure_default_sg(&project);
        }
    }

    fn insert_group(
        &mut self,
        project: &str,
        name: String,
        description: String,
        stateful: bool,
        default: bool,
    ) -> String {
        let id = self.new_id();
        // The default group's rules are not a revision of it; another group's are.
        let std = StdAttrs::new(description, BTreeSet::new(), u64::from(!default));
        self.security_groups.insert(
            id.clone(),
            SecurityGroup {
                id: id.clone(),
                name,
                project_id: project.to_string(),
                stateful,
                is_default: default,
                std,
            },
        );
        // The rules every deployed Neutron's templates give: egress anywhere, and for
        // the default group ingress from its own members.
        let mut openings = vec![(Direction::Egress, None)];
        if default {
            openings.push((Direction::Ingress, Some(id.as_str())));
        }
        for (direction, remote) in openings {
            for ethertype in ["IPv4", "IPv6"] {
                self.insert_rule(SecurityGroupRule::open(&id, project, direction, ethertype, remote));
            }
        }
        id
    }

    pub fn create_security_group(&mut self, caller: &Caller, obj: &Obj) -> Result<String> {
        let b: SecurityGroupBody = SECURITY_GROUP_ATTRIBUTES.parse(obj, true)?;
        let name = b
            .name
            .get("name")?
            .map(GroupName::checked)
            .transpose()?
            .unwrap_or_default();
        let description = b.std.description.get("description")?.unwrap_or_default();
        let stateful = b.stateful.get("stateful")?.unwrap_or(true);
        let tags = b.std.tags.tags()?;
        let project = Self::project_for(caller, b.std.project()?);
        self.ensure_default_sg(&project);
        let id = self.insert_group(&project, name, description, stateful, false);
        if let Some(sg) = self.security_groups.get_mut(&id) {
            sg.std.tags = tags;
        }
        Ok(id)
    }

    pub fn update_security_group(&mut self, obj: &Obj, id: &str) -> Result<()> {
        let b: SecurityGroupBody = SECURITY_GROUP_ATTRIBUTES.parse(obj, false)?;
        let name = b.name.get("name")?.map(GroupName::checked).transpose()?;
        let description = b.std.description.get("description")?;
        let stateful = b.stateful.get("stateful")?;
        let in_use = self.group_in_use(id);
        let sg = found(self.security_groups.get_mut(id), Kind::SecurityGroup, id)?;
        if stateful.is_some_and(|s| s != sg.stateful) && in_use {
            return Err(in_use_error(id));
        }
        if sg.name == DEFAULT_NAME && name.is_some() {
            return Err(Error::Conflict(
                "SecurityGroupCannotUpdateDefault",
                "Updating default security group not allowed.".into(),
            ));
        }
        update_field(&mut sg.name, name);
        update_field(&mut sg.stateful, stateful);
        sg.std.update(description);
        Ok(())
    }

    pub fn delete_security_group(&mut self, caller: &Caller, id: &str) -> Result<()> {
        if self.group_in_use(id) {
            return Err(in_use_error(id));
        }
        let sg = found(self.security_groups.get(id), Kind::SecurityGroup, id)?;
        if sg.name == DEFAULT_NAME && !caller.is_admin {
            return Err(Error::Conflict(
                "SecurityGroupCannotRemoveDefault",
                "Insufficient rights for removing default security group.".into(),
            ));
        }
        if sg.is_default {
            self.default_sgs.remove(&sg.project_id);
        }
        self.security_groups.remove(id);
        // Its rules go with it, and so do other groups' rules that name it as their remote.
        self.sg_rules
            .retain(|_, r| r.security_group_id != id && r.remote_group_id.as_deref() != Some(id));
        Ok(())
    }

    fn group_in_use(&self, id: &str) -> bool {
        self.ports.values().any(|p| p.security_groups.iter().any(|s| s == id))
    }

    /// The groups a port of `project` may carry: each must exist and, unless the
    /// caller is an admin or a service, be `project`'s.
    pub(super) fn check_port_groups(&self, caller: &Caller, project: &str, ids: &[String]) -> Result<()> {
        let missing: Vec<&str> = ids
            .iter()
            .filter(|id| {
                self.security_groups
                    .get(*id)
                    .is_none_or(|sg| !(caller.is_admin || caller.is_service || sg.project_id == project))
            })
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::not_found(Kind::SecurityGroup.not_found(), &missing.join(", ")))
        }
    }

    pub(super) fn security_group_json(&self, sg: &SecurityGroup) -> Value {
        let rules = self
            .sg_rules
            .values()
            .filter(|r| r.security_group_id == sg.id)
            .map(|r| RuleView::new(r, sg.is_default))
            .collect();
        serde_json::to_value(SecurityGroupView {
            id: &sg.id,
            name: &sg.name,
            stateful: sg.stateful,
            tenant_id: &sg.project_id,
            project_id: &sg.project_id,
            shared: false,
            security_group_rules: rules,
            std: &sg.std,
        })
        .expect("serializable")
    }
}

fn in_use_error(id: &str) -> Error {
    Error::Conflict("SecurityGroupInUse", format!("Security Group {id} in use."))
}

/// A security group as the API shows it (`shared`: the sim has no RBAC sharing).
#[derive(Serialize)]
struct SecurityGroupView<'a> {
    id: &'a str,
    name: &'a str,
    stateful: bool,
    tenant_id: &'a str,
    project_id: &'a str,
    shared: bool,
    security_group_rules: Vec<RuleView<'a>>,
    #[serde(flatten)]
    std: &'a StdAttrs,
}
