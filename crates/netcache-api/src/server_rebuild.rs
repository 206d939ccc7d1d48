//! The `rebuild` server action at 2.1: Nova's `base_rebuild` schema, the image
//! looked up in the image catalog as a boot's is, and Nova's 202 answer: the
//! basic server view (status REBUILD, the new image) with `adminPass`, and a
//! `Location` header.

use axum::Json;
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::response::{IntoResponse, Response};
use netcache_compute::RebuildServer;
use serde_json::{Value, json};

use crate::error::ApiResult;
use crate::server_create::admin_password;
use crate::{AppState, Caller, images, schema, wire};

/// The fields of `base_rebuild`, in its order (the order Nova checks them in).
const FIELDS: [&str; 9] = [
    "name",
    "imageRef",
    "adminPass",
    "metadata",
    "preserve_ephemeral",
    "OS-DCF:diskConfig",
    "accessIPv4",
    "accessIPv6",
    "personality",
];

pub async fn act(
    state: &AppState,
    caller: &Caller,
    version: crate::microversion::Microversion,
    id: &str,
    args: &Value,
) -> ApiResult<Response> {
    let (request, password) = parse(args)?;
    let server = caller.server(state, id, "os_compute_api:servers:rebuild").await?;
    let server = state.compute.rebuild(&caller.ctx, server.id, request).await?;
    let info = state.compute.addresses(server.id).await?;
    let base = &state.config.public_url;
    let mut view = wire::server_basic(base, &server, &info);
    view["adminPass"] = json!(password);
    if let Some(groups) = crate::server_groups::of_server(state, version, server.id).await? {
        view["server_groups"] = json!(groups);
    }
    let location = format!("{base}/v2.1/servers/{}", server.id);
    Ok((
        StatusCode::ACCEPTED,
        [(LOCATION, location)],
        Json(json!({ "server": view })),
    )
        .into_response())
}

/// Nova's validator looks at each field present (in the schema's order), then
/// for `imageRef`, then for keys it does not know. `preserve_ephemeral` and
/// `OS-DCF:diskConfig` are checked and change nothing: netcache's flavors have
/// no ephemeral disk and its disk config is always `MANUAL`; `personality`
/// files are checked (not their base64) and dropped: the fake guest has no
/// disk to write them to.
fn parse(args: &Value) -> ApiResult<(RebuildServer, String)> {
    let Value::Object(fields) = args else {
        return Err(schema::not_of_type("rebuild", args, "object"));
    };
    let name = fields.get("name").map(schema::name).transpose()?;
    let image_ref = fields.get("imageRef").map(image_id).transpose()?;
    let password = admin_password(fields.get("adminPass"))?;
    let metadata = fields
        .get("metadata")
        .map(|m| schema::metadata("metadata", m))
        .transpose()?;
    if let Some(preserve) = fields.get("preserve_ephemeral") {
        schema::boolean("preserve_ephemeral", preserve)?;
    }
    if let Some(disk_config) = fields.get("OS-DCF:diskConfig") {
        schema::disk_config(disk_config)?;
    }
    let access_ip_v4 = fields.get("accessIPv4").map(schema::access_ip_v4).transpose()?;
    let access_ip_v6 = fields.get("accessIPv6").map(schema::access_ip_v6).transpose()?;
    if let Some(files) = fields.get("personality") {
        personality(files)?;
    }
    schema::object(Some("rebuild"), args, &FIELDS, &["imageRef"])?;
    let image_ref = image_ref.unwrap_or_default();
    Ok((
        RebuildServer {
            image_known: images::find(&image_ref).is_some(),
            image_ref,
            name,
            metadata,
            access_ip_v4,
            access_ip_v6,
        },
        password,
    ))
}

/// Nova's `image_id`: a string in UUID format.
fn image_id(value: &Value) -> ApiResult<String> {
    let id = schema::string("imageRef", value)?;
    if uuid::Uuid::try_parse(id).is_err() {
        return Err(schema::invalid(
            "imageRef",
            value,
            &format!("{} is not a 'uuid'", schema::python_repr(value)),
        ));
    }
    Ok(id.to_owned())
}

/// Nova's `personality`: a list of `{"path": …, "contents": …}` strings.
fn personality(value: &Value) -> ApiResult<()> {
    let Value::Array(files) = value else {
        return Err(schema::not_of_type("personality", value, "array"));
    };
    for (index, file) in files.iter().enumerate() {
        let index = index.to_string();
        let Value::Object(entry) = file else {
            return Err(schema::not_of_type(&index, file, "object"));
        };
        for key in ["path", "contents"] {
            if let Some(text) = entry.get(key) {
                schema::string(key, text)?;
            }
        }
        schema::object(Some(&index), file, &["path", "contents"], &[])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const IMAGE: &str = images::IMAGES[1].id;

    fn message(args: &Value) -> String {
        parse(args).unwrap_err().to_string()
    }

    #[test]
    fn a_rebuild_names_an_image_and_may_replace_the_users_fields() {
        let (request, password) = parse(&json!({
            "imageRef": IMAGE, "name": "new", "metadata": {"rebuild": "server"},
            "adminPass": "rebuildPassw0rd", "accessIPv4": "192.0.2.1", "accessIPv6": "::1",
            "preserve_ephemeral": false, "OS-DCF:diskConfig": "AUTO",
            "personality": [{"path": "/etc/motd", "contents": "aGk="}],
        }))
        .unwrap();
        assert_eq!(password, "rebuildPassw0rd");
        assert!(request.image_known);
        assert_eq!(request.name.as_deref(), Some("new"));
        assert_eq!(request.metadata.unwrap()["rebuild"], "server");
        assert_eq!(request.access_ip_v4.unwrap().to_string(), "192.0.2.1");
        let (bare, generated) = parse(&json!({"imageRef": IMAGE})).unwrap();
        assert_eq!((bare.name, bare.metadata, bare.access_ip_v6), (None, None, None));
        assert_eq!(generated.len(), 12);
        let (unknown, _) = parse(&json!({"imageRef": "3f4e6a0c-2d1b-4c8e-9f7a-5b6c7d8e9f01"})).unwrap();
        assert!(!unknown.image_known, "refused by Compute, after its state checks");
    }

    #[test]
    fn what_novas_schema_refuses_is_its_400() {
        for (args, want) in [
            (
                json!(null),
                "Invalid input for field/attribute rebuild. Value: None. None is not of type 'object'",
            ),
            (
                json!({}),
                "Invalid input for field/attribute rebuild. Value: {}. 'imageRef' is a required property",
            ),
            (
                json!({"imageRef": "cirros"}),
                "Invalid input for field/attribute imageRef. Value: cirros. 'cirros' is not a 'uuid'",
            ),
            (
                json!({"imageRef": 7}),
                "Invalid input for field/attribute imageRef. Value: 7. 7 is not of type 'string'",
            ),
            (
                json!({"imageRef": IMAGE, "key_name": "k"}),
                "Additional properties are not allowed ('key_name' was unexpected)",
            ),
            (
                json!({"imageRef": IMAGE, "adminPass": 1}),
                "Invalid input for field/attribute adminPass. Value: 1. 1 is not of type 'string'",
            ),
            (json!({"imageRef": IMAGE, "name": ""}), "'' is too short"),
            (json!({"imageRef": IMAGE, "metadata": []}), "[] is not of type 'object'"),
            (json!({"imageRef": IMAGE, "accessIPv4": "::1"}), "'::1' is not a 'ipv4'"),
            (
                json!({"imageRef": IMAGE, "preserve_ephemeral": "maybe"}),
                "is not one of the boolean values",
            ),
            (
                json!({"imageRef": IMAGE, "OS-DCF:diskConfig": "FAST"}),
                "is not one of ['AUTO', 'MANUAL']",
            ),
            (
                json!({"imageRef": IMAGE, "personality": {}}),
                "{} is not of type 'array'",
            ),
            (
                json!({"imageRef": IMAGE, "personality": [{"path": 1}]}),
                "Invalid input for field/attribute path. Value: 1. 1 is not of type 'string'",
            ),
            (
                json!({"imageRef": IMAGE, "personality": [{"mode": "0600"}]}),
                "Invalid input for field/attribute 0.",
            ),
            // A field's own fault is found before an unknown key and a missing image.
            (json!({"name": 5, "extra": 1}), "5 is not of type 'string'"),
        ] {
            let got = message(&args);
            assert!(got.contains(want), "{args}: {got}");
        }
    }
}
