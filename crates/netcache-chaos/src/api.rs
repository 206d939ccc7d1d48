//! Requests to the netcache processes: a JSON client that classifies every outcome
//! (an answer, a failed connection, a timeout), and a raw client that sends a request
//! and closes the socket before the answer (a client disconnecting mid-request).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::history::Outcome;
use super::recorder::Recorder;

/// An answer and when the request ran.
pub struct Answer {
    pub outcome: Outcome,
    pub body: Value,
    pub start_ms: u64,
    pub end_ms: u64,
}

impl Answer {
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        self.outcome.status()
    }

    /// A short description of an error answer, for the history.
    pub fn note(&self) -> Option<String> {
        if self.outcome.is_ack() {
            return None;
        }
        let message = self
            .body
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(|v| v["message"].as_str())
            .map(str::to_owned)
            .or_else(|| self.body.as_str().map(str::to_owned))?;
        Some(message.chars().take(200).collect())
    }
}

#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    addrs: Vec<SocketAddr>,
    /// Processes known to be down (killed, not yet restarted).
    down: Arc<Vec<AtomicBool>>,
    project: String,
    rec: Arc<Recorder>,
}

impl Api {
    pub fn new(addrs: Vec<SocketAddr>, project: &str, timeout: Duration, rec: Arc<Recorder>) -> anyhow::Result<Self> {
        Ok(Self {
            http: reqwest::Client::builder().timeout(timeout).build()?,
            down: Arc::new(addrs.iter().map(|_| AtomicBool::new(false)).collect()),
            addrs,
            project: project.to_owned(),
            rec,
        })
    }

    #[must_use]
    pub fn processes(&self) -> usize {
        self.addrs.len()
    }

    /// The killer marks a process down until its restart answers.
    pub fn set_down(&self, process: usize, down: bool) {
        self.down[process].store(down, Ordering::SeqCst);
    }

    /// `preferred` if it is up, else the next process that is (requests go to the live
    /// processes; with none up, to `preferred`, and fail).
    #[must_use]
    pub fn route(&self, preferred: usize) -> usize {
        let n = self.addrs.len();
        (0..n)
            .map(|i| (preferred + i) % n)
            .find(|p| !self.down[*p].load(Ordering::SeqCst))
            .unwrap_or(preferred)
    }

    /// `method http://<process>/v2.1<path>` as an admin of the project.
    pub async fn call(&self, process: usize, method: Method, path: &str, body: Option<Value>) -> Answer {
        let url = format!("http://{}/v2.1{path}", self.addrs[process]);
        let mut request = self
            .http
            .request(method, url)
            .header("X-Roles", "admin")
            .header("X-Project-Id", &self.project);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let start_ms = self.rec.now_ms();
        let result = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            let text = response.text().await?;
            Ok::<_, reqwest::Error>((status, text))
        }
        .await;
        let end_ms = self.rec.now_ms();
        let (outcome, body) = match result {
            Ok((code, text)) => (
                Outcome::Status { code },
                serde_json::from_str(&text).unwrap_or(Value::String(text)),
            ),
            Err(e) if e.is_timeout() => (Outcome::Timeout, Value::Null),
            Err(_) => (Outcome::ConnectionFailed, Value::Null),
        };
        Answer {
            outcome,
            body,
            start_ms,
            end_ms,
        }
    }

    /// Sends the request over a raw connection, waits `hold`, and closes the socket
    /// without reading the answer.
    pub async fn call_and_disconnect(
        &self,
        process: usize,
        method: Method,
        path: &str,
        body: Option<Value>,
        hold: Duration,
    ) -> Answer {
        let addr = self.addrs[process];
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} /v2.1{path} HTTP/1.1\r\nHost: {addr}\r\nX-Roles: admin\r\nX-Project-Id: {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.project,
            body.len()
        );
        let start_ms = self.rec.now_ms();
        let sent = async {
            let mut stream = tokio::net::TcpStream::connect(addr).await?;
            stream.write_all(request.as_bytes()).await?;
            stream.flush().await?;
            tokio::time::sleep(hold).await;
            drop(stream);
            Ok::<_, std::io::Error>(())
        }
        .await;
        Answer {
            outcome: match sent {
                Ok(()) => Outcome::Disconnected,
                Err(_) => Outcome::ConnectionFailed,
            },
            body: Value::Null,
            start_ms,
            end_ms: self.rec.now_ms(),
        }
    }
}
