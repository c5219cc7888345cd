//! The keys filter: private keys, recognised API keys, JWTs, `Authorization` credentials,
//! credential assignments, passwords in URLs, connection strings and prose, run together so
//! each keeps its own marker (overlaps resolve to the most specific one, see
//! [`crate::finding::normalise`]).
//!
//! A case-sensitive Aho-Corasick automaton over trigger strings (`ghp_`, `AKIA`, `password`,
//! `Bearer`, `://`, …) finds the few places worth a closer look; the regular expressions then
//! run only on windows around those places, so clean prose costs one automaton pass. Password
//! labels in prose ("my password is …", "Passwort: …") are judged on the spot instead, by a
//! bounded look at what follows them ([`prose`]).
//!
//! Only the secret is reported, never its surroundings: the password of a URL's userinfo, not
//! the host and path after it; the last segment of a Slack or Discord webhook, not the host;
//! the values of secret-named query parameters, not their names; the password or account key
//! of a connection string, not the server.
//!
//! Text dense with triggers (`SKSKSK…`, thousands of `BEGIN` lines) must stay linear too: the
//! windows are built in one forward pass whose scans resume where the previous trigger's scans
//! stopped ([`windows`]), they are merged so the expressions see every byte at most once each,
//! and each private-key block's search for its `END` line resumes from the previous block's
//! ([`pem`]).

mod pem;
mod prose;
mod values;
mod windows;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::{Captures, Regex};

use crate::finding::{Category, Finding};
use crate::scan::{Deadline, Expired};
use values::{assignment_category, authorization_ok, mixed, placeholder, random_looking};
use windows::Windows;

/// Bytes that continue an API-key-like token; a match glued to one of these is part of a
/// longer token and is rejected.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// Bytes of base64 text; a Google refresh token (`1//0…`) glued to one is inside a blob.
fn is_base64_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'_' | b'-')
}

/// Extra validation after a pattern matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Token boundaries on both sides.
    Token,
    /// Token boundaries, and the body mixes upper case, lower case and digits (random keys do;
    /// slugs such as `sk-learn-tutorial-for-beginners` do not).
    MixedToken,
    /// Token boundaries, and the body looks generated ([`random_looking`]): for vendors whose
    /// keys may lack digits or one case.
    RandomToken,
    /// Base64 boundaries on both sides (a `1//0…` inside an image blob is not a token).
    Base64Token,
    /// The credential of an `Authorization` header or a bare `Bearer`/`Basic` value.
    Authorization,
    /// A `key = value` credential assignment (groups: key, separator, value).
    Assignment,
    /// A command-line flag and its value: `--token VALUE` (groups: flag, value).
    Flag,
    /// The password of a URL's userinfo, or after `curl -u user:`.
    UrlPassword,
    /// A URL's userinfo that is a token on its own: `https://TOKEN@host`.
    UrlToken,
    /// A query parameter: `?sig=…`, `&signature=…` (groups: name, value).
    Query,
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

/// What a trigger string starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// The `BEGIN` line of a private key: the block search runs, and a window opens.
    PemBegin,
    /// A key prefix or URL part: a window opens wherever it occurs with at least `body` token
    /// bytes after it.
    Always { body: usize },
    /// A secret's name (`password`, `token`): a window opens only when an assignment or a
    /// command-line value follows.
    Keyword,
    /// A password label of prose ("Passwort", "mot de passe"): the value after it is judged
    /// directly.
    Label,
    /// Both a secret's name and a prose label (`password`).
    KeywordAndLabel,
}

impl Trigger {
    fn label(self) -> bool {
        matches!(self, Trigger::Label | Trigger::KeywordAndLabel)
    }
}

struct Keys {
    triggers: AhoCorasick,
    /// What each trigger pattern of [`Keys::triggers`] starts, by pattern index.
    kinds: Vec<Trigger>,
    patterns: Vec<KeyPattern>,
    pem_begin: Regex,
}

/// Key prefixes and URL parts that always open a window, each with the number of token bytes
/// (`[A-Za-z0-9_-]`) that must follow it: a prefix is a key only with its body, and prose
/// says "key-value" and "SKU" often enough for the difference to show (0: no requirement).
const ALWAYS: &[(&str, usize)] = &[
    ("AKIA", 16),
    ("ASIA", 16),
    ("ABIA", 16),
    ("ACCA", 16),
    ("AGPA", 16),
    ("AIDA", 16),
    ("AIPA", 16),
    ("ANPA", 16),
    ("ANVA", 16),
    ("APKA", 16),
    ("AROA", 16),
    ("ASCA", 16),
    ("ghp_", 36),
    ("gho_", 36),
    ("ghu_", 36),
    ("ghs_", 36),
    ("ghr_", 36),
    ("github_pat_", 22),
    ("glpat-", 20),
    ("gldt-", 20),
    ("glrt-", 20),
    ("glptt-", 20),
    ("gloas-", 20),
    ("glcbt-", 20),
    ("glimt-", 20),
    ("glft-", 20),
    ("glsoat-", 20),
    ("glagent-", 20),
    ("xox", 10),
    ("xapp-", 10),
    ("hooks.slack.com", 0),
    ("/api/webhooks/", 0),
    ("sk_live_", 16),
    ("sk_test_", 16),
    ("rk_live_", 16),
    ("rk_test_", 16),
    ("whsec_", 0),
    ("AIza", 35),
    ("GOCSPX-", 28),
    ("ya29.", 20),
    ("1//0", 40),
    ("sk-", 20),
    ("npm_", 36),
    ("pypi-", 50),
    ("hf_", 34),
    ("api_org_", 34),
    ("SK", 32),
    ("SG.", 22),
    ("eyJ", 5),
    ("vch_", 43),
    ("dapi", 32),
    ("vcp_", 24),
    ("vci_", 24),
    ("vca_", 24),
    ("vcr_", 24),
    ("vck_", 24),
    ("vercel_", 24),
    ("sbp_", 40),
    ("sb_secret_", 20),
    ("lin_api_", 40),
    ("key-", 32),
    ("postmark", 0),
    ("Postmark", 0),
    ("POSTMARK", 0),
    ("AccountKey=", 0),
    ("SharedAccessKey=", 0),
    ("sig=", 0),
    ("://", 0),
    ("-u ", 0),
    ("--user ", 0),
    ("Basic ", 0),
    ("Bearer ", 0),
    ("bearer ", 0),
    ("BEARER ", 0),
];

/// Secret names, in lower case; each is also a trigger Capitalised and in UPPER CASE.
const KEYWORDS: &[&str] = &[
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
];

/// Secret names in camel case, which the three spellings of [`KEYWORDS`] miss.
const CAMEL_KEYWORDS: &[&str] = &[
    "apiKey",
    "accessKey",
    "privateKey",
    "signingKey",
    "encryptionKey",
    "authKey",
];

/// Every trigger string and what it starts. The automaton is case-sensitive for speed and
/// precision, so words are listed in the spellings that occur in practice.
fn trigger_table() -> Vec<(String, Trigger)> {
    let mut table: Vec<(String, Trigger)> = vec![("-----BEGIN".to_owned(), Trigger::PemBegin)];
    table.extend(
        ALWAYS
            .iter()
            .map(|(s, body)| ((*s).to_owned(), Trigger::Always { body: *body })),
    );
    let mut words: Vec<String> = Vec::new();
    for word in KEYWORDS {
        words.push((*word).to_owned());
        words.push(word.to_ascii_uppercase());
        let mut capitalised = (*word).to_owned();
        if let Some(first) = capitalised.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        words.push(capitalised);
    }
    words.extend(CAMEL_KEYWORDS.iter().map(|s| (*s).to_owned()));
    table.extend(words.into_iter().map(|word| (word, Trigger::Keyword)));
    let mut index: HashMap<String, usize> = table
        .iter()
        .enumerate()
        .map(|(i, (s, _))| (s.clone(), i))
        .collect();
    for label in prose::label_triggers() {
        match index.get(&label) {
            Some(&i) if table[i].1 == Trigger::Keyword => table[i].1 = Trigger::KeywordAndLabel,
            Some(_) => {}
            None => {
                index.insert(label.clone(), table.len());
                table.push((label, Trigger::Label));
            }
        }
    }
    table
}

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

/// Whether a keyword at `start..end` ends a command-line flag followed by a space:
/// `--token hf_…`, `--api-key KEY`. Bounded: flag names are short.
fn flag_follows(bytes: &[u8], start: usize, end: usize) -> bool {
    if !matches!(bytes.get(end), Some(b' ' | b'\t')) {
        return false;
    }
    let floor = start.saturating_sub(64);
    let mut i = start;
    while i > floor && (bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'_' | b'-'))
    {
        i -= 1;
    }
    bytes.get(i) == Some(&b'-') && (i == 0 || bytes[i - 1].is_ascii_whitespace())
}

/// Whether at least `body` token bytes follow `end`. Bounded by `body`.
fn body_follows(bytes: &[u8], end: usize, body: usize) -> bool {
    bytes
        .get(end..)
        .unwrap_or_default()
        .iter()
        .take(body)
        .take_while(|b| is_token_byte(**b))
        .count()
        >= body
}

/// Whether a keyword hit at `start..end` opens a window.
fn keyword_opens_window(bytes: &[u8], start: usize, end: usize) -> bool {
    assignment_follows(bytes, end) || flag_follows(bytes, start, end)
}

static KEYS: LazyLock<Option<Keys>> = LazyLock::new(build);

fn build() -> Option<Keys> {
    let table = trigger_table();
    // A DFA: the automaton reads every byte of every text, and with a few hundred patterns a
    // DFA is several times faster than the default NFA on clean prose.
    let triggers = AhoCorasickBuilder::new()
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(table.iter().map(|(s, _)| s))
        .ok()?;
    let kinds = table.iter().map(|(_, kind)| *kind).collect();
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
        // Fine-grained personal access tokens: 22 and 59 base62 characters.
        p(
            r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
            ApiKey,
            0,
            Check::Token,
        )?,
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
        // A webhook's secret is its last path segment; the host and the ids before it stay.
        p(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?:[A-Za-z0-9_-]+/)+([A-Za-z0-9_-]{16,})",
            ApiKey,
            1,
            Check::Token,
        )?,
        p(
            r"discord(?:app)?\.com/api/webhooks/\d{15,21}/([A-Za-z0-9_-]{40,100})",
            ApiKey,
            1,
            Check::Token,
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
        // Google OAuth refresh tokens.
        p(r"1//0[A-Za-z0-9_-]{40,}", ApiKey, 0, Check::Base64Token)?,
        p(
            r"sk-ant-(?:api|admin|oat|ort|sid)\d{2}-[A-Za-z0-9_-]{20,}",
            ApiKey,
            0,
            Check::Token,
        )?,
        // OpenAI project, service-account and admin keys.
        p(
            r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}",
            ApiKey,
            0,
            Check::RandomToken,
        )?,
        p(
            r"sk-(?:None-)?[A-Za-z0-9_-]{20,}",
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
        // Hugging Face user and organisation tokens: letters only, or letters and digits.
        p(
            r"(?:hf_|api_org_)[A-Za-z0-9]{34,}",
            ApiKey,
            0,
            Check::RandomToken,
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
        // Databricks personal access tokens, maybe with the `-2` suffix of newer ones.
        p(r"dapi[0-9a-f]{32}(?:-\d)?", ApiKey, 0, Check::RandomToken)?,
        // Vercel: personal, integration, app access and refresh tokens, API keys; Blob tokens.
        p(
            r"vc[pikar]_[A-Za-z0-9]{24,}|vercel_[A-Za-z0-9_]{24,}",
            ApiKey,
            0,
            Check::RandomToken,
        )?,
        // Supabase personal access tokens and secret API keys (publishable keys are public).
        p(r"sbp_[0-9a-f]{40}", ApiKey, 0, Check::RandomToken)?,
        p(
            r"sb_secret_[A-Za-z0-9_-]{20,}",
            ApiKey,
            0,
            Check::RandomToken,
        )?,
        p(r"lin_api_[A-Za-z0-9]{40}", ApiKey, 0, Check::RandomToken)?,
        // Mailgun private API keys.
        p(r"key-[0-9a-z]{32}", ApiKey, 0, Check::RandomToken)?,
        // Postmark server and account tokens are UUIDs: only with their label.
        p(
            r#"(?i)(?:x-postmark-(?:server|account)-token|postmark[a-z0-9_.-]*(?:token|key)|postmark\.(?:server|account)client\(\s*)["']?\s*[:=]?\s*["']?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"#,
            ApiKey,
            1,
            Check::None,
        )?,
        // Azure storage and Service Bus connection strings: the key only.
        p(
            r"(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,}={0,2})",
            ApiKey,
            1,
            Check::None,
        )?,
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
            r#"(?i)["']?([A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key|signing[_-]?key|encryption[_-]?key))["']?\s*(:=|=>|[:=])[^\S\r\n]*("[^"\r\n]*"|'[^'\r\n]*'|`[^`\r\n]*`|[^\s,;'"`)}\]]+)"#,
            Credential,
            3,
            Check::Assignment,
        )?,
        p(
            r#"(?:^|[\s"'])(--?[A-Za-z][A-Za-z0-9_-]*)[ \t]+("[^"\r\n]*"|'[^'\r\n]*'|[^\s"'`]+)"#,
            Credential,
            2,
            Check::Flag,
        )?,
        // The password of a URL's userinfo: up to the last `@` before the host, so a raw `@`
        // in the password (`p@ss@host`) does not leave half of it behind.
        p(
            r#"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://([^\s:/@?#"'<>]{0,128}):([^\s/?#"'<>]{1,256})@[A-Za-z0-9.\[\]_-]"#,
            Password,
            2,
            Check::UrlPassword,
        )?,
        p(
            r#"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://([A-Za-z0-9_-]{20,256})@[A-Za-z0-9.\[\]_-]"#,
            Password,
            1,
            Check::UrlToken,
        )?,
        p(
            r#"[?&;]([A-Za-z][A-Za-z0-9_.-]{0,40})=([^&#\s"'<>;,)\]}`]+)"#,
            Credential,
            2,
            Check::Query,
        )?,
        p(
            r#"(?:^|\s)(?:-u|--user)\s+["']?[^\s:"']+:([^\s"']+)"#,
            Password,
            1,
            Check::UrlPassword,
        )?,
    ];
    Some(Keys {
        triggers,
        kinds,
        patterns,
        pem_begin: pem::begin_line()?,
    })
}

/// Appends every secret in `text` to `out`.
pub(crate) fn find(text: &str, out: &mut Vec<Finding>, deadline: &Deadline) -> Result<(), Expired> {
    let Some(keys) = KEYS.as_ref() else {
        return Ok(());
    };
    let pass = trigger_pass(keys, text, deadline)?;
    out.extend(pass.passwords);
    if pass.pem {
        pem::find_private_keys(text, &keys.pem_begin, out, deadline)?;
    }
    for window in &pass.windows {
        let Some(slice) = text.get(window.clone()) else {
            continue;
        };
        for pattern in &keys.patterns {
            deadline.check()?;
            for captures in pattern.regex.captures_iter(slice) {
                if let Some(finding) = accept(pattern, text, &captures, window.start) {
                    out.push(finding);
                }
            }
        }
    }
    Ok(())
}

/// What one pass of the trigger automaton found.
struct TriggerPass {
    /// The merged windows the expressions run on.
    windows: Vec<Range<usize>>,
    /// Whether a private-key `BEGIN` occurs.
    pem: bool,
    /// Passwords after prose labels.
    passwords: Vec<Finding>,
}

/// Runs the trigger automaton once: windows around key prefixes and assignments, and the
/// passwords after prose labels.
fn trigger_pass(keys: &Keys, text: &str, deadline: &Deadline) -> Result<TriggerPass, Expired> {
    let bytes = text.as_bytes();
    let mut windows = Windows::new(text);
    let mut pem = false;
    let mut passwords = Vec::new();
    for hit in keys.triggers.find_overlapping_iter(text) {
        deadline.check()?;
        let kind = keys.kinds[hit.pattern().as_usize()];
        if kind.label()
            && let Some(range) = prose::value_after(text, hit.start()..hit.end())
        {
            passwords.push(Finding {
                range,
                category: Category::Password,
            });
        }
        let opens = match kind {
            Trigger::PemBegin => {
                pem = true;
                true
            }
            Trigger::Always { body } => body_follows(bytes, hit.end(), body),
            Trigger::Label => false,
            Trigger::Keyword | Trigger::KeywordAndLabel => {
                keyword_opens_window(bytes, hit.start(), hit.end())
            }
        };
        if opens {
            windows.add(hit.start(), hit.end());
        }
    }
    Ok(TriggerPass {
        windows: windows.finish(),
        pem,
        passwords,
    })
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

/// The finding a pattern's match stands for, if its check passes. `offset` is where the
/// window the match was found in starts.
fn accept(
    pattern: &KeyPattern,
    text: &str,
    captures: &Captures<'_>,
    offset: usize,
) -> Option<Finding> {
    let bytes = text.as_bytes();
    let absolute = |m: regex::Match<'_>| offset + m.start()..offset + m.end();
    let value_match = captures.get(pattern.group)?;
    let range = absolute(value_match);
    let whole = captures.get(0).map_or(range.clone(), absolute);
    let value = text.get(range.clone())?;
    let edges = |is_edge: fn(u8) -> bool| {
        let left = whole.start == 0 || !bytes.get(whole.start - 1).copied().is_some_and(is_edge);
        let right = !bytes.get(whole.end).copied().is_some_and(is_edge);
        left && right
    };
    let finding = |category: Category, range: Range<usize>| Finding {
        range: unquote(bytes, range),
        category,
    };
    let category = pattern.category;
    match pattern.check {
        Check::None => Some(finding(category, range)),
        Check::Token => edges(is_token_byte).then(|| finding(category, range)),
        Check::MixedToken => {
            (edges(is_token_byte) && mixed(value)).then(|| finding(category, range))
        }
        Check::RandomToken => {
            (edges(is_token_byte) && random_looking(value)).then(|| finding(category, range))
        }
        Check::Base64Token => edges(is_base64_byte).then(|| finding(category, range)),
        Check::Authorization => {
            // Without a scheme the value must look like a token on its own
            // (`authorization: required` is configuration, not a credential).
            let scheme = captures.get(1).map(|m| m.as_str());
            let credential = authorization_ok(scheme, value)
                && (scheme.is_some() || (value.len() >= 16 && mixed(value)));
            credential.then(|| finding(category, range))
        }
        Check::UrlPassword => (!placeholder(value)).then(|| finding(category, range)),
        // A user name is a word (`git`, `service-account-2024`); a token is generated.
        Check::UrlToken => generated(value).then(|| finding(category, range)),
        Check::Assignment => {
            let key = captures.get(1)?;
            let key_range = absolute(key);
            let before = text.get(..key_range.start)?;
            // `https://x-access-token:TOKEN@host` is a URL's userinfo, and `?token=…&page=2`
            // a query parameter: each is judged as such, where its value ends is known.
            if before.ends_with("://") || before.ends_with(['?', '&']) || documents_field(before) {
                return None;
            }
            let colon = captures.get(2).is_some_and(|m| m.as_str() == ":");
            let range = trim_assignment_value(text, range, colon);
            let value = text.get(range.clone())?;
            let category = assignment_category(key.as_str(), value, colon)?;
            Some(finding(category, range))
        }
        Check::Flag => {
            let flag = captures.get(1)?.as_str().trim_start_matches('-');
            // `--password --stdin` is two flags; "the --password option" is prose.
            let bare = value.trim_matches(['"', '\'', '`']);
            let looks_secret = bare.len() >= 12 || bare.bytes().any(|b| !b.is_ascii_lowercase());
            if value.starts_with('-') || !looks_secret || prose::is_stop_word(bare) {
                return None;
            }
            let category = assignment_category(flag, value, false)?;
            Some(finding(category, range))
        }
        Check::Query => {
            let name = captures.get(1)?.as_str();
            let category = query_category(name, value)?;
            Some(finding(category, range))
        }
    }
}

/// Whether the text before a name ends in a documentation field marker (`:param password:`,
/// `@param token`, `:type passphrase:`): what follows describes the field.
fn documents_field(before: &str) -> bool {
    let before = before.trim_end();
    [":param", ":type", "@param", ":arg", ":ivar", ":keyword"]
        .iter()
        .any(|marker| before.ends_with(marker))
}

/// The part of an unquoted assignment value that is the secret: a form body's value ends at
/// the next `&name=` (`client_secret=SECRET&grant_type=…`), and "password: hunter2." ends
/// before its full stop.
fn trim_assignment_value(text: &str, value: Range<usize>, colon: bool) -> Range<usize> {
    let bytes = text.as_bytes();
    let Some(raw) = text.get(value.clone()) else {
        return value;
    };
    if raw.starts_with(['"', '\'', '`']) {
        return value;
    }
    let mut end = value.end;
    let next_parameter = raw.match_indices('&').find(|(at, _)| {
        let name = &raw.as_bytes()[at + 1..];
        let name_len = name
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            .count();
        name_len > 0 && name.get(name_len) == Some(&b'=')
    });
    if let Some((at, _)) = next_parameter {
        end = value.start + at;
    }
    let at_sentence_end = bytes.get(end).is_none_or(u8::is_ascii_whitespace);
    if colon && at_sentence_end && end > value.start + 1 && bytes[end - 1] == b'.' {
        end -= 1;
    }
    value.start..end
}

/// The category of a query parameter's value: a secret's name as in an assignment
/// (`?token=…`, `&password=…`), or a name only queries use: signatures (`sig`,
/// `X-Amz-Signature`), bare `key` and `auth`. Azure's SAS `sig` is reported as an API key, like
/// the account key it is made with.
fn query_category(name: &str, value: &str) -> Option<Category> {
    let lower = name.to_ascii_lowercase();
    let (category, min_len) = match lower.as_str() {
        "sig" => (Category::ApiKey, 16),
        "signature" | "x-amz-signature" | "x-goog-signature" | "key" | "auth" => {
            (Category::Credential, 16)
        }
        "pass" | "pw" => (Category::Password, 4),
        _ => return assignment_category(name, value, false),
    };
    let secret = if min_len >= 16 {
        generated(value)
    } else {
        !placeholder(value)
    };
    (value.len() >= min_len && secret).then_some(category)
}

/// Whether an unlabelled value looks machine-generated rather than written: 16 characters or
/// more, and mixing cases and digits, or a long hex string, or base64 with its `+`, `/`, `=`
/// (maybe percent-encoded). Slugs (`homepage-banner-2024`) and user names are not.
fn generated(value: &str) -> bool {
    let hex = value.len() >= 32 && value.bytes().all(|b| b.is_ascii_hexdigit());
    let base64 = value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'+' | b'/' | b'='))
        && value
            .bytes()
            .any(|b| matches!(b, b'%' | b'+' | b'/' | b'='))
        && value.bytes().any(|b| b.is_ascii_digit());
    value.len() >= 16 && !placeholder(value) && (mixed(value) || hex || base64)
}

#[cfg(test)]
mod tests;
