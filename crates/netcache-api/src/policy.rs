//! Who may do what: Nova's default policy (secure RBAC, 2023+), one table by
//! oslo.policy rule name, each with its check string in oslo.policy's syntax.
//! The deployment may override any rule by name (`[policy]` in the settings, as
//! an oslo.policy file does). Roles imply one another as Keystone's default
//! inference rules make them (`admin` ⊃ `member` ⊃ `reader`); a project rule
//! applies within the caller's project: where a request names a project (the
//! quota calls) `project_id:%(project_id)s` compares it with the caller's
//! ([`Caller::authorize_project`]); elsewhere other projects' servers are an
//! admin's (a non-admin gets 404 for them, see [`crate::Caller::server`]); a
//! user rule `user_id:%(user_id)s` compares the user a key pair request names
//! (from 2.10) with the caller ([`Caller::authorize_user`]).

use std::collections::{BTreeMap, HashMap};

use crate::{ApiError, ApiResult, Caller};

/// Every rule: the base rules others refer to (`rule:NAME`), then each rule the
/// API checks, by its Nova (or netcache) name, with its default check string.
pub const RULES: &[(&str, &str)] = &[
    ("context_is_admin", "role:admin"),
    (
        "project_reader_or_admin",
        "role:admin or ((role:reader or role:member) and project_id:%(project_id)s)",
    ),
    (
        "project_member_or_admin",
        "role:admin or (role:member and project_id:%(project_id)s)",
    ),
    ("service_or_admin", "role:service or role:admin"),
    ("os_compute_api:servers:index", "rule:project_reader_or_admin"),
    ("os_compute_api:servers:detail", "rule:project_reader_or_admin"),
    ("os_compute_api:servers:index:get_all_tenants", "rule:context_is_admin"),
    ("os_compute_api:servers:detail:get_all_tenants", "rule:context_is_admin"),
    ("os_compute_api:servers:show", "rule:project_reader_or_admin"),
    ("os_compute_api:servers:show:host_status", "rule:context_is_admin"),
    (
        "os_compute_api:servers:show:host_status:unknown-only",
        "rule:context_is_admin",
    ),
    (
        "os_compute_api:servers:show:flavor-extra-specs",
        "rule:project_reader_or_admin",
    ),
    ("os_compute_api:os-extended-server-attributes", "rule:context_is_admin"),
    ("os_compute_api:os-server-tags:index", "rule:project_reader_or_admin"),
    ("os_compute_api:os-server-tags:show", "rule:project_reader_or_admin"),
    ("os_compute_api:os-server-tags:update", "rule:project_member_or_admin"),
    (
        "os_compute_api:os-server-tags:update_all",
        "rule:project_member_or_admin",
    ),
    ("os_compute_api:os-server-tags:delete", "rule:project_member_or_admin"),
    (
        "os_compute_api:os-server-tags:delete_all",
        "rule:project_member_or_admin",
    ),
    ("os_compute_api:servers:create", "rule:project_member_or_admin"),
    ("compute:servers:create:requested_destination", "rule:context_is_admin"),
    ("os_compute_api:servers:update", "rule:project_member_or_admin"),
    ("os_compute_api:servers:delete", "rule:project_member_or_admin"),
    ("os_compute_api:server-metadata:index", "rule:project_reader_or_admin"),
    ("os_compute_api:server-metadata:show", "rule:project_reader_or_admin"),
    ("os_compute_api:server-metadata:create", "rule:project_member_or_admin"),
    ("os_compute_api:server-metadata:update", "rule:project_member_or_admin"),
    (
        "os_compute_api:server-metadata:update_all",
        "rule:project_member_or_admin",
    ),
    ("os_compute_api:server-metadata:delete", "rule:project_member_or_admin"),
    ("os_compute_api:ips:index", "rule:project_reader_or_admin"),
    ("os_compute_api:ips:show", "rule:project_reader_or_admin"),
    (
        "os_compute_api:os-attach-interfaces:list",
        "rule:project_reader_or_admin",
    ),
    (
        "os_compute_api:os-attach-interfaces:show",
        "rule:project_reader_or_admin",
    ),
    (
        "os_compute_api:os-attach-interfaces:create",
        "rule:project_member_or_admin",
    ),
    (
        "os_compute_api:os-attach-interfaces:delete",
        "rule:project_member_or_admin",
    ),
    (
        "os_compute_api:os-instance-actions:list",
        "rule:project_reader_or_admin",
    ),
    (
        "os_compute_api:os-instance-actions:show",
        "rule:project_reader_or_admin",
    ),
    ("os_compute_api:os-instance-actions:events", "rule:context_is_admin"),
    (
        "os_compute_api:os-instance-actions:events:details",
        "rule:context_is_admin",
    ),
    (
        "os_compute_api:os-server-external-events:create",
        "rule:service_or_admin",
    ),
    ("os_compute_api:servers:stop", "rule:project_member_or_admin"),
    ("os_compute_api:servers:start", "rule:project_member_or_admin"),
    ("os_compute_api:servers:reboot", "rule:project_member_or_admin"),
    (
        "os_compute_api:servers:trigger_crash_dump",
        "rule:project_member_or_admin",
    ),
    ("os_compute_api:os-server-password:show", "rule:project_reader_or_admin"),
    (
        "os_compute_api:os-server-password:clear",
        "rule:project_member_or_admin",
    ),
    ("os_compute_api:os-pause-server:pause", "rule:project_member_or_admin"),
    ("os_compute_api:os-pause-server:unpause", "rule:project_member_or_admin"),
    (
        "os_compute_api:os-suspend-server:suspend",
        "rule:project_member_or_admin",
    ),
    (
        "os_compute_api:os-suspend-server:resume",
        "rule:project_member_or_admin",
    ),
    ("os_compute_api:os-rescue", "rule:project_member_or_admin"),
    ("os_compute_api:os-admin-password", "rule:project_member_or_admin"),
    ("os_compute_api:os-unrescue", "rule:project_member_or_admin"),
    ("os_compute_api:os-server-diagnostics", "rule:context_is_admin"),
    ("os_compute_api:os-lock-server:lock", "rule:project_member_or_admin"),
    ("os_compute_api:os-lock-server:unlock", "rule:project_member_or_admin"),
    (
        "os_compute_api:os-lock-server:unlock:unlock_override",
        "rule:context_is_admin",
    ),
    ("os_compute_api:servers:rebuild", "rule:project_member_or_admin"),
    ("os_compute_api:os-console-output", "rule:project_member_or_admin"),
    (
        "os_compute_api:os-deferred-delete:restore",
        "rule:project_member_or_admin",
    ),
    (
        "os_compute_api:os-deferred-delete:force",
        "rule:project_member_or_admin",
    ),
    ("os_compute_api:os-admin-actions:reset_state", "rule:context_is_admin"),
    (
        "os_compute_api:os-admin-actions:inject_network_info",
        "rule:context_is_admin",
    ),
    ("os_compute_api:os-multinic:add", "rule:project_member_or_admin"),
    ("os_compute_api:os-multinic:remove", "rule:project_member_or_admin"),
    ("os_compute_api:os-security-groups:list", "rule:project_reader_or_admin"),
    ("os_compute_api:os-security-groups:get", "rule:project_reader_or_admin"),
    ("os_compute_api:os-security-groups:show", "rule:project_reader_or_admin"),
    (
        "os_compute_api:os-security-groups:create",
        "rule:project_member_or_admin",
    ),
    (
        "os_compute_api:os-security-groups:update",
        "rule:project_member_or_admin",
    ),
    (
        "os_compute_api:os-security-groups:delete",
        "rule:project_member_or_admin",
    ),
    (
        "os_compute_api:os-security-groups:rule:create",
        "rule:project_member_or_admin",
    ),
    (
        "os_compute_api:os-security-groups:rule:delete",
        "rule:project_member_or_admin",
    ),
    ("os_compute_api:os-security-groups:add", "rule:project_member_or_admin"),
    (
        "os_compute_api:os-security-groups:remove",
        "rule:project_member_or_admin",
    ),
    (
        "os_compute_api:os-keypairs:index",
        "(rule:context_is_admin) or user_id:%(user_id)s",
    ),
    (
        "os_compute_api:os-keypairs:create",
        "(rule:context_is_admin) or user_id:%(user_id)s",
    ),
    (
        "os_compute_api:os-keypairs:show",
        "(rule:context_is_admin) or user_id:%(user_id)s",
    ),
    (
        "os_compute_api:os-keypairs:delete",
        "(rule:context_is_admin) or user_id:%(user_id)s",
    ),
    ("os_compute_api:os-flavor-manage:create", "rule:context_is_admin"),
    ("os_compute_api:os-flavor-manage:update", "rule:context_is_admin"),
    ("os_compute_api:os-flavor-manage:delete", "rule:context_is_admin"),
    ("os_compute_api:os-flavor-access", "rule:context_is_admin"),
    (
        "os_compute_api:os-flavor-access:add_tenant_access",
        "rule:context_is_admin",
    ),
    (
        "os_compute_api:os-flavor-access:remove_tenant_access",
        "rule:context_is_admin",
    ),
    (
        "os_compute_api:os-flavor-extra-specs:index",
        "rule:project_reader_or_admin",
    ),
    (
        "os_compute_api:os-flavor-extra-specs:show",
        "rule:project_reader_or_admin",
    ),
    ("os_compute_api:os-flavor-extra-specs:create", "rule:context_is_admin"),
    ("os_compute_api:os-flavor-extra-specs:update", "rule:context_is_admin"),
    ("os_compute_api:os-flavor-extra-specs:delete", "rule:context_is_admin"),
    ("os_compute_api:os-server-groups:create", "rule:project_member_or_admin"),
    ("os_compute_api:os-server-groups:delete", "rule:project_member_or_admin"),
    ("os_compute_api:os-server-groups:index", "rule:project_reader_or_admin"),
    (
        "os_compute_api:os-server-groups:index:all_projects",
        "rule:context_is_admin",
    ),
    ("os_compute_api:os-server-groups:show", "rule:project_reader_or_admin"),
    ("os_compute_api:os-availability-zone:list", "@"),
    ("os_compute_api:os-availability-zone:detail", "rule:context_is_admin"),
    ("os_compute_api:os-services:list", "rule:context_is_admin"),
    ("os_compute_api:os-services:update", "rule:context_is_admin"),
    ("os_compute_api:os-services:delete", "rule:context_is_admin"),
    ("os_compute_api:os-hypervisors:list", "rule:context_is_admin"),
    ("os_compute_api:os-hypervisors:list-detail", "rule:context_is_admin"),
    ("os_compute_api:os-hypervisors:statistics", "rule:context_is_admin"),
    ("os_compute_api:os-hypervisors:show", "rule:context_is_admin"),
    ("os_compute_api:os-hypervisors:uptime", "rule:context_is_admin"),
    ("os_compute_api:os-hypervisors:search", "rule:context_is_admin"),
    ("os_compute_api:os-hypervisors:servers", "rule:context_is_admin"),
    ("os_compute_api:os-floating-ips:add", "rule:project_member_or_admin"),
    ("os_compute_api:os-floating-ips:remove", "rule:project_member_or_admin"),
    ("os_compute_api:os-floating-ips:list", "rule:project_reader_or_admin"),
    ("os_compute_api:os-floating-ips:create", "rule:project_member_or_admin"),
    ("os_compute_api:os-floating-ips:show", "rule:project_reader_or_admin"),
    ("os_compute_api:os-floating-ips:delete", "rule:project_member_or_admin"),
    ("os_compute_api:os-floating-ip-pools", "@"),
    ("os_compute_api:os-networks:list", "rule:project_reader_or_admin"),
    ("os_compute_api:os-networks:show", "rule:project_reader_or_admin"),
    ("os_compute_api:os-tenant-networks:list", "rule:project_reader_or_admin"),
    ("os_compute_api:os-tenant-networks:show", "rule:project_reader_or_admin"),
    (
        "os_compute_api:os-instance-usage-audit-log:list",
        "rule:context_is_admin",
    ),
    (
        "os_compute_api:os-instance-usage-audit-log:show",
        "rule:context_is_admin",
    ),
    ("os_compute_api:os-migrations:index", "rule:context_is_admin"),
    ("os_compute_api:os-migrate-server:migrate", "rule:context_is_admin"),
    ("os_compute_api:os-migrate-server:migrate_live", "rule:context_is_admin"),
    ("os_compute_api:os-aggregates:index", "rule:context_is_admin"),
    ("os_compute_api:os-aggregates:create", "rule:context_is_admin"),
    ("os_compute_api:os-aggregates:show", "rule:context_is_admin"),
    ("os_compute_api:os-aggregates:update", "rule:context_is_admin"),
    ("os_compute_api:os-aggregates:delete", "rule:context_is_admin"),
    ("os_compute_api:os-aggregates:add_host", "rule:context_is_admin"),
    ("os_compute_api:os-aggregates:remove_host", "rule:context_is_admin"),
    ("os_compute_api:os-aggregates:set_metadata", "rule:context_is_admin"),
    ("compute:aggregates:images", "rule:context_is_admin"),
    ("os_compute_api:os-hosts:list", "rule:context_is_admin"),
    ("os_compute_api:os-hosts:show", "rule:context_is_admin"),
    ("os_compute_api:os-hosts:update", "rule:context_is_admin"),
    ("os_compute_api:os-hosts:reboot", "rule:context_is_admin"),
    ("os_compute_api:os-hosts:shutdown", "rule:context_is_admin"),
    ("os_compute_api:os-hosts:start", "rule:context_is_admin"),
    ("os_compute_api:os-simple-tenant-usage:list", "rule:context_is_admin"),
    (
        "os_compute_api:os-simple-tenant-usage:show",
        "rule:project_reader_or_admin",
    ),
    ("os_compute_api:os-quota-sets:show", "rule:project_reader_or_admin"),
    ("os_compute_api:os-quota-sets:detail", "rule:project_reader_or_admin"),
    ("os_compute_api:os-quota-sets:defaults", "@"),
    ("os_compute_api:os-quota-sets:update", "rule:context_is_admin"),
    ("os_compute_api:os-quota-sets:delete", "rule:context_is_admin"),
    ("os_compute_api:os-quota-class-sets:show", "rule:context_is_admin"),
    ("os_compute_api:os-quota-class-sets:update", "rule:context_is_admin"),
    ("os_compute_api:limits", "@"),
    ("os_compute_api:limits:other_project", "rule:context_is_admin"),
    ("os_compute_api:extensions", "@"),
    ("netcache:audit", "rule:context_is_admin"),
    ("netcache:metrics", "rule:context_is_admin"),
];

/// A parsed check string: the part of oslo.policy's language a compute API
/// with netcache's scoping needs.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Check {
    /// `@` (or an empty string): anyone who got past authentication.
    Always,
    /// `!`: nobody.
    Never,
    Role(String),
    Rule(String),
    /// `project_id:%(project_id)s`: the target is the caller's project. Where
    /// the request names none the handlers scope every server to its project
    /// already, so this holds; where it names one it is compared.
    OwnProject,
    /// `user_id:%(user_id)s`: the target is the caller's user (where the
    /// request names none, it is).
    OwnUser,
    Not(Box<Check>),
    And(Vec<Check>),
    Or(Vec<Check>),
}

/// Whose a request's target is: the caller's project, the caller's user.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub own_project: bool,
    pub own_user: bool,
}

/// The rules in force: the defaults with the deployment's overrides.
#[derive(Debug)]
pub struct Policy {
    rules: HashMap<String, Check>,
}

impl Default for Policy {
    fn default() -> Self {
        Self::with_overrides(&BTreeMap::new()).expect("the default rules parse")
    }
}

impl Policy {
    /// The defaults, with `overrides` (rule name → check string) in place of
    /// theirs. An unknown rule name, a check string that does not parse, or a
    /// `rule:` that names no rule (or loops) is refused, naming the rule.
    pub fn with_overrides(overrides: &BTreeMap<String, String>) -> Result<Self, String> {
        let mut rules = HashMap::new();
        for (name, text) in RULES {
            rules.insert((*name).to_owned(), parse(text).map_err(|e| format!("{name}: {e}"))?);
        }
        for (name, text) in overrides {
            if !rules.contains_key(name) {
                return Err(format!("{name}: no such rule"));
            }
            rules.insert(name.clone(), parse(text).map_err(|e| format!("{name}: {e}"))?);
        }
        let policy = Self { rules };
        for name in policy.rules.keys() {
            policy.resolves(name, &mut Vec::new())?;
        }
        Ok(policy)
    }

    /// Every `rule:` reachable from `name` exists, without a cycle.
    fn resolves(&self, name: &str, path: &mut Vec<String>) -> Result<(), String> {
        if path.iter().any(|p| p == name) {
            return Err(format!("{}: refers to itself ({} → {name})", path[0], path.join(" → ")));
        }
        let Some(check) = self.rules.get(name) else {
            return Err(format!(
                "{}: rule:{name} names no rule",
                path.last().map_or(name, String::as_str)
            ));
        };
        path.push(name.to_owned());
        let mut referred = Vec::new();
        check.referred_rules(&mut referred);
        for next in referred {
            self.resolves(next, path)?;
        }
        path.pop();
        Ok(())
    }

    /// Whether a caller with `roles` passes `rule`; an unknown name is a
    /// programming error, caught by the test that walks every handler's rule.
    #[must_use]
    pub fn allows(&self, rule: &str, roles: &[String]) -> bool {
        self.allows_on(rule, roles, true)
    }

    /// The same for a request that names a project: `own_project` is whether
    /// it is the caller's.
    #[must_use]
    pub fn allows_on(&self, rule: &str, roles: &[String], own_project: bool) -> bool {
        self.allows_for(
            rule,
            roles,
            Target {
                own_project,
                own_user: true,
            },
        )
    }

    /// The same for a request whose target is `target`.
    #[must_use]
    pub fn allows_for(&self, rule: &str, roles: &[String], target: Target) -> bool {
        let check = self.rules.get(rule).unwrap_or_else(|| panic!("no policy rule {rule}"));
        self.eval(check, roles, target)
    }

    fn eval(&self, check: &Check, roles: &[String], target: Target) -> bool {
        match check {
            Check::Always => true,
            Check::OwnUser => target.own_user,
            Check::OwnProject => target.own_project,
            Check::Never => false,
            Check::Role(role) => roles.iter().any(|r| r == role),
            Check::Rule(name) => self.allows_for(name, roles, target),
            Check::Not(inner) => !self.eval(inner, roles, target),
            Check::And(all) => all.iter().all(|c| self.eval(c, roles, target)),
            Check::Or(any) => any.iter().any(|c| self.eval(c, roles, target)),
        }
    }
}

impl Check {
    fn referred_rules<'a>(&'a self, into: &mut Vec<&'a str>) {
        match self {
            Self::Rule(name) => into.push(name),
            Self::Not(inner) => inner.referred_rules(into),
            Self::And(all) | Self::Or(all) => all.iter().for_each(|c| c.referred_rules(into)),
            Self::Always | Self::Never | Self::Role(_) | Self::OwnProject | Self::OwnUser => {}
        }
    }
}

/// Parses a check string: atoms `@`, `!`, `role:NAME`, `rule:NAME`,
/// `project_id:%(project_id)s`, `user_id:%(user_id)s`, joined by `or`, `and`,
/// `not` and parentheses (that precedence, as oslo.policy's).
fn parse(text: &str) -> Result<Check, String> {
    let spaced = text.replace('(', " ( ").replace(')', " ) ");
    // `%(project_id)s` and `%(user_id)s` hold parentheses of their own: put them back together.
    let spaced = spaced
        .replace("% ( project_id ) s", "%(project_id)s")
        .replace("% ( user_id ) s", "%(user_id)s");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    if tokens.is_empty() {
        return Ok(Check::Always);
    }
    let mut parser = Parser { tokens, at: 0 };
    let check = parser.or()?;
    match parser.tokens.get(parser.at) {
        None => Ok(check),
        Some(extra) => Err(format!("unexpected {extra:?} in {text:?}")),
    }
}

struct Parser<'a> {
    tokens: Vec<&'a str>,
    at: usize,
}

impl Parser<'_> {
    fn next(&mut self) -> Option<&str> {
        let token = self.tokens.get(self.at).copied();
        self.at += 1;
        token
    }

    fn peek_is(&self, word: &str) -> bool {
        self.tokens.get(self.at).is_some_and(|t| t.eq_ignore_ascii_case(word))
    }

    /// One or more `operand`s joined by `word`: the one alone, or `join` of
    /// them all.
    fn joined(
        &mut self,
        word: &str,
        operand: fn(&mut Self) -> Result<Check, String>,
        join: fn(Vec<Check>) -> Check,
    ) -> Result<Check, String> {
        let mut checks = vec![operand(self)?];
        while self.peek_is(word) {
            self.at += 1;
            checks.push(operand(self)?);
        }
        Ok(if checks.len() == 1 {
            checks.remove(0)
        } else {
            join(checks)
        })
    }

    fn or(&mut self) -> Result<Check, String> {
        self.joined("or", Self::and, Check::Or)
    }

    fn and(&mut self) -> Result<Check, String> {
        self.joined("and", Self::not, Check::And)
    }

    fn not(&mut self) -> Result<Check, String> {
        if self.peek_is("not") {
            self.at += 1;
            return Ok(Check::Not(Box::new(self.not()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Check, String> {
        match self.next() {
            None => Err("a check is missing at the end".into()),
            Some("(") => {
                let inner = self.or()?;
                match self.next() {
                    Some(")") => Ok(inner),
                    _ => Err("a ')' is missing".into()),
                }
            }
            Some("@") => Ok(Check::Always),
            Some("!") => Ok(Check::Never),
            Some("project_id:%(project_id)s") => Ok(Check::OwnProject),
            Some("user_id:%(user_id)s") => Ok(Check::OwnUser),
            Some(atom) => match atom.split_once(':') {
                Some(("role", role)) if !role.is_empty() => Ok(Check::Role(role.to_lowercase())),
                Some(("rule", rule)) if !rule.is_empty() => Ok(Check::Rule(rule.to_owned())),
                _ => Err(format!(
                    "unsupported check {atom:?} (netcache knows @, !, role:NAME, rule:NAME, project_id:%(project_id)s, user_id:%(user_id)s)"
                )),
            },
        }
    }
}

impl Caller {
    /// Whether the caller's roles pass `rule` (for what a view shows).
    #[must_use]
    pub fn allows(&self, rule: &str) -> bool {
        self.policy.allows(rule, &self.ctx.roles)
    }

    /// 403 unless the caller's roles pass `rule`, with Nova's message.
    pub fn authorize(&self, rule: &'static str) -> ApiResult<()> {
        allowed(rule, self.policy.allows(rule, &self.ctx.roles))
    }

    /// The same for a request on `project` (Nova's target `project_id`).
    pub fn authorize_project(&self, rule: &'static str, project: &str) -> ApiResult<()> {
        let own = project == self.ctx.project_id;
        allowed(rule, self.policy.allows_on(rule, &self.ctx.roles, own))
    }

    /// The same for a request on the caller's own project (Nova's target where
    /// the request names none: the proxies, flavor extra specs).
    pub fn authorize_own_project(&self, rule: &'static str) -> ApiResult<()> {
        self.authorize_project(rule, &self.ctx.project_id)
    }

    /// The same for a request on no project (Nova's empty target): a project
    /// rule fails, so only a rule without one (an admin's) passes.
    pub fn authorize_no_project(&self, rule: &'static str) -> ApiResult<()> {
        allowed(rule, self.policy.allows_on(rule, &self.ctx.roles, false))
    }

    /// Whether the caller passes `rule` (Nova's `context.can(..., fatal=False)`).
    #[must_use]
    pub fn may(&self, rule: &'static str) -> bool {
        self.policy.allows(rule, &self.ctx.roles)
    }

    /// Nova's `context.is_admin`: what an admin alone sees of Neutron's
    /// resources through the proxies (netcache reads Neutron as one).
    #[must_use]
    pub fn is_admin(&self) -> bool {
        self.may("context_is_admin")
    }

    /// The caller's project.
    #[must_use]
    pub fn project(&self) -> netcache_domain::ProjectId {
        netcache_domain::ProjectId::from(self.ctx.project_id.as_str())
    }

    /// Whose Neutron resources the proxies show the caller: their
    /// project's, or an admin's every project's.
    #[must_use]
    pub fn neutron_scope(&self) -> netcache_compute::ProjectScope {
        netcache_compute::ProjectScope {
            project: self.project(),
            all_projects: self.is_admin(),
        }
    }

    /// The same for a request on `user`'s resources (Nova's target `user_id`).
    pub fn authorize_user(&self, rule: &'static str, user: &str) -> ApiResult<()> {
        let target = Target {
            own_project: true,
            own_user: user == self.ctx.user_id,
        };
        allowed(rule, self.policy.allows_for(rule, &self.ctx.roles, target))
    }
}

fn allowed(rule: &str, allows: bool) -> ApiResult<()> {
    if allows {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!(
            "Policy doesn't allow {rule} to be performed."
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(names: &[&str]) -> Vec<String> {
        names.iter().map(|r| (*r).to_owned()).collect()
    }

    #[test]
    fn roles_imply_each_other_as_keystone_infers_them() {
        let policy = Policy::default();
        let table = [
            ("project_reader_or_admin", [true, true, true, false]),
            ("project_member_or_admin", [false, true, true, false]),
            ("context_is_admin", [false, false, true, false]),
            ("service_or_admin", [false, false, true, true]),
            ("os_compute_api:os-availability-zone:list", [true, true, true, true]),
            ("os_compute_api:os-quota-class-sets:update", [false, false, true, false]),
            // Every user's own key pairs are that user's, whatever the roles.
            ("os_compute_api:os-keypairs:create", [true, true, true, true]),
        ];
        for (rule, expected) in table {
            let got = ["reader", "member", "admin", "service"].map(|r| policy.allows(rule, &roles(&[r])));
            assert_eq!(got, expected, "{rule} for reader, member, admin, service");
        }
    }

    #[test]
    fn a_project_rule_holds_only_in_the_callers_project_when_one_is_named() {
        let policy = Policy::default();
        let show = "os_compute_api:os-quota-sets:show";
        for (who, own, other) in [("reader", true, false), ("member", true, false), ("admin", true, true)] {
            assert_eq!(
                policy.allows_on(show, &roles(&[who]), true),
                own,
                "{who} in its project"
            );
            assert_eq!(policy.allows_on(show, &roles(&[who]), false), other, "{who} in another");
        }
        assert!(!policy.allows_on(show, &roles(&["service"]), true));
        let update = "os_compute_api:os-quota-sets:update";
        assert!(
            !policy.allows_on(update, &roles(&["member"]), true),
            "only admins set quotas"
        );
        assert!(policy.allows_on(update, &roles(&["admin"]), false));
    }

    #[test]
    fn a_user_rule_holds_for_another_user_only_for_admins() {
        let policy = Policy::default();
        let other_user = Target {
            own_project: true,
            own_user: false,
        };
        for rule in ["index", "create", "show", "delete"].map(|r| format!("os_compute_api:os-keypairs:{r}")) {
            assert!(!policy.allows_for(&rule, &roles(&["member"]), other_user), "{rule}");
            assert!(policy.allows_for(&rule, &roles(&["admin"]), other_user), "{rule}");
        }
    }

    #[test]
    fn every_rule_name_is_unique() {
        let mut names: Vec<&str> = RULES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULES.len());
    }

    #[test]
    fn check_strings_parse_as_oslo_policy_reads_them() {
        let role = |r: &str| Check::Role(r.into());
        let cases = [
            ("", Check::Always),
            ("@", Check::Always),
            ("!", Check::Never),
            ("role:Admin", role("admin")),
            (
                "role:a or role:b and not role:c",
                Check::Or(vec![
                    role("a"),
                    Check::And(vec![role("b"), Check::Not(Box::new(role("c")))]),
                ]),
            ),
            (
                "(role:a or role:b) and project_id:%(project_id)s",
                Check::And(vec![Check::Or(vec![role("a"), role("b")]), Check::OwnProject]),
            ),
            (
                "(rule:context_is_admin) or user_id:%(user_id)s",
                Check::Or(vec![Check::Rule("context_is_admin".into()), Check::OwnUser]),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text), Ok(want), "{text:?}");
        }
        for bad in [
            "role:",
            "user_id:%(name)s",
            "role:a or",
            "(role:a",
            "role:a role:b",
            "is_admin:True",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn overrides_replace_rules_by_name_and_are_checked() {
        let overrides = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
        };
        let policy = Policy::with_overrides(&overrides(&[("os_compute_api:servers:create", "role:admin")])).unwrap();
        assert!(!policy.allows("os_compute_api:servers:create", &roles(&["member"])));
        assert!(policy.allows("os_compute_api:servers:create", &roles(&["admin"])));
        assert!(
            policy.allows("os_compute_api:servers:delete", &roles(&["member"])),
            "others keep their defaults"
        );

        for (bad, says) in [
            (("os_compute_api:servers:explode", "@"), "no such rule"),
            (("os_compute_api:servers:create", "role:"), "unsupported check"),
            (("os_compute_api:servers:create", "rule:nowhere"), "names no rule"),
            (("context_is_admin", "rule:context_is_admin"), "refers to itself"),
        ] {
            let err = Policy::with_overrides(&overrides(&[bad])).unwrap_err();
            assert!(err.contains(says) && err.contains(bad.0), "{bad:?}: {err}");
        }
    }
}
