//! `/v2.1/os-aggregates` (admin): Nova's host aggregates — list, create,
//! show, update (name, zone), delete (of an aggregate without hosts), and the
//! actions `add_host`, `remove_host`, `set_metadata`; `uuid` in the view from
//! 2.41. Bodies are checked against Nova's schemas before its policy, the id
//! after (Nova's `validate_integer`). 2.81's image cache request is answered
//! as Nova's with a driver that caches nothing: the images must exist, and
//! the request is accepted (202) with nothing to do.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use netcache_domain::aggregate::{Aggregate, Refusal, ZONE_KEY, ZoneAction};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::query_params::{QueryParams, RawQuery};
use crate::request::{NovaRead, NovaRequest};
use crate::{AppState, Caller, images, schema, wire};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/os-aggregates", get(list).post(create))
        .route("/v2.1/os-aggregates/{id}", get(show).put(update).delete(delete))
        .route("/v2.1/os-aggregates/{id}/action", post(action))
        .route("/v2.1/os-aggregates/{id}/images", post(cache_images))
}

/// Nova's aggregate view; `whole` adds its hosts and metadata (every answer
/// but a create's).
fn view(aggregate: &Aggregate, version: Microversion, whole: bool) -> Value {
    let mut view = json!({
        "id": aggregate.id,
        "name": aggregate.name,
        "availability_zone": aggregate.availability_zone(),
        "created_at": wire::iso_micro(aggregate.created_at),
        "updated_at": aggregate.updated_at.map(wire::iso_micro),
        "deleted": false,
        "deleted_at": null,
    });
    if whole {
        view["hosts"] = json!(
            aggregate
                .hosts
                .iter()
                .map(netcache_domain::HostName::as_str)
                .collect::<Vec<_>>()
        );
        view["metadata"] = json!(aggregate.metadata);
    }
    if version.at_least(41) {
        view["uuid"] = json!(aggregate.uuid);
    }
    view
}

fn answer(aggregate: &Aggregate, version: Microversion) -> Json<Value> {
    Json(json!({"aggregate": view(aggregate, version, true)}))
}

/// Nova's `validate_integer(id, 'id')` (Python's `int()`: surrounding
/// whitespace, a sign); an integer past any id is one no aggregate has.
fn aggregate_id(text: &str) -> ApiResult<i64> {
    let digits = text.trim();
    let unsigned = digits.strip_prefix(['-', '+']).unwrap_or(digits);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::BadRequest(
            "Invalid input received: id must be an integer".into(),
        ));
    }
    // An integer past any id: no aggregate has it.
    digits
        .parse()
        .map_err(|_| ApiError::NotFound(format!("Aggregate {text} could not be found.")))
}

/// The aggregate id `text` names, once the caller may `rule` (Nova checks its
/// policy before the id).
fn authorized_id(caller: &Caller, rule: &'static str, text: &str) -> ApiResult<i64> {
    caller.authorize(rule)?;
    aggregate_id(text)
}

async fn list(NovaRequest { state, caller, version }: NovaRequest, query: RawQuery) -> ApiResult<Json<Value>> {
    QueryParams::none_from_2_102(version, query)?;
    caller.authorize("os_compute_api:os-aggregates:index")?;
    let aggregates = state.aggregates().aggregates().await?;
    let views: Vec<Value> = aggregates.list.iter().map(|a| view(a, version, true)).collect();
    Ok(Json(json!({"aggregates": views})))
}

/// The optional zone of a create or an update: null, or Nova's `az_name`.
fn zone_field(fields: &serde_json::Map<String, Value>) -> ApiResult<Option<Option<String>>> {
    fields
        .get("availability_zone")
        .map(|zone| match zone {
            Value::Null => Ok(None),
            zone => schema::az_name("availability_zone", zone).map(Some),
        })
        .transpose()
}

/// The `aggregate` of a create's or an update's body, as Nova's schemas
/// check it: an object of `name` and `availability_zone`, with `required`.
fn aggregate_fields<'a>(body: &'a Value, required: &[&str]) -> ApiResult<&'a serde_json::Map<String, Value>> {
    let top = schema::object(None, body, &["aggregate"], &["aggregate"])?;
    schema::object(
        Some("aggregate"),
        &top["aggregate"],
        &["name", "availability_zone"],
        required,
    )
}

async fn create(NovaRequest { state, caller, version }: NovaRequest, body: Bytes) -> ApiResult<Json<Value>> {
    let body: Value = wire::parse_body(&body)?;
    let fields = aggregate_fields(&body, &["name"])?;
    let name = schema::name_of("name", &fields["name"])?;
    let zone = zone_field(fields)?.flatten();
    caller.authorize("os_compute_api:os-aggregates:create")?;
    let aggregate = state.aggregates().create_aggregate(name, zone).await?;
    Ok(Json(json!({"aggregate": view(&aggregate, version, false)})))
}

async fn show(NovaRead(NovaRequest { state, caller, version }, id): NovaRead<String>) -> ApiResult<Json<Value>> {
    let id = authorized_id(&caller, "os_compute_api:os-aggregates:show", &id)?;
    Ok(answer(&state.aggregates().aggregate(id).await?, version))
}

async fn update(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let body: Value = wire::parse_body(&body)?;
    let fields = aggregate_fields(&body, &[])?;
    if fields.is_empty() {
        return Err(schema::invalid(
            "aggregate",
            &body["aggregate"],
            &format!(
                "{} is not valid under any of the given schemas",
                schema::python_repr(&body["aggregate"])
            ),
        ));
    }
    let name = fields
        .get("name")
        .map(|n| schema::name_with_spaces("name", n))
        .transpose()?;
    let metadata: BTreeMap<String, Option<String>> = zone_field(fields)?
        .map(|zone| (ZONE_KEY.to_owned(), zone))
        .into_iter()
        .collect();
    let id = authorized_id(&caller, "os_compute_api:os-aggregates:update", &id)?;
    let aggregate = state
        .aggregates()
        .update_aggregate(id, name, metadata, ZoneAction::Update)
        .await?;
    Ok(answer(&aggregate, version))
}

/// Answered 200 with no body, as Nova's.
async fn delete(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let id = authorized_id(&caller, "os_compute_api:os-aggregates:delete", &id)?;
    state.aggregates().delete_aggregate(id).await?;
    Ok(StatusCode::OK)
}

/// The one action a body names, with its argument object.
async fn action(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let body: Value = wire::parse_body(&body)?;
    let Some((name, argument)) = body.as_object().and_then(|m| m.iter().next()) else {
        return Err(ApiError::BadRequest("There is no such action: None".into()));
    };
    match name.as_str() {
        "add_host" | "remove_host" => {
            schema::object(None, &body, &[name.as_str()], &[name.as_str()])?;
            let fields = schema::object(Some(name), argument, &["host"], &["host"])?;
            let host = schema::fqdn("host", &fields["host"])?;
            let adding = name == "add_host";
            let rule = if adding {
                "os_compute_api:os-aggregates:add_host"
            } else {
                "os_compute_api:os-aggregates:remove_host"
            };
            let id_number = authorized_id(&caller, rule, &id)?;
            let aggregates = state.aggregates();
            let aggregate = if adding {
                aggregates.add_aggregate_host(id_number, &host).await?
            } else {
                aggregates
                    .remove_aggregate_host(id_number, &host)
                    .await
                    .map_err(|e| match e {
                        // Nova's one answer for every missing thing of a removal.
                        netcache_compute::Error::ComputeHostNotFound(_)
                        | netcache_compute::Error::Aggregate(Refusal::NotFound(_) | Refusal::HostAbsent { .. }) => {
                            ApiError::NotFound(format!("Cannot remove host {host} in aggregate {id}"))
                        }
                        other => other.into(),
                    })?
            };
            Ok(answer(&aggregate, version))
        }
        "set_metadata" => {
            schema::object(None, &body, &["set_metadata"], &["set_metadata"])?;
            let fields = schema::object(Some(name), argument, &["metadata"], &["metadata"])?;
            let metadata = schema::metadata_with_null("metadata", &fields["metadata"])?;
            let id = authorized_id(&caller, "os_compute_api:os-aggregates:set_metadata", &id)?;
            let aggregate = state
                .aggregates()
                .update_aggregate(id, None, metadata, ZoneAction::UpdateMetadata)
                .await?;
            Ok(answer(&aggregate, version))
        }
        other => Err(ApiError::BadRequest(format!("There is no such action: {other}"))),
    }
}

/// 2.81: images to cache on the aggregate's hosts. Nova's schema, policy,
/// id, duplicates, aggregate and images in its order; netcache's fake driver
/// has no image cache, so an accepted request does nothing (as Nova's computes
/// skip a driver without one).
async fn cache_images(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<StatusCode> {
    version.served_from(81)?;
    let body: Value = wire::parse_body(&body)?;
    let top = schema::object(None, &body, &["cache"], &["cache"])?;
    let Some(cache) = top["cache"].as_array() else {
        return Err(schema::not_of_type("cache", &top["cache"], "array"));
    };
    if cache.is_empty() {
        return Err(schema::invalid("cache", &top["cache"], "[] should be non-empty"));
    }
    let mut ids = Vec::new();
    for (i, item) in cache.iter().enumerate() {
        let fields = schema::object(Some(&i.to_string()), item, &["id"], &["id"])?;
        let text = schema::string("id", &fields["id"])?;
        if uuid::Uuid::parse_str(text).is_err() {
            return Err(schema::invalid(
                "id",
                &fields["id"],
                &format!("{} is not a 'uuid'", schema::python_repr(&fields["id"])),
            ));
        }
        ids.push(text);
    }
    let aggregate = authorized_id(&caller, "compute:aggregates:images", &id)?;
    let unique: std::collections::BTreeSet<&&str> = ids.iter().collect();
    if unique.len() != ids.len() {
        return Err(ApiError::BadRequest("Duplicate images in request".into()));
    }
    state.aggregates().aggregate(aggregate).await?;
    if let Some(missing) = ids.iter().find(|id| images::find(id).is_none()) {
        return Err(ApiError::BadRequest(format!("Image {missing} could not be found.")));
    }
    Ok(StatusCode::ACCEPTED)
}
