//! Nova 34's response schemas of flavors (`schemas/flavors.py`), per
//! microversion, of their access lists (`schemas/flavor_access.py`) and extra
//! specs (`schemas/flavors_extraspecs.py`).

use serde_json::{Value, json};

fn links() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"href": {"type": "string", "format": "uri"}, "rel": {"type": "string"}},
            "required": ["href", "rel"],
            "additionalProperties": false,
        },
    })
}

/// Nova's `_flavor_basic` (`_flavor_basic_v255` from 2.55).
fn summary(minor: u16) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {"id": {"type": "string"}, "links": links(), "name": {"type": "string"}},
        "required": ["id", "links", "name"],
        "additionalProperties": false,
    });
    if minor >= 55 {
        schema["properties"]["description"] = json!({"type": ["string", "null"]});
        schema["required"].as_array_mut().unwrap().push(json!("description"));
    }
    schema
}

/// Nova's `_flavor`, `_flavor_v255`, `_v261`, `_v275` and `_v2102`.
pub fn flavor(minor: u16) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "disk": {"type": "integer"},
            "id": {"type": "string"},
            "links": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"href": {"type": "string", "format": "uri"}, "rel": {"type": "string"}},
                    "required": ["href", "rel"],
                },
            },
            "name": {"type": "string"},
            "os-flavor-access:is_public": {},
            "ram": {"type": "integer"},
            "rxtx_factor": {},
            "swap": {"anyOf": [{"type": "integer"}, {"const": ""}]},
            "vcpus": {"type": "integer"},
            "OS-FLV-EXT-DATA:ephemeral": {"type": "integer"},
            "OS-FLV-DISABLED:disabled": {"type": "boolean"},
        },
        "required": [
            "disk", "id", "links", "name", "os-flavor-access:is_public", "ram", "rxtx_factor", "swap",
            "vcpus", "OS-FLV-DISABLED:disabled", "OS-FLV-EXT-DATA:ephemeral",
        ],
        "additionalProperties": false,
    });
    if minor >= 55 {
        schema["properties"]["description"] = json!({"type": ["string", "null"]});
        schema["required"].as_array_mut().unwrap().push(json!("description"));
    }
    if minor >= 61 {
        schema["properties"]["extra_specs"] = json!({
            "type": "object",
            "patternProperties": {"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string", "maxLength": 255}},
            "additionalProperties": false,
        });
    }
    if minor >= 75 {
        schema["properties"]["swap"] = json!({"type": "integer"});
    }
    if minor >= 102 {
        let properties = schema["properties"].as_object_mut().unwrap();
        properties.remove("rxtx_factor");
        properties.remove("OS-FLV-DISABLED:disabled");
        schema["required"]
            .as_array_mut()
            .unwrap()
            .retain(|k| k != "rxtx_factor" && k != "OS-FLV-DISABLED:disabled");
    }
    schema
}

fn closed(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// `GET /flavors` (`index_response`, `_v255`).
pub fn list(minor: u16) -> Value {
    closed(
        json!({"flavors": {"type": "array", "items": summary(minor)}, "flavors_links": links()}),
        &["flavors"],
    )
}

/// `GET /flavors/detail` (`detail_response` and its versions).
pub fn list_detail(minor: u16) -> Value {
    closed(
        json!({"flavors": {"type": "array", "items": flavor(minor)}, "flavors_links": links()}),
        &["flavors"],
    )
}

/// `GET /flavors/{id}`, and the answers of a create and an update.
pub fn show(minor: u16) -> Value {
    closed(json!({"flavor": flavor(minor)}), &["flavor"])
}

/// `GET /flavors/{id}/os-flavor-access` and the access actions' answers.
pub fn access_list() -> Value {
    json!({
        "type": "object",
        "properties": {"flavor_access": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "flavor_id": {"type": "string"},
                "tenant_id": {"type": "string", "pattern": "^[a-zA-Z0-9-]*$", "minLength": 1, "maxLength": 255},
            },
            "required": ["flavor_id", "tenant_id"],
            "additionalProperties": true,
        }}},
        "required": ["flavor_access"],
        "additionalProperties": true,
    })
}

/// Nova's `parameter_types.metadata`: the extra specs of a show.
pub fn extra_spec() -> Value {
    json!({
        "type": "object",
        "patternProperties": {"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string", "maxLength": 255}},
        "additionalProperties": false,
    })
}

/// `GET /flavors/{id}/os-extra_specs`.
pub fn extra_specs() -> Value {
    closed(json!({"extra_specs": extra_spec()}), &["extra_specs"])
}
