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
use crate::microversion::Microversion;
use crate::server_create::admin_password;
use crate::{AppState, Caller, images, schema};

/// The fields of `base_rebuild`, in its order (the order Nova checks them in).
const FIELDS: [&str; 8] = [
    "name",
    "imageRef",
    "adminPass",
    "metadata",
    "preserve_ephemeral",
    "OS-DCF:diskConfig",
    "accessIPv4",
    "accessIPv6",
];

/// The fields later microversions add to a rebuild, with the version that
/// adds it (`personality` is there until 2.57 removes it).
const LATER_FIELDS: [(&str, u16); 5] = [
    ("description", 19),
    ("key_name", 54),
    ("user_data", 57),
    ("trusted_image_certificates", 63),
    ("hostname", 90),
];

pub async fn act(
    state: &AppState,
    caller: &Caller,
    version: Microversion,
    id: &str,
    args: &Value,
) -> ApiResult<Response> {
    let (request, password) = parse(args, version)?;
    let server = caller.server(state, id, "os_compute_api:servers:rebuild").await?;
    let server = state.servers().rebuild(&caller.ctx, server.id, request).await?;
    let base = &state.config.public_url;
    let mut view = crate::server_answer::server_answer(state, caller, version, &server).await?;
    // Nova's rebuild answer shows the key pair from 2.54 (the basic view has
    // none), and from 2.57 the user data on its own, not as an extended attribute.
    if version.at_least(54) {
        view["key_name"] = json!(server.key_name);
    }
    if version.at_least(57)
        && let Value::Object(fields) = &mut view
    {
        fields.remove("OS-EXT-SRV-ATTR:user_data");
        fields.insert("user_data".into(), json!(server.attributes.user_data));
    }
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
/// for `imageRef`, then for keys it does not know. `preserve_ephemeral` is
/// checked and changes nothing (the fake guest's ephemeral disk holds no data);
/// `personality` files are checked and held to the quotas (the fake guest has
/// no disk to write them to).
fn parse(args: &Value, version: Microversion) -> ApiResult<(RebuildServer, String)> {
    let Value::Object(fields) = args else {
        return Err(schema::not_of_type("rebuild", args, "object"));
    };
    let name = fields.get("name").map(schema::name).transpose()?;
    let image_ref = fields
        .get("imageRef")
        .map(|v| schema::image_id("imageRef", v))
        .transpose()?;
    let password = admin_password(fields.get("adminPass"))?;
    let metadata = fields
        .get("metadata")
        .map(|m| schema::metadata("metadata", m))
        .transpose()?;
    if let Some(preserve) = fields.get("preserve_ephemeral") {
        schema::boolean("preserve_ephemeral", preserve)?;
    }
    let auto_disk_config = fields.get("OS-DCF:diskConfig").map(schema::disk_config).transpose()?;
    let access_ip_v4 = fields.get("accessIPv4").map(schema::access_ip_v4).transpose()?;
    let access_ip_v6 = fields.get("accessIPv6").map(schema::access_ip_v6).transpose()?;
    let personality_allowed = !version.at_least(57);
    let injected_files = match fields.get("personality").filter(|_| personality_allowed) {
        Some(files) => schema::personality(files)?,
        None => Vec::new(),
    };
    let mut allowed: Vec<&str> = FIELDS.to_vec();
    allowed.extend(
        LATER_FIELDS
            .iter()
            .filter(|(_, minor)| version.at_least(*minor))
            .map(|(key, _)| *key),
    );
    if personality_allowed {
        allowed.push("personality");
    }
    schema::object(Some("rebuild"), args, &allowed, &["imageRef"])?;
    let nullable_string = |key: &str| -> ApiResult<Option<Option<String>>> {
        fields
            .get(key)
            .map(|v| match v {
                Value::Null => Ok(None),
                other => schema::string(key, other).map(|s| Some(s.to_owned())),
            })
            .transpose()
    };
    let trusted_image_certificates = fields
        .get("trusted_image_certificates")
        .map(|v| match v {
            Value::Null => Ok(None),
            Value::Array(ids) => ids
                .iter()
                .enumerate()
                .map(|(i, id)| schema::string(&i.to_string(), id).map(str::to_owned))
                .collect::<ApiResult<Vec<_>>>()
                .map(Some),
            other => Err(schema::not_of_type("trusted_image_certificates", other, "array")),
        })
        .transpose()?;
    let image_ref = image_ref.unwrap_or_default();
    Ok((
        RebuildServer {
            image_known: images::find(&image_ref).is_some(),
            image_ref,
            name,
            metadata,
            access_ip_v4,
            access_ip_v6,
            description: fields.get("description").map(schema::description).transpose()?,
            key_name: nullable_string("key_name")?,
            user_data: nullable_string("user_data")?,
            trusted_image_certificates,
            auto_disk_config,
            injected_files,
            hostname: fields
                .get("hostname")
                .map(|h| schema::hostname(h, version.at_least(94)))
                .transpose()?,
        },
        password,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IMAGE: &str = images::IMAGES[1].id;

    fn message(args: &Value) -> String {
        parse(args, Microversion::MIN).unwrap_err().to_string()
    }

    #[test]
    fn a_rebuild_names_an_image_and_may_replace_the_users_fields() {
        let (request, password) = parse(
            &json!({
                "imageRef": IMAGE, "name": "new", "metadata": {"rebuild": "server"},
                "adminPass": "rebuildPassw0rd", "accessIPv4": "192.0.2.1", "accessIPv6": "::1",
                "preserve_ephemeral": false, "OS-DCF:diskConfig": "AUTO",
                "personality": [{"path": "/etc/motd", "contents": "aGk="}],
            }),
            Microversion::MIN,
        )
        .unwrap();
        assert_eq!(password, "rebuildPassw0rd");
        assert!(request.image_known);
        assert_eq!(request.name.as_deref(), Some("new"));
        assert_eq!(request.metadata.unwrap()["rebuild"], "server");
        assert_eq!(request.access_ip_v4.unwrap().to_string(), "192.0.2.1");
        let (bare, generated) = parse(&json!({"imageRef": IMAGE}), Microversion::MIN).unwrap();
        assert_eq!((bare.name, bare.metadata, bare.access_ip_v6), (None, None, None));
        assert_eq!(generated.len(), 12);
        let (unknown, _) = parse(
            &json!({"imageRef": "3f4e6a0c-2d1b-4c8e-9f7a-5b6c7d8e9f01"}),
            Microversion::MIN,
        )
        .unwrap();
        assert!(!unknown.image_known, "refused by Compute, after its state checks");
    }

    #[test]
    fn later_microversions_add_fields_and_take_personality_away() {
        let at = |minor, args: Value| parse(&args, Microversion::new(minor));
        let all = json!({
            "imageRef": IMAGE, "description": "d", "key_name": null, "user_data": "aGk=",
            "trusted_image_certificates": ["c"], "hostname": "web",
        });
        let (request, _) = at(90, all.clone()).unwrap();
        assert_eq!(request.description, Some(Some("d".into())));
        assert_eq!(request.key_name, Some(None), "2.54: null takes the key pair away");
        assert_eq!(request.user_data, Some(Some("aGk=".into())));
        assert_eq!(request.trusted_image_certificates, Some(Some(vec!["c".into()])));
        assert_eq!(request.hostname.as_deref(), Some("web"));
        for (key, minor) in LATER_FIELDS {
            let args = json!({"imageRef": IMAGE, key: all[key]});
            assert!(at(minor - 1, args.clone()).is_err(), "{key} before 2.{minor}");
            assert!(at(minor, args).is_ok(), "{key} at 2.{minor}");
        }
        let files = json!({"imageRef": IMAGE, "personality": []});
        assert!(at(56, files.clone()).is_ok());
        assert!(at(57, files).is_err());
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
