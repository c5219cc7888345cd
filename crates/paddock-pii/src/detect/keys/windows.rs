//! The windows the keys filter's expressions run on: the part of the line around each trigger,
//! widened to whitespace so tokens are never cut, merged in one forward pass.

use std::ops::Range;

use crate::scan::{ceil_char_boundary, floor_char_boundary};

/// How far before a trigger a window looks for the start of its line.
pub(super) const LINE_BACK: usize = 96;
/// How much further back a window reaches to the start of the token it begins in.
pub(super) const TOKEN_BACK: usize = 512;
/// How far after a trigger a window looks for the end of its line.
pub(super) const LINE_AHEAD: usize = 512;
/// How much further a window reaches to the end of the token it ends in.
pub(super) const TOKEN_AHEAD: usize = 16 * 1024;

/// Where the window of a trigger starting at `start` begins: the start of its line, at most
/// [`LINE_BACK`] bytes back, widened to whitespace by up to [`TOKEN_BACK`] more. Key names may
/// start well before a trigger (`MY_SERVICE_DB_PASSWORD`). Never decreases as `start` grows.
fn window_start(text: &str, start: usize) -> usize {
    let bytes = text.as_bytes();
    let start = start.min(bytes.len());
    let reach_back = start.saturating_sub(LINE_BACK);
    let mut from = memchr::memrchr(b'\n', &bytes[reach_back..start])
        .map_or(reach_back, |i| reach_back + i + 1);
    let floor = from.saturating_sub(TOKEN_BACK);
    while from > floor && !bytes[from - 1].is_ascii_whitespace() {
        from -= 1;
    }
    floor_char_boundary(text, from)
}

/// The part of the line around a trigger, widened to whitespace so tokens are never cut: from
/// [`window_start`] to the end of the line (at most [`LINE_AHEAD`] bytes on), widened to
/// whitespace by up to [`TOKEN_AHEAD`] more, since quoted values may run on after a trigger.
/// The definition [`Windows`] computes incrementally; kept for the tests that compare them.
#[cfg(test)]
pub(super) fn window_around(text: &str, start: usize, end: usize) -> Range<usize> {
    let bytes = text.as_bytes();
    let reach = (end + LINE_AHEAD).min(bytes.len());
    let mut to = bytes[end..reach]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(reach, |i| end + i);
    let ceiling = (to + TOKEN_AHEAD).min(bytes.len());
    while to < ceiling && !bytes[to].is_ascii_whitespace() {
        to += 1;
    }
    window_start(text, start)..ceil_char_boundary(text, to)
}

/// The first position at or after a query where a byte satisfies a predicate, remembered.
/// Trigger hits arrive in order, so queries rarely go backwards: the answer to one query
/// answers every later query up to it, and no byte before it is scanned again.
#[derive(Debug, Default)]
struct ForwardScan {
    /// The last query that scanned, and its answer (`len` when there was no match).
    from: usize,
    found: Option<usize>,
}

impl ForwardScan {
    fn next(&mut self, bytes: &[u8], at: usize, matches: impl Fn(u8) -> bool) -> usize {
        if let Some(found) = self.found
            && self.from <= at
            && at <= found
        {
            return found;
        }
        let found = bytes
            .get(at..)
            .and_then(|rest| rest.iter().position(|&b| matches(b)))
            .map_or(bytes.len(), |i| at + i);
        self.from = at;
        self.found = Some(found);
        found
    }
}

/// The merged windows of a text's trigger hits, built in one forward pass.
///
/// A hit's window starts at [`window_start`], which never decreases as hits move right, so a
/// hit that starts inside the current window, no earlier than the earliest hit already in it,
/// only ever extends that window's end; its start is computed (a bounded backward scan) only
/// for hits outside it. Window ends come from two [`ForwardScan`]s. Together every byte is
/// scanned a bounded number of times, however many triggers the text holds.
pub(super) struct Windows<'t> {
    text: &'t str,
    windows: Vec<Range<usize>>,
    /// The earliest start of a hit merged into the last window.
    first_hit: usize,
    newline: ForwardScan,
    whitespace: ForwardScan,
}

impl<'t> Windows<'t> {
    pub(super) fn new(text: &'t str) -> Windows<'t> {
        Windows {
            text,
            windows: Vec::new(),
            first_hit: 0,
            newline: ForwardScan::default(),
            whitespace: ForwardScan::default(),
        }
    }

    /// The end of the window of a trigger ending at `end` (see [`window_around`]).
    fn end(&mut self, end: usize) -> usize {
        let bytes = self.text.as_bytes();
        let end = end.min(bytes.len());
        let line_end = self
            .newline
            .next(bytes, end, |b| b == b'\n')
            .min(end.saturating_add(LINE_AHEAD))
            .min(bytes.len());
        let token_end = self
            .whitespace
            .next(bytes, line_end, |b| b.is_ascii_whitespace())
            .min(line_end.saturating_add(TOKEN_AHEAD))
            .min(bytes.len());
        ceil_char_boundary(self.text, token_end)
    }

    /// Adds the window of a trigger hit at `start..end`.
    pub(super) fn add(&mut self, start: usize, end: usize) {
        let to = self.end(end);
        if let Some(last) = self.windows.last_mut()
            && start >= self.first_hit
            && start <= last.end
        {
            last.end = last.end.max(to);
            return;
        }
        let from = window_start(self.text, start);
        match self.windows.last_mut() {
            Some(last) if from <= last.end => {
                last.start = last.start.min(from);
                last.end = last.end.max(to);
                self.first_hit = self.first_hit.min(start);
                // A window reaching back past its predecessor's end swallows it.
                while self.windows.len() >= 2 {
                    let n = self.windows.len();
                    if self.windows[n - 2].end < self.windows[n - 1].start {
                        break;
                    }
                    let merged = self.windows.remove(n - 1);
                    let previous = &mut self.windows[n - 2];
                    previous.start = previous.start.min(merged.start);
                    previous.end = previous.end.max(merged.end);
                }
            }
            _ => {
                self.windows.push(from..to);
                self.first_hit = start;
            }
        }
    }

    /// The windows, sorted and disjoint.
    pub(super) fn finish(self) -> Vec<Range<usize>> {
        self.windows
    }
}
