//! Judging candidate values: placeholders that stand for a secret, random-looking keys, and
//! which `key = value` assignments hold a credential.

use crate::finding::Category;

/// Random keys mix digits with letters of both cases.
pub(super) fn mixed(value: &str) -> bool {
    let body = value.rsplit(['-', '_']).next().unwrap_or(value);
    let source = if body.len() >= 16 { body } else { value };
    source.bytes().any(|b| b.is_ascii_digit())
        && source.bytes().any(|b| b.is_ascii_uppercase())
        && source.bytes().any(|b| b.is_ascii_lowercase())
}

/// Whether a key body looks generated rather than written: at least two of upper case, lower
/// case and digits, and no long run of one character (`hf_xxxx…`, `AAAA…` are placeholders).
/// Some vendors' keys are letters only (Hugging Face), so digits are not required.
pub(super) fn random_looking(body: &str) -> bool {
    let bytes = body.as_bytes();
    let classes = [
        bytes.iter().any(u8::is_ascii_uppercase),
        bytes.iter().any(u8::is_ascii_lowercase),
        bytes.iter().any(u8::is_ascii_digit),
    ]
    .iter()
    .filter(|present| **present)
    .count();
    let mut distinct = [false; 256];
    for &b in bytes {
        distinct[usize::from(b)] = true;
    }
    let distinct = distinct.iter().filter(|seen| **seen).count();
    classes >= 2 && distinct >= bytes.len().min(32) / 3
}

/// An `Authorization` value: long enough, not a placeholder, and not a plain word ("Bearer
/// tokens", "Basic Multilingual Plane", "Basic customization."). A `Basic` credential must be
/// base64 of `user:password`.
pub(super) fn authorization_ok(scheme: Option<&str>, value: &str) -> bool {
    let value = value.trim().trim_end_matches(['.', ',', ';', ':', ')']);
    if scheme.is_some_and(|s| s.eq_ignore_ascii_case("basic")) {
        return value.len() >= 8 && basic_credential(value);
    }
    value.len() >= 8
        && !placeholder(value)
        && (value.bytes().any(|b| b.is_ascii_digit())
            || value
                .bytes()
                .any(|b| matches!(b, b'+' | b'/' | b'=' | b'.' | b'_' | b'-'))
            || mixed_case(value))
}

/// Upper and lower case, with an upper-case letter after the first character: `SlAV32hkKG`,
/// not `Multilingual`.
fn mixed_case(value: &str) -> bool {
    value.bytes().skip(1).any(|b| b.is_ascii_uppercase())
        && value.bytes().any(|b| b.is_ascii_lowercase())
}

/// Whether `value` is standard base64 of bytes holding a `:`, as `user:password` is.
fn basic_credential(value: &str) -> bool {
    let body = value.trim_end_matches('=');
    if body.len() % 4 == 1 || value.len() - body.len() > 2 {
        return false;
    }
    let mut bits: u32 = 0;
    let mut count = 0;
    for byte in body.bytes() {
        let sextet = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return false,
        };
        bits = (bits << 6) | u32::from(sextet);
        count += 6;
        if count >= 8 {
            count -= 8;
            if (bits >> count) & 0xff == u32::from(b':') {
                return true;
            }
            bits &= (1 << count) - 1;
        }
    }
    false
}

/// Values that name or stand for a secret rather than being one: markers left by an earlier
/// filter, template and environment references, masks and type names.
pub(super) fn placeholder(value: &str) -> bool {
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
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "apikey",
        "api_key",
        "credentials",
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
        || value.starts_with('{')
        || value.starts_with("%(")
        || value.starts_with('$')
            && value.len() > 1
            && value[1..]
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit())
        || value.chars().all(|c| {
            matches!(
                c,
                '*' | 'x' | 'X' | '.' | '#' | '-' | '_' | '?' | '•' | '●' | '·' | '∗' | '…'
            )
        })
        // A YAML tag (`!vault |`, `!Ref`, `!GetAtt`), not a value.
        || value.strip_prefix('!').is_some_and(yaml_tag)
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("env(")
        || lower.starts_with("env.")
}

/// Whether `name` (after the `!`) is a YAML tag: a lower-case word (`!vault`, `!secret`,
/// `!include`), a core type (`!!str`), or a CloudFormation function (`!Ref`, `!GetAtt`). A
/// password may start with `!` too (`!Rsqhmuj`), so other names are not tags.
fn yaml_tag(name: &str) -> bool {
    const FUNCTIONS: &[&str] = &[
        "Ref",
        "Sub",
        "GetAtt",
        "Join",
        "If",
        "Equals",
        "ImportValue",
        "Base64",
        "FindInMap",
        "Select",
        "Split",
        "GetAZs",
        "Condition",
        "Not",
        "And",
        "Or",
        "Transform",
        "Cidr",
    ];
    let word =
        |name: &str| !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    name.strip_prefix('!').is_some_and(word) || word(name) || FUNCTIONS.contains(&name)
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

/// The category of a `key = value` assignment (`raw_value` as written, maybe quoted), or `None`
/// when the key is not a secret's name or the value is not a secret. `colon` tells a `key: value`
/// (YAML, headers, prose) from `key = value`.
pub(super) fn assignment_category(key: &str, raw_value: &str, colon: bool) -> Option<Category> {
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
        // Environment variables glue words in upper case: `PGPASSWORD`.
        let env_variable = key
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        let boundary = matches!(before, b'_' | b'-' | b'.')
            || (before.is_ascii_lowercase() && first.is_ascii_uppercase())
            || before.is_ascii_digit()
            || env_variable;
        if !boundary {
            return None;
        }
    }
    if placeholder(value) || value.starts_with(':') {
        // `node::credentials::HasOnly` is a path, not an assignment.
        return None;
    }
    let is_password = matches!(*word, "password" | "passwd" | "passphrase" | "pwd");
    // A variable or type named after the secret: `password: hashed_password`,
    // `api_key = API_KEY`, `private_key: "_RSAPrivateKey"`.
    let identifier = value.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_');
    let camel = value
        .as_bytes()
        .windows(2)
        .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    let secret_word = word.replace(['_', '-'], "");
    let names_the_secret = identifier
        && (value.contains('_') || camel)
        && value
            .to_ascii_lowercase()
            .replace('_', "")
            .contains(&secret_word);
    if names_the_secret {
        return None;
    }
    if (lower_key == "pwd" || lower_key == "oldpwd")
        && (value.starts_with('/') || value.starts_with('~'))
    {
        return None;
    }
    if !quoted {
        // Code, not a literal: `password = self.password`, `token: Option<String>`,
        // `secret = get_secret()`, `password: Optional[str]`, `password: [a, b]`.
        // An attribute path (`self.password`, `ed25519.Ed25519PrivateKey`); one that ends in
        // digits is more likely a password (`Rosa.kotek88`).
        let dotted_path = value.contains('.')
            && value.split('.').all(|part| {
                !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
            && value
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && !value.bytes().last().is_some_and(|b| b.is_ascii_digit());
        // Rust and TypeScript types and references: `token: SecretString`, `password: &str`.
        if dotted_path || value.contains(['(', '<', '[']) || value.starts_with('&') {
            return None;
        }
        // `token: SecretString` is a type annotation, `error=PermissionDenied` a name; a
        // password given with `=` may be such letters (`?password=FojomYutu`).
        if (colon || !is_password) && type_name(value) {
            return None;
        }
        if PROSE_WORDS.contains(&value.to_ascii_lowercase().as_str()) {
            return None;
        }
        // "password: incorrect" is prose about a password.
        if is_password && colon && super::prose::is_stop_word(value) {
            return None;
        }
        // A token is generated: `token = Whitespace`, `self.token = nextchar` and
        // `Token: FG_DEFAULT` name things. Passwords may be words, so they are exempt.
        if !is_password && !looks_generated(value) {
            return None;
        }
    }
    let min_len = if is_password { 4 } else { 8 };
    if value.chars().count() < min_len {
        return None;
    }
    Some(if is_password {
        Category::Password
    } else {
        Category::Credential
    })
}

/// Whether `value` is a name written in camel case from two or more words (`SecretString`,
/// `TextField`, `headerName`): a type or a variable, not a generated value, which would have
/// runs of capitals, digits, or words without a vowel (`tGzvJOkF`, `FjwxgQspkv`).
pub(super) fn type_name(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() < 4 || !bytes.iter().all(u8::is_ascii_alphabetic) {
        return false;
    }
    // Each word is a capital (but the first may be lower case) and two or more small letters,
    // one of them a vowel.
    let mut words = 0;
    let mut start = 0;
    for end in 1..=bytes.len() {
        if end < bytes.len() && !bytes[end].is_ascii_uppercase() {
            continue;
        }
        let word = &bytes[start..end];
        let small = word
            .iter()
            .skip(usize::from(word[0].is_ascii_uppercase()))
            .count();
        let vowel = word.iter().any(|b| {
            matches!(
                b.to_ascii_lowercase(),
                b'a' | b'e' | b'i' | b'o' | b'u' | b'y'
            )
        });
        if small < 2 || !vowel || word[1..].iter().any(u8::is_ascii_uppercase) {
            return false;
        }
        words += 1;
        start = end;
    }
    words >= 2
}

/// Whether an unquoted credential has what generated values have and identifiers lack: a
/// digit, a symbol, or an upper-case letter after the first character, without being an
/// `UPPER_SNAKE` constant.
fn looks_generated(value: &str) -> bool {
    let constant = value.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    let inner_upper = value.bytes().skip(1).any(|b| b.is_ascii_uppercase())
        && value.bytes().any(|b| b.is_ascii_lowercase());
    !constant
        && (value
            .bytes()
            .any(|b| b.is_ascii_digit() || !(b.is_ascii_alphanumeric() || b == b'_'))
            || inner_upper)
}
