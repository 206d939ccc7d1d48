//! Server list pages in the orders Nova's `sort_key`s ask for: the statement is
//! built per order and keyset-paged after a marker row, so a page reads at most
//! its own rows, whatever the number of servers.

use netcache_domain::server::VmState;

/// A server column Nova's sort keys order by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    CreatedAt,
    UpdatedAt,
    LaunchedAt,
    /// Nova's `terminated_at`.
    DeletedAt,
    Name,
    Id,
    VmState,
    TaskState,
    /// Nova's number, from the state (`VmState::power_state`).
    PowerState,
    Host,
    ImageRef,
    FlavorRef,
    AvailabilityZone,
    ProjectId,
    UserId,
}

/// One key of an order, and its direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sort {
    pub key: SortKey,
    pub descending: bool,
}

impl SortKey {
    /// The column, whether it may be NULL, and whether it is text (compared
    /// byte by byte on both backends, as Rust compares strings).
    fn column(self) -> (&'static str, bool, bool) {
        match self {
            Self::CreatedAt => ("created_at", false, false),
            Self::UpdatedAt => ("updated_at", false, false),
            Self::LaunchedAt => ("launched_at", true, false),
            Self::DeletedAt => ("deleted_at", true, false),
            Self::Name => ("name", false, true),
            Self::Id => ("id", false, false),
            Self::VmState | Self::PowerState => ("vm_state", false, true),
            Self::TaskState => ("task_state", true, true),
            Self::Host => ("host", true, true),
            Self::ImageRef => ("image_ref", false, true),
            Self::FlavorRef => ("flavor_ref", false, true),
            Self::AvailabilityZone => ("availability_zone", false, true),
            Self::ProjectId => ("project_id", false, true),
            Self::UserId => ("user_id", false, true),
        }
    }

    fn nullable(self) -> bool {
        self.column().1
    }

    /// The expression ordered by; `collate` is the backend's byte-order collation clause.
    fn expr(self, collate: &str) -> String {
        let (column, _, text) = self.column();
        if self == Self::PowerState {
            let arms: Vec<String> = VmState::ALL
                .iter()
                .map(|s| format!("WHEN '{}' THEN {}", s.as_str(), s.power_state()))
                .collect();
            return format!("(CASE {column} {} END)", arms.join(" "));
        }
        if text {
            format!("{column}{collate}")
        } else {
            column.to_owned()
        }
    }
}

/// The statement of a page in `order`, then (unless it has it) id in the first
/// key's direction (Nova's last default key; ids make the order total). Parameters: `$1`
/// whether deleted servers are included, then the project if `project`, then
/// the marker's id if `after`, then how many. NULLs come first ascending, as
/// `None` sorts before `Some`.
pub(crate) fn select_page(columns: &str, order: &[Sort], project: bool, after: bool, collate: &str) -> String {
    let descending = order.first().is_some_and(|s| s.descending);
    let mut keys = order.to_vec();
    if !keys.iter().any(|s| s.key == SortKey::Id) {
        keys.push(Sort {
            key: SortKey::Id,
            descending,
        });
    }
    let exprs: Vec<String> = keys.iter().map(|s| s.key.expr(collate)).collect();
    let mut from = "servers".to_owned();
    let mut tests = vec!["($1 OR vm_state <> 'deleted')".to_owned()];
    let mut param = 1;
    if project {
        param += 1;
        tests.push(format!("project_id = ${param}"));
    }
    if after {
        param += 1;
        let marks: Vec<String> = exprs.iter().enumerate().map(|(i, e)| format!("{e} AS m{i}")).collect();
        from.push_str(&format!(
            " CROSS JOIN (SELECT {} FROM servers WHERE id = ${param}) m",
            marks.join(", ")
        ));
        tests.push(after_marker(&keys, &exprs));
    }
    let order_by: Vec<String> = keys
        .iter()
        .zip(&exprs)
        .map(|(s, e)| match (s.descending, s.key.nullable()) {
            (false, false) => format!("{e} ASC"),
            (true, false) => format!("{e} DESC"),
            (false, true) => format!("{e} ASC NULLS FIRST"),
            (true, true) => format!("{e} DESC NULLS LAST"),
        })
        .collect();
    format!(
        "SELECT {columns} FROM {from} WHERE {} ORDER BY {} LIMIT ${}",
        tests.join(" AND "),
        order_by.join(", "),
        param + 1
    )
}

/// The rows after the marker's (`m.m0`, `m.m1`, …): one row-value test where
/// every key goes one way and none is NULL (an index on the keys is sought to
/// it), else the test key by key.
fn after_marker(keys: &[Sort], exprs: &[String]) -> String {
    let uniform = keys
        .iter()
        .all(|s| s.descending == keys[0].descending && !s.key.nullable());
    if uniform {
        let marks: Vec<String> = (0..keys.len()).map(|i| format!("m.m{i}")).collect();
        let op = if keys[0].descending { "<" } else { ">" };
        return format!("({}) {op} ({})", exprs.join(", "), marks.join(", "));
    }
    let mut alternatives = Vec::with_capacity(keys.len());
    for (i, (sort, e)) in keys.iter().zip(exprs).enumerate() {
        let equal_before = (0..i).map(|j| format!("{} IS NOT DISTINCT FROM m.m{j}", exprs[j]));
        let m = format!("m.m{i}");
        let beyond = match (sort.descending, sort.key.nullable()) {
            (false, false) => format!("{e} > {m}"),
            (true, false) => format!("{e} < {m}"),
            (false, true) => format!("({e} > {m} OR ({m} IS NULL AND {e} IS NOT NULL))"),
            (true, true) => format!("({e} < {m} OR ({e} IS NULL AND {m} IS NOT NULL))"),
        };
        let all: Vec<String> = equal_before.chain([beyond]).collect();
        alternatives.push(format!("({})", all.join(" AND ")));
    }
    format!("({})", alternatives.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_direction_without_nulls_is_a_row_value_seek() {
        let asc = [Sort {
            key: SortKey::CreatedAt,
            descending: false,
        }];
        assert_eq!(
            select_page("id", &asc, true, true, ""),
            "SELECT id FROM servers CROSS JOIN (SELECT created_at AS m0, id AS m1 FROM servers WHERE id = $3) m \
             WHERE ($1 OR vm_state <> 'deleted') AND project_id = $2 AND (created_at, id) > (m.m0, m.m1) \
             ORDER BY created_at ASC, id ASC LIMIT $4"
        );
    }

    #[test]
    fn mixed_directions_and_nulls_are_tested_key_by_key() {
        let order = [
            Sort {
                key: SortKey::Host,
                descending: true,
            },
            Sort {
                key: SortKey::Name,
                descending: false,
            },
        ];
        let sql = select_page("id", &order, false, true, " COLLATE \"C\"");
        assert!(
            sql.contains(
                "(((host COLLATE \"C\" < m.m0 OR (host COLLATE \"C\" IS NULL AND m.m0 IS NOT NULL))) \
                 OR (host COLLATE \"C\" IS NOT DISTINCT FROM m.m0 AND name COLLATE \"C\" > m.m1) \
                 OR (host COLLATE \"C\" IS NOT DISTINCT FROM m.m0 AND name COLLATE \"C\" IS NOT DISTINCT FROM m.m1 \
                 AND id < m.m2))"
            ),
            "{sql}"
        );
        assert!(sql.ends_with("ORDER BY host COLLATE \"C\" DESC NULLS LAST, name COLLATE \"C\" ASC, id DESC LIMIT $3"));
    }
}
