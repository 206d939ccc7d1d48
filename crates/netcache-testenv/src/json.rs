//! Reading the lists of JSON answers in assertions.

use serde_json::Value;

/// The items of the list `body[list]` (a test failure if it is not a list).
#[must_use]
pub fn items<'a>(body: &'a Value, list: &str) -> &'a [Value] {
    body[list]
        .as_array()
        .unwrap_or_else(|| panic!("{list:?} is not a list in {body}"))
}

/// The string `field` of each item of the list `body[list]`, in order.
#[must_use]
pub fn strings<'a>(body: &'a Value, list: &str, field: &str) -> Vec<&'a str> {
    items(body, list)
        .iter()
        .map(|item| {
            item[field]
                .as_str()
                .unwrap_or_else(|| panic!("{field:?} is not a string in {item}"))
        })
        .collect()
}

/// [`strings`], owned and sorted: for lists whose order is not what is checked.
#[must_use]
pub fn sorted_strings(body: &Value, list: &str, field: &str) -> Vec<String> {
    let mut strings: Vec<String> = strings(body, list, field).into_iter().map(str::to_owned).collect();
    strings.sort();
    strings
}
