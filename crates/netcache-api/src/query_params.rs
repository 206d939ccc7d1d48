//! A request's query string as Nova's query schemas read it: the parameters a
//! version knows (unknown ones refused where the schema has
//! `additionalProperties: false`, from 2.75 for most APIs), paging
//! (`limit`, `marker`) and the `next` link of a full page.

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;

/// The query string's pairs, in order.
/// A query string as an extractor: the pairs, or why axum could not read them.
pub type RawQuery = Result<Query<Vec<(String, String)>>, QueryRejection>;

pub struct QueryParams(Vec<(String, String)>);

impl QueryParams {
    /// The pairs of a query string axum read (or Nova's 400 for one it could not).
    pub fn read(query: Result<Query<Vec<(String, String)>>, QueryRejection>) -> ApiResult<Self> {
        let Query(pairs) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
        Ok(Self(pairs))
    }

    /// Nova's query schemas of the many GETs that took any parameter until
    /// 2.101 and take none from 2.102.
    pub fn none_from_2_102(
        version: Microversion,
        query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    ) -> ApiResult<()> {
        let query = Self::read(query)?;
        if version.at_least(102) {
            query.only(&[])?;
        }
        Ok(())
    }

    /// Nova's `additionalProperties: false`: a parameter not in `known` is a
    /// 400 in jsonschema's words (every unknown one named, in order).
    pub fn only(&self, known: &[&str]) -> ApiResult<()> {
        let mut extra: Vec<String> = Vec::new();
        for (key, _) in &self.0 {
            if !known.contains(&key.as_str()) && !extra.contains(key) {
                extra.push(key.clone());
            }
        }
        let named = extra.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", ");
        match extra.len() {
            0 => Ok(()),
            1 => Err(ApiError::BadRequest(format!(
                "Additional properties are not allowed ({named} was unexpected)"
            ))),
            _ => Err(ApiError::BadRequest(format!(
                "Additional properties are not allowed ({named} were unexpected)"
            ))),
        }
    }

    /// The first value of `key` (webob's `getall(key)[0]`).
    #[must_use]
    pub fn first(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The first non-blank value of `key` (Python's `parse_qs(...)[key][0]`,
    /// which drops blank values).
    #[must_use]
    pub fn first_given(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, v)| k == key && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    /// The last value of `key` (webob's `GET[key]`).
    #[must_use]
    pub fn last(&self, key: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every value of `key` must be Nova's `non_negative_integer` (a query's 400 otherwise).
    fn check_non_negative(&self, key: &str) -> ApiResult<()> {
        for (k, value) in &self.0 {
            if k != key {
                continue;
            }
            if value.is_empty() {
                return Err(invalid_query(key, value, "'' is too short"));
            }
            if !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid_query(
                    key,
                    value,
                    &format!("'{value}' does not match '^[0-9]*$'"),
                ));
            }
        }
        Ok(())
    }

    /// Nova's `get_limit_and_marker`: the page size (`limit`, at most and by
    /// default `max_limit`) and the marker.
    pub fn limit_and_marker(&self, max_limit: usize) -> ApiResult<(usize, Option<&str>)> {
        self.check_non_negative("limit")?;
        let limit = match self.last("limit") {
            // All digits, checked above: only too large a number fails, and that is above any max.
            Some(text) => text.parse::<usize>().unwrap_or(usize::MAX).min(max_limit),
            None => max_limit,
        };
        Ok((limit, self.last("marker")))
    }

    /// Nova's `_get_collection_links`: a `next` link to `{base}/v2.1/{path}`
    /// with this query (sorted, one value a key) and `marker` set to the last
    /// item's, when a page of `len` items is full.
    #[must_use]
    pub fn next_links(
        &self,
        base: &str,
        path: &str,
        page_size: usize,
        len: usize,
        last: Option<&str>,
    ) -> Option<Value> {
        let last = last?;
        if page_size == 0 || len != page_size {
            return None;
        }
        let mut params: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
        for (key, value) in &self.0 {
            params.insert(key, value);
        }
        params.insert("marker", last);
        let query = serde_urlencoded::to_string(&params).unwrap_or_default();
        Some(json!([{"rel": "next", "href": format!("{base}/v2.1/{path}?{query}")}]))
    }
}

/// Nova's 400 for a query parameter's value its schema refuses.
pub fn invalid_query(key: &str, value: &str, reason: &str) -> ApiError {
    ApiError::BadRequest(format!(
        "Invalid input for query parameters {key}. Value: {value}. {reason}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> QueryParams {
        QueryParams(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect())
    }

    #[test]
    fn unknown_parameters_are_named_as_jsonschema_names_them() {
        let q = params(&[("limit", "1"), ("foo", "1"), ("bar", "2"), ("foo", "3")]);
        assert!(q.only(&["limit", "foo", "bar"]).is_ok());
        let message = |q: &QueryParams, known: &[&str]| match q.only(known) {
            Err(ApiError::BadRequest(m)) => m,
            other => panic!("{:?}", other.err()),
        };
        assert_eq!(
            message(&q, &["limit", "bar"]),
            "Additional properties are not allowed ('foo' was unexpected)"
        );
        assert_eq!(
            message(&q, &["limit"]),
            "Additional properties are not allowed ('foo', 'bar' were unexpected)"
        );
    }

    #[test]
    fn limits_are_non_negative_integers_capped_at_max_limit() {
        assert_eq!(params(&[]).limit_and_marker(5).unwrap(), (5, None));
        assert_eq!(
            params(&[("limit", "2"), ("marker", "k")]).limit_and_marker(5).unwrap(),
            (2, Some("k"))
        );
        assert_eq!(params(&[("limit", "50")]).limit_and_marker(5).unwrap().0, 5);
        assert_eq!(
            params(&[("limit", "99999999999999999999999")])
                .limit_and_marker(5)
                .unwrap()
                .0,
            5
        );
        for (bad, reason) in [
            ("-1", "'-1' does not match '^[0-9]*$'"),
            ("x", "'x' does not match '^[0-9]*$'"),
            ("", "'' is too short"),
        ] {
            match params(&[("limit", bad)]).limit_and_marker(5) {
                Err(ApiError::BadRequest(m)) => {
                    assert_eq!(
                        m,
                        format!("Invalid input for query parameters limit. Value: {bad}. {reason}")
                    );
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_full_page_links_to_the_next_with_the_query_sorted() {
        let q = params(&[("user_id", "u 1"), ("limit", "2")]);
        assert_eq!(q.next_links("http://h", "os-keypairs", 2, 1, Some("a")), None);
        assert_eq!(q.next_links("http://h", "os-keypairs", 0, 0, None), None);
        assert_eq!(
            q.next_links("http://h", "os-keypairs", 2, 2, Some("b@c")).unwrap(),
            json!([{"rel": "next", "href": "http://h/v2.1/os-keypairs?limit=2&marker=b%40c&user_id=u+1"}])
        );
    }
}
