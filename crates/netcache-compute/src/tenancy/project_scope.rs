//! Whose Neutron resources a caller of Nova's proxies sees. netcache calls
//! Neutron as its own service user, so it holds each caller to what Neutron
//! would show the caller: their project's, or every project's for an admin.

use netcache_domain::ProjectId;

#[derive(Clone, Debug)]
pub struct ProjectScope {
    pub project: ProjectId,
    pub all_projects: bool,
}

impl ProjectScope {
    /// Whether a resource `owner` owns is the caller's to see.
    #[must_use]
    pub fn sees(&self, owner: &ProjectId) -> bool {
        self.all_projects || *owner == self.project
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_sees_its_own_and_an_admin_every_projects() {
        let member = ProjectScope {
            project: ProjectId::from("demo"),
            all_projects: false,
        };
        assert!(member.sees(&ProjectId::from("demo")));
        assert!(!member.sees(&ProjectId::from("other")));
        let admin = ProjectScope {
            all_projects: true,
            ..member
        };
        assert!(admin.sees(&ProjectId::from("other")));
    }
}
