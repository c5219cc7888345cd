//! Private key blocks: PEM and OpenSSH, from the `BEGIN` line to the matching `END` line.

use regex::Regex;

use crate::finding::{Category, Finding};
use crate::scan::{Deadline, Expired};

/// Length of the key body after a `BEGIN` line with no `END`: base64 lines and `Name: value`
/// headers (a blank line is allowed only after headers), or, for a key pasted with escaped
/// newlines inside a string, the run of base64 and `\n` escapes.
fn truncated_body_len(rest: &str) -> usize {
    let is_base64 = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    if rest.starts_with("\\n") || rest.starts_with("\\r") {
        return rest
            .bytes()
            .position(|b| !(is_base64(b) || b == b'\\'))
            .unwrap_or(rest.len());
    }
    let mut consumed = 0;
    let mut after_header = false;
    let mut first = true;
    for line in rest.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        let header = content.split_once(": ").is_some_and(|(name, _)| {
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
        let body = !content.is_empty() && content.bytes().all(is_base64);
        let blank_ok = content.is_empty() && (first || after_header);
        if !(header || body || blank_ok) {
            break;
        }
        consumed += line.len();
        after_header = header;
        first = false;
    }
    rest[..consumed.min(rest.len())]
        .trim_end_matches(['\n', '\r'])
        .len()
}

/// Private key blocks, from the `BEGIN` line to the matching `END` line. A block cut off before
/// its `END` line is redacted up to the end of its base64 body, so a truncated paste still
/// loses the key material.
///
/// Blocks come in order, so the search for the next `END` line resumes from the last one found
/// (or ends for good once there is none), and the close of an `END` line is looked for only
/// within its bounded reach: every byte is scanned a bounded number of times.
pub(super) fn find_private_keys(
    text: &str,
    pem_begin: &Regex,
    out: &mut Vec<Finding>,
    deadline: &Deadline,
) -> Result<(), Expired> {
    const END: &[u8] = b"-----END ";
    const CLOSE: &[u8] = b"-----";
    /// The close of an `END` line must start within this many bytes of `-----END `.
    const CLOSE_REACH: usize = 64;
    let bytes = text.as_bytes();
    let end_finder = memchr::memmem::Finder::new(END);
    // The first `END` at or after `searched_from`, from the last search.
    let mut searched_from = 0;
    let mut next_end: Option<usize> = None;
    let mut searched = false;
    for begin in pem_begin.find_iter(text) {
        deadline.check()?;
        let body = begin.end();
        let stale = !searched || body < searched_from || next_end.is_some_and(|at| at < body);
        if stale {
            next_end = bytes
                .get(body..)
                .and_then(|rest| end_finder.find(rest))
                .map(|offset| body + offset);
            searched_from = body;
            searched = true;
        }
        let end = match next_end {
            Some(at) => {
                let after = at + END.len();
                let reach = (after + CLOSE_REACH - 1 + CLOSE.len()).min(bytes.len());
                match bytes
                    .get(after..reach)
                    .and_then(|window| memchr::memmem::find(window, CLOSE))
                {
                    Some(close) => after + close + CLOSE.len(),
                    None => after,
                }
            }
            None => body + truncated_body_len(text.get(body..).unwrap_or_default()),
        };
        out.push(Finding {
            range: begin.start()..end,
            category: Category::PrivateKey,
        });
    }
    Ok(())
}

/// The `BEGIN` line of a private key block.
pub(super) fn begin_line() -> Option<Regex> {
    Regex::new(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----").ok()
}
