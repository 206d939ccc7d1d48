//! What the `openstack` client needs beyond servers and interfaces: the fixed
//! flavor catalog, the availability zone, the Glance v2 image subset at
//! `/image`, and `limit`/`marker` paging of server lists (other query
//! parameters accepted and ignored). The router runs over a compute service on
//! the embedded Neutron and an in-memory SQLite store.

mod common;

use axum::http::StatusCode;
use common::{Api, BASE};
use serde_json::{Value, json};

fn ids(body: &Value) -> Vec<String> {
    body["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn flavors_are_a_fixed_catalog_in_novas_shape() {
    let api = Api::start().await;

    let (status, list) = api.get("/v2.1/flavors").await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = list["flavors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
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
    assert_eq!(rest["servers"][0]["name"], "c");

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
