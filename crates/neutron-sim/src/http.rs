//! HTTP layer: our own accept loop (so a fault can reset a connection or hold a response),
//! serving the axum routes of [`crate::routes`], and [`neutron`], which applies faults to a
//! routed call and runs it against the synchronous API.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, watch};
use tower::ServiceExt;

use crate::api::{self, ApiRequest, Route};
use crate::config::{FaultAction, SimConfig};
use crate::error::Error;
use crate::faults::{FaultEngine, Stats};
use crate::store::{Caller, NovaEvent, Store};

/// State shared by the handlers, the notifier and [`crate::SimHandle`].
pub(crate) struct Shared {
    pub config: SimConfig,
    pub store: Mutex<Store>,
    pub faults: Mutex<FaultEngine>,
    pub stats: Mutex<Stats>,
    pub nova_url: Mutex<Option<String>>,
    pub events: mpsc::UnboundedSender<NovaEvent>,
    pub shutdown: watch::Sender<bool>,
    /// Requests held by a delayed-commit fault, by id, until their timer fires or a
    /// test releases them.
    pub delayed: Mutex<Vec<(u64, ApiRequest)>>,
    pub next_delayed: std::sync::atomic::AtomicU64,
    /// Calls a hold fault keeps waiting; each release wakes them all.
    pub held: Mutex<usize>,
    pub releases: watch::Sender<u64>,
}

/// Locks a mutex, ignoring poisoning (no invariant spans a panic: handlers don't panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Executes one API call against the store and queues the Nova events it caused.
    fn execute(&self, req: &ApiRequest) -> crate::error::Result<crate::api::Answer> {
        let (res, events) = {
            let mut st = lock(&self.store);
            let res = api::execute(&mut st, &self.config, req);
            (res, std::mem::take(&mut st.events))
        };
        for e in events {
            let _ = self.events.send(e);
        }
        res
    }

    /// Executes one API call and records its outcome.
    pub fn run(&self, op: &str, req: &ApiRequest, outcome: Option<&str>) -> Response {
        let res = self.execute(req);
        let label = match (&res, outcome) {
            (_, Some(o)) => o,
            (Ok(_), None) => "ok",
            (Err(e), None) => e.metric_label(),
        };
        lock(&self.stats).record(op, label);
        res.map_or_else(IntoResponse::into_response, answer)
    }

    /// Applies a held request now, if it is still held; returns whether it was.
    fn commit_delayed(&self, id: u64) -> bool {
        let held = {
            let mut delayed = lock(&self.delayed);
            let index = delayed.iter().position(|(i, _)| *i == id);
            index.map(|i| delayed.remove(i).1)
        };
        let Some(req) = held else { return false };
        let _ = self.execute(&req);
        true
    }

    /// Applies every held delayed commit now; returns how many.
    pub fn release_delayed(&self) -> usize {
        let ids: Vec<u64> = lock(&self.delayed).iter().map(|(i, _)| *i).collect();
        ids.into_iter().filter(|id| self.commit_delayed(*id)).count()
    }

    /// Lets every call a hold fault keeps waiting go on; returns how many.
    pub fn release_held(&self) -> usize {
        let mut held = lock(&self.held);
        self.releases.send_modify(|n| *n += 1);
        std::mem::take(&mut *held)
    }

    /// Waits for the next release (or the shutdown); whether it was released.
    async fn wait_for_release(&self) -> bool {
        let mut released = {
            let mut held = lock(&self.held);
            *held += 1;
            self.releases.subscribe()
        };
        tokio::select! {
            changed = released.changed() => changed.is_ok(),
            () = self.hold() => false,
        }
    }

    async fn hold(&self) {
        let mut rx = self.shutdown.subscribe();
        let _ = rx.wait_for(|v| *v).await;
    }

    pub fn set_nova_url(&self, url: Option<String>) {
        lock(&self.store).notify = url.is_some();
        *lock(&self.nova_url) = url;
    }
}

/// Per-connection kill switch: `fire` makes the connection task drop the socket with RST.
#[derive(Clone, Default)]
struct ConnKill {
    reset: Arc<AtomicBool>,
    notify: Arc<Notify>,
}

impl ConnKill {
    fn fire(&self) {
        self.reset.store(true, Ordering::SeqCst);
        self.notify.notify_one();
    }
}

/// A TCP stream that closes with RST (SO_LINGER 0) when its connection was killed.
struct KillableStream {
    inner: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Drop for KillableStream {
    fn drop(&mut self) {
        if self.reset.load(Ordering::SeqCst) {
            let _ = self.inner.set_zero_linger();
        }
    }
}

impl AsyncRead for KillableStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

pub(crate) async fn accept_loop(listener: TcpListener, app: Router, shutdown: watch::Receiver<bool>) {
    let mut stop = shutdown.clone();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.wait_for(|v| *v) => break,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve_conn(stream, app.clone(), shutdown.clone()));
            }
            // e.g. EMFILE: back off instead of spinning.
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
        }
    }
}

async fn serve_conn(stream: TcpStream, app: Router, mut shutdown: watch::Receiver<bool>) {
    let kill = ConnKill::default();
    let io = TokioIo::new(KillableStream {
        inner: stream,
        reset: kill.reset.clone(),
    });
    let k2 = kill.clone();
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(k2.clone());
        let app = app.clone();
        async move { Ok::<_, Infallible>(app.oneshot(req.map(Body::new)).await.unwrap_or_else(|e| match e {})) }
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, svc);
    tokio::select! {
        _ = conn => {}
        () = kill.notify.notified() => {}
        _ = shutdown.wait_for(|v| *v) => {}
    }
}

fn caller(headers: &HeaderMap) -> Caller {
    let h = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    match h("x-project-id").or(h("x-tenant-id")) {
        None => Caller::admin(),
        Some(p) => {
            let roles: Vec<String> = h("x-roles")
                .unwrap_or("")
                .split(',')
                .map(|r| r.trim().to_ascii_lowercase())
                .collect();
            Caller {
                project_id: p.to_string(),
                is_admin: roles.iter().any(|r| r == "admin"),
                is_service: roles.iter().any(|r| r == "service"),
            }
        }
    }
}

/// Marks a call made in process ([`crate::SimHandle::request_as`]): as this caller, with
/// no faults and no statistics.
#[derive(Clone)]
pub(crate) struct InProcess(pub Caller);

/// Runs one Neutron API call: `route` is the operation name and route the path maps to
/// (`None`: 404). Applies the faults that match, then executes against the store.
pub(crate) async fn neutron(sh: Arc<Shared>, route: Option<(String, Route)>, req: Request) -> Response {
    let kill = req.extensions().get::<ConnKill>().cloned();
    let in_process = req.extensions().get::<InProcess>().cloned();
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 64 << 20).await else {
        return Error::bad("Body contains invalid data").into_response();
    };
    let Some((op, route)) = route else {
        if in_process.is_none() {
            lock(&sh.stats).record("unknown", "error_4xx");
        }
        return Error::route_not_found().into_response();
    };
    let raw_query = parts.uri.query().unwrap_or("");
    let Ok(params) = serde_urlencoded::from_str::<Vec<(String, String)>>(raw_query) else {
        if in_process.is_none() {
            lock(&sh.stats).record(&op, "error_4xx");
        }
        return Error::bad("Invalid query string").into_response();
    };
    let host = parts
        .headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let req = ApiRequest {
        method: parts.method.clone(),
        route,
        params,
        body,
        caller: in_process
            .as_ref()
            .map_or_else(|| caller(&parts.headers), |p| p.0.clone()),
        if_match: parts
            .headers
            .get("if-match")
            .and_then(|v| v.to_str().ok())
            .map(String::from),
        base: format!("http://{host}"),
    };
    if in_process.is_some() {
        return sh.execute(&req).map_or_else(IntoResponse::into_response, answer);
    }
    // Rules match the raw query or its decoded form.
    let decoded: Vec<String> = req.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let query_text = format!("{raw_query}\n{}", decoded.join("&"));
    let body_json: Option<Value> = serde_json::from_slice(&req.body).ok();
    let decision = lock(&sh.faults).decide(&op, &query_text, &req.params, body_json.as_ref());
    if !decision.latency.is_zero() {
        tokio::time::sleep(decision.latency).await;
    }
    let Some(action) = decision.action else {
        return sh.run(&op, &req, None);
    };
    let outcome = action.outcome();
    match action {
        FaultAction::Latency { .. } => sh.run(&op, &req, None),
        FaultAction::Hold => {
            if sh.wait_for_release().await {
                sh.run(&op, &req, Some(&outcome))
            } else {
                Error::injected(503).into_response()
            }
        }
        FaultAction::Error { status } => {
            lock(&sh.stats).record(&op, &outcome);
            Error::injected(status).into_response()
        }
        FaultAction::Reset => {
            lock(&sh.stats).record(&op, &outcome);
            if let Some(k) = kill {
                k.fire();
                sh.hold().await;
            }
            Error::injected(500).into_response()
        }
        FaultAction::CommitThenDrop => {
            let _ = sh.run(&op, &req, Some(&outcome));
            sh.hold().await;
            Error::injected(503).into_response()
        }
        FaultAction::CommitThenDelay { ms } => {
            let resp = sh.run(&op, &req, Some(&outcome));
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            resp
        }
        FaultAction::DelayedCommit { ms, status } => {
            lock(&sh.stats).record(&op, &outcome);
            let id = sh.next_delayed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            lock(&sh.delayed).push((id, req));
            let sh2 = sh.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                if !*sh2.shutdown.borrow() {
                    sh2.commit_delayed(id);
                }
            });
            match status {
                Some(s) => Error::injected(s).into_response(),
                None => {
                    sh.hold().await;
                    Error::injected(503).into_response()
                }
            }
        }
    }
}

fn answer((status, body): crate::api::Answer) -> Response {
    match body {
        Some(v) => (status, axum::Json(v)).into_response(),
        None => status.into_response(),
    }
}
