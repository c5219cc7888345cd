//! The keys filter: private keys, recognised API keys, JWTs, `Authorization` credentials,
//! credential assignments and passwords in connection strings, run together so each keeps its
//! own marker (overlaps resolve to the most specific one, see [`crate::finding::normalise`]).
//!
//! A case-sensitive Aho-Corasick automaton over trigger strings (`ghp_`, `AKIA`, `password`,
//! `Bearer`, `://`, …) finds the few places worth a closer look; the regular expressions then
//! run only on windows around those places, so clean prose costs one automaton pass.
//!
//! Text dense with triggers (`SKSKSK…`, thousands of `BEGIN` lines) must stay linear too: the
//! windows are built in one forward pass whose scans resume where the previous trigger's scans
//! stopped, they are merged so the expressions see every byte at most once each, and each
//! private-key block's search for its `END` line resumes from the previous block's.

use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;

use crate::finding::{Category, Finding};
use crate::scan::{Deadline, Expired, ceil_char_boundary, floor_char_boundary};

/// Bytes that continue an API-key-like token; a match glued to one of these is part of a
/// longer token and is rejected.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// Extra validation after a pattern matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Token boundaries on both sides.
    Token,
    /// Token boundaries, and the body mixes upper case, lower case and digits (random keys do;
    /// slugs such as `sk-learn-tutorial-for-beginners` do not).
    MixedToken,
    /// The credential of an `Authorization` header or a bare `Bearer`/`Basic` value.
    Authorization,
    /// A `key = value` credential assignment.
    Assignment,
    /// A password in a URL or connection string, or after `curl -u user:`.
    UrlPassword,
    /// No further check.
    None,
}

struct KeyPattern {
    regex: Regex,
    category: Category,
    /// The capture group that is replaced; 0 is the whole match.
    group: usize,
    check: Check,
}

struct Keys {
    triggers: AhoCorasick,
    patterns: Vec<KeyPattern>,
    pem_begin: Regex,
}

/// Trigger strings. The automaton is case-sensitive for speed and precision, so keywords are
/// listed in the three spellings that occur in practice.
fn triggers() -> Vec<String> {
    let mut out: Vec<String> = [
        "-----BEGIN",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
        "AGPA",
        "AIDA",
        "AIPA",
        "ANPA",
        "ANVA",
        "APKA",
        "AROA",
        "ASCA",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "gldt-",
        "glrt-",
        "glptt-",
        "gloas-",
        "glcbt-",
        "glimt-",
        "glft-",
        "glsoat-",
        "glagent-",
        "xox",
        "xapp-",
        "hooks.slack.com",
        "sk_live_",
        "sk_test_",
        "rk_live_",
        "rk_test_",
        "whsec_",
        "AIza",
        "GOCSPX-",
        "ya29.",
        "sk-",
        "npm_",
        "pypi-",
        "hf_",
        "api_org_",
        "SK",
        "SG.",
        "eyJ",
        "vch_",
        "://",
        "-u ",
        "--user ",
        "Basic ",
        "Bearer ",
        "bearer ",
        "BEARER ",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for word in [
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "accesskey",
        "access_key",
        "privatekey",
        "private_key",
        "credential",
        "authorization",
        "bearer",
        "signingkey",
        "signing_key",
        "encryptionkey",
        "encryption_key",
        "authkey",
        "auth_key",
    ] {
        out.push(word.to_owned());
        out.push(word.to_ascii_uppercase());
        let mut capitalised = word.to_owned();
        if let Some(first) = capitalised.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        out.push(capitalised);
    }
    out.extend(
        [
            "apiKey",
            "accessKey",
            "privateKey",
            "signingKey",
            "encryptionKey",
            "authKey",
        ]
        .map(String::from),
    );
    out
}

/// Number of leading entries of [`triggers`] that always open a window; the rest are keywords
/// that only matter when an assignment follows them.
const ALWAYS_TRIGGERS: usize = 56;

/// Whether a keyword at `end` is followed, after the rest of its identifier and any closing
/// quote, by `:` or `=`: `DB_PASSWORD=`, `"api_key": `, `token :`. Prose ("the password
/// reset flow") is not, and skipping it keeps clean text fast.
fn assignment_follows(bytes: &[u8], end: usize) -> bool {
    let mut i = end;
    let limit = (end + 64).min(bytes.len());
    while i < limit && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'.' | b'-'))
    {
        i += 1;
    }
    while i < limit && matches!(bytes[i], b'"' | b'\'' | b' ' | b'\t') {
        i += 1;
    }
    i < bytes.len() && matches!(bytes[i], b':' | b'=')
}

static KEYS: LazyLock<Option<Keys>> = LazyLock::new(build);

fn build() -> Option<Keys> {
    let triggers = AhoCorasickBuilder::new()
        .match_kind(MatchKind::Standard)
        .build(triggers())
        .ok()?;
    let p = |pattern: &str, category: Category, group: usize, check: Check| -> Option<KeyPattern> {
        Some(KeyPattern {
            regex: Regex::new(pattern).ok()?,
            category,
            group,
            check,
        })
    };
    use Category::{ApiKey, Authorization, Credential, Jwt, Password};
    let patterns = vec![
        p(
            r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z2-7]{16}",
            ApiKey,
            0,
            Check::Token,
        )?,
        p(r"gh[pousr]_[A-Za-z0-9]{36,251}", ApiKey, 0, Check::Token)?,
        p(r"github_pat_[A-Za-z0-9_]{40,255}", ApiKey, 0, Check::Token)?,
        p(
            r"gl(?:pat|dt|rt|ptt|oas|cbt|imt|ft|soat|agent)-[A-Za-z0-9_-]{20,}",
            ApiKey,
            0,
            Check::Token,
        )?,
        p(
            r"xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}",
            ApiKey,
            0,
            Check::Token,
        )?,
        p(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}",
            ApiKey,
            0,
            Check::None,
        )?,
        p(
            r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,}",
            ApiKey,
            0,
            Check::Token,
        )?,
        p(
            r"AIza[0-9A-Za-z_-]{35}|GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[0-9A-Za-z_-]{20,}",
            ApiKey,
            0,
            Check::Token,
        )?,
        p(
            r"sk-ant-(?:api|admin|oat|ort|sid)\d{2}-[A-Za-z0-9_-]{20,}",
            ApiKey,
            0,
            Check::Token,
        )?,
        p(
            r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}",
            ApiKey,
            0,
            Check::MixedToken,
        )?,
        p(r"npm_[A-Za-z0-9]{36}", ApiKey, 0, Check::Token)?,
        p(
            r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
            ApiKey,
            0,
            Check::Token,
        )?,
        p(
            r"(?:hf_|api_org_)[A-Za-z0-9]{34,}",
            ApiKey,
            0,
            Check::MixedToken,
        )?,
        p(r"SK[0-9a-f]{32}", ApiKey, 0, Check::Token)?,
        p(
            r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
            ApiKey,
            0,
            Check::Token,
        )?,
        // Paddock's own vouchers: `vch_` and 32 random bytes in unpadded base64url.
        p(r"vch_[A-Za-z0-9_-]{43}", ApiKey, 0, Check::Token)?,
        p(
            r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
            Jwt,
            0,
            Check::Token,
        )?,
        p(
            r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(bearer|basic|token|digest|negotiate|apikey|sso-key|ntlm)\s+)?([^\s"',;]+)"#,
            Authorization,
            2,
            Check::Authorization,
        )?,
        p(
            r"\b(Bearer|bearer|BEARER|Basic)\s+([A-Za-z0-9._~+/-]{8,}=*)",
            Authorization,
            2,
            Check::Authorization,
        )?,
        p(
            r#"(?i)["']?([A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key|signing[_-]?key|encryption[_-]?key))["']?\s*(?::=|=>|[:=])[^\S\r\n]*("[^"\r\n]*"|'[^'\r\n]*'|`[^`\r\n]*`|[^\s,;'"`)}\]]+)"#,
            Credential,
            2,
            Check::Assignment,
        )?,
        p(
            r#"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@?#"'<>]{1,128}:([^\s@/"'<>]{1,256})@[A-Za-z0-9.\[\]_-]"#,
            Password,
            1,
            Check::UrlPassword,
        )?,
        p(
            r#"(?:^|\s)(?:-u|--user)\s+["']?[^\s:"']+:([^\s"']+)"#,
            Password,
            1,
            Check::UrlPassword,
        )?,
    ];
    let pem_begin = Regex::new(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----").ok()?;
    Some(Keys {
        triggers,
        patterns,
        pem_begin,
    })
}

/// Appends every secret in `text` to `out`.
pub(crate) fn find(text: &str, out: &mut Vec<Finding>, deadline: &Deadline) -> Result<(), Expired> {
    let Some(keys) = KEYS.as_ref() else {
        return Ok(());
    };
    let bytes = text.as_bytes();
    let (windows, pem) = trigger_windows(keys, text, deadline)?;
    if windows.is_empty() {
        return Ok(());
    }
    if pem {
        find_private_keys(text, keys, out, deadline)?;
    }
    for window in &windows {
        let Some(slice) = text.get(window.clone()) else {
            continue;
        };
        for pattern in &keys.patterns {
            deadline.check()?;
            for captures in pattern.regex.captures_iter(slice) {
                let Some(value) = captures.get(pattern.group) else {
                    continue;
                };
                let whole = captures.get(0).map_or(value.range(), |m| m.range());
                let range = window.start + value.start()..window.start + value.end();
                let whole = window.start + whole.start..window.start + whole.end;
                if let Some(category) = accept(pattern, bytes, &captures, &range, &whole) {
                    out.push(Finding {
                        range: unquote(bytes, range),
                        category,
                    });
                }
            }
        }
    }
    Ok(())
}

/// The merged windows around the text's triggers, and whether a private-key `BEGIN` occurs.
fn trigger_windows(
    keys: &Keys,
    text: &str,
    deadline: &Deadline,
) -> Result<(Vec<Range<usize>>, bool), Expired> {
    let bytes = text.as_bytes();
    let mut windows = Windows::new(text);
    let mut pem = false;
    for hit in keys.triggers.find_overlapping_iter(text) {
        deadline.check()?;
        let index = hit.pattern().as_usize();
        if index == 0 {
            pem = true;
        }
        if index >= ALWAYS_TRIGGERS && !assignment_follows(bytes, hit.end()) {
            continue;
        }
        windows.add(hit.start(), hit.end());
    }
    Ok((windows.finish(), pem))
}

/// A quoted value loses its content, not its quotes, so the surrounding syntax survives.
fn unquote(bytes: &[u8], range: Range<usize>) -> Range<usize> {
    let quoted = range.len() >= 2
        && matches!(bytes.get(range.start), Some(b'"' | b'\'' | b'`'))
        && bytes.get(range.start) == bytes.get(range.end - 1);
    if quoted {
        range.start + 1..range.end - 1
    } else {
        range
    }
}

/// How far before a trigger a window looks for the start of its line.
const LINE_BACK: usize = 96;
/// How much further back a window reaches to the start of the token it begins in.
const TOKEN_BACK: usize = 512;
/// How far after a trigger a window looks for the end of its line.
const LINE_AHEAD: usize = 512;
/// How much further a window reaches to the end of the token it ends in.
const TOKEN_AHEAD: usize = 16 * 1024;

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
fn window_around(text: &str, start: usize, end: usize) -> Range<usize> {
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
struct Windows<'t> {
    text: &'t str,
    windows: Vec<Range<usize>>,
    /// The earliest start of a hit merged into the last window.
    first_hit: usize,
    newline: ForwardScan,
    whitespace: ForwardScan,
}

impl<'t> Windows<'t> {
    fn new(text: &'t str) -> Windows<'t> {
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
    fn add(&mut self, start: usize, end: usize) {
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
    fn finish(self) -> Vec<Range<usize>> {
        self.windows
    }
}

fn accept(
    pattern: &KeyPattern,
    bytes: &[u8],
    captures: &regex::Captures<'_>,
    range: &Range<usize>,
    whole: &Range<usize>,
) -> Option<Category> {
    let value = std::str::from_utf8(bytes.get(range.clone())?).ok()?;
    let token_edges = || {
        let left = whole.start == 0
            || !bytes
                .get(whole.start - 1)
                .copied()
                .is_some_and(is_token_byte);
        let right = !bytes.get(whole.end).copied().is_some_and(is_token_byte);
        left && right
    };
    match pattern.check {
        Check::None => Some(pattern.category),
        Check::Token => token_edges().then_some(pattern.category),
        Check::MixedToken => (token_edges() && mixed(value)).then_some(pattern.category),
        Check::Authorization => {
            // Without a scheme the value must look like a token on its own
            // (`authorization: required` is configuration, not a credential).
            let schemed = captures.get(1).is_some();
            (authorization_ok(value) && (schemed || (value.len() >= 16 && mixed(value))))
                .then_some(pattern.category)
        }
        Check::UrlPassword => (!placeholder(value)).then_some(pattern.category),
        Check::Assignment => {
            let key = captures.get(1).map_or("", |m| m.as_str());
            assignment_category(key, value)
        }
    }
}

/// Random keys mix digits with letters of both cases.
fn mixed(value: &str) -> bool {
    let body = value.rsplit(['-', '_']).next().unwrap_or(value);
    let source = if body.len() >= 16 { body } else { value };
    source.bytes().any(|b| b.is_ascii_digit())
        && source.bytes().any(|b| b.is_ascii_uppercase())
        && source.bytes().any(|b| b.is_ascii_lowercase())
}

fn authorization_ok(value: &str) -> bool {
    let value = value.trim();
    value.len() >= 8
        && !placeholder(value)
        && (value.bytes().any(|b| b.is_ascii_digit())
            || value
                .bytes()
                .any(|b| matches!(b, b'+' | b'/' | b'=' | b'.' | b'_' | b'-'))
            || mixed_case(value))
}

fn mixed_case(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_uppercase()) && value.bytes().any(|b| b.is_ascii_lowercase())
}

/// Values that name or stand for a secret rather than being one: markers left by an earlier
/// filter, template and environment references, masks and type names.
fn placeholder(value: &str) -> bool {
    let value = value.trim();
    let lower = value.to_ascii_lowercase();
    const WORDS: &[&str] = &[
        "",
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "required",
        "optional",
        "string",
        "str",
        "bool",
        "boolean",
        "int",
        "number",
        "bytes",
        "redacted",
        "hidden",
        "secret",
        "password",
        "token",
        "changeme?",
        "empty",
        "unset",
        "n/a",
        "na",
        "todo",
        "tbd",
    ];
    WORDS.contains(&lower.as_str())
        || (value.starts_with('[') && value.ends_with(']'))
        || (value.starts_with('<') && value.ends_with('>'))
        || value.starts_with("${")
        || value.starts_with("{{")
        || value.starts_with("%(")
        || value.starts_with('$')
            && value.len() > 1
            && value[1..]
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
        || value
            .bytes()
            .all(|b| matches!(b, b'*' | b'x' | b'X' | b'.' | b'#' | b'-' | b'?'))
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("env(")
        || lower.starts_with("env.")
}

/// Words that follow "password:" in prose ("Password: the one you chose") rather than in a
/// configuration file.
const PROSE_WORDS: &[&str] = &[
    "the", "a", "an", "is", "was", "are", "be", "your", "my", "our", "their", "his", "her", "its",
    "this", "that", "same", "one", "you", "not", "must", "should", "will", "can", "reset",
    "changed", "expired", "field", "prompt", "input", "type", "value", "see", "use", "if", "when",
    "and", "or", "for", "to", "of", "in", "on", "with", "as", "it", "we", "they", "please",
    "enter", "set", "new", "old", "provided", "stored", "missing", "invalid",
];

fn assignment_category(key: &str, raw_value: &str) -> Option<Category> {
    let lower_key = key.to_ascii_lowercase();
    let quoted = raw_value.len() >= 2
        && matches!(raw_value.as_bytes()[0], b'"' | b'\'' | b'`')
        && raw_value.as_bytes()[0] == raw_value.as_bytes()[raw_value.len() - 1];
    let value = if quoted {
        &raw_value[1..raw_value.len() - 1]
    } else {
        raw_value
    };
    // The secret word must end the key at a word boundary: `db_password`, `apiKey` and
    // `client-secret` count, `max_tokens`, `token_count` and `secret_name` do not (the regex
    // already anchors the word at the end; this checks the boundary before it).
    let words = [
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "accesskey",
        "access_key",
        "access-key",
        "privatekey",
        "private_key",
        "private-key",
        "client_secret",
        "clientsecret",
        "client-secret",
        "credentials",
        "credential",
        "authkey",
        "auth_key",
        "auth-key",
        "signingkey",
        "signing_key",
        "signing-key",
        "encryptionkey",
        "encryption_key",
        "encryption-key",
    ];
    let word = words
        .iter()
        .filter(|w| lower_key.ends_with(*w))
        .max_by_key(|w| w.len())?;
    let prefix_len = key.len() - word.len();
    if prefix_len > 0 {
        let before = key.as_bytes()[prefix_len - 1];
        let first = key.as_bytes()[prefix_len];
        let boundary = matches!(before, b'_' | b'-' | b'.')
            || (before.is_ascii_lowercase() && first.is_ascii_uppercase())
            || before.is_ascii_digit();
        if !boundary {
            return None;
        }
    }
    if placeholder(value) {
        return None;
    }
    let is_password = matches!(*word, "password" | "passwd" | "passphrase" | "pwd");
    if !quoted {
        // Code, not a literal: `password = self.password`, `token: Option<String>`,
        // `secret = get_secret()`.
        let dotted_path = value.contains('.')
            && value.split('.').all(|part| {
                !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
            && value
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic());
        if dotted_path || value.contains('(') || value.contains('<') {
            return None;
        }
        if PROSE_WORDS.contains(&value.to_ascii_lowercase().as_str()) {
            return None;
        }
        if (lower_key == "pwd" || lower_key == "oldpwd")
            && (value.starts_with('/') || value.starts_with('~'))
        {
            return None;
        }
    }
    let min_len = if is_password { 3 } else { 8 };
    if value.chars().count() < min_len {
        return None;
    }
    Some(if is_password {
        Category::Password
    } else {
        Category::Credential
    })
}

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
fn find_private_keys(
    text: &str,
    keys: &Keys,
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
    for begin in keys.pem_begin.find_iter(text) {
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

#[cfg(test)]
mod tests {
    use proptest::prelude::{Just, Strategy, prop, prop_oneof};

    use super::*;
    use crate::finding::{apply, normalise};

    fn redact(text: &str) -> String {
        let mut out = Vec::new();
        find(text, &mut out, &Deadline::none()).unwrap();
        normalise(&mut out);
        apply(text, &out).unwrap_or_else(|| text.to_owned())
    }

    #[test]
    fn trigger_groups() {
        let all = triggers();
        assert_eq!(all[ALWAYS_TRIGGERS - 1], "BEARER ");
        assert_eq!(all[ALWAYS_TRIGGERS], "password");
    }

    #[test]
    fn api_keys() {
        assert_eq!(redact("key AKIAIOSFODNN7EXAMPLE ok"), "key [API_KEY] ok");
        assert_eq!(
            redact("export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345"),
            "export GITHUB_TOKEN=[API_KEY]"
        );
        assert_eq!(
            redact("sk-learn-tutorial-for-beginners-part-two"),
            "sk-learn-tutorial-for-beginners-part-two"
        );
    }

    #[test]
    fn assignments() {
        assert_eq!(redact("DB_PASSWORD=hunter22"), "DB_PASSWORD=[PASSWORD]");
        assert_eq!(
            redact(r#"{"api_key": "abcd1234efgh5678"}"#),
            r#"{"api_key": "[CREDENTIAL]"}"#
        );
        assert_eq!(redact("max_tokens: 1024"), "max_tokens: 1024");
        assert_eq!(
            redact("password = self.password"),
            "password = self.password"
        );
        assert_eq!(
            redact("Password: the one you chose"),
            "Password: the one you chose"
        );
    }

    #[test]
    fn urls_and_headers() {
        assert_eq!(
            redact("postgres://app:s3cr3t@db.internal:5432/app"),
            "postgres://app:[PASSWORD]@db.internal:5432/app"
        );
        assert_eq!(
            redact("Authorization: Bearer abcDEF123456ghi"),
            "Authorization: Bearer [AUTHORIZATION]"
        );
    }

    /// The windows as defined: each accepted trigger's own [`window_around`], merged.
    fn reference_windows(text: &str) -> Vec<Range<usize>> {
        let keys = KEYS.as_ref().unwrap();
        let mut windows: Vec<Range<usize>> = keys
            .triggers
            .find_overlapping_iter(text)
            .filter(|hit| {
                hit.pattern().as_usize() < ALWAYS_TRIGGERS
                    || assignment_follows(text.as_bytes(), hit.end())
            })
            .map(|hit| window_around(text, hit.start(), hit.end()))
            .collect();
        windows.sort_by_key(|window| window.start);
        let mut merged: Vec<Range<usize>> = Vec::new();
        for window in windows {
            match merged.last_mut() {
                Some(last) if window.start <= last.end => last.end = last.end.max(window.end),
                _ => merged.push(window),
            }
        }
        merged
    }

    /// Pieces that put triggers, line ends and token ends near every reach of a window.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(triggers()),
            Just(" ".to_owned()),
            Just("\n".to_owned()),
            Just("=".to_owned()),
            Just("é".to_owned()),
            (1usize..40).prop_map(|n| "a".repeat(n)),
            (
                prop::sample::select(vec![LINE_BACK, TOKEN_BACK, LINE_AHEAD]),
                0usize..8
            )
                .prop_map(|(reach, n)| "b".repeat(reach + n - 4)),
            (0usize..8).prop_map(|n| "c".repeat(TOKEN_AHEAD + n - 4)),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// The one-pass windows are exactly the union of every trigger's own window, so no
        /// value loses context at a window's edge.
        #[test]
        fn incremental_windows_are_the_union_of_every_triggers_window(
            pieces in proptest::collection::vec(piece(), 0..40)
        ) {
            let text = pieces.concat();
            let keys = KEYS.as_ref().unwrap();
            let (windows, _) = trigger_windows(keys, &text, &Deadline::none()).unwrap();
            proptest::prop_assert_eq!(windows, reference_windows(&text));
        }
    }

    #[test]
    fn dense_triggers_and_begin_lines_stay_linear_and_correct() {
        // Every `ghp_` token in a text full of triggers is still found.
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let text = format!(
            "{} {token} {}",
            "SK".repeat(50_000),
            "token=".repeat(10_000)
        );
        assert!(redact(&text).contains(" [API_KEY] "), "the token survived");
        // Many BEGIN lines, one END at the very end: one block, found once.
        let text = format!(
            "{}-----END RSA PRIVATE KEY-----\nafter",
            "-----BEGIN RSA PRIVATE KEY-----\n".repeat(20_000)
        );
        assert_eq!(redact(&text), "[PRIVATE_KEY]\nafter");
    }

    #[test]
    fn private_keys() {
        let text = "x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----\ny";
        assert_eq!(redact(text), "x\n[PRIVATE_KEY]\ny");
        let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n\nthanks";
        assert_eq!(redact(cut), "[PRIVATE_KEY]\n\nthanks");
        let escaped = r#"{"key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\nBgkqhkiG9w0B\n"}"#;
        assert_eq!(redact(escaped), r#"{"key": "[PRIVATE_KEY]"}"#);
    }
}
