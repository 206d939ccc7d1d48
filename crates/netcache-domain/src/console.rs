//! A guest's console log as Nova's `os-getConsoleOutput` answers it: the last
//! `length` lines (the compute manager's `_tail_log`), read as ASCII with
//! anything else replaced, and without the control characters the API strips.

/// What the API answers for `log` and the request's `length` (`None`: all of it).
///
/// As in Nova, the log is split on `\n` and the slice `[-length:]` kept, so 0
/// is nothing and a negative length drops that many lines from the start (the
/// schema's -1, meant as "unlimited", drops the first line there too).
#[must_use]
pub fn output(log: &str, length: Option<i64>) -> String {
    let tail = match length {
        None => log.to_owned(),
        Some(0) => String::new(),
        Some(n) => {
            let lines: Vec<&str> = log.split('\n').collect();
            let count = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
            let from = if n > 0 {
                lines.len().saturating_sub(count)
            } else {
                count.min(lines.len())
            };
            lines[from..].join("\n")
        }
    };
    tail.bytes().filter_map(as_nova_reads_it).collect()
}

/// Nova decodes the log as ASCII, each other byte becoming U+FFFD, then drops
/// `[\x00-\x08\x0B-\x1F]` (tabs and newlines stay).
fn as_nova_reads_it(byte: u8) -> Option<char> {
    match byte {
        0x00..=0x08 | 0x0B..=0x1F => None,
        0x80..=0xFF => Some(char::REPLACEMENT_CHARACTER),
        ascii => Some(char::from(ascii)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "one\ntwo\nthree\nfour\n";

    #[test]
    fn length_keeps_the_last_lines_as_python_slices_them() {
        assert_eq!(output(LOG, None), LOG);
        assert_eq!(output(LOG, Some(0)), "");
        // The log ends with a newline: its last "line" is empty.
        assert_eq!(output(LOG, Some(1)), "");
        assert_eq!(output(LOG, Some(3)), "three\nfour\n");
        assert_eq!(output(LOG, Some(3)).split('\n').count(), 3, "what Tempest counts");
        assert_eq!(output(LOG, Some(99)), LOG);
        assert_eq!(output(LOG, Some(i64::MAX)), LOG);
        assert_eq!(output(LOG, Some(-1)), "two\nthree\nfour\n");
        assert_eq!(output(LOG, Some(-4)), "");
        assert_eq!(output(LOG, Some(i64::MIN)), "");
    }

    #[test]
    fn bytes_are_read_as_ascii_without_control_characters() {
        assert_eq!(output("a\tb\r\n\u{1b}[0mc\u{7f}", None), "a\tb\n[0mc\u{7f}");
        assert_eq!(output("é", None), "\u{fffd}\u{fffd}", "two bytes, two replacements");
    }
}
