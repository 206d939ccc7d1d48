//! `/v2.1/servers/{id}/tags` (2.26): a server's tags, listed, replaced, added,
//! checked and removed one at a time, as Nova's `ServerTagsController` does
//! them; each change is a compare-and-swap edit of the server row.

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use netcache_compute::{ServerEdit, TagEdit};
use netcache_domain::server::Server;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::microversion::Microversion;
use crate::request::NovaRequest;
use crate::{AppState, Caller, schema, wire};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2.1/servers/{id}/tags", get(index).put(replace).delete(clear))
        .route("/v2.1/servers/{id}/tags/{tag}", get(show).put(add).delete(remove))
}

/// The server, for a request at 2.26 or later (earlier, the route is not there).
async fn server(
    state: &AppState,
    caller: &Caller,
    version: Microversion,
    id: &str,
    rule: &'static str,
) -> ApiResult<Server> {
    version.served_from(26)?;
    caller.server(state, id, rule).await
}

fn listed(server: &Server) -> Json<Value> {
    Json(json!({"tags": server.attributes.tags}))
}

async fn edit(state: &AppState, caller: &Caller, server: &Server, edit: TagEdit) -> ApiResult<Server> {
    Ok(state
        .servers()
        .edit_server(&caller.ctx, server.id, &ServerEdit::Tags(edit))
        .await?)
}

async fn index(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let server = server(&state, &caller, version, &id, "os_compute_api:os-server-tags:index").await?;
    Ok(listed(&server))
}

async fn show(
    NovaRequest { state, caller, version }: NovaRequest,
    Path((id, tag)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let server = server(&state, &caller, version, &id, "os_compute_api:os-server-tags:show").await?;
    if !server.attributes.tags.contains(&tag) {
        return Err(ApiError::NotFound(format!("Server {id} has no tag '{tag}'")));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT …/tags {"tags": [...]}`: the server's tags become exactly these.
async fn replace(
    NovaRequest { state, caller, version }: NovaRequest,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let body: Value = wire::parse_body(&body)?;
    let server = server(
        &state,
        &caller,
        version,
        &id,
        "os_compute_api:os-server-tags:update_all",
    )
    .await?;
    let fields = schema::object(None, &body, &["tags"], &["tags"])?;
    let tags = schema::tags(&fields["tags"])?;
    let server = edit(&state, &caller, &server, TagEdit::Replace(tags)).await?;
    Ok(listed(&server))
}

/// `PUT …/tags/{tag}`: 201 with its location when added, 204 when it was there.
async fn add(
    NovaRequest { state, caller, version }: NovaRequest,
    Path((id, tag)): Path<(String, String)>,
) -> ApiResult<Response> {
    let server = server(&state, &caller, version, &id, "os_compute_api:os-server-tags:update").await?;
    if let Some(reason) = schema::tag_problem(&tag) {
        return Err(ApiError::BadRequest(format!(
            "Tag '{tag}' is invalid. It must be a non empty string without characters '/' and ','. Validation error message: {reason}"
        )));
    }
    let existed = server.attributes.tags.contains(&tag);
    let server = edit(&state, &caller, &server, TagEdit::Add(tag.clone())).await?;
    if existed {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let location = format!("{}/v2.1/servers/{}/tags/{tag}", state.config.public_url, server.id);
    Ok((StatusCode::CREATED, [(LOCATION, location)]).into_response())
}

async fn remove(
    NovaRequest { state, caller, version }: NovaRequest,
    Path((id, tag)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let server = server(&state, &caller, version, &id, "os_compute_api:os-server-tags:delete").await?;
    edit(&state, &caller, &server, TagEdit::Remove(tag)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn clear(NovaRequest { state, caller, version }: NovaRequest, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let server = server(
        &state,
        &caller,
        version,
        &id,
        "os_compute_api:os-server-tags:delete_all",
    )
    .await?;
    edit(&state, &caller, &server, TagEdit::Clear).await?;
    Ok(StatusCode::NO_CONTENT)
}
