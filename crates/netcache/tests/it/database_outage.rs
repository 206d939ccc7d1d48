//! A database that cannot take writes (a full disk) answers 503 with
//! `Retry-After`, and writes are accepted again as soon as there is room,
//! without a restart.

use netcache_testenv::disk::TinyDisk;
use serde_json::{Value, json};

use crate::common::{self, Options, TestApp};

async fn boot(t: &TestApp) -> (u16, Option<String>, Value) {
    let body = json!({"server": {"name": "full", "flavorRef": "1", "imageRef": common::IMAGE, "networks": "none"}});
    let response = t.http.post(t.url("/servers")).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, retry_after, response.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_a_503_to_retry_and_writes_resume_once_there_is_room() {
    let Some(disk) = TinyDisk::mount("4m") else {
        eprintln!("skipped: cannot mount a tmpfs here (not root?)");
        return;
    };
    let t = TestApp::with(Options {
        database: Some(format!("sqlite:{}/netcache.db", disk.path().display())),
        ..Options::default()
    })
    .await;
    disk.fill();

    let (status, retry_after, body) = boot(&t).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(retry_after.as_deref(), Some("5"));
    let message = body["serviceUnavailable"]["message"].as_str().unwrap_or_default();
    assert_eq!(message, "The service's database is unavailable; retry later.", "{body}");

    disk.free();
    let (status, _, body) = boot(&t).await;
    assert_eq!(status, 202, "{body}");
    t.app().compute.settle().await;
}
