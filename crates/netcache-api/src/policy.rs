//! Who may do what: Nova's default policy (secure RBAC, 2023+), one table by
//! oslo.policy rule name. Roles imply one another as Keystone's default
//! inference rules make them (`admin` ⊃ `member` ⊃ `reader`); a project rule
//! applies within the caller's project, and other projects' servers are an
//! admin's (a non-admin gets 404 for them, see [`crate::Caller::server`]).

use crate::{ApiError, ApiResult, Caller};

/// The check a rule makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Anyone who got past authentication.
    Anyone,
    /// `reader`, `member` or `admin` (Nova's `PROJECT_READER_OR_ADMIN`).
    ProjectReader,
    /// `member` or `admin` (Nova's `PROJECT_MEMBER_OR_ADMIN`).
    ProjectMember,
    /// `admin` only.
    Admin,
    /// `service` or `admin` (Nova's external events).
    Service,
}

/// Every rule the API checks, by its Nova (or netcache) name.
pub const RULES: &[(&str, Check)] = &[
    ("os_compute_api:servers:index", Check::ProjectReader),
    ("os_compute_api:servers:detail", Check::ProjectReader),
    ("os_compute_api:servers:index:get_all_tenants", Check::Admin),
    ("os_compute_api:servers:detail:get_all_tenants", Check::Admin),
    ("os_compute_api:servers:show", Check::ProjectReader),
    ("os_compute_api:servers:create", Check::ProjectMember),
    ("os_compute_api:servers:delete", Check::ProjectMember),
    ("os_compute_api:ips:index", Check::ProjectReader),
    ("os_compute_api:ips:show", Check::ProjectReader),
    ("os_compute_api:os-attach-interfaces:list", Check::ProjectReader),
    ("os_compute_api:os-attach-interfaces:show", Check::ProjectReader),
    ("os_compute_api:os-attach-interfaces:create", Check::ProjectMember),
    ("os_compute_api:os-attach-interfaces:delete", Check::ProjectMember),
    ("os_compute_api:os-instance-actions:list", Check::ProjectReader),
    ("os_compute_api:os-instance-actions:show", Check::ProjectReader),
    ("os_compute_api:os-server-external-events:create", Check::Service),
    ("os_compute_api:os-availability-zone:list", Check::Anyone),
    ("os_compute_api:os-availability-zone:detail", Check::Admin),
    ("netcache:audit", Check::Admin),
    ("netcache:metrics", Check::Admin),
];

/// The check of a rule; an unknown name is a programming error, caught by the
/// unit test that walks every handler's rule.
pub fn check(rule: &str) -> Check {
    RULES
        .iter()
        .find(|(name, _)| *name == rule)
        .map(|(_, check)| *check)
        .unwrap_or_else(|| panic!("no policy rule {rule}"))
}

impl Check {
    pub fn allows(self, roles: &[String]) -> bool {
        let has = |role: &str| roles.iter().any(|r| r == role);
        match self {
            Self::Anyone => true,
            Self::ProjectReader => has("reader") || has("member") || has("admin"),
            Self::ProjectMember => has("member") || has("admin"),
            Self::Admin => has("admin"),
            Self::Service => has("service") || has("admin"),
        }
    }
}

impl Caller {
    /// 403 unless the caller's roles pass `rule`, with Nova's message.
    pub fn authorize(&self, rule: &'static str) -> ApiResult<()> {
        if check(rule).allows(&self.ctx.roles) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "Policy doesn't allow {rule} to be performed."
            )))
        }
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
        let table = [
            (Check::ProjectReader, [true, true, true, false]),
            (Check::ProjectMember, [false, true, true, false]),
            (Check::Admin, [false, false, true, false]),
            (Check::Service, [false, false, true, true]),
            (Check::Anyone, [true, true, true, true]),
        ];
        for (check, expected) in table {
            let got = [
                check.allows(&roles(&["reader"])),
                check.allows(&roles(&["member"])),
                check.allows(&roles(&["admin"])),
                check.allows(&roles(&["service"])),
            ];
            assert_eq!(got, expected, "{check:?} for reader, member, admin, service");
        }
    }

    #[test]
    fn every_rule_name_is_unique() {
        let mut names: Vec<&str> = RULES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULES.len());
    }
}
