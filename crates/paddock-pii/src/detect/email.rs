//! E-mail addresses, found by expanding outwards from each `@`.
//!
//! A hand-written matcher instead of a regular expression: `@` is rare in prose, so `memchr`
//! skips almost everything, and the rules (local part, dotted domain, alphabetic TLD) are easier
//! to state and test as code than as one large pattern. Full-width forms (`ｎａｍｅ＠ｅｘａｍｐｌｅ．ｊｐ`)
//! and zero-width characters reach this matcher already normalised (see `normalise`).

use std::ops::Range;

use crate::finding::{Category, Finding};
use crate::scan::{Deadline, Expired, is_latin_letter};

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

/// Whether `c` can be part of a local part: an ASCII local byte or a letter of the Latin
/// script with accents (`josé`, `müller`).
fn is_local_char(c: char) -> bool {
    if c.is_ascii() {
        is_local_byte(c as u8)
    } else {
        is_latin_letter(c)
    }
}

/// Whether `c` can be part of a domain: an ASCII domain byte or an accented Latin letter of
/// an internationalised domain (`exämple.de`).
fn is_domain_char(c: char) -> bool {
    if c.is_ascii() {
        is_domain_byte(c as u8)
    } else {
        is_latin_letter(c)
    }
}

/// Appends every e-mail address in `text` to `out`.
///
/// Each `@` looks at most 64 bytes left and 255 bytes right, and neither reach crosses another
/// `@` (it is neither a local-part nor a domain character), so every byte is looked at a
/// bounded number of times however the `@`s are spread.
pub(crate) fn find(text: &str, out: &mut Vec<Finding>, deadline: &Deadline) -> Result<(), Expired> {
    let mut last_end = 0;
    for at in memchr::memchr_iter(b'@', text.as_bytes()) {
        deadline.check()?;
        if at < last_end {
            continue;
        }
        if let Some(range) = match_at(text, at, last_end) {
            last_end = range.end;
            out.push(Finding {
                range,
                category: Category::Email,
            });
        }
    }
    Ok(())
}

/// The address around the `@` at `at`, not reaching left of `floor`.
///
/// Letters of other scripts than Latin (CJK, Hangul, Thai, Arabic, Cyrillic, …) and
/// non-ASCII punctuation end an address: Chinese and Japanese write an address right against
/// the sentence (`请发邮件到4716957890@qq.com，`), and the address starts at its first ASCII
/// character.
fn match_at(text: &str, at: usize, floor: usize) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    // Local part: up to 64 bytes to the left.
    let mut start = at;
    while start > floor && at - start < 64 {
        match text
            .get(..start)
            .and_then(|before| before.chars().next_back())
        {
            Some(c) if is_local_char(c) => start -= c.len_utf8(),
            _ => break,
        }
    }
    // Quotes and dots at the edges belong to the surrounding prose, not the address.
    while start < at && matches!(bytes[start], b'.' | b'\'' | b'-' | b'+') {
        start += 1;
    }
    if start == at || bytes[at - 1] == b'.' {
        return None;
    }
    if start > 0 && matches!(bytes[start - 1], b'/' | b'@') {
        // `https://user@host` and `a@b@c` are not plain addresses.
        return None;
    }
    // Domain: labels separated by dots, to the right.
    let mut end = at + 1;
    while end - at <= 255 {
        match text.get(end..).and_then(|after| after.chars().next()) {
            Some(c) if is_domain_char(c) => end += c.len_utf8(),
            _ => break,
        }
    }
    // A trailing dot or hyphen ends the sentence, not the domain.
    while end > at + 1 && matches!(bytes[end - 1], b'.' | b'-') {
        end -= 1;
    }
    let domain = text.get(at + 1..end)?;
    if bytes.get(end).is_some_and(|&b| b == b'@' || b == b'_') {
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
    fn other_scripts_end_an_address() {
        let cases = [
            ("请发邮件到4716957890@qq.com，", "4716957890@qq.com"),
            ("連絡先：name@example.co.jp まで", "name@example.co.jp"),
            ("メールはtaro@example.jpです", "taro@example.jp"),
            ("「hanako@example.jp」に", "hanako@example.jp"),
            ("（li.wei@163.com）", "li.wei@163.com"),
            ("이메일은kim@naver.com입니다", "kim@naver.com"),
            ("อีเมลsomchai@example.co.thครับ", "somchai@example.co.th"),
            ("البريد:ahmed@example.com.sa،", "ahmed@example.com.sa"),
            ("почтаivan@mail.ru, звоните", "ivan@mail.ru"),
            ("Пишите на olga@yandex.ru.", "olga@yandex.ru"),
        ];
        for (text, address) in cases {
            assert_eq!(emails(text), vec![address], "{text}");
        }
    }

    #[test]
    fn accented_latin_letters_belong_to_the_address() {
        assert_eq!(emails("an müller@example.de"), vec!["müller@example.de"]);
        assert_eq!(emails("josé@exämple.com."), vec!["josé@exämple.com"]);
        assert_eq!(
            emails("e\u{301}lodie@example.fr"),
            vec!["e\u{301}lodie@example.fr"]
        );
        assert!(emails("a@example.cöm").is_empty());
    }

    #[test]
    fn ignores_lookalikes() {
        assert!(emails("icon@2x.png lodash@4.17.21 @types/node user@localhost a@b").is_empty());
        assert!(emails("https://user@host.example.com/").is_empty());
        assert!(emails("@mention and foo@-bar.com").is_empty());
        assert_eq!(emails("mailto:jane@example.com"), vec!["jane@example.com"]);
    }
}
