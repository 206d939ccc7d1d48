//! The statement of a usage window's page (os-simple-tenant-usage): Nova's
//! `instance_get_active_by_window_joined` over every server row, live or
//! deleted, in Nova's order (`project_id`, then the id) and keyset-paged after
//! a marker row's values, so a page reads its own rows only.

use crate::sql::SERVER_COLUMNS;

/// Parameters: `$1` the window's start, `$2` its end, then the project if
/// `project`, then the marker's project and id if `after`, then how many.
/// `collate` is the backend's byte-order collation clause: projects compare
/// byte by byte, and ids as their text (a uuid's bytes and its text sort alike).
pub(crate) fn select_window(project: bool, after: bool, collate: &str) -> String {
    let mut tests = vec![
        "launched_at < $2".to_owned(),
        "(deleted_at IS NULL OR deleted_at > $1)".to_owned(),
    ];
    let mut param = 2;
    if project {
        param += 1;
        tests.push(format!("project_id = ${param}"));
    }
    if after {
        tests.push(format!("(project_id{collate}, id) > (${}, ${})", param + 1, param + 2));
        param += 2;
    }
    format!(
        "SELECT {SERVER_COLUMNS} FROM servers WHERE {} ORDER BY project_id{collate}, id LIMIT ${}",
        tests.join(" AND "),
        param + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_a_window_is_sought_after_its_markers_project_and_id() {
        let sql = select_window(true, true, " COLLATE \"C\"");
        assert!(
            sql.ends_with(
                "FROM servers WHERE launched_at < $2 AND (deleted_at IS NULL OR deleted_at > $1) \
                 AND project_id = $3 AND (project_id COLLATE \"C\", id) > ($4, $5) \
                 ORDER BY project_id COLLATE \"C\", id LIMIT $6"
            ),
            "{sql}"
        );
        let sql = select_window(false, false, "");
        assert!(
            sql.ends_with(
                "WHERE launched_at < $2 AND (deleted_at IS NULL OR deleted_at > $1) ORDER BY project_id, id LIMIT $3"
            ),
            "{sql}"
        );
    }
}
