//! Neutron v2.0 operations: a routed call ([`ApiRequest`]) executed synchronously against the store.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::store::query::{fields_of, path, project};
use crate::store::{Caller, Kind, Obj, Store, check_tag, parse_tags};

/// (alias, name, description, updated) as real Neutron 29.0.0 lists them.
const EXTENSIONS: &[(&str, &str, &str, &str)] = &[
    (
        "auto-allocated-topology",
        "Auto Allocated Topology Services",
        "Auto Allocated Topology Services.",
        "2016-01-01T00:00:00-00:00",
    ),
    (
        "binding",
        "Port Binding",
        "Expose port bindings of a virtual port to external application",
        "2014-02-03T10:00:00-00:00",
    ),
    (
        "empty-string-filtering",
        "Empty String Filtering Extension",
        "Allow filtering by attributes with empty string value",
        "2018-05-01T10:00:00-00:00",
    ),
    (
        "ext-gw-mode",
        "Neutron L3 Configurable external gateway mode",
        "Extension of the router abstraction for specifying whether SNAT should occur on the external gateway",
        "2013-03-28T10:00:00-00:00",
    ),
    (
        "external-net",
        "Neutron external network",
        "Adds external network attribute to network resource.",
        "2013-01-14T10:00:00-00:00",
    ),
    (
        "filter-validation",
        "Filter parameters validation",
        "Provides validation on filter parameters.",
        "2018-07-04T10:00:00-00:00",
    ),
    (
        "fip-port-details",
        "Floating IP Port Details Extension",
        "Add port_details attribute to Floating IP resource",
        "2018-04-09T10:00:00-00:00",
    ),
    (
        "ip-substring-filtering",
        "IP address substring filtering",
        "Provides IP address substring filtering when listing ports",
        "2017-11-28T09:00:00-00:00",
    ),
    (
        "net-mtu",
        "Network MTU",
        "Provides MTU attribute for a network resource.",
        "2015-03-25T10:00:00-00:00",
    ),
    (
        "pagination",
        "Pagination support",
        "Extension that indicates that pagination is enabled.",
        "2016-06-12T00:00:00-00:00",
    ),
    (
        "port-security",
        "Port Security",
        "Provides port security",
        "2012-07-23T10:00:00-00:00",
    ),
    (
        "project-id",
        "project_id field enabled",
        "Extension that indicates that project_id field is enabled.",
        "2016-09-09T09:09:09-09:09",
    ),
    (
        "revision-if-match",
        "If-Match constraints based on revision_number",
        "Extension indicating that If-Match based on revision_number is supported.",
        "2016-12-11T00:00:00-00:00",
    ),
    (
        "router",
        "Neutron L3 Router",
        "Router abstraction for basic L3 forwarding between L2 Neutron networks and access to external networks via a NAT gateway.",
        "2012-07-20T10:00:00-00:00",
    ),
    (
        "security-group",
        "security-group",
        "The security groups extension.",
        "2012-10-05T10:00:00-00:00",
    ),
    (
        "sorting",
        "Sorting support",
        "Extension that indicates that sorting is enabled.",
        "2016-06-12T00:00:00-00:00",
    ),
    (
        "standard-attr-description",
        "standard-attr-description",
        "Extension to add descriptions to standard attributes",
        "2016-02-10T10:00:00-00:00",
    ),
    (
        "standard-attr-revisions",
        "Resource revision numbers",
        "This extension will display the revision number of neutron resources.",
        "2016-04-11T10:00:00-00:00",
    ),
    (
        "standard-attr-tag",
        "Tag support for resources with standard attribute: port, subnet, subnetpool, network, security_group, router, floatingip, policy, trunk, network_segment_range",
        "Enables to set tag on resources with standard attribute.",
        "2017-01-01T00:00:00-00:00",
    ),
    (
        "standard-attr-timestamp",
        "Resource timestamps",
        "Adds created_at and updated_at fields to all Neutron resources that have Neutron standard attributes.",
        "2016-09-12T10:00:00-00:00",
    ),
    (
        "tag-ports-during-bulk-creation",
        "Tag Ports During Bulk Creation",
        "Allow to tag ports during bulk creation",
        "2019-12-29T19:00:00-00:00",
    ),
];

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Route {
    Versions,
    Resources,
    Extensions,
    Extension(String),
    Collection(Kind),
    Item(Kind, String),
    Tags(Kind, String),
    Tag(Kind, String, String),
    RouterInterface(String, bool),
    /// `GET /v2.0/auto-allocated-topology/{project_id}`.
    AutoAllocatedTopology(String),
}

/// One API call, independent of HTTP.
pub(crate) struct ApiRequest {
    pub method: Method,
    pub route: Route,
    pub params: Vec<(String, String)>,
    pub body: bytes::Bytes,
    pub caller: Caller,
    pub if_match: Option<String>,
    /// `http://host:port`, for links.
    pub base: String,
}

fn singular(kind: Kind) -> &'static str {
    match kind {
        Kind::Network => "network",
        Kind::Subnet => "subnet",
        Kind::Port => "port",
        Kind::Router => "router",
        Kind::FloatingIp => "floatingip",
        Kind::SecurityGroup => "security_group",
        Kind::SecurityGroupRule => "security_group_rule",
    }
}

fn parse_body(body: &[u8]) -> Result<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::bad("Resource body required"));
    }
    serde_json::from_slice(body).map_err(|_| Error::bad("Body contains invalid data"))
}

fn resource_body(body: &[u8], key: &str) -> Result<Obj> {
    let v = parse_body(body)?;
    let Value::Object(mut o) = v else {
        return Err(Error::bad("Body contains invalid data"));
    };
    match o.remove(key) {
        Some(Value::Object(inner)) => Ok(inner),
        Some(_) => Err(Error::bad("Body contains invalid data")),
        None => Err(Error::bad(format!("Unable to find '{key}' in request body"))),
    }
}

pub(crate) type Answer = (StatusCode, Option<Value>);

/// Executes one call (after faults). Never panics on bad input.
pub(crate) fn execute(store: &mut Store, cfg: &SimConfig, req: &ApiRequest) -> Result<Answer> {
    let caller = &req.caller;
    let ext = |a: &str| cfg.has_extension(a);
    let if_match = if ext("revision-if-match") {
        req.if_match.as_deref()
    } else {
        None
    };
    let gated = |k: Kind| match k {
        Kind::Router | Kind::FloatingIp => !ext("router"),
        Kind::SecurityGroup | Kind::SecurityGroupRule => !ext("security-group"),
        Kind::Network | Kind::Subnet | Kind::Port => false,
    };
    match &req.route {
        Route::Versions => Ok((
            StatusCode::OK,
            Some(
                json!({"versions": [{"id": "v2.0", "status": "CURRENT", "links": [{"rel": "self", "href": format!("{}/v2.0/", req.base)}]}]}),
            ),
        )),
        Route::Resources => {
            let res: Vec<Value> = ["network", "subnet", "subnetpool", "port"]
                .iter()
                .map(|r| json!({"name": r, "collection": format!("{r}s"), "links": [{"rel": "self", "href": format!("{}/v2.0/{r}s", req.base)}]}))
                .collect();
            Ok((StatusCode::OK, Some(json!({"resources": res}))))
        }
        Route::Extensions => {
            let list: Vec<Value> = EXTENSIONS.iter().filter(|e| ext(e.0)).map(ext_json).collect();
            Ok((StatusCode::OK, Some(json!({"extensions": list}))))
        }
        Route::Extension(alias) => EXTENSIONS
            .iter()
            .find(|e| e.0 == alias && ext(e.0))
            .map(|e| (StatusCode::OK, Some(json!({"extension": ext_json(e)}))))
            .ok_or_else(|| Error::NotFound("HTTPNotFound", format!("Extension with alias {alias} does not exist"))),
        Route::Collection(k) if gated(*k) => Err(Error::route_not_found()),
        Route::Item(k, _) | Route::Tags(k, _) | Route::Tag(k, _, _) if gated(*k) => Err(Error::route_not_found()),
        Route::RouterInterface(..) if !ext("router") => Err(Error::route_not_found()),
        Route::AutoAllocatedTopology(_) if !ext("auto-allocated-topology") => Err(Error::route_not_found()),
        Route::AutoAllocatedTopology(project) => {
            let id = store.auto_allocated_network(project)?;
            let topology = json!({"id": id, "project_id": project, "tenant_id": project});
            Ok((StatusCode::OK, Some(json!({"auto_allocated_topology": topology}))))
        }
        Route::Tags(..) | Route::Tag(..) if !ext("standard-attr-tag") => Err(Error::route_not_found()),
        Route::Collection(k) if req.method == Method::GET => {
            if matches!(k, Kind::SecurityGroup | Kind::SecurityGroupRule) {
                store.ensure_default_for_list(caller, &req.params);
            }
            let base = format!("{}/v2.0/{}", req.base, path(*k));
            Ok((StatusCode::OK, Some(store.list(caller, *k, &req.params, &base)?)))
        }
        Route::Collection(k) => create(store, caller, *k, &req.body),
        Route::Item(k, id) => {
            store.check_visible(caller, *k, id)?;
            match req.method {
                Method::GET => {
                    let v = store
                        .render(caller, *k, id)
                        .ok_or_else(|| Error::not_found(k.not_found(), id))?;
                    Ok((
                        StatusCode::OK,
                        Some(json!({singular(*k): project(v, &fields_of(&req.params))})),
                    ))
                }
                Method::PUT => {
                    let obj = resource_body(&req.body, singular(*k))?;
                    store.check_revision(*k, id, if_match)?;
                    match k {
                        Kind::Network => store.update_network(&obj, id)?,
                        Kind::Subnet => store.update_subnet(&obj, id)?,
                        Kind::Port => store.update_port(caller, &obj, id)?,
                        Kind::Router => store.update_router(caller, &obj, id)?,
                        Kind::FloatingIp => store.update_fip(caller, &obj, id)?,
                        Kind::SecurityGroup => store.update_security_group(&obj, id)?,
                        Kind::SecurityGroupRule => store.update_security_group_rule(&obj, id)?,
                    }
                    let v = store
                        .render(caller, *k, id)
                        .ok_or_else(|| Error::not_found(k.not_found(), id))?;
                    Ok((StatusCode::OK, Some(json!({singular(*k): v}))))
                }
                _ => {
                    store.check_revision(*k, id, if_match)?;
                    match k {
                        Kind::Network => store.delete_network(id)?,
                        Kind::Subnet => store.delete_subnet(id)?,
                        Kind::Port => store.delete_port(id, true)?,
                        Kind::Router => store.delete_router(id)?,
                        Kind::FloatingIp => store.delete_fip(id)?,
                        Kind::SecurityGroup => store.delete_security_group(caller, id)?,
                        Kind::SecurityGroupRule => store.delete_security_group_rule(id)?,
                    }
                    Ok((StatusCode::NO_CONTENT, None))
                }
            }
        }
        Route::RouterInterface(id, add) => {
            store.check_visible(caller, Kind::Router, id)?;
            let v = parse_body(&req.body)?;
            let obj = v
                .as_object()
                .cloned()
                .ok_or_else(|| Error::bad("Body contains invalid data"))?;
            let out = if *add {
                store.add_router_interface(caller, id, &obj)?
            } else {
                store.remove_router_interface(id, &obj)?
            };
            Ok((StatusCode::OK, Some(out)))
        }
        Route::Tags(k, id) => {
            store.check_visible(caller, *k, id)?;
            match req.method {
                Method::GET => Ok((StatusCode::OK, Some(json!({"tags": store.tags(*k, id)?})))),
                Method::PUT => {
                    let v = parse_body(&req.body)?;
                    let tags = v
                        .get("tags")
                        .ok_or_else(|| Error::bad("Unable to find 'tags' in request body"))?;
                    store.set_tags(*k, id, parse_tags(tags)?)?;
                    // Real Neutron echoes the list in the order given.
                    Ok((StatusCode::OK, Some(json!({"tags": tags}))))
                }
                _ => {
                    store.set_tags(*k, id, Default::default())?;
                    Ok((StatusCode::NO_CONTENT, None))
                }
            }
        }
        Route::Tag(k, id, tag) => {
            store.check_visible(caller, *k, id)?;
            let mut tags: std::collections::BTreeSet<String> = store.tags(*k, id)?.into_iter().collect();
            match req.method {
                Method::GET if tags.contains(tag) => Ok((StatusCode::NO_CONTENT, None)),
                Method::PUT => {
                    check_tag(tag)?;
                    tags.insert(tag.clone());
                    store.set_tags(*k, id, tags)?;
                    Ok((StatusCode::CREATED, Some(Value::Null)))
                }
                Method::DELETE if tags.remove(tag) => {
                    store.set_tags(*k, id, tags)?;
                    Ok((StatusCode::NO_CONTENT, None))
                }
                _ => Err(Error::not_found("TagNotFound", tag)),
            }
        }
    }
}

fn ext_json(e: &(&str, &str, &str, &str)) -> Value {
    json!({"name": e.1, "alias": e.0, "description": e.2, "updated": e.3, "links": []})
}

fn create_one(store: &mut Store, caller: &Caller, kind: Kind, obj: &Obj) -> Result<String> {
    match kind {
        Kind::Network => store.create_network(caller, obj),
        Kind::Subnet => store.create_subnet(caller, obj),
        Kind::Port => store.create_port(caller, obj),
        Kind::Router => store.create_router(caller, obj),
        Kind::FloatingIp => store.create_fip(caller, obj),
        Kind::SecurityGroup => store.create_security_group(caller, obj),
        Kind::SecurityGroupRule => store.create_security_group_rule(caller, obj),
    }
}

fn delete_one(store: &mut Store, kind: Kind, id: &str) {
    let _ = match kind {
        Kind::Network => store.delete_network(id),
        Kind::Subnet => store.delete_subnet(id),
        Kind::Port => store.delete_port(id, false),
        Kind::Router => store.delete_router(id),
        Kind::FloatingIp => store.delete_fip(id),
        Kind::SecurityGroup => store.delete_security_group(&Caller::admin(), id),
        Kind::SecurityGroupRule => store.delete_security_group_rule(id),
    };
}

fn create(store: &mut Store, caller: &Caller, kind: Kind, body: &[u8]) -> Result<Answer> {
    let v = parse_body(body)?;
    let one = singular(kind);
    let many = crate::store::query::collection(kind);
    let Value::Object(mut o) = v else {
        return Err(Error::bad("Body contains invalid data"));
    };
    if let Some(Value::Array(items)) = o.remove(many) {
        // Bulk create: all or nothing.
        let mut ids = Vec::new();
        for item in &items {
            let res = item
                .as_object()
                .ok_or_else(|| Error::bad("Body contains invalid data"))
                .and_then(|obj| create_one(store, caller, kind, obj));
            match res {
                Ok(id) => ids.push(id),
                Err(e) => {
                    for id in ids.iter().rev() {
                        delete_one(store, kind, id);
                    }
                    return Err(e);
                }
            }
        }
        let out: Vec<Value> = ids.iter().filter_map(|id| store.render(caller, kind, id)).collect();
        return Ok((StatusCode::CREATED, Some(json!({many: out}))));
    }
    let obj = match o.remove(one) {
        Some(Value::Object(inner)) => inner,
        Some(_) => return Err(Error::bad("Body contains invalid data")),
        None => {
            return Err(Error::bad(format!("Unable to find '{one}' in request body")));
        }
    };
    let id = create_one(store, caller, kind, &obj)?;
    let v = store
        .render(caller, kind, &id)
        .ok_or_else(|| Error::not_found(kind.not_found(), &id))?;
    Ok((StatusCode::CREATED, Some(json!({one: v}))))
}
