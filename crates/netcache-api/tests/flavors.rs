//! Flavors as Nova 34 serves them: an admin's create, update (2.55) and delete,
//! the lists with their filters, a private flavor's projects, extra specs, the
//! views per microversion (checked against the project's copies of Nova's
//! response schemas), Nova's 4xx bodies, a boot's flavor and the quota usage
//! counted from the snapshot a server keeps of it.

mod common;
mod nova_schema;

use axum::http::{Method, StatusCode};
use common::Api;
use nova_schema::{assert_nova_error, assert_satisfies, flavors};
use serde_json::{Value, json};

/// The harness's admin of `demo`.
const ADMIN: &[(&str, &str)] = &[("x-project-id", "demo"), ("x-roles", "admin,member,reader")];

/// A member of `demo`.
const MEMBER_OF_DEMO: &[(&str, &str)] = &[("x-project-id", "demo"), ("x-roles", "member,reader")];

/// A member of `project`.
fn member(project: &str) -> [(&str, &str); 2] {
    [("x-project-id", project), ("x-roles", "member,reader")]
}

async fn create(api: &Api, minor: u16, flavor: Value) -> Value {
    let (status, body) = api
        .at_as(
            minor,
            ADMIN,
            Method::POST,
            "/v2.1/flavors",
            Some(json!({"flavor": flavor})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_satisfies("POST /flavors", &flavors::show(minor), &body);
    body["flavor"].clone()
}

fn ids(body: &Value) -> Vec<String> {
    common::ids_of(body, "flavors")
}

#[tokio::test]
async fn an_admin_creates_updates_and_deletes_flavors_in_novas_views() {
    let api = Api::start().await;
    let made = create(
        &api,
        55,
        json!({"name": "custom", "id": "c1", "ram": 1024, "vcpus": 2, "disk": 10, "swap": 256,
               "OS-FLV-EXT-DATA:ephemeral": 5, "rxtx_factor": 2.5, "description": "mine"}),
    )
    .await;
    assert_eq!(
        (made["ram"].clone(), made["swap"].clone(), made["description"].clone()),
        (json!(1024), json!(256), json!("mine"))
    );
    assert_eq!(made["rxtx_factor"], 2.5);

    for minor in [1, 55, 61, 75, 102] {
        let (status, shown) = api.at_as(minor, ADMIN, Method::GET, "/v2.1/flavors/c1", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_satisfies(&format!("GET /flavors/c1 at 2.{minor}"), &flavors::show(minor), &shown);
        let (_, list) = api.at_as(minor, ADMIN, Method::GET, "/v2.1/flavors", None).await;
        assert_satisfies("GET /flavors", &flavors::list(minor), &list);
        assert_eq!(ids(&list), ["1", "2", "3", "4", "5", "c1"], "by flavorid");
        let (_, detail) = api.at_as(minor, ADMIN, Method::GET, "/v2.1/flavors/detail", None).await;
        assert_satisfies("GET /flavors/detail", &flavors::list_detail(minor), &detail);
    }
    let (_, shown) = api.at_as(61, ADMIN, Method::GET, "/v2.1/flavors/c1", None).await;
    assert_eq!(shown["flavor"]["extra_specs"], json!({}));

    // The description alone changes, from 2.55; before, the method is not there.
    let describe = json!({"flavor": {"description": "new"}});
    assert_nova_error(
        api.at_as(54, ADMIN, Method::PUT, "/v2.1/flavors/c1", Some(describe.clone()))
            .await,
        StatusCode::NOT_FOUND,
        "The resource could not be found.",
    );
    let (status, updated) = api
        .at_as(75, ADMIN, Method::PUT, "/v2.1/flavors/c1", Some(describe.clone()))
        .await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_satisfies("PUT /flavors/c1", &flavors::show(75), &updated);
    assert_eq!(updated["flavor"]["description"], "new");
    assert_nova_error(
        api.at_as(
            55,
            ADMIN,
            Method::PUT,
            "/v2.1/flavors/c1",
            Some(json!({"flavor": {"name": "x"}})),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute flavor. Value: {'name': 'x'}. 'description' is a required property",
    );

    let (status, _) = api.at_as(1, ADMIN, Method::DELETE, "/v2.1/flavors/c1", None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_nova_error(
        api.at_as(1, ADMIN, Method::GET, "/v2.1/flavors/c1", None).await,
        StatusCode::NOT_FOUND,
        "Flavor c1 could not be found.",
    );
    assert_nova_error(
        api.at_as(1, ADMIN, Method::DELETE, "/v2.1/flavors/c1", None).await,
        StatusCode::NOT_FOUND,
        "Flavor c1 could not be found.",
    );
    // Its id and name are free again.
    create(
        &api,
        1,
        json!({"name": "custom", "id": "c1", "ram": 1, "vcpus": 1, "disk": 0}),
    )
    .await;
}

#[tokio::test]
async fn a_create_is_refused_as_nova_refuses_it() {
    let api = Api::start().await;
    let post = |flavor: Value, who: &'static [(&'static str, &'static str)]| {
        let api = &api;
        async move {
            api.at_as(1, who, Method::POST, "/v2.1/flavors", Some(json!({"flavor": flavor})))
                .await
        }
    };
    let tiny = json!({"name": "t", "ram": 1, "vcpus": 1, "disk": 0});
    assert_nova_error(
        post(tiny.clone(), MEMBER_OF_DEMO).await,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow os_compute_api:os-flavor-manage:create to be performed.",
    );
    assert_nova_error(
        post(json!({"name": "m1.tiny", "ram": 1, "vcpus": 1, "disk": 0}), ADMIN).await,
        StatusCode::CONFLICT,
        "Flavor with name m1.tiny already exists.",
    );
    assert_nova_error(
        post(
            json!({"name": "other", "id": 1, "ram": 1, "vcpus": 1, "disk": 0}),
            ADMIN,
        )
        .await,
        StatusCode::CONFLICT,
        "Flavor with ID 1 already exists.",
    );
    assert_nova_error(
        post(json!({"name": "t", "ram": 0, "vcpus": 1, "disk": 0}), ADMIN).await,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute ram. Value: 0. 0 is less than the minimum of 1",
    );
    assert_nova_error(
        post(json!({"name": "t", "ram": 1, "vcpus": 1}), ADMIN).await,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute flavor. Value: {'name': 't', 'ram': 1, 'vcpus': 1}. 'disk' is a required property",
    );
    assert_nova_error(
        post(json!({"name": "t", "id": " x", "ram": 1, "vcpus": 1, "disk": 0}), ADMIN).await,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute id. Value:  x. ' x' does not match '^(?! )[a-zA-Z0-9. _-]+(?<! )$'",
    );
    let (_, refused) = api
        .at_as(
            1,
            ADMIN,
            Method::POST,
            "/v2.1/flavors",
            Some(json!({"flavor": {"name": "t", "ram": 1, "vcpus": 1, "disk": 0, "description": "d"}})),
        )
        .await;
    assert!(
        refused["badRequest"]["message"]
            .as_str()
            .unwrap()
            .contains("'description' was unexpected"),
        "before 2.55: {refused}"
    );
    // No id, or a null one: a new UUID.
    let made = create(
        &api,
        1,
        json!({"name": "auto", "id": null, "ram": 1, "vcpus": 1, "disk": 0}),
    )
    .await;
    assert!(uuid::Uuid::parse_str(made["id"].as_str().unwrap()).is_ok(), "{made}");
}

#[tokio::test]
async fn a_private_flavor_is_seen_and_booted_only_by_projects_given_access() {
    let api = Api::start().await;
    create(
        &api,
        1,
        json!({"name": "private", "id": "p", "ram": 64, "vcpus": 1, "disk": 0,
                           "os-flavor-access:is_public": false}),
    )
    .await;
    let (_, list) = api.at_as(1, &member("p1"), Method::GET, "/v2.1/flavors", None).await;
    assert!(!ids(&list).contains(&"p".to_owned()), "{list}");
    assert_nova_error(
        api.at_as(1, &member("p1"), Method::GET, "/v2.1/flavors/p", None).await,
        StatusCode::NOT_FOUND,
        "Flavor p could not be found.",
    );
    let boot = json!({"server": {"name": "vm", "flavorRef": "p", "imageRef": common::IMAGE, "networks": "none"}});
    assert_nova_error(
        api.at_as(1, &member("p1"), Method::POST, "/v2.1/servers", Some(boot.clone()))
            .await,
        StatusCode::BAD_REQUEST,
        "Flavor p could not be found.",
    );

    let add = |project: &str| json!({"addTenantAccess": {"tenant": project}});
    let (status, access) = api
        .at_as(7, ADMIN, Method::POST, "/v2.1/flavors/p/action", Some(add("p1")))
        .await;
    assert_eq!(status, StatusCode::OK, "{access}");
    assert_satisfies("addTenantAccess", &flavors::access_list(), &access);
    assert_eq!(
        access,
        json!({"flavor_access": [{"flavor_id": "p", "tenant_id": "p1"}]})
    );
    assert_nova_error(
        api.at_as(7, ADMIN, Method::POST, "/v2.1/flavors/p/action", Some(add("p1")))
            .await,
        StatusCode::CONFLICT,
        "Flavor access already exists for flavor p and project p1 combination.",
    );
    assert_nova_error(
        api.at_as(
            7,
            &member("p1"),
            Method::POST,
            "/v2.1/flavors/p/action",
            Some(add("p2")),
        )
        .await,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow os_compute_api:os-flavor-access:add_tenant_access to be performed.",
    );
    let (_, listed) = api
        .at_as(1, ADMIN, Method::GET, "/v2.1/flavors/p/os-flavor-access", None)
        .await;
    assert_eq!(listed, access);

    let (_, list) = api.at_as(1, &member("p1"), Method::GET, "/v2.1/flavors", None).await;
    assert!(ids(&list).contains(&"p".to_owned()), "{list}");
    let (status, _) = api.at_as(1, &member("p1"), Method::GET, "/v2.1/flavors/p", None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, booted) = api
        .at_as(1, &member("p1"), Method::POST, "/v2.1/servers", Some(boot))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{booted}");
    let (_, others) = api.at_as(1, &member("p2"), Method::GET, "/v2.1/flavors", None).await;
    assert!(!ids(&others).contains(&"p".to_owned()));
    let (_, private_only) = api
        .at_as(1, ADMIN, Method::GET, "/v2.1/flavors?is_public=false", None)
        .await;
    assert_eq!(ids(&private_only), ["p"]);
    let (_, all) = api
        .at_as(1, ADMIN, Method::GET, "/v2.1/flavors?is_public=none", None)
        .await;
    assert_eq!(ids(&all).len(), 6);

    let remove = json!({"removeTenantAccess": {"tenant": "p1"}});
    let (status, left) = api
        .at_as(1, ADMIN, Method::POST, "/v2.1/flavors/p/action", Some(remove.clone()))
        .await;
    assert_eq!((status, left), (StatusCode::OK, json!({"flavor_access": []})));
    assert_nova_error(
        api.at_as(1, ADMIN, Method::POST, "/v2.1/flavors/p/action", Some(remove))
            .await,
        StatusCode::NOT_FOUND,
        "Flavor access not found for p / p1 combination.",
    );
    assert_nova_error(
        api.at_as(1, ADMIN, Method::GET, "/v2.1/flavors/1/os-flavor-access", None)
            .await,
        StatusCode::NOT_FOUND,
        "Access list not available for public flavors.",
    );
    assert_nova_error(
        api.at_as(7, ADMIN, Method::POST, "/v2.1/flavors/1/action", Some(add("p1")))
            .await,
        StatusCode::CONFLICT,
        "Can not add access to a public flavor.",
    );
}

#[tokio::test]
async fn extra_specs_are_read_by_members_and_written_by_admins() {
    let api = Api::start().await;
    let uri = "/v2.1/flavors/1/os-extra_specs";
    let body = json!({"extra_specs": {"hw:cpu_policy": "dedicated", "quota:cpu_shares": 2}});
    assert_nova_error(
        api.at_as(1, MEMBER_OF_DEMO, Method::POST, uri, Some(body.clone()))
            .await,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow os_compute_api:os-flavor-extra-specs:create to be performed.",
    );
    let (status, echoed) = api.at_as(1, ADMIN, Method::POST, uri, Some(body.clone())).await;
    assert_eq!((status, echoed), (StatusCode::OK, body), "the request, echoed");
    let (status, listed) = api.at_as(1, MEMBER_OF_DEMO, Method::GET, uri, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_satisfies("GET os-extra_specs", &flavors::extra_specs(), &listed);
    assert_eq!(
        listed["extra_specs"],
        json!({"hw:cpu_policy": "dedicated", "quota:cpu_shares": "2"})
    );
    let (_, shown) = api
        .at_as(61, MEMBER_OF_DEMO, Method::GET, "/v2.1/flavors/1", None)
        .await;
    assert_eq!(
        shown["flavor"]["extra_specs"], listed["extra_specs"],
        "2.61: in the flavor's view"
    );

    let key = format!("{uri}/hw:cpu_policy");
    let (status, one) = api.at_as(1, MEMBER_OF_DEMO, Method::GET, &key, None).await;
    assert_eq!((status, one), (StatusCode::OK, json!({"hw:cpu_policy": "dedicated"})));
    assert_nova_error(
        api.at_as(1, ADMIN, Method::PUT, &key, Some(json!({"other": "x"})))
            .await,
        StatusCode::BAD_REQUEST,
        "Request body and URI mismatch",
    );
    assert_nova_error(
        api.at_as(
            1,
            ADMIN,
            Method::PUT,
            &key,
            Some(json!({"hw:cpu_policy": "a", "b": "c"})),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "{'hw:cpu_policy': 'a', 'b': 'c'} has too many properties",
    );
    let (status, put) = api
        .at_as(1, ADMIN, Method::PUT, &key, Some(json!({"hw:cpu_policy": "shared"})))
        .await;
    assert_eq!((status, put), (StatusCode::OK, json!({"hw:cpu_policy": "shared"})));
    let (status, _) = api.at_as(1, ADMIN, Method::DELETE, &key, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_nova_error(
        api.at_as(1, ADMIN, Method::GET, &key, None).await,
        StatusCode::NOT_FOUND,
        "Flavor 1 has no extra specs with key hw:cpu_policy.",
    );
    assert_nova_error(
        api.at_as(1, ADMIN, Method::DELETE, &key, None).await,
        StatusCode::NOT_FOUND,
        "Flavor 1 has no extra specs with key hw:cpu_policy.",
    );
    assert_nova_error(
        api.at_as(1, ADMIN, Method::GET, "/v2.1/flavors/nope/os-extra_specs", None)
            .await,
        StatusCode::NOT_FOUND,
        "Flavor nope could not be found.",
    );
}

#[tokio::test]
async fn lists_filter_sort_and_page_as_nova() {
    let api = Api::start().await;
    let get = |uri: &'static str, minor| {
        let api = &api;
        async move { api.at_as(minor, ADMIN, Method::GET, uri, None).await }
    };
    let (_, big) = get("/v2.1/flavors?minRam=4096&minDisk=80", 1).await;
    assert_eq!(ids(&big), ["4", "5"]);
    let (_, by_ram) = get("/v2.1/flavors?sort_key=memory_mb&sort_dir=desc&limit=2", 1).await;
    assert_eq!(ids(&by_ram), ["5", "4"]);
    assert!(
        by_ram["flavors_links"][0]["href"]
            .as_str()
            .unwrap()
            .ends_with("/v2.1/flavors?limit=2&marker=4")
    );
    let (_, after) = get("/v2.1/flavors?sort_key=memory_mb&sort_dir=desc&marker=4", 1).await;
    assert_eq!(ids(&after), ["3", "2", "1"]);
    assert_nova_error(
        get("/v2.1/flavors?marker=zz", 1).await,
        StatusCode::BAD_REQUEST,
        "marker [zz] not found",
    );
    assert_nova_error(
        get("/v2.1/flavors?minRam=x", 1).await,
        StatusCode::BAD_REQUEST,
        "Invalid minRam filter [x]",
    );
    assert_nova_error(
        get("/v2.1/flavors?is_public=maybe", 1).await,
        StatusCode::BAD_REQUEST,
        "Invalid is_public filter [maybe]",
    );
    let (status, _) = get("/v2.1/flavors?sort_key=bogus", 1).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = get("/v2.1/flavors?sort_key=rxtx_factor", 101).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get("/v2.1/flavors?sort_key=rxtx_factor", 102).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "2.102 drops rxtx_factor");
    let (status, _) = get("/v2.1/flavors?foo=1", 74).await;
    assert_eq!(status, StatusCode::OK, "unknown parameters are ignored before 2.75");
    assert_nova_error(
        get("/v2.1/flavors?foo=1", 75).await,
        StatusCode::BAD_REQUEST,
        "Invalid input for query parameters foo. Additional properties are not allowed ('foo' was unexpected)",
    );
    let (_, named) = get("/v2.1/flavors?name=^m1%5C.(tiny|large)$", 102).await;
    assert_eq!(ids(&named), ["1", "4"]);
}

#[tokio::test]
async fn quotas_count_a_servers_flavor_as_it_was_at_boot() {
    let api = Api::start().await;
    create(
        &api,
        1,
        json!({"name": "odd", "id": "odd", "ram": 1000, "vcpus": 3, "disk": 0}),
    )
    .await;
    api.boot_with(json!({"flavorRef": "odd"})).await;
    let (status, _) = api.at_as(1, ADMIN, Method::DELETE, "/v2.1/flavors/odd", None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, quotas) = api.get("/v2.1/os-quota-sets/demo/detail").await;
    assert_eq!(status, StatusCode::OK, "{quotas}");
    let set = &quotas["quota_set"];
    assert_eq!(
        (
            set["instances"]["in_use"].clone(),
            set["cores"]["in_use"].clone(),
            set["ram"]["in_use"].clone()
        ),
        (json!(1), json!(3), json!(1000)),
        "the deleted flavor's size, kept by its server"
    );
}
