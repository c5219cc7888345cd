//! Pure checks on the request line that run before any credential is looked at: the target
//! form, the Host, and the path. They are separate from the proxy so they can be tested alone.
//!
//! The path is not rewritten into a normal form: a path that is not already in one is refused,
//! so the bytes the capability check approves are the bytes the upstream receives
//! ([`CheckedPath`]). Whatever an upstream does to a path it receives — percent-decoding it
//! once or several times, splitting off `;` parameters, decoding overlong UTF-8, folding
//! Unicode compatibility characters — cannot turn an approved path into one outside the
//! grant.

use http::{HeaderMap, Method, Uri};

/// Why a request was refused before authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// CONNECT would turn the proxy into a tunnel to anywhere.
    Connect,
    /// `GET http://elsewhere/…`: the agent would pick the upstream, not the host.
    AbsoluteForm,
    /// `OPTIONS *`.
    AsteriskForm,
    /// A Host header that names something other than this listener (DNS rebinding).
    Host,
    /// `..` or `.` segments, raw or percent-encoded, encoded slashes and backslashes.
    Traversal,
    /// A `;`, raw or percent-encoded: servlet containers and others split `..;/` or
    /// `/v1/messages;x` into a path and parameters, so the route they pick is not the path
    /// that was checked.
    PathParameter,
    /// Percent-encoding that decodes to bytes that are not UTF-8: overlong forms (`%c0%ae` is
    /// a `.` to lenient decoders), surrogates, lone continuation bytes.
    InvalidUtf8,
    /// A character that Unicode compatibility normalisation (NFKC) or a best-fit code page
    /// turns into `.`, `/`, `\`, `;` or `%`, such as the fullwidth full stop `．`.
    Lookalike,
    /// A control character, raw or percent-encoded (`%00`).
    ControlCharacter,
    /// Broken percent-encoding, a character that must be percent-encoded, encoding nested
    /// deeper than the guard decodes, or a path that does not start with `/`.
    MalformedPath,
}

impl Refusal {
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::Connect => {
                "CONNECT is not proxied: this proxy forwards requests to its configured upstream only"
            }
            Self::AbsoluteForm => {
                "absolute-form request targets are refused: send the path (`/v1/...`) to the proxy, which picks the upstream"
            }
            Self::AsteriskForm => "`*` request targets are refused",
            Self::Host => "the Host header must name this proxy (`127.0.0.1:<port>`)",
            Self::Traversal => {
                "the path holds a `.` or `..` segment or an encoded `/` or `\\`; send a normalised path"
            }
            Self::PathParameter => {
                "the path holds a `;` (raw or percent-encoded); path parameters such as `..;` or `/v1/messages;x` are refused"
            }
            Self::InvalidUtf8 => {
                "the path's percent-encoding decodes to bytes that are not UTF-8 (an overlong form such as `%c0%ae`, or a lone continuation byte); encode each character as its shortest UTF-8 bytes"
            }
            Self::Lookalike => {
                "the path holds a character that Unicode normalisation turns into `.`, `/`, `\\`, `;` or `%` (such as the fullwidth `．`); send the ASCII character, or leave it out"
            }
            Self::ControlCharacter => {
                "the path holds a control character, raw or percent-encoded (such as `%00`)"
            }
            Self::MalformedPath => {
                "the path must start with `/` and hold only letters, digits, `-._~!$&'()*+,=:@/` and well-formed `%XX` escapes, nested at most three deep"
            }
        }
    }

    pub(crate) fn kind(self) -> &'static str {
        match self {
            Self::Connect => "method_not_allowed",
            Self::Host => "invalid_host",
            _ => "invalid_request_target",
        }
    }
}

/// A request path the guard approved. Only [`check_path`] makes one, so holding one means the
/// path is absolute, in normal form, and safe to forward byte for byte; the capability check
/// and the forwarded request both read it from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckedPath(String);

impl CheckedPath {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// Checks the request target form and the Host header against this listener's `port`, and
/// returns the approved path.
pub(crate) fn check_target(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    port: u16,
) -> Result<CheckedPath, Refusal> {
    if method == Method::CONNECT {
        return Err(Refusal::Connect);
    }
    if uri.scheme().is_some() || uri.authority().is_some() {
        return Err(Refusal::AbsoluteForm);
    }
    if uri.path() == "*" {
        return Err(Refusal::AsteriskForm);
    }
    let mut hosts = headers.get_all(http::header::HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(host), None) => host.to_str().map_err(|_| Refusal::Host)?,
        _ => return Err(Refusal::Host),
    };
    if !host_names_us(host, port) {
        return Err(Refusal::Host);
    }
    check_path(uri.path())
}

/// Loopback names with our port. A page in a browser that rebinds its own name to 127.0.0.1
/// still sends its own name as Host, so it is refused before it could try a voucher.
fn host_names_us(host: &str, port: u16) -> bool {
    let Some((name, host_port)) = host.rsplit_once(':') else {
        return false;
    };
    host_port.parse::<u16>().ok() == Some(port)
        && (name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost") || name == "[::1]")
}

/// How many times a segment is percent-decoded. Upstreams that decode twice exist (a gateway
/// and then the application), so double-encoded dots (`%252e`) are caught; a segment that
/// still holds an escape after this many rounds is refused rather than guessed at.
const DECODE_ROUNDS: usize = 3;

/// Refuses paths an upstream could read as something other than what the capability check
/// saw, and returns the rest unchanged.
///
/// The path as sent must use only RFC 3986 path characters with well-formed escapes. Each
/// segment is then decoded up to [`DECODE_ROUNDS`] times, the way a lenient decoder would
/// (a `%` that starts no escape stays as it is), and every form must be UTF-8 without control
/// characters, `;`, `/`, `\` or lookalikes of them, and must not be `.` or `..`.
pub(crate) fn check_path(path: &str) -> Result<CheckedPath, Refusal> {
    if !path.starts_with('/') {
        return Err(Refusal::MalformedPath);
    }
    for &byte in path.as_bytes() {
        check_raw_byte(byte)?;
    }
    for segment in path.split('/') {
        check_segment(segment)?;
    }
    Ok(CheckedPath(path.to_owned()))
}

/// Characters a client may send unencoded in a path: RFC 3986 `pchar` and `/`, except `;`.
/// hyper also accepts `"`, `{`, `}`, `|`, `^`, `[`, `]`, `\` and raw UTF-8, which upstreams
/// treat differently from each other (some re-encode them, some reject them).
fn check_raw_byte(byte: u8) -> Result<(), Refusal> {
    match byte {
        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => Ok(()),
        b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+'
        | b',' | b'=' | b':' | b'@' | b'/' | b'%' => Ok(()),
        b';' => Err(Refusal::PathParameter),
        b'\\' => Err(Refusal::Traversal),
        byte if byte.is_ascii_control() => Err(Refusal::ControlCharacter),
        _ => Err(Refusal::MalformedPath),
    }
}

fn check_segment(segment: &str) -> Result<(), Refusal> {
    let sent = segment.as_bytes();
    // The path as sent must be well-formed; after a decoding, a `%` that starts no escape is
    // a literal percent sign (`%25` sent), not an encoding.
    let escapes = sent.iter().filter(|&&byte| byte == b'%').count();
    if escapes != escape_count(sent) {
        return Err(Refusal::MalformedPath);
    }
    check_decoded(sent)?;
    if escapes == 0 {
        return Ok(());
    }
    let mut current = percent_decode(sent);
    check_decoded(&current)?;
    for _ in 1..DECODE_ROUNDS {
        if escape_count(&current) == 0 {
            return Ok(());
        }
        current = percent_decode(&current);
        check_decoded(&current)?;
    }
    if escape_count(&current) == 0 {
        Ok(())
    } else {
        Err(Refusal::MalformedPath)
    }
}

/// One form of a segment, as sent or decoded.
fn check_decoded(segment: &[u8]) -> Result<(), Refusal> {
    // An encoded `/` would split into new segments once the upstream decodes it.
    if segment.contains(&b'\\') || segment.contains(&b'/') {
        return Err(Refusal::Traversal);
    }
    if segment.contains(&b';') {
        return Err(Refusal::PathParameter);
    }
    if segment.iter().any(u8::is_ascii_control) {
        return Err(Refusal::ControlCharacter);
    }
    let Ok(text) = std::str::from_utf8(segment) else {
        return Err(Refusal::InvalidUtf8);
    };
    if text.chars().any(is_lookalike) {
        return Err(Refusal::Lookalike);
    }
    if segment == b"." || segment == b".." {
        return Err(Refusal::Traversal);
    }
    Ok(())
}

/// Characters whose NFKC form holds `.`, `/`, `\`, `;` or `%` (the complete list for Unicode
/// 14: `．` and `‥` become dots, `℀` becomes `a/c`), plus the slash- and backslash-shaped
/// operators (`⁄`, `∕`, `∖`, `⧵`) that some best-fit conversions to legacy code pages map to
/// `/` and `\`. An upstream that normalises a decoded path would otherwise see segments the
/// guard never saw.
fn is_lookalike(character: char) -> bool {
    matches!(
        character,
        '\u{037E}'
            | '\u{2024}'..='\u{2026}'
            | '\u{2044}'
            | '\u{2100}'
            | '\u{2101}'
            | '\u{2105}'
            | '\u{2106}'
            | '\u{2215}'
            | '\u{2216}'
            | '\u{2488}'..='\u{249B}'
            | '\u{29F5}'
            | '\u{33C2}'
            | '\u{33C7}'
            | '\u{33D8}'
            | '\u{FE14}'
            | '\u{FE19}'
            | '\u{FE30}'
            | '\u{FE52}'
            | '\u{FE54}'
            | '\u{FE68}'
            | '\u{FE6A}'
            | '\u{FF05}'
            | '\u{FF0E}'
            | '\u{FF0F}'
            | '\u{FF1B}'
            | '\u{FF3C}'
            | '\u{1F100}'
    )
}

/// How many `%` in `input` are followed by two hex digits.
fn escape_count(input: &[u8]) -> usize {
    input
        .windows(3)
        .filter(|window| window[0] == b'%' && hex(window[1]).is_some() && hex(window[2]).is_some())
        .count()
}

/// Decodes the escapes there are and keeps a `%` that starts none, as lenient decoders do.
fn percent_decode(input: &[u8]) -> Vec<u8> {
    let mut output = Vec::with_capacity(input.len());
    let mut index = 0;
    while let Some(&byte) = input.get(index) {
        let escape = match (byte, input.get(index + 1), input.get(index + 2)) {
            (b'%', Some(&high), Some(&low)) => hex(high).zip(hex(low)),
            _ => None,
        };
        match escape {
            Some((high, low)) => {
                output.push((high << 4) | low);
                index += 3;
            }
            None => {
                output.push(byte);
                index += 1;
            }
        }
    }
    output
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    fn headers(host: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::HOST, host.parse().unwrap());
        headers
    }

    fn assert_refused(expected: Refusal, paths: &[&str]) {
        for path in paths {
            assert_eq!(check_path(path).map(|_| ()), Err(expected), "{path}");
        }
    }

    #[test]
    fn traversal_in_every_spelling_is_refused() {
        assert_refused(
            Refusal::Traversal,
            &[
                "/v1/../admin",
                "/v1/./messages",
                "/..",
                "/v1/%2e%2e/admin",
                "/v1/%2E%2E/admin",
                "/v1/.%2e/admin",
                "/v1/%2e./admin",
                "/v1/%252e%252e/admin",
                "/v1/a%2fb",
                "/v1/a%2Fb",
                "/v1/a%5cb",
                "/v1/a\\b",
                "/v1/%25252e%25252e/admin",
                "/v1/%252f",
                "/v1/%25255c",
            ],
        );
        assert_refused(
            Refusal::MalformedPath,
            &[
                "/v1/%zz",
                "/v1/%4",
                "/v1/%",
                "relative",
                "",
                "/v1/%2525252e",
            ],
        );
    }

    #[test]
    fn path_parameters_in_every_spelling_are_refused() {
        assert_refused(
            Refusal::PathParameter,
            &[
                "/v1/messages/..;/admin",
                "/v1/messages;x",
                "/v1/messages;jsessionid=1/x",
                "/;/v1/messages",
                "/v1/messages/%3b",
                "/v1/messages/%3B..",
                "/v1/messages/%253b",
            ],
        );
    }

    #[test]
    fn overlong_and_invalid_utf8_is_refused() {
        assert_refused(
            Refusal::InvalidUtf8,
            &[
                "/v1/messages/%c0%ae%c0%ae/admin",
                "/v1/messages/%c0%ae",
                "/v1/messages/%e0%80%ae",
                "/v1/messages/%f0%80%80%ae",
                "/v1/messages/%c0%af",
                "/v1/messages/%c1%9c",
                "/v1/messages/%80",
                "/v1/messages/a%bf",
                "/v1/messages/%ed%a0%80",
                "/v1/messages/%e2%9c",
                "/v1/messages/%ff",
                "/v1/messages/%25c0%25ae",
            ],
        );
    }

    #[test]
    fn controls_lookalikes_and_raw_characters_are_refused() {
        assert_refused(
            Refusal::ControlCharacter,
            &["/v1/%00", "/v1/a%00b", "/v1/%0a", "/v1/%7f", "/v1/%2500"],
        );
        assert_refused(
            Refusal::Lookalike,
            &[
                "/v1/%ef%bc%8e%ef%bc%8e/admin",
                "/v1/%e2%80%a5",
                "/v1/%ef%bc%8f",
                "/v1/%ef%bc%bc",
                "/v1/%cd%be",
                "/v1/%e2%88%95",
                "/v1/%e2%84%80",
            ],
        );
        assert_refused(
            Refusal::MalformedPath,
            &[
                "/v1/\u{FF0E}\u{FF0E}/admin",
                "/v1/é",
                "/v1/a b",
                "/v1/{x}",
                "/v1/\"",
                "/v1/a|b",
                "/v1/[::]",
                "/v1/^",
                "/v1/`",
                "/v1/<x>",
            ],
        );
    }

    #[test]
    fn ordinary_paths_pass_unchanged() {
        for path in [
            "/",
            "/v1/messages",
            "/v1/messages/",
            "/v1/files/a.b.c",
            "/v1/...",
            "/v1/a%20b",
            "/v1/%E2%9C%93",
            "/v1/%e2%9c%93",
            "/v1/100%25",
            "/v1/100%2525",
            "/v1/%2541",
            "//double",
            "/v1/-._~!$&'()*+,=:@",
        ] {
            assert_eq!(
                check_path(path).map(|checked| checked.as_str().to_owned()),
                Ok(path.to_owned()),
                "{path}"
            );
        }
    }

    #[test]
    fn targets_and_hosts() {
        let ok = |method: Method, uri: &str, host: &str| {
            check_target(&method, &uri.parse().unwrap(), &headers(host), 4000).map(|_| ())
        };
        assert_eq!(ok(Method::GET, "/v1/models", "127.0.0.1:4000"), Ok(()));
        assert_eq!(ok(Method::GET, "/v1/models", "localhost:4000"), Ok(()));
        assert_eq!(ok(Method::GET, "/v1/models", "[::1]:4000"), Ok(()));
        assert_eq!(
            ok(Method::GET, "/v1/models", "127.0.0.1:4001"),
            Err(Refusal::Host)
        );
        assert_eq!(
            ok(Method::GET, "/v1/models", "evil.example:4000"),
            Err(Refusal::Host)
        );
        assert_eq!(
            ok(Method::GET, "http://evil.example/x", "127.0.0.1:4000"),
            Err(Refusal::AbsoluteForm)
        );
        assert_eq!(
            ok(Method::CONNECT, "evil.example:443", "127.0.0.1:4000"),
            Err(Refusal::Connect)
        );
        assert_eq!(
            ok(Method::OPTIONS, "*", "127.0.0.1:4000"),
            Err(Refusal::AsteriskForm)
        );
        let no_host = check_target(&Method::GET, &"/".parse().unwrap(), &HeaderMap::new(), 4000);
        assert_eq!(no_host, Err(Refusal::Host));
        // The path is checked as part of the target.
        assert_eq!(
            ok(Method::GET, "/v1/..;/admin", "127.0.0.1:4000"),
            Err(Refusal::PathParameter)
        );
        assert_eq!(
            check_target(
                &Method::GET,
                &"/v1/models?x=%2e%2e".parse().unwrap(),
                &headers("127.0.0.1:4000"),
                4000
            )
            .map(|checked| checked.as_str().to_owned()),
            Ok("/v1/models".to_owned())
        );
    }

    /// Pieces the guard lets through, some of them close to the ones it refuses.
    const HARMLESS: &[&str] = &[
        "v1",
        "messages",
        "models",
        "a",
        "-",
        "_",
        "~",
        "!",
        "$",
        "&",
        "'",
        "(",
        ")",
        "*",
        "+",
        ",",
        "=",
        ":",
        "@",
        "...",
        "%2525",
        "%25zz",
        "%252",
        "%41",
        "%2541",
        "%20",
        "%e2%9c%93",
        "%C3%A9",
    ];

    /// Pieces of traversal, path parameters, overlong UTF-8, controls and lookalikes, in
    /// several encodings, and broken escapes.
    const HOSTILE: &[&str] = &[
        ".",
        "..",
        "%2e",
        "%2E",
        "%252e",
        "%25252e",
        "%2525252e",
        "%2f",
        "%2F",
        "%252f",
        "%5c",
        "%5C",
        "%255c",
        "%3b",
        "%3B",
        "%253b",
        ";",
        "%00",
        "%2500",
        "%0a",
        "%7f",
        "%25",
        "%",
        "%2",
        "%zz",
        "%c0",
        "%ae",
        "%c0%ae",
        "%e0%80%ae",
        "%80",
        "%bf",
        "%25c0%25ae",
        "%ef%bc%8e",
        "%ef%bc%8f",
        "%e2%80%a5",
        "\\",
        "é",
        "\u{FF0E}",
        " ",
        "{",
        "|",
    ];

    /// Absolute paths of up to six segments, mostly harmless pieces with hostile ones mixed
    /// in, so that many pass the guard and the ones that pass are not all trivial.
    pub(crate) fn hostile_path() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            4 => prop::sample::select(HARMLESS),
            1 => prop::sample::select(HOSTILE),
        ];
        let segment = prop::collection::vec(piece, 0..4).prop_map(|pieces| pieces.concat());
        prop::collection::vec(segment, 1..6).prop_map(|segments| format!("/{}", segments.join("/")))
    }

    /// The whole path decoded as a lenient decoder would, once, twice, … until nothing is
    /// left to decode (written apart from the guard's decoder, so the property checks it).
    pub(crate) fn every_decoding(path: &str) -> Vec<Vec<u8>> {
        let mut forms = vec![path.as_bytes().to_vec()];
        for _ in 0..8 {
            let Some(last) = forms.last() else { break };
            let mut next = Vec::new();
            let mut rest = last.as_slice();
            while let Some((&first, tail)) = rest.split_first() {
                let escape = match tail {
                    [high, low, ..] if high.is_ascii_hexdigit() && low.is_ascii_hexdigit() => {
                        std::str::from_utf8(&tail[..2])
                            .ok()
                            .and_then(|digits| u8::from_str_radix(digits, 16).ok())
                    }
                    _ => None,
                };
                match (first, escape) {
                    (b'%', Some(byte)) => {
                        next.push(byte);
                        rest = &tail[2..];
                    }
                    _ => {
                        next.push(first);
                        rest = tail;
                    }
                }
            }
            if next == *last {
                break;
            }
            forms.push(next);
        }
        forms
    }

    /// What must hold of every path the guard lets through.
    pub(crate) fn assert_safe(path: &str) -> Result<(), TestCaseError> {
        let segments = path.split('/').count();
        for form in every_decoding(path) {
            let text = std::str::from_utf8(&form);
            prop_assert!(text.is_ok(), "{path} decodes to bytes that are not UTF-8");
            for forbidden in [b';', b'\0', b'\\'] {
                prop_assert!(
                    !form.contains(&forbidden),
                    "{path} decodes to {:?}",
                    char::from(forbidden)
                );
            }
            prop_assert!(!form.iter().any(u8::is_ascii_control), "{path}: a control");
            prop_assert_eq!(
                form.split(|&byte| byte == b'/').count(),
                segments,
                "{}",
                path
            );
            for segment in form.split(|&byte| byte == b'/') {
                prop_assert!(segment != b"." && segment != b"..", "{path}: a dot segment");
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn approved_paths_never_decode_to_traversal(path in hostile_path()) {
            if let Ok(checked) = check_path(&path) {
                prop_assert_eq!(checked.as_str(), path.as_str());
                assert_safe(&path)?;
            }
        }

        #[test]
        fn any_text_is_answered_without_a_panic(path in any::<String>()) {
            let path = format!("/{path}");
            if let Ok(checked) = check_path(&path) {
                prop_assert_eq!(checked.as_str(), path.as_str());
                assert_safe(&path)?;
            }
        }

        #[test]
        fn plain_paths_always_pass(
            segments in prop::collection::vec("[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,8}", 0..6),
        ) {
            let path = format!("/{}", segments.join("/"));
            prop_assert!(check_path(&path).is_ok(), "{} was refused", path);
        }
    }
}
