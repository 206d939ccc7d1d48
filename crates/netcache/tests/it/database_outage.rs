//! A database that cannot take writes (a full disk) answers 503 with
//! `Retry-After`, and writes are accepted again as soon as there is room,
//! without a restart.

use serde_json::{Value, json};

use crate::common::{self, Options, TestApp};

/// A filesystem of its own (tmpfs), unmounted on drop; `None` where this
/// process may not mount one (not root).
struct TinyDisk(tempfile::TempDir);

impl TinyDisk {
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(Self(dir))
    }

    /// Fills the disk with `ballast`, to the last block.
    fn fill(ballast: &std::path::Path) {
        use std::io::Write;
        let mut file = std::fs::File::create(ballast).unwrap();
        let chunk = vec![0_u8; 4096];
        while file.write_all(&chunk).and_then(|()| file.sync_all()).is_ok() {}
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        // Lazily: the store's connections may still hold its files.
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.0.path())
            .status();
    }
}

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
        database: Some(format!("sqlite:{}/netcache.db", disk.0.path().display())),
        ..Options::default()
    })
    .await;
    let ballast = disk.0.path().join("ballast");
    TinyDisk::fill(&ballast);

    let (status, retry_after, body) = boot(&t).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(retry_after.as_deref(), Some("5"));
    let message = body["serviceUnavailable"]["message"].as_str().unwrap_or_default();
    assert_eq!(message, "The service's database is unavailable; retry later.", "{body}");

    std::fs::remove_file(&ballast).unwrap();
    let (status, _, body) = boot(&t).await;
    assert_eq!(status, 202, "{body}");
    t.app().compute.settle().await;
}
