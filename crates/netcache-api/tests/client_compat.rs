//! What the `openstack` client needs beyond servers and interfaces: the fixed
//! flavor catalog, the availability zone, the Glance v2 image subset at
//! `/image`, and `limit`/`marker` paging of server lists (other query
//! parameters accepted and ignored). The router runs over a compute service on
//! the embedded Neutron and an in-memory SQLite store.

mod common;

use axum::http::{Method, StatusCode};
use common::{Api, BASE, IMAGE};
use netcache_testenv::json::strings;
use serde_json::{Value, json};

fn ids(body: &Value) -> Vec<String> {
    common::ids_of(body, "servers")
}

#[tokio::test]
async fn flavors_are_a_fixed_catalog_in_novas_shape() {
    let api = Api::start().await;

    let (status, list) = api.get("/v2.1/flavors").await;
    assert_eq!(status, StatusCode::OK);
    let names = strings(&list, "flavors", "name");
    assert_eq!(names, ["m1.tiny", "m1.small", "m1.medium", "m1.large", "m1.xlarge"]);
    assert_eq!(list["flavors"][0]["links"][0]["href"], format!("{BASE}/v2.1/flavors/1"));

    // the SDK's name lookup: GET /flavors/<name> is a 404, then /flavors/detail?is_public=None
    let (status, missing) = api.get("/v2.1/flavors/m1.tiny").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(missing["itemNotFound"]["message"], "Flavor m1.tiny could not be found.");
    let (status, detail) = api.get("/v2.1/flavors/detail?is_public=None").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(detail["flavors"].as_array().unwrap().len(), 5);

    let (status, one) = api.get("/v2.1/flavors/2").await;
    assert_eq!(status, StatusCode::OK);
    let flavor = &one["flavor"];
    assert_eq!(flavor["name"], "m1.small");
    assert_eq!(
        (
            flavor["ram"].as_u64(),
            flavor["disk"].as_u64(),
            flavor["vcpus"].as_u64()
        ),
        (Some(2048), Some(20), Some(1))
    );
    assert_eq!(flavor["OS-FLV-EXT-DATA:ephemeral"], 0);
    assert_eq!(flavor["os-flavor-access:is_public"], true);
    assert_eq!(flavor["swap"], "");
}

#[tokio::test]
async fn the_image_subset_answers_glance_discovery_lookups_and_filters() {
    let api = Api::start().await;

    let (status, versions) = api.get("/image").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(versions["versions"][0]["id"], "v2.16");
    assert_eq!(versions["versions"][0]["links"][0]["href"], format!("{BASE}/image/v2/"));

    let (status, all) = api.get("/image/v2/images").await;
    assert_eq!(status, StatusCode::OK);
    let image = all["images"][0].clone();
    let id = image["id"].as_str().unwrap();
    assert_eq!(image["name"], "cirros-0.6.3-x86_64-disk");
    assert_eq!(image["status"], "active");

    let (status, shown) = api.get(&format!("/image/v2/images/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown, image);
    // find by name: GET /images/<name> is a 404, then ?name=<name>
    let (status, _) = api.get("/image/v2/images/cirros-0.6.3-x86_64-disk").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, by_name) = api.get("/image/v2/images?name=cirros-0.6.3-x86_64-disk").await;
    assert_eq!(by_name["images"].as_array().unwrap().len(), 1);
    let (_, by_other_name) = api.get("/image/v2/images?name=fedora").await;
    assert_eq!(by_other_name["images"], json!([]));
    // server list's lookup: ?id=in:a,b
    let (_, by_ids) = api
        .get(&format!(
            "/image/v2/images?id=in:{id},5c0e4f1a-0000-4000-8000-000000000000"
        ))
        .await;
    assert_eq!(by_ids["images"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_availability_zone_is_listed_with_its_hosts_for_admins() {
    let api = Api::start().await;
    let (status, zones) = api.get("/v2.1/os-availability-zone").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        zones,
        json!({"availabilityZoneInfo": [{"zoneName": "nova", "zoneState": {"available": true}, "hosts": null}]})
    );
    let (status, detail) = api.get("/v2.1/os-availability-zone/detail").await;
    assert_eq!(status, StatusCode::OK);
    let hosts = detail["availabilityZoneInfo"][0]["hosts"].as_object().unwrap();
    assert_eq!(hosts.keys().collect::<Vec<_>>(), ["host1", "host2", "host3"]);
}

#[tokio::test]
async fn server_lists_page_by_limit_and_marker_and_ignore_unknown_parameters() {
    let api = Api::start().await;
    let mut booted = Vec::new();
    for name in ["a", "b", "c"] {
        booted.push(api.boot(name).await);
    }
    // Nova lists the newest first.
    booted.reverse();

    // what openstack server list sends: filters netcache does not know are accepted and ignored
    let (status, all) = api
        .get("/v2.1/servers/detail?deleted=False&all_tenants=True&sort_key=created_at")
        .await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(ids(&all), booted);
    assert!(all.get("servers_links").is_none());

    let (status, first) = api.get("/v2.1/servers?limit=2").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&first), booted[..2]);
    let next = first["servers_links"][0]["href"].as_str().unwrap();
    assert_eq!(next, format!("{BASE}/v2.1/servers?limit=2&marker={}", booted[1]));

    let (_, rest) = api
        .get(&format!("/v2.1/servers/detail?limit=2&marker={}", booted[1]))
        .await;
    assert_eq!(ids(&rest), booted[2..]);
    assert!(rest.get("servers_links").is_none(), "a short page has no next link");
    assert_eq!(rest["servers"][0]["name"], "a");

    let (_, full_page) = api
        .get(&format!("/v2.1/servers/detail?limit=1&marker={}", booted[0]))
        .await;
    assert_eq!(ids(&full_page), booted[1..2]);
    assert_eq!(
        full_page["servers_links"][0]["href"],
        format!("{BASE}/v2.1/servers/detail?limit=1&marker={}", booted[1])
    );

    let (status, bad_limit) = api.get("/v2.1/servers?limit=-1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(bad_limit["badRequest"]["message"].as_str().unwrap().contains("limit"));

    let unknown = "0b0d9f5c-1111-4222-8333-444455556666";
    let (status, bad_marker) = api.get(&format!("/v2.1/servers?marker={unknown}")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        bad_marker["badRequest"]["message"],
        format!("marker [{unknown}] not found")
    );
}

/// The microversion a request asks for is negotiated as Nova does: none means
/// 2.1, `latest` the maximum (Nova 34's 2.104), a malformed one 400, one out of
/// range 406; the answer says which it used.
#[tokio::test]
async fn microversions_are_negotiated_as_nova_does() {
    let api = Api::start().await;
    const COMPUTE: Option<&str> = Some("openstack-api-version");
    const LEGACY: Option<&str> = Some("x-openstack-nova-api-version");
    for (header, value, status, used) in [
        (None, "", StatusCode::OK, "2.1"),
        (COMPUTE, "compute 2.1", StatusCode::OK, "2.1"),
        (COMPUTE, "compute latest", StatusCode::OK, "2.104"),
        (COMPUTE, "image 2.5, compute 2.60", StatusCode::OK, "2.60"),
        (LEGACY, "2.1", StatusCode::OK, "2.1"),
        (COMPUTE, "compute 2.104", StatusCode::OK, "2.104"),
        (COMPUTE, "compute 2.105", StatusCode::NOT_ACCEPTABLE, "2.1"),
        (COMPUTE, "compute 3.0", StatusCode::NOT_ACCEPTABLE, "2.1"),
        (COMPUTE, "compute 2.x", StatusCode::BAD_REQUEST, "2.1"),
        (LEGACY, "2.01", StatusCode::BAD_REQUEST, "2.1"),
    ] {
        let headers: Vec<(&str, &str)> = header.map(|h| (h, value)).into_iter().collect();
        let (got, answer, body) = api
            .call_with_headers(Method::GET, "/v2.1/servers", &headers, None)
            .await;
        assert_eq!(got, status, "{header:?}: {value}: {body}");
        assert_eq!(answer["openstack-api-version"], format!("compute {used}").as_str());
        assert_eq!(answer["x-openstack-nova-api-version"], used);
        match status {
            StatusCode::NOT_ACCEPTABLE => {
                let message = body["computeFault"]["message"].as_str().unwrap();
                assert!(message.contains("Minimum is 2.1 and maximum is 2.104"), "{message}");
            }
            StatusCode::BAD_REQUEST => assert_eq!(body["badRequest"]["code"], 400),
            _ => assert!(body["servers"].is_array()),
        }
    }
    let (_, version) = api.get("/v2.1/").await;
    assert_eq!(version["version"]["min_version"], "2.1");
    assert_eq!(version["version"]["version"], "2.104");
}

/// `/v2` is Nova's legacy v2.0 API: listed first in the version document, served
/// by the same handlers as v2.1, without microversions (a version header is
/// ignored and none is answered).
#[tokio::test]
async fn the_legacy_v2_api_serves_the_same_resources_without_microversions() {
    let api = Api::start().await;
    let (_, root) = api.get("/").await;
    let ids = strings(&root, "versions", "id");
    assert_eq!(ids, ["v2.0", "v2.1"], "{root}");
    let (_, version) = api.get("/v2/").await;
    assert_eq!(version["version"]["id"], "v2.0", "{version}");
    assert_eq!(version["version"]["links"][0]["href"], format!("{BASE}/v2/"));

    let boot = json!({"server": {"name": "legacy", "flavorRef": "1", "imageRef": IMAGE, "networks": "none"}});
    let (status, created) = api.call(Method::POST, "/v2/servers", Some(boot)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{created}");
    let id = created["server"]["id"].as_str().unwrap();
    let headers = [("openstack-api-version", "compute 2.105")];
    let (status, answer, body) = api
        .call_with_headers(Method::GET, &format!("/v2/servers/{id}"), &headers, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["server"]["name"], "legacy");
    assert!(answer.get("openstack-api-version").is_none(), "{answer:?}");
    let (status, _, _) = api
        .call_with_headers(Method::GET, "/v2.1/servers", &headers, None)
        .await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE, "v2.1 still negotiates");
    let (status, missing) = api.call(Method::GET, "/v20/servers", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
}

/// A Nova path with a method it does not take is a 405 with Nova's JSON body,
/// not a bare status.
#[tokio::test]
async fn a_wrong_method_is_a_405_with_novas_body() {
    let api = Api::start().await;
    for (method, uri) in [
        (Method::DELETE, "/v2.1/servers"),
        (Method::PUT, "/v2.1/flavors"),
        (Method::POST, "/v2.1/servers/detail"),
    ] {
        let (status, body) = api.call(method.clone(), uri, None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
        assert_eq!(body["badMethod"]["code"], 405, "{method} {uri}: {body}");
    }
}

/// Flavor lists take Nova's query: `minRam`/`minDisk` floors, `limit` with a
/// `flavors_links` next link, `marker` (400 if it names no flavor).
#[tokio::test]
async fn flavor_lists_filter_and_page_as_nova_does() {
    let api = Api::start().await;
    let ids = |body: &Value| common::ids_of(body, "flavors");
    for (query, expected) in [
        ("", vec!["1", "2", "3", "4", "5"]),
        ("?minRam=4096", vec!["3", "4", "5"]),
        ("?minDisk=80", vec!["4", "5"]),
        // Nova reads the floors with Python's `int()`: a negative one is a floor.
        ("?minDisk=-1", vec!["1", "2", "3", "4", "5"]),
        ("?marker=2", vec!["3", "4", "5"]),
        ("?limit=2&marker=1", vec!["2", "3"]),
        ("?is_public=None&sort_key=flavorid", vec!["1", "2", "3", "4", "5"]),
    ] {
        for path in ["/v2.1/flavors", "/v2.1/flavors/detail"] {
            let (status, body) = api.get(&format!("{path}{query}")).await;
            assert_eq!(status, StatusCode::OK, "{path}{query}: {body}");
            assert_eq!(ids(&body), expected, "{path}{query}");
        }
    }
    let (_, page) = api.get("/v2.1/flavors?limit=2").await;
    assert_eq!(
        page["flavors_links"][0]["href"],
        format!("{BASE}/v2.1/flavors?limit=2&marker=2")
    );
    for bad in ["?minRam=lots", "?minDisk=1.5", "?limit=x", "?marker=99"] {
        let (status, body) = api.get(&format!("/v2.1/flavors{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["badRequest"]["code"], 400, "{bad}");
    }
}
