//! The compute API's HTTP/1.1 server: hyper's connection driver with the limits
//! `axum::serve` lacks.
//!
//! - At most [`HttpLimits::max_connections`] connections are served at once. The
//!   accept loop takes a slot before it accepts, so further clients wait in the
//!   kernel's accept backlog (their requests are served when a slot frees) instead
//!   of being accepted and starved of file descriptors.
//! - A connection is closed when its client keeps the server waiting:
//!   `header_read_timeout` for a request head (from the connection's start or the
//!   first byte of the next request); `idle_timeout` between requests, for a
//!   request body and for writing an answer (a client that does not read it is
//!   idle). While a request is being handled there is no deadline. hyper's own
//!   `header_read_timeout` is not used: it restarts as soon as a kept-alive
//!   connection goes idle, so it would cap the idle time too.
//! - A request body over `max_body_bytes` is answered 413 in Nova's format, as
//!   oslo.middleware's sizelimit does (by `Content-Length` before reading, else
//!   while reading).
//! - A head hyper cannot read (over its own limits, or malformed) is answered
//!   by hyper before any service runs, with no body; that answer is replaced on
//!   the socket by netcache's JSON one of the same status.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, header};
use axum::response::IntoResponse;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use netcache_api::ApiError;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt;
use tracing::{debug, warn};

use crate::settings::ApiSettings;

/// How long a stop waits for in-flight requests before closing their connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Pause after a failed accept (e.g. out of file descriptors) before the next one.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The server's connection and request limits (`api.*` settings).
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub max_body_bytes: usize,
}

impl HttpLimits {
    /// The limits the `api.*` settings name (a timeout too long for a `Duration` is none).
    #[must_use]
    pub fn of(api: &ApiSettings) -> Self {
        Self {
            header_read_timeout: Duration::try_from_secs_f64(api.header_read_timeout).unwrap_or(Duration::MAX),
            idle_timeout: Duration::try_from_secs_f64(api.idle_timeout).unwrap_or(Duration::MAX),
            max_connections: api.max_connections,
            max_body_bytes: api.max_body_bytes,
        }
    }
}

/// Serves `router` on `listener` until `stop` resolves, then stops accepting,
/// lets in-flight requests finish for a while and closes every connection.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.min(Semaphore::MAX_PERMITS)));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut stop => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    warn!(error = %e, "Cannot accept a connection: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        connections.spawn(serve_connection(
            stream,
            router.clone(),
            limits,
            graceful.watcher(),
            slot,
        ));
        while connections.try_join_next().is_some() {}
        if slots.available_permits() == 0 {
            warn!(
                max_connections = limits.max_connections,
                "Serving api.max_connections connections; further ones wait until one closes"
            );
        }
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await.is_err() {
        warn!(
            connections = connections.len(),
            "Closing connections whose requests did not finish within {SHUTDOWN_GRACE:?}"
        );
    }
    connections.shutdown().await;
    Ok(())
}

/// What a connection waits for, and until when.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// A request head (the first, or the rest of one whose first byte came).
    Head(Instant),
    /// The body of a request whose head came.
    Body(Instant),
    /// Nothing from the client: a request is being handled.
    Handling,
    /// The next request, after an answer.
    Idle(Instant),
}

impl Phase {
    fn deadline(self) -> Option<Instant> {
        match self {
            Self::Head(at) | Self::Body(at) | Self::Idle(at) => Some(at),
            Self::Handling => None,
        }
    }

    fn waiting_for(self) -> &'static str {
        match self {
            Self::Head(_) => "a request head",
            Self::Body(_) => "a request body",
            Self::Handling => "nothing",
            Self::Idle(_) => "another request",
        }
    }
}

async fn serve_connection(
    stream: TcpStream,
    router: Router,
    limits: HttpLimits,
    watcher: Watcher,
    _slot: OwnedSemaphorePermit,
) {
    let peer = stream.peer_addr().ok();
    let (phase, mut deadlines) = watch::channel(Phase::Head(after(limits.header_read_timeout)));
    let phase = Arc::new(phase);
    let io = TokioIo::new(Watched {
        inner: stream,
        phase: Arc::clone(&phase),
        header_read_timeout: limits.header_read_timeout,
        replacement: None,
    });
    let service =
        hyper::service::service_fn(move |request| handle(request, router.clone(), limits, Arc::clone(&phase)));
    let connection = watcher.watch(
        http1::Builder::new()
            .max_headers(4 * MAX_HEADERS)
            .serve_connection(io, service),
    );
    tokio::select! {
        result = connection => {
            if let Err(e) = result {
                debug!(?peer, error = %e, "Connection ended: {e}");
            }
        }
        waited_for = overdue(&mut deadlines) => {
            debug!(?peer, "Closing a connection that waited too long for {waited_for}");
        }
    }
}

/// The instant `wait` from now (or far away, for a huge configured timeout).
fn after(wait: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(wait)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400))
}

/// Resolves when the connection's current phase outlasts its deadline.
async fn overdue(phase: &mut watch::Receiver<Phase>) -> &'static str {
    loop {
        let current = *phase.borrow_and_update();
        let changed = match current.deadline() {
            Some(deadline) => tokio::select! {
                () = tokio::time::sleep_until(deadline) => match phase.has_changed() {
                    Ok(true) => continue,
                    _ => return current.waiting_for(),
                },
                changed = phase.changed() => changed,
            },
            None => phase.changed().await,
        };
        if changed.is_err() {
            // The connection is gone; its task ends with it.
            std::future::pending::<()>().await;
        }
    }
}

/// One request: its body read within the limits, then the router.
async fn handle(
    request: Request<Incoming>,
    router: Router,
    limits: HttpLimits,
    phase: Arc<watch::Sender<Phase>>,
) -> Result<Response<Body>, Box<dyn std::error::Error + Send + Sync>> {
    phase.send_replace(Phase::Body(after(limits.idle_timeout)));
    let (parts, body) = request.into_parts();
    let response = if let Some(refusal) = head_over_limits(&parts) {
        refused(refusal)
    } else if body.size_hint().lower() > limits.max_body_bytes as u64 {
        refused(ApiError::RequestTooLarge {
            limit: limits.max_body_bytes,
        })
    } else {
        match Limited::new(body, limits.max_body_bytes).collect().await {
            Ok(body) => {
                phase.send_replace(Phase::Handling);
                let request = Request::from_parts(parts, Body::from(body.to_bytes()));
                router.oneshot(request).await.unwrap_or_else(|e: Infallible| match e {})
            }
            Err(e) if e.is::<LengthLimitError>() => refused(ApiError::RequestTooLarge {
                limit: limits.max_body_bytes,
            }),
            // The client went away in the middle of its body.
            Err(e) => return Err(e),
        }
    };
    // Writing the answer is bounded too: a client that does not read it is idle.
    phase.send_replace(Phase::Idle(after(limits.idle_timeout)));
    Ok(response)
}

/// The longest request line (URI) served: eventlet's, which Nova runs on.
const MAX_URI_BYTES: usize = 8192;
/// The longest header line (name and value): Nova's `max_header_line`.
const MAX_HEADER_LINE_BYTES: usize = 16384;
/// The most header fields served (hyper's parser is set to read more, so a
/// request with more is answered here, in Nova's form).
const MAX_HEADERS: usize = 100;

/// Why a request's head is refused, if it is over a limit.
fn head_over_limits(parts: &axum::http::request::Parts) -> Option<ApiError> {
    if parts.uri.to_string().len() > MAX_URI_BYTES {
        return Some(ApiError::UriTooLong { limit: MAX_URI_BYTES });
    }
    if parts.headers.len() > MAX_HEADERS {
        return Some(ApiError::HeadersTooLarge {
            what: format!("more than {MAX_HEADERS} header fields"),
        });
    }
    parts
        .headers
        .iter()
        .find(|(name, value)| name.as_str().len() + value.len() > MAX_HEADER_LINE_BYTES)
        .map(|(name, _)| ApiError::HeadersTooLarge {
            what: format!("header {name} is longer than {MAX_HEADER_LINE_BYTES} bytes"),
        })
}

/// Nova's answer to a request over a limit (a body: oslo.middleware's sizelimit).
/// The rest of the request is not read, so the connection closes after it.
fn refused(refusal: ApiError) -> Response<Body> {
    let mut response = refusal.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    if let Ok(id) = HeaderValue::from_str(&netcache_compute::new_request_id()) {
        headers.insert("x-openstack-request-id", id.clone());
        headers.insert("x-compute-request-id", id);
    }
    response
}

/// The client's socket; the first byte after an answer starts the next request's
/// head deadline.
struct Watched {
    inner: TcpStream,
    phase: Arc<watch::Sender<Phase>>,
    header_read_timeout: Duration,
    /// netcache's answer in place of hyper's own, and how much of it is written.
    replacement: Option<(Vec<u8>, usize)>,
}

impl Watched {
    /// While a head is awaited no service runs, so what hyper writes then is its
    /// own bodiless answer to a head it could not read: netcache's is written in
    /// its place (and hyper told its bytes went out). `None`: not such a write.
    fn poll_replaced(
        &mut self,
        cx: &mut Context<'_>,
        hyper_bytes: &[u8],
        len: usize,
    ) -> Option<Poll<std::io::Result<usize>>> {
        if self.replacement.is_none() {
            if !matches!(*self.phase.borrow(), Phase::Head(_)) {
                return None;
            }
            self.replacement = Some((replacement_for(hyper_bytes)?, 0));
        }
        let (bytes, written) = self.replacement.as_mut()?;
        while *written < bytes.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => return Some(Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()))),
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Some(Poll::Ready(Err(e))),
                Poll::Pending => return Some(Poll::Pending),
            }
        }
        Some(Poll::Ready(Ok(len)))
    }
}

/// netcache's whole answer (head and JSON body) for hyper's `HTTP/1.1 NNN …`
/// refusal of a head, if it is one of those netcache words itself.
fn replacement_for(hyper_answer: &[u8]) -> Option<Vec<u8>> {
    let refusal = match hyper_answer.get(..12)? {
        b"HTTP/1.1 414" => ApiError::UriTooLong { limit: MAX_URI_BYTES },
        b"HTTP/1.1 431" => ApiError::HeadersTooLarge {
            what: format!("more than {MAX_HEADERS} header fields, or a head too long to read"),
        },
        _ => return None,
    };
    let (status, body) = refusal.status_and_body();
    let id = netcache_compute::new_request_id();
    let mut answer = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\
         x-openstack-request-id: {id}\r\nx-compute-request-id: {id}\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or_default(),
        body.len()
    )
    .into_bytes();
    answer.extend(body);
    Some(answer)
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let deadline = after(self.header_read_timeout);
            self.phase.send_if_modified(|phase| match phase {
                Phase::Idle(_) => {
                    *phase = Phase::Head(deadline);
                    true
                }
                _ => false,
            });
        }
        result
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        if let Some(replaced) = self.poll_replaced(cx, buf, buf.len()) {
            return replaced;
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &**b);
        let len = bufs.iter().map(|b| b.len()).sum();
        if let Some(replaced) = self.poll_replaced(cx, first, len) {
            return replaced;
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
