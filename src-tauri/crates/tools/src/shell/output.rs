//! A command's captured output: the first bytes ever written (so a capped result can show the
//! head) and a bounded ring of the latest bytes (so a long-running session cannot grow without
//! limit), with the total count so dropped bytes are always reported.

use std::collections::VecDeque;

use crate::file::human_bytes;

#[derive(Debug)]
pub(crate) struct OutputLog {
    head: Vec<u8>,
    head_limit: usize,
    ring: VecDeque<u8>,
    capacity: usize,
    total: u64,
}

impl OutputLog {
    /// Keeps the first `head_limit` bytes and the last `capacity` bytes.
    pub(crate) fn new(head_limit: usize, capacity: usize) -> Self {
        OutputLog {
            head: Vec::new(),
            head_limit,
            ring: VecDeque::new(),
            capacity: capacity.max(1),
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_limit {
            let take = (self.head_limit - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
        }
        let bytes = &bytes[bytes.len().saturating_sub(self.capacity)..];
        let overflow = (self.ring.len() + bytes.len()).saturating_sub(self.capacity);
        self.ring.drain(..overflow);
        self.ring.extend(bytes);
    }

    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Bytes no longer held (the ring's start, as an absolute offset).
    pub(crate) fn dropped(&self) -> u64 {
        self.total - self.ring.len() as u64
    }

    /// The bytes from absolute offset `from` to the end, and how many bytes before them were
    /// asked for but are gone.
    pub(crate) fn since(&self, from: u64) -> (Vec<u8>, u64) {
        let start = from.max(self.dropped());
        let skip = (start - self.dropped()) as usize;
        (self.ring.range(skip..).copied().collect(), start - from)
    }

    /// Everything written, capped at `cap` bytes: the head and the tail with a note in
    /// between saying how much was left out.
    pub(crate) fn render(&self, cap: usize) -> String {
        if self.total <= cap as u64 {
            return lossy(&self.ring.iter().copied().collect::<Vec<_>>());
        }
        let half = cap / 2;
        let head = utf8_prefix(&self.head[..self.head.len().min(half)]);
        let tail_len = self.ring.len().min(half);
        let tail: Vec<u8> = self
            .ring
            .range(self.ring.len() - tail_len..)
            .copied()
            .collect();
        let tail = utf8_suffix(&tail);
        let omitted = self.total - head.len() as u64 - tail.len() as u64;
        join_with_note(head, omitted, tail)
    }
}

/// `bytes` as text, capped at `cap` bytes by keeping the head and the tail.
pub(crate) fn cap_bytes(bytes: &[u8], cap: usize) -> String {
    if bytes.len() <= cap {
        return lossy(bytes);
    }
    let half = cap / 2;
    let head = utf8_prefix(&bytes[..half]);
    let tail = utf8_suffix(&bytes[bytes.len() - half..]);
    let omitted = (bytes.len() - head.len() - tail.len()) as u64;
    join_with_note(head, omitted, tail)
}

fn join_with_note(head: &[u8], omitted: u64, tail: &[u8]) -> String {
    let mut out = lossy(head);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[... {} of output omitted ...]\n",
        human_bytes(omitted)
    ));
    out.push_str(&lossy(tail));
    out
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `bytes` without a character cut off at its end.
fn utf8_prefix(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(err) if err.error_len().is_none() => &bytes[..err.valid_up_to()],
        _ => bytes,
    }
}

/// `bytes` without a character cut off at its start.
fn utf8_suffix(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0b1100_0000 == 0b1000_0000)
        .count();
    &bytes[skip..]
}

/// `text` on one line (newlines as spaces), cut to `max` characters with an ellipsis.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_shown_whole() {
        let mut log = OutputLog::new(8, 64);
        log.push(b"hello\n");
        assert_eq!(log.render(100), "hello\n");
        assert_eq!(log.since(2), (b"llo\n".to_vec(), 0));
    }

    #[test]
    fn big_output_keeps_head_and_tail_and_says_what_was_omitted() {
        let mut log = OutputLog::new(10, 100);
        for i in 0..1000 {
            log.push(format!("{i:04}\n").as_bytes());
        }
        let text = log.render(20);
        assert!(
            text.starts_with("0000\n0001\n[... 5.0 KB of output omitted ...]\n"),
            "{text}"
        );
        assert!(text.ends_with("0998\n0999\n"), "{text}");
        assert_eq!(log.total(), 5000);
        assert_eq!(log.dropped(), 4900);
        // Asking for dropped bytes reports how many are gone.
        let (bytes, gone) = log.since(4000);
        assert_eq!(gone, 900);
        assert_eq!(bytes.len(), 100);
    }

    #[test]
    fn caps_respect_character_boundaries() {
        let text = "é".repeat(100);
        let capped = cap_bytes(text.as_bytes(), 11);
        assert!(!capped.contains('\u{fffd}'), "{capped}");
        assert!(capped.starts_with("éé\n[..."), "{capped}");
        assert!(capped.ends_with("éé"), "{capped}");
    }
}
