//! The log a test's own thread writes, captured to assert on.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;

/// While it lives, what this thread logs (tracing's plain format, no colours)
/// is kept here instead of printed.
pub struct CapturedLog {
    lines: Lines,
    _subscriber: DefaultGuard,
}

impl CapturedLog {
    #[must_use]
    pub fn start() -> Self {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        Self {
            lines,
            _subscriber: tracing::subscriber::set_default(subscriber),
        }
    }

    /// Everything logged so far.
    #[must_use]
    pub fn text(&self) -> String {
        String::from_utf8(self.lines.0.lock().unwrap().clone()).unwrap()
    }
}

#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
