//! Connection hygiene of the compute API's HTTP server: clients that send half a
//! request or sit idle are disconnected, bodies over the limit are refused as
//! Nova refuses them, and connections beyond the cap are not served until one
//! closes. Timeouts are tiny; each wait for a close has a generous outer bound,
//! and no test asserts how long anything took.

use crate::common;

use std::fmt::Write as _;
use std::time::Duration;

use common::{Options, TestApp};
use netcache_app::settings::Settings;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for something that must happen.
const BOUND: Duration = Duration::from_secs(20);

/// A tiny timeout that a test waits out.
const TINY: f64 = 0.2;
/// A timeout no test reaches.
const LONG: f64 = 600.0;

async fn app(tweak: fn(&mut Settings)) -> TestApp {
    TestApp::with(Options {
        tweak,
        ..Options::default()
    })
    .await
}

async fn connect(t: &TestApp) -> TcpStream {
    TcpStream::connect(t.app().api_addr).await.unwrap()
}

const GET_VERSIONS: &[u8] = b"GET / HTTP/1.1\r\nHost: netcache\r\n\r\n";

/// Reads until the server closes the connection (EOF or reset); panics if it
/// stays open for `BOUND`.
async fn assert_closed_by_server(stream: &mut TcpStream, what: &str) {
    let closed = tokio::time::timeout(BOUND, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the server kept {what} open");
}

/// Reads one HTTP/1.1 response (head and `Content-Length` body): status, head, body.
async fn read_response(stream: &mut TcpStream) -> (u16, String, Vec<u8>) {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut buf).await.unwrap();
        assert!(
            n > 0,
            "the connection closed before a response: {:?}",
            String::from_utf8_lossy(&data)
        );
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(data[..head_end].to_vec()).unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .expect("a content-length");
    let mut body = data[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "the connection closed in the middle of a body");
        body.extend_from_slice(&buf[..n]);
    }
    (status, head, body)
}

async fn request(stream: &mut TcpStream, bytes: &[u8]) -> (u16, String, Vec<u8>) {
    stream.write_all(bytes).await.unwrap();
    tokio::time::timeout(BOUND, read_response(stream))
        .await
        .expect("an answer")
}

fn assert_over_limit(status: u16, body: &Value, limit: usize) {
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["overLimit"]["code"], 413, "{body}");
    let message = body["overLimit"]["message"].as_str().unwrap();
    assert!(message.contains(&limit.to_string()), "{message}");
}

#[tokio::test]
async fn a_client_that_sends_half_a_request_is_disconnected() {
    let t = app(|s| {
        s.api.header_read_timeout = TINY;
        s.api.idle_timeout = LONG;
    })
    .await;

    let mut half_line = connect(&t).await;
    half_line.write_all(b"GET /v2.1/serv").await.unwrap();
    let mut half_headers = connect(&t).await;
    half_headers
        .write_all(b"GET /v2.1/servers HTTP/1.1\r\nHost: netcache\r\nX-Roles: adm")
        .await
        .unwrap();
    let mut silent = connect(&t).await;
    // A kept-alive connection whose next request stops half-way.
    let mut second_request = connect(&t).await;
    assert_eq!(request(&mut second_request, GET_VERSIONS).await.0, 200);
    second_request.write_all(b"GET / HTTP/1.1\r\nHo").await.unwrap();

    assert_closed_by_server(&mut half_line, "half a request line").await;
    assert_closed_by_server(&mut half_headers, "half the headers").await;
    assert_closed_by_server(&mut silent, "a connection that sent nothing").await;
    assert_closed_by_server(&mut second_request, "half a second request").await;
    // The server still serves others.
    assert_eq!(request(&mut connect(&t).await, GET_VERSIONS).await.0, 200);
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let t = app(|s| {
        s.api.header_read_timeout = LONG;
        s.api.idle_timeout = TINY;
    })
    .await;
    let mut stream = connect(&t).await;
    let (status, head, _) = request(&mut stream, GET_VERSIONS).await;
    assert_eq!(status, 200);
    assert!(!head.to_ascii_lowercase().contains("connection: close"), "{head}");
    assert_closed_by_server(&mut stream, "an idle keep-alive connection").await;

    // A client that stops in the middle of a body is idle too.
    let mut stream = connect(&t).await;
    stream
        .write_all(
            b"POST /v2.1/servers HTTP/1.1\r\nHost: netcache\r\n\
              Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"server\":",
        )
        .await
        .unwrap();
    assert_closed_by_server(&mut stream, "a request whose body stopped").await;
}

#[tokio::test]
async fn a_request_being_handled_is_not_cut_by_the_timeouts() {
    let mut t = TestApp::with(Options {
        proxy: true,
        neutron_timeout: Duration::from_secs(60),
        tweak: |s| {
            s.api.header_read_timeout = TINY;
            s.api.idle_timeout = TINY;
        },
        ..Options::default()
    })
    .await;
    // A fresh connection per request: a pooled one may be closed as it is reused.
    t.http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let id = t.boot_on_private().await;
    let attach = t.attach_held_at_create(&id).await;
    // Well past both timeouts while the attach waits for Neutron.
    // tidy: allow sleep — past the server's read and idle timeouts, which are real time
    tokio::time::sleep(Duration::from_secs_f64(TINY * 5.0)).await;
    t.proxy().open_gate();
    let (status, body) = attach.await.unwrap();
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_as_nova_does() {
    const LIMIT: usize = 1024;
    let t = app(|s| s.api.max_body_bytes = LIMIT).await;
    let boot = |name: String| json!({"server": {"name": name, "flavorRef": "1", "imageRef": common::IMAGE}});

    // Announced by Content-Length.
    let (status, body) = t.post("/servers", boot("x".repeat(2 * LIMIT))).await;
    assert_over_limit(status, &body, LIMIT);

    // Chunked: found while reading.
    let mut stream = connect(&t).await;
    let chunk = serde_json::to_vec(&boot("y".repeat(2 * LIMIT))).unwrap();
    let mut raw = b"POST /v2.1/servers HTTP/1.1\r\nHost: netcache\r\n\
        Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        .to_vec();
    raw.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
    raw.extend_from_slice(&chunk);
    raw.extend_from_slice(b"\r\n0\r\n\r\n");
    let (status, head, body) = request(&mut stream, &raw).await;
    assert!(
        head.to_ascii_lowercase().contains("content-type: application/json"),
        "{head}"
    );
    assert!(head.to_ascii_lowercase().contains("x-compute-request-id"), "{head}");
    assert_over_limit(status, &serde_json::from_slice(&body).unwrap(), LIMIT);

    // Under the limit, the request reaches the API.
    t.boot_on_private().await;
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_until_one_closes() {
    let t = app(|s| {
        s.api.max_connections = 2;
        s.api.header_read_timeout = LONG;
        s.api.idle_timeout = LONG;
    })
    .await;
    let mut first = connect(&t).await;
    let mut second = connect(&t).await;
    assert_eq!(request(&mut first, GET_VERSIONS).await.0, 200);
    assert_eq!(request(&mut second, GET_VERSIONS).await.0, 200);

    // The third connects (the kernel's backlog holds it) but is not served...
    let mut third = connect(&t).await;
    third.write_all(GET_VERSIONS).await.unwrap();
    let early = tokio::time::timeout(Duration::from_millis(500), read_response(&mut third)).await;
    assert!(early.is_err(), "a third connection was served with a cap of two");
    // ...while the two kept-alive ones still are.
    assert_eq!(request(&mut second, GET_VERSIONS).await.0, 200);

    // Once one closes, it is.
    drop(first);
    let (status, _, _) = tokio::time::timeout(BOUND, read_response(&mut third))
        .await
        .expect("the third connection is served once the first closed");
    assert_eq!(status, 200);
}

#[test]
fn connection_settings_have_defaults_and_are_checked() {
    let s = Settings::load(None, &[]).unwrap();
    assert_eq!(
        (
            s.api.header_read_timeout,
            s.api.idle_timeout,
            s.api.max_connections,
            s.api.max_body_bytes
        ),
        (10.0, 60.0, 1024, 114_688)
    );
    let dir = tempfile::tempdir().unwrap();
    for (toml, key) in [
        ("[api]\nmax_connections = 0\n", "api.max_connections"),
        ("[api]\nheader_read_timeout = 0\n", "api.header_read_timeout"),
        ("[api]\nidle_timeout = -1\n", "api.idle_timeout"),
    ] {
        let path = dir.path().join("netcache.toml");
        std::fs::write(&path, toml).unwrap();
        let err = format!("{:#}", Settings::load(Some(&path), &[]).unwrap_err());
        assert!(err.contains(key), "{toml}: {err}");
    }
}

/// A request head over Nova's limits (a URI over 8 KiB, a header line over
/// 16 KiB, more than 100 header fields) is a 414 or 431 with a JSON body,
/// not a bare status; one just under every limit is served.
#[tokio::test]
async fn a_request_head_over_the_limits_is_refused_in_novas_form() {
    let t = app(|_| {}).await;
    let long_path = format!("/v2.1/servers?name={}", "a".repeat(8200));
    let long_header = format!("X-Padding: {}\r\n", "b".repeat(16400));
    for (path, extra, status) in [
        (long_path.as_str(), String::new(), 414),
        ("/v2.1/servers", long_header, 431),
        ("/v2.1/servers", header_fields(150), 431),
        ("/v2.1/servers", format!("X-Padding: {}\r\n", "c".repeat(16000)), 200),
    ] {
        assert_head_answered(&t, path, &extra, status).await;
    }
}

/// `count` header fields.
fn header_fields(count: usize) -> String {
    (0..count).fold(String::new(), |mut head, i| {
        let _ = write!(head, "X-Extra-{i}: {i}\r\n");
        head
    })
}

/// Sends a GET of `path` with the `extra` header lines on a new connection and
/// asserts its `status`: a refusal (414 or 431) in the form netcache answers
/// every 4xx, after which the server closes the connection.
async fn assert_head_answered(t: &TestApp, path: &str, extra: &str, status: u16) {
    let mut stream = connect(t).await;
    let head = format!("GET {path} HTTP/1.1\r\nHost: netcache\r\n{extra}\r\n");
    let (got, _, body) = request(&mut stream, head.as_bytes()).await;
    assert_eq!(got, status, "{}", String::from_utf8_lossy(&body));
    if status == 200 {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or_else(|_| panic!("{status}: {body:?}"));
    assert_eq!(body["badRequest"]["code"], status, "{body}");
    assert!(
        body["badRequest"]["message"].as_str().unwrap().contains("too"),
        "{body}"
    );
    assert_closed_by_server(&mut stream, "a refused head's connection").await;
}

/// A head over hyper's own limits (a URI over 64 KiB, more header fields than
/// its parser reads), which hyper refuses before netcache sees the request, is
/// answered with the same JSON body, not hyper's empty one. Issue 33 defect 5.
#[tokio::test]
async fn a_request_head_over_the_http_parsers_limits_is_refused_in_novas_form() {
    let t = app(|_| {}).await;
    let long_path = format!("/v2.1/servers?name={}", "a".repeat(70_000));
    assert_head_answered(&t, &long_path, "", 414).await;
    assert_head_answered(&t, "/v2.1/servers", &header_fields(500), 431).await;
}
