//! Errors of Neutron calls, classified by what they tell about the outcome.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Neutron answered with an error: the request definitely did not take effect.
    #[error("Neutron refused {operation}: HTTP {status} {kind}: {message}")]
    Rejected {
        operation: &'static str,
        status: u16,
        /// Neutron's error `type`, e.g. `PortNotFound`, `IpAddressGenerationFailure`.
        kind: String,
        message: String,
    },
    /// The request may or may not have taken effect (timeout after sending, dropped
    /// connection, 5xx).
    #[error("outcome of {operation} is unknown: {reason}")]
    Ambiguous { operation: &'static str, reason: String },
    /// The request was never sent (connection refused, DNS, no endpoint).
    #[error("Neutron is unreachable for {operation}: {reason}")]
    Unreachable { operation: &'static str, reason: String },
    /// Keystone refused or could not be reached.
    #[error("Keystone authentication failed: {0}")]
    Auth(String),
    /// Neutron answered something that is not Neutron's JSON.
    #[error("unexpected response to {operation}: {reason}")]
    Protocol { operation: &'static str, reason: String },
}

impl Error {
    /// Whether the outcome is unknown (a mutating call may have taken effect).
    #[must_use]
    pub fn is_ambiguous(&self) -> bool {
        matches!(self, Self::Ambiguous { .. })
    }

    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Rejected { status: 404, .. })
    }

    /// HTTP status of a definite refusal.
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Rejected { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Neutron's error type of a definite refusal.
    #[must_use]
    pub fn kind(&self) -> Option<&str> {
        match self {
            Self::Rejected { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// A short, stable label for metrics.
    #[must_use]
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Rejected { .. } => "rejected",
            Self::Ambiguous { .. } => "ambiguous",
            Self::Unreachable { .. } => "unreachable",
            Self::Auth(_) => "auth",
            Self::Protocol { .. } => "protocol",
        }
    }
}

/// A call's metric outcome: `ok`, or its error's [`Error::metric_label`].
pub(crate) fn outcome_label<T>(outcome: &Result<T>) -> &'static str {
    match outcome {
        Ok(_) => "ok",
        Err(e) => e.metric_label(),
    }
}

/// The start of an answer's body for an error message: trimmed, and cut after
/// `max_chars` characters (marked `…`), so that a long answer does not flood the message.
pub(crate) fn snippet(body: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}
