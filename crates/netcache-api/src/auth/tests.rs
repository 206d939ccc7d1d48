//! The validation cache against a stub Keystone that counts its calls, on
//! tokio's paused clock; `HttpKeystone`'s retry against a socket that drops
//! a validation unanswered.

use super::cache::CACHE_BOUND;
use super::*;

use std::sync::atomic::{AtomicUsize, Ordering};

const MEMBER_TOKEN: &str = "member-token";
const TTL: Duration = Duration::from_secs(300);

/// Keystone knowing one token, valid for `lifetime` from each validation
/// (negative: expired that long ago, valid only with `allow_expired`).
struct StubKeystone {
    lifetime: chrono::TimeDelta,
    calls: AtomicUsize,
}

#[async_trait]
impl TokenValidator for StubKeystone {
    async fn validate(&self, token: &str, allow_expired: bool) -> Result<Option<ValidToken>, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let expires_at = Utc::now() + self.lifetime;
        Ok(
            (token == MEMBER_TOKEN && (allow_expired || expires_at > Utc::now())).then(|| ValidToken {
                identity: Identity {
                    project_id: "demo".into(),
                    user_id: "alice".into(),
                    roles: vec!["member".into()],
                },
                expires_at,
            }),
        )
    }
}

fn keystone(lifetime_secs: i64) -> (KeystoneAuth, Arc<StubKeystone>) {
    let stub = Arc::new(StubKeystone {
        lifetime: chrono::TimeDelta::seconds(lifetime_secs),
        calls: AtomicUsize::new(0),
    });
    let auth = KeystoneAuth::new(Arc::clone(&stub) as Arc<dyn TokenValidator>, "http://keystone/v3", TTL);
    (auth, stub)
}

async fn admitted(auth: &KeystoneAuth, token: &str, allow_expired: bool) -> bool {
    auth.identify(token, allow_expired).await.unwrap().is_some()
}

/// Issue 33 defect 8: a cached validation outlived the token. A token that
/// expires 40 s after its validation is admitted from the cache at 39 s and
/// refused at 48 s, though `auth.cache_ttl` is 300 s — without asking Keystone
/// again, as keystonemiddleware refuses a cached token past its `expires_at`.
#[tokio::test(start_paused = true)]
async fn a_cached_validation_ends_when_the_token_expires() {
    let (auth, stub) = keystone(40);
    assert!(admitted(&auth, MEMBER_TOKEN, false).await);
    tokio::time::advance(Duration::from_secs(39)).await;
    assert!(admitted(&auth, MEMBER_TOKEN, false).await, "at 39 s");
    tokio::time::advance(Duration::from_secs(9)).await;
    assert!(!admitted(&auth, MEMBER_TOKEN, false).await, "at 48 s");
    assert_eq!(
        stub.calls.load(Ordering::SeqCst),
        1,
        "known expired: Keystone not asked again"
    );
}

/// Issue 33 defect 8: the allowance of a service token outlives the user
/// token's `expires_at` — Keystone validated it as expired, and the cache
/// keeps that answer for `auth.cache_ttl`.
#[tokio::test(start_paused = true)]
async fn an_expired_token_admitted_beside_a_service_token_stays_admitted() {
    let (auth, stub) = keystone(-60);
    assert!(!admitted(&auth, MEMBER_TOKEN, false).await, "alone");
    assert!(admitted(&auth, MEMBER_TOKEN, true).await, "beside a service token");
    tokio::time::advance(Duration::from_secs(100)).await;
    assert!(
        admitted(&auth, MEMBER_TOKEN, true).await,
        "beside a service token, cached"
    );
    assert_eq!(stub.calls.load(Ordering::SeqCst), 2);
}

/// Issue 33 defect 8: a refused token was not cached, so each request with
/// it cost a Keystone call. Refused twice within `auth.cache_ttl`, it is
/// validated once; after the cache time, again.
#[tokio::test(start_paused = true)]
async fn a_refused_token_is_validated_once_within_the_cache_time() {
    let (auth, stub) = keystone(3600);
    assert!(!admitted(&auth, "bogus", false).await);
    tokio::time::advance(Duration::from_secs(299)).await;
    assert!(!admitted(&auth, "bogus", false).await);
    assert_eq!(
        stub.calls.load(Ordering::SeqCst),
        1,
        "one Keystone call for two requests"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(!admitted(&auth, "bogus", false).await);
    assert_eq!(
        stub.calls.load(Ordering::SeqCst),
        2,
        "validated again after the cache time"
    );
}

/// Issue 33 defect 8: a flood of distinct bogus tokens, three times the
/// cache's bound, leaves the cache within it; the last bogus token is still
/// refused from the cache and a valid token's validation is not evicted.
#[tokio::test(start_paused = true)]
async fn the_cache_stays_bounded_under_a_flood_of_bogus_tokens() {
    let (auth, stub) = keystone(3600);
    assert!(admitted(&auth, MEMBER_TOKEN, false).await);
    let flood = 3 * CACHE_BOUND;
    for i in 0..flood {
        assert!(!admitted(&auth, &format!("bogus-{i}"), false).await);
    }
    // Valid and refused tokens are each within the bound.
    assert!(auth.cache.lock().unwrap().len() <= 2 * CACHE_BOUND);
    let calls = stub.calls.load(Ordering::SeqCst);
    assert_eq!(calls, 1 + flood);
    assert!(!admitted(&auth, &format!("bogus-{}", flood - 1), false).await);
    assert!(admitted(&auth, MEMBER_TOKEN, false).await);
    assert_eq!(stub.calls.load(Ordering::SeqCst), calls, "both answered from the cache");
}

/// A Keystone that answers the service token, then drops the first
/// validation's connection unanswered and answers the next: the validation
/// is sent again (keystonemiddleware's retries), not a 503 to the user.
#[tokio::test]
async fn a_validation_whose_connection_dropped_is_sent_again() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v3", listener.local_addr().unwrap());
    let validations = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&validations);
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // The head, then a POST's body (its Content-Length).
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
            }
            let text = String::from_utf8_lossy(&request).to_string();
            if text.starts_with("POST") {
                let head_end = text.find("\r\n\r\n").unwrap() + 4;
                let length: usize = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                let mut have = request.len() - head_end;
                while have < length {
                    have += socket.read(&mut buf).await.unwrap();
                }
                let answer = "HTTP/1.1 201 Created\r\nX-Subject-Token: service\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
                socket.write_all(answer.as_bytes()).await.unwrap();
            } else if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                drop(socket);
            } else {
                let body = r#"{"token": {"user": {"id": "u"}, "project": {"id": "p"}, "roles": [{"name": "member"}], "expires_at": "2099-01-01T00:00:00Z"}}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                socket.write_all(answer.as_bytes()).await.unwrap();
            }
        }
    });
    let keystone = HttpKeystone::new(&url, "nova", "secret", "service", "Default", "Default");
    let valid = keystone
        .validate("a-user-token", false)
        .await
        .expect("validated on the second try");
    assert_eq!(valid.expect("a valid token").identity.project_id, "p");
    assert_eq!(validations.load(Ordering::SeqCst), 2);
}
