//! E-mail addresses, found by expanding outwards from each `@`.
//!
//! A hand-written matcher instead of a regular expression: `@` is rare in prose, so `memchr`
//! skips almost everything, and the rules (local part, dotted domain, alphabetic TLD) are easier
//! to state and test as code than as one large pattern.

use crate::finding::{Category, Finding};
use crate::scan::{Deadline, Expired};

/// File extensions that follow `@` in asset names (`icon@2x.png`); none is a top-level domain.
const FILE_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "ico", "tif", "tiff", "avif", "heic", "js",
    "mjs", "cjs", "ts", "tsx", "jsx", "css", "scss", "json", "yaml", "yml", "toml", "lock", "txt",
    "html", "htm", "java", "kt", "swift", "cpp", "hpp", "wasm", "map", "pdf",
];

fn is_local_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'%' | b'+' | b'-' | b'\'')
}

fn is_domain_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.')
}

/// Appends every e-mail address in `text` to `out`.
///
/// Each `@` looks at most 64 bytes left and 255 bytes right, and neither reach crosses another
/// `@` (it is neither a local-part nor a domain byte), so every byte is looked at a bounded
/// number of times however the `@`s are spread.
pub(crate) fn find(text: &str, out: &mut Vec<Finding>, deadline: &Deadline) -> Result<(), Expired> {
    let bytes = text.as_bytes();
    let mut last_end = 0;
    for at in memchr::memchr_iter(b'@', bytes) {
        deadline.check()?;
        if at < last_end {
            continue;
        }
        if let Some(range) = match_at(bytes, at, last_end) {
            last_end = range.end;
            out.push(Finding {
                range,
                category: Category::Email,
            });
        }
    }
    Ok(())
}

fn match_at(bytes: &[u8], at: usize, floor: usize) -> Option<std::ops::Range<usize>> {
    // Local part: up to 64 bytes to the left.
    let mut start = at;
    while start > floor && at - start < 64 && is_local_byte(bytes[start - 1]) {
        start -= 1;
    }
    // Quotes and dots at the edges belong to the surrounding prose, not the address.
    while start < at && matches!(bytes[start], b'.' | b'\'' | b'-' | b'+') {
        start += 1;
    }
    if start == at || bytes[at - 1] == b'.' {
        return None;
    }
    if start > 0 && (bytes[start - 1] >= 0x80 || matches!(bytes[start - 1], b'/' | b'@')) {
        // `https://user@host`, `a@b@c` and non-ASCII local parts are not plain addresses.
        return None;
    }
    // Domain: labels separated by dots, to the right.
    let mut end = at + 1;
    while end < bytes.len() && end - at <= 255 && is_domain_byte(bytes[end]) {
        end += 1;
    }
    // A trailing dot or hyphen ends the sentence, not the domain.
    while end > at + 1 && matches!(bytes[end - 1], b'.' | b'-') {
        end -= 1;
    }
    let domain = std::str::from_utf8(bytes.get(at + 1..end)?).ok()?;
    if bytes
        .get(end)
        .is_some_and(|&b| b >= 0x80 || b == b'@' || b == b'_')
    {
        return None;
    }
    let mut labels = domain.split('.');
    let tld = labels.next_back()?;
    if domain.split('.').count() < 2 {
        return None;
    }
    let labels_ok = domain.split('.').all(|label| {
        !label.is_empty() && label.len() <= 63 && !label.starts_with('-') && !label.ends_with('-')
    });
    let tld_ok =
        (tld.len() >= 2 && tld.len() <= 24 && tld.bytes().all(|b| b.is_ascii_alphabetic()))
            || (tld.starts_with("xn--") && tld.len() > 4);
    let is_file = FILE_EXTENSIONS
        .iter()
        .any(|ext| tld.eq_ignore_ascii_case(ext));
    (labels_ok && tld_ok && !is_file).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emails(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(text, &mut out, &Deadline::none()).unwrap();
        out.iter().map(|f| &text[f.range.clone()]).collect()
    }

    #[test]
    fn finds_addresses() {
        assert_eq!(
            emails("write to jane.doe+tag@example.co.uk."),
            vec!["jane.doe+tag@example.co.uk"]
        );
        assert_eq!(
            emails("<a@b.io>, 'o'brien@mail.example.com'"),
            vec!["a@b.io", "o'brien@mail.example.com"]
        );
    }

    #[test]
    fn ignores_lookalikes() {
        assert!(emails("icon@2x.png lodash@4.17.21 @types/node user@localhost a@b").is_empty());
        assert!(emails("https://user@host.example.com/").is_empty());
        assert!(emails("@mention and foo@-bar.com").is_empty());
        assert_eq!(emails("mailto:jane@example.com"), vec!["jane@example.com"]);
    }
}
