//! Argument errors a model can act on. When a tool's arguments fail to parse, the message is
//! phrased from the argument type's schema — the values an argument takes, its type and bounds,
//! the required and accepted names — and from the value that was sent, not in serde's words
//! (`map`, `sequence`, `unknown variant`), which describe Rust types rather than the JSON a
//! model writes:
//!
//! - ``` `direction` must be one of up, down, left, right; got `sideways` ```
//! - ``` `text` must be a string; got the number 5 ```
//! - ``` `maxSwipes` must be an integer from 1 to 50; got 0 ```
//! - ``` `text` is required ``` (``` `platform` and `boot` are required ```)
//! - ``` `foo` is not an argument of `tapOn`; it takes: action, id, ref, text, x, y ```
//! - ``` `from.z` is not a field of `from`; it takes: id, ref, text, x, y ```
//!
//! serde's path to the failure is where the search starts, not its answer: a flattened
//! argument (`tapOn`'s `text`, `dragAndDrop`'s `from.x`) is parsed from a buffer that forgets
//! the path, so the schema is walked along as much of serde's path as it knows, and the
//! arguments are checked against it from there. Only what serde enforces is checked (types,
//! enums, bounds, required and unknown names; not lengths), so the problem found is one serde
//! rejects too — serde is laxer only in taking an enum's value as a one-key object as well,
//! which the schema does not offer. Where the schema finds no problem, serde's own message is
//! used, cleaned of its Rust vocabulary.

use std::fmt;

use serde_json::{Map, Value};

/// How many characters of a string argument a message quotes.
const QUOTED_CHARS: usize = 60;

#[cfg(test)]
thread_local! {
    /// How many messages this thread phrased from serde's words: the property test checks
    /// that the schema explains every failure it generates.
    static FALLBACKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The message for `arguments` of `tool` that failed to parse with `error`; `schema` is the
/// schema of the argument type as derived, with its `null` unions (see
/// [`super::schema::argument_schema`]), so that an optional argument given as `null`, which
/// serde accepts, is not reported.
pub(crate) fn message(
    tool: &str,
    schema: &Value,
    arguments: &Value,
    error: &serde_path_to_error::Error<serde_json::Error>,
) -> String {
    let serde_path = Path::from_serde(error.path());
    let (path, schema, value) = descend(schema, arguments, &serde_path);
    let problem = match check(schema, value, &path) {
        Some(problem) => problem.render(tool),
        None => fallback(&serde_path, &error.inner().to_string()),
    };
    format!("invalid arguments for `{tool}`: {problem}")
}

/// A place in the arguments, such as `targets[1].text`; empty for the arguments themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Path(Vec<Segment>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

impl Path {
    /// serde's path, as far as it is known.
    fn from_serde(path: &serde_path_to_error::Path) -> Self {
        let segments = path
            .iter()
            .map_while(|segment| match segment {
                serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
                serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.clone())),
                serde_path_to_error::Segment::Enum { variant } => {
                    Some(Segment::Key(variant.clone()))
                }
                serde_path_to_error::Segment::Unknown => None,
            })
            .collect();
        Self(segments)
    }

    fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    fn join(&self, segment: Segment) -> Self {
        let mut path = self.clone();
        path.0.push(segment);
        path
    }

    fn key(&self, key: &str) -> Self {
        self.join(Segment::Key(key.to_owned()))
    }

    fn index(&self, index: usize) -> Self {
        self.join(Segment::Index(index))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) if position == 0 => write!(f, "{key}")?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// What is wrong with the arguments, found in the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Problem {
    /// The value at `path` is not one the schema admits.
    Mismatch {
        path: Path,
        expected: String,
        got: String,
    },
    /// The object at `path` lacks required names.
    Missing { path: Path, names: Vec<String> },
    /// The object at `path` has a name its schema does not accept.
    Unknown {
        path: Path,
        name: String,
        accepted: Vec<String>,
    },
}

impl Problem {
    fn render(&self, tool: &str) -> String {
        match self {
            Self::Mismatch {
                path,
                expected,
                got,
            } => format!("{} must be {expected}; got {got}", subject(path)),
            Self::Missing { path, names } => {
                let names: Vec<String> = names
                    .iter()
                    .map(|name| format!("`{}`", path.key(name)))
                    .collect();
                let verb = if names.len() == 1 { "is" } else { "are" };
                format!("{} {verb} required", join_and(&names))
            }
            Self::Unknown {
                path,
                name,
                accepted,
            } => {
                let (what, owner) = if path.is_root() {
                    ("an argument", format!("`{tool}`"))
                } else {
                    ("a field", format!("`{path}`"))
                };
                let takes = match (accepted.is_empty(), path.is_root()) {
                    (true, true) => format!("{owner} takes no arguments"),
                    (true, false) => format!("{owner} takes no fields"),
                    (false, _) => format!("it takes: {}", accepted.join(", ")),
                };
                format!("`{}` is not {what} of {owner}; {takes}", path.key(name))
            }
        }
    }
}

/// How a message names the value at `path`.
fn subject(path: &Path) -> String {
    if path.is_root() {
        "the arguments".to_owned()
    } else {
        format!("`{path}`")
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Walks `schema` and `value` together along `path` as far as both know it; returns how far
/// that was and the schema and value there.
fn descend<'a>(
    mut schema: &'a Value,
    mut value: &'a Value,
    path: &Path,
) -> (Path, &'a Value, &'a Value) {
    let mut reached = Path::default();
    for segment in &path.0 {
        let next = match segment {
            Segment::Key(key) => schema
                .get("properties")
                .and_then(|properties| properties.get(key))
                .zip(value.get(key)),
            Segment::Index(index) => schema.get("items").zip(value.get(index)),
        };
        let Some((next_schema, next_value)) = next else {
            break;
        };
        schema = next_schema;
        value = next_value;
        reached.0.push(segment.clone());
    }
    (reached, schema, value)
}

/// The first problem with `value` (at `path`) that `schema` shows, or `None` when it fits or
/// the schema cannot tell.
fn check(schema: &Value, value: &Value, path: &Path) -> Option<Problem> {
    // `true`, `false` and anything else that is not an object say nothing to phrase.
    let Value::Object(schema) = schema else {
        return None;
    };
    if let Some(problem) = check_combinations(schema, value, path) {
        return Some(problem);
    }
    if !admits_type(schema, value) || !admits_value(schema, value) || !in_range(schema, value) {
        return Some(Problem::Mismatch {
            path: path.clone(),
            expected: expectation(schema)?,
            got: got(schema, value),
        });
    }
    match value {
        Value::Object(object) => check_object(schema, object, path),
        Value::Array(items) => {
            let items_schema = schema.get("items")?;
            items
                .iter()
                .enumerate()
                .find_map(|(index, item)| check(items_schema, item, &path.index(index)))
        }
        _ => None,
    }
}

/// The problem `allOf`, `anyOf` or `oneOf` shows: that of any part of `allOf`; for the others,
/// that of their one alternative besides `null` (several alternatives cannot tell which the
/// value meant).
fn check_combinations(schema: &Map<String, Value>, value: &Value, path: &Path) -> Option<Problem> {
    if let Some(Value::Array(parts)) = schema.get("allOf")
        && let Some(problem) = parts.iter().find_map(|part| check(part, value, path))
    {
        return Some(problem);
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alternatives)) = schema.get(key) else {
            continue;
        };
        let (nulls, others): (Vec<&Value>, Vec<&Value>) = alternatives
            .iter()
            .partition(|alternative| is_null_schema(alternative));
        if value.is_null() && !nulls.is_empty() {
            continue;
        }
        if let [only] = others.as_slice()
            && let Some(problem) = check(only, value, path)
        {
            return Some(problem);
        }
    }
    None
}

/// Whether `schema` is `{"type": "null"}`.
fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The object's own problems: a name it does not accept, a property's problem, or required
/// names missing.
fn check_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    path: &Path,
) -> Option<Problem> {
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, value) in object {
        let property = properties
            .and_then(|properties| properties.get(name))
            .or_else(|| schema.get("additionalProperties"));
        match property {
            Some(Value::Bool(false)) => {
                return Some(Problem::Unknown {
                    path: path.clone(),
                    name: name.clone(),
                    accepted: properties
                        .map(|properties| properties.keys().cloned().collect())
                        .unwrap_or_default(),
                });
            }
            Some(property) => {
                if let Some(problem) = check(property, value, &path.key(name)) {
                    return Some(problem);
                }
            }
            None => {}
        }
    }
    let missing: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|name| !object.contains_key(*name))
        .map(str::to_owned)
        .collect();
    (!missing.is_empty()).then(|| Problem::Missing {
        path: path.clone(),
        names: missing,
    })
}

/// The JSON types `schema` names, `null` included; `None` when it names none.
fn declared_types(schema: &Map<String, Value>) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Value::String(kind) => Some(vec![kind.as_str()]),
        Value::Array(kinds) => Some(kinds.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

/// Whether `value` is of JSON type `kind`; an integer is a number without a fraction.
fn is_kind(value: &Value, kind: &str) -> bool {
    match kind {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

fn admits_type(schema: &Map<String, Value>, value: &Value) -> bool {
    declared_types(schema).is_none_or(|kinds| kinds.iter().any(|kind| is_kind(value, kind)))
}

/// Whether `value` is among the schema's `enum` or is its `const`, if it has either.
fn admits_value(schema: &Map<String, Value>, value: &Value) -> bool {
    let in_enum = match schema.get("enum") {
        Some(Value::Array(values)) => values.contains(value),
        _ => true,
    };
    in_enum && schema.get("const").is_none_or(|only| only == value)
}

/// Whether a number is inside the schema's bounds; anything else is.
fn in_range(schema: &Map<String, Value>, value: &Value) -> bool {
    let Some(number) = value.as_f64() else {
        return true;
    };
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    bound("minimum").is_none_or(|minimum| number >= minimum)
        && bound("maximum").is_none_or(|maximum| number <= maximum)
        && bound("exclusiveMinimum").is_none_or(|minimum| number > minimum)
        && bound("exclusiveMaximum").is_none_or(|maximum| number < maximum)
}

/// What the schema admits, in words: `one of up, down`, `a string`, `an integer from 1 to 50`;
/// `None` when it says nothing a message could use.
fn expectation(schema: &Map<String, Value>) -> Option<String> {
    if let Some(Value::Array(values)) = schema.get("enum") {
        let values: Vec<String> = values
            .iter()
            .filter(|value| !value.is_null())
            .map(plain)
            .collect();
        return match values.as_slice() {
            [] => None,
            [only] => Some(only.clone()),
            _ => Some(format!("one of {}", values.join(", "))),
        };
    }
    if let Some(only) = schema.get("const") {
        return Some(plain(only));
    }
    let kinds: Vec<String> = declared_types(schema)?
        .into_iter()
        .filter(|kind| *kind != "null")
        .map(|kind| kind_phrase(schema, kind))
        .collect::<Option<_>>()?;
    match kinds.as_slice() {
        [] => None,
        [only] => Some(only.clone()),
        [init @ .., last] => Some(format!("{} or {last}", init.join(", "))),
    }
}

/// One JSON type of `schema` in words, with its bounds or its items.
fn kind_phrase(schema: &Map<String, Value>, kind: &str) -> Option<String> {
    let phrase = match kind {
        "string" => "a string".to_owned(),
        "boolean" => "true or false".to_owned(),
        "integer" => format!("an integer{}", bounds(schema)),
        "number" => format!("a number{}", bounds(schema)),
        "object" => "an object".to_owned(),
        "array" => match schema.get("items").and_then(items_noun) {
            Some(noun) => format!("an array of {noun}"),
            None => "an array".to_owned(),
        },
        _ => return None,
    };
    Some(phrase)
}

/// ` from 1 to 50`, ` of at least 1`, ` of at most 50`, or nothing.
fn bounds(schema: &Map<String, Value>) -> String {
    let bound = |key: &str| schema.get(key).filter(|bound| bound.is_number());
    match (bound("minimum"), bound("maximum")) {
        (Some(minimum), Some(maximum)) => format!(" from {minimum} to {maximum}"),
        (Some(minimum), None) => format!(" of at least {minimum}"),
        (None, Some(maximum)) => format!(" of at most {maximum}"),
        (None, None) => String::new(),
    }
}

/// What an array's items are, in the plural: `strings`, `objects`.
fn items_noun(items: &Value) -> Option<&'static str> {
    let Value::Object(items) = items else {
        return None;
    };
    let kinds = declared_types(items)?;
    let kind = kinds.into_iter().find(|kind| *kind != "null")?;
    match kind {
        "string" => Some("strings"),
        "boolean" => Some("true or false values"),
        "integer" => Some("integers"),
        "number" => Some("numbers"),
        "object" => Some("objects"),
        "array" => Some("arrays"),
        _ => None,
    }
}

/// An allowed value as a message lists it: a string bare, anything else as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => quote(text),
        other => other.to_string(),
    }
}

/// What was sent, in words: a value of the expected kind as itself (``` `sideways` ```, `0`),
/// any other with its kind (`the number 5`, ``` the string `3` ```, `an object`).
fn got(schema: &Map<String, Value>, value: &Value) -> String {
    let expected_kind = expects_kind_of(schema, value);
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) if expected_kind => number.to_string(),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) if expected_kind => format!("`{}`", quote(text)),
        Value::String(text) => format!("the string `{}`", quote(text)),
        Value::Array(items) if items.is_empty() => "an empty array".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(object) if object.is_empty() => "an empty object".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// Whether the schema admits some value of the same JSON type as `value` (counting every
/// number alike), so only the value itself can be wrong.
fn expects_kind_of(schema: &Map<String, Value>, value: &Value) -> bool {
    let same_kind = |other: &Value| match (value, other) {
        (Value::Number(_), Value::Number(_)) => true,
        _ => std::mem::discriminant(value) == std::mem::discriminant(other),
    };
    let by_type = declared_types(schema).is_some_and(|kinds| {
        kinds.iter().any(|kind| match kind {
            &"integer" | &"number" => value.is_number(),
            kind => is_kind(value, kind),
        })
    });
    let by_value = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(values)), _) => values.iter().any(same_kind),
        (_, Some(only)) => same_kind(only),
        _ => false,
    };
    by_type || by_value
}

/// `text`, without control characters and cut to [`QUOTED_CHARS`].
fn quote(text: &str) -> String {
    let mut quoted = String::new();
    for character in text.chars().take(QUOTED_CHARS) {
        if character.is_control() {
            quoted.extend(character.escape_default());
        } else {
            quoted.push(character);
        }
    }
    if text.chars().nth(QUOTED_CHARS).is_some() {
        quoted.push('…');
    }
    quoted
}

/// serde's message, where the schema found nothing, in the same form as far as it goes and in
/// plain words otherwise.
fn fallback(path: &Path, message: &str) -> String {
    #[cfg(test)]
    FALLBACKS.with(|count| count.set(count.get() + 1));
    let subject = subject(path);
    let mismatch = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.split_once(", expected "));
    if let Some((unexpected, expected)) = mismatch {
        return format!(
            "{subject} must be {}; got {}",
            serde_expected(expected),
            serde_unexpected(unexpected)
        );
    }
    let variant = message
        .strip_prefix("unknown variant ")
        .and_then(|rest| rest.split_once(", expected "));
    if let Some((variant, expected)) = variant {
        return format!(
            "{subject} must be {}; got {variant}",
            expected.replace('`', "")
        );
    }
    if let Some(name) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        return format!("`{}` is required", path.key(name));
    }
    format!("{subject}: {}", plain_words(message))
}

/// serde's `expected` (a `Visitor`'s words or a Rust type) as JSON.
fn serde_expected(expected: &str) -> String {
    let phrase = match expected {
        "a string" | "a borrowed string" | "string or map" => "a string",
        "a boolean" => "true or false",
        "f32" | "f64" => "a number",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64" | "i128"
        | "isize" => "an integer",
        "a sequence" => "an array",
        "a map" | "map" => "an object",
        "unit" => "null",
        "a character" | "a char" => "a single character",
        other if other.starts_with("struct ") => "an object",
        other => return plain_words(other),
    };
    phrase.to_owned()
}

/// serde's `Unexpected` (what it found) as JSON.
fn serde_unexpected(unexpected: &str) -> String {
    let inner = |prefix: &str| {
        unexpected
            .strip_prefix(prefix)
            .map(|rest| rest.trim_matches(|character| character == '`' || character == '"'))
    };
    if let Some(number) = inner("integer ").or_else(|| inner("floating point ")) {
        return format!("the number {number}");
    }
    if let Some(text) = inner("string ").or_else(|| inner("char ")) {
        return format!("the string `{text}`");
    }
    if let Some(flag) = inner("boolean ") {
        return flag.to_owned();
    }
    match unexpected {
        "null" | "unit" | "Option value" => "null".to_owned(),
        "map" => "an object".to_owned(),
        "sequence" => "an array".to_owned(),
        other if other.ends_with(" variant") => "an object".to_owned(),
        other => plain_words(other),
    }
}

/// `text` with serde's Rust words for JSON shapes replaced by JSON's.
fn plain_words(text: &str) -> String {
    let text = text
        .replace("invalid type: ", "")
        .replace("invalid value: ", "");
    let mut plain = String::with_capacity(text.len());
    let mut word = String::new();
    for character in text.chars().chain(std::iter::once(' ')) {
        if character.is_alphanumeric() || character == '_' {
            word.push(character);
            continue;
        }
        let plain_word = match word.as_str() {
            "map" => "object",
            "maps" => "objects",
            "sequence" => "array",
            "sequences" => "arrays",
            "variant" => "value",
            "variants" => "values",
            "unit" => "null",
            other => other,
        };
        // serde's "a map" becomes "an object".
        if plain_word.starts_with(['a', 'o']) && (plain == "a " || plain.ends_with(" a ")) {
            plain.insert(plain.len() - 1, 'n');
        }
        plain.push_str(plain_word);
        word.clear();
        plain.push(character);
    }
    plain.pop();
    plain
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::tools::acquisition::{GetWeb, ProvisionDevice};
    use crate::tools::actions::{DragAndDrop, Highlight, InputText, ListApps, SwipeOn, TapOn};
    use crate::tools::core::ListDevices;
    use crate::tools::observation::{Observe, Screenshot};
    use crate::tools::{REGISTERED, Tool, parse};

    /// Serde's words for Rust shapes, which no argument error may use.
    const SERDE_WORDS: &[&str] = &["map", "sequence", "variant", "invalid type", "unit"];

    /// What `tool` answers `arguments` with: `None` when they parse, else the error's message
    /// without the `invalid arguments for` prefix (which is checked here).
    fn error<T: Tool>(_: T, arguments: Value) -> Option<String> {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object");
        };
        let error = parse::<T::Args>(T::DEF.name, arguments).err()?;
        assert_eq!(error.code, crate::error::ToolErrorCode::InvalidInput);
        let prefix = format!("invalid arguments for `{}`: ", T::DEF.name);
        match error.message.strip_prefix(&prefix) {
            Some(message) => Some(message.to_owned()),
            None => panic!("no prefix: {}", error.message),
        }
    }

    #[test]
    fn a_value_outside_an_enum_lists_the_values() {
        assert_eq!(
            error(SwipeOn, json!({ "direction": "sideways" })).as_deref(),
            Some("`direction` must be one of up, down, left, right; got `sideways`")
        );
        // serde's "expected string or map": an enum given a value of another type.
        assert_eq!(
            error(SwipeOn, json!({ "direction": 5 })).as_deref(),
            Some("`direction` must be one of up, down, left, right; got the number 5")
        );
        assert_eq!(
            error(ListDevices, json!({ "platform": ["web"] })).as_deref(),
            Some("`platform` must be one of web, android, ios; got an array")
        );
        // serde's "expected map with a single key" and "expected unit": the map form of a
        // variant, which the schema does not offer.
        assert_eq!(
            error(TapOn, json!({ "text": "OK", "action": {} })).as_deref(),
            Some("`action` must be one of tap, doubleTap, longPress, hover; got an empty object")
        );
        assert_eq!(
            error(SwipeOn, json!({ "direction": { "up": 1 } })).as_deref(),
            Some("`direction` must be one of up, down, left, right; got an object")
        );
        assert_eq!(
            error(Observe, json!({ "format": "xml" })).as_deref(),
            Some("`format` must be one of text, json; got `xml`")
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_names_both_types() {
        let cases = [
            (
                error(InputText, json!({ "text": 5 })),
                "`text` must be a string; got the number 5",
            ),
            (
                error(InputText, json!({ "text": null })),
                "`text` must be a string; got null",
            ),
            // Flattened arguments, whose path serde loses.
            (
                error(TapOn, json!({ "text": 5 })),
                "`text` must be a string; got the number 5",
            ),
            (
                error(TapOn, json!({ "x": "10", "y": 20 })),
                "`x` must be a number; got the string `10`",
            ),
            (
                error(Highlight, json!({ "clear": "yes" })),
                "`clear` must be true or false; got the string `yes`",
            ),
            (
                error(Observe, json!({ "full": null })),
                "`full` must be true or false; got null",
            ),
            (
                error(GetWeb, json!({ "enableTools": "observe" })),
                "`enableTools` must be an array of strings; got the string `observe`",
            ),
            (
                error(Highlight, json!({ "targets": { "text": "OK" } })),
                "`targets` must be an array of objects; got an object",
            ),
            (
                error(DragAndDrop, json!({ "from": "e1", "to": { "ref": "e2" } })),
                "`from` must be an object; got the string `e1`",
            ),
        ];
        for (got, expected) in cases {
            assert_eq!(got.as_deref(), Some(expected));
        }
    }

    #[test]
    fn a_number_out_of_range_names_the_range() {
        let max_swipes =
            |value: Value| error(SwipeOn, json!({ "direction": "up", "maxSwipes": value }));
        assert_eq!(
            max_swipes(json!(0)).as_deref(),
            Some("`maxSwipes` must be an integer from 1 to 50; got 0")
        );
        assert_eq!(
            max_swipes(json!(51)).as_deref(),
            Some("`maxSwipes` must be an integer from 1 to 50; got 51")
        );
        assert_eq!(
            max_swipes(json!(2.5)).as_deref(),
            Some("`maxSwipes` must be an integer from 1 to 50; got 2.5")
        );
        assert_eq!(
            max_swipes(json!("3")).as_deref(),
            Some("`maxSwipes` must be an integer from 1 to 50; got the string `3`")
        );
        assert_eq!(
            error(Screenshot, json!({ "quality": -1 })).as_deref(),
            Some("`quality` must be an integer from 1 to 100; got -1")
        );
        assert_eq!(max_swipes(json!(50)), None);
    }

    #[test]
    fn missing_arguments_are_required() {
        assert_eq!(
            error(InputText, json!({})).as_deref(),
            Some("`text` is required")
        );
        assert_eq!(
            error(ProvisionDevice, json!({})).as_deref(),
            Some("`platform` and `boot` are required")
        );
        assert_eq!(
            error(DragAndDrop, json!({ "from": { "ref": "e1" } })).as_deref(),
            Some("`to` is required")
        );
    }

    #[test]
    fn an_unknown_argument_lists_those_the_tool_takes() {
        assert_eq!(
            error(TapOn, json!({ "foo": 1 })).as_deref(),
            Some("`foo` is not an argument of `tapOn`; it takes: action, id, ref, text, x, y")
        );
        assert_eq!(
            error(ListDevices, json!({ "extra": true })).as_deref(),
            Some("`extra` is not an argument of `listDevices`; it takes: platform")
        );
        assert_eq!(
            error(ListApps, json!({ "extra": true })).as_deref(),
            Some("`extra` is not an argument of `listApps`; `listApps` takes no arguments")
        );
        // The in-band session argument is removed before parsing and is not offered.
        assert_eq!(
            error(GetWeb, json!({ "platform": "web" })).as_deref(),
            Some(
                "`platform` is not an argument of `getWeb`; it takes: app, enableTools, profile, storage"
            )
        );
    }

    #[test]
    fn nested_problems_keep_their_path() {
        let cases = [
            (
                error(
                    DragAndDrop,
                    json!({ "from": { "x": "a", "y": 1 }, "to": { "ref": "e2" } }),
                ),
                "`from.x` must be a number; got the string `a`",
            ),
            (
                error(
                    DragAndDrop,
                    json!({ "from": { "ref": "e1", "z": 1 }, "to": { "ref": "e2" } }),
                ),
                "`from.z` is not a field of `from`; it takes: id, ref, text, x, y",
            ),
            (
                error(
                    Highlight,
                    json!({ "targets": [{ "text": "a" }, { "text": 5 }] }),
                ),
                "`targets[1].text` must be a string; got the number 5",
            ),
            (
                error(
                    Highlight,
                    json!({ "targets": [{ "text": "a" }, { "label": "b" }] }),
                ),
                "`targets[1].label` is not a field of `targets[1]`; it takes: id, ref, text, x, y",
            ),
            (
                error(GetWeb, json!({ "enableTools": ["observe", 1] })),
                "`enableTools[1]` must be a string; got the number 1",
            ),
        ];
        for (got, expected) in cases {
            assert_eq!(got.as_deref(), Some(expected));
        }
    }

    #[test]
    fn null_is_not_reported_for_an_optional_argument() {
        assert_eq!(
            error(Screenshot, json!({ "quality": null, "width": null })),
            None
        );
        assert_eq!(
            error(Screenshot, json!({ "quality": null, "width": 1 })).as_deref(),
            Some("`width` must be an integer from 64 to 4096; got 1")
        );
    }

    #[test]
    fn quoted_strings_are_short_and_on_one_line() {
        assert_eq!(quote("two\nlines"), "two\\nlines");
        let long = "x".repeat(QUOTED_CHARS + 1);
        assert_eq!(quote(&long), format!("{}…", "x".repeat(QUOTED_CHARS)));
        assert_eq!(quote(&long[1..]), long[1..]);
    }

    #[test]
    fn serde_messages_the_schema_cannot_explain_are_cleaned() {
        let path = Path::default().key("direction");
        let cases = [
            (
                "invalid type: integer `5`, expected string or map",
                "`direction` must be a string; got the number 5",
            ),
            (
                "invalid type: sequence, expected a map",
                "`direction` must be an object; got an array",
            ),
            (
                "invalid value: floating point `2.5`, expected u32",
                "`direction` must be an integer; got the number 2.5",
            ),
            (
                "invalid type: string \"up\", expected struct TargetObject",
                "`direction` must be an object; got the string `up`",
            ),
            (
                "invalid type: unit variant, expected a boolean",
                "`direction` must be true or false; got an object",
            ),
            (
                "unknown variant `sideways`, expected one of `up`, `down`",
                "`direction` must be one of up, down; got `sideways`",
            ),
            ("missing field `x`", "`direction.x` is required"),
            (
                "invalid value: map, expected map with a single key",
                "`direction` must be object with a single key; got an object",
            ),
            (
                "invalid length 0, expected a sequence of unit variants",
                "`direction`: invalid length 0, expected an array of null values",
            ),
        ];
        for (serde, expected) in cases {
            assert_eq!(fallback(&path, serde), expected, "{serde}");
        }
        assert_eq!(
            fallback(&Path::default(), "unknown field `z`"),
            "the arguments: unknown field `z`"
        );
    }

    #[test]
    fn paths_read_as_in_javascript() {
        let path = Path::default().key("targets").index(1).key("text");
        assert_eq!(path.to_string(), "targets[1].text");
    }

    /// The words a generated argument is made of: every name and enum value in a registered
    /// tool's schema, and some that are none.
    fn vocabulary() -> Vec<String> {
        fn collect(schema: &Value, words: &mut BTreeSet<String>) {
            match schema {
                Value::Object(object) => {
                    if let Some(Value::Object(properties)) = object.get("properties") {
                        words.extend(properties.keys().cloned());
                    }
                    object.values().for_each(|value| collect(value, words));
                }
                Value::Array(values) => values.iter().for_each(|value| collect(value, words)),
                Value::String(text) => {
                    words.insert(text.clone());
                }
                _ => {}
            }
        }
        let mut words: BTreeSet<String> = ["foo", "z", "e1", ""].map(str::to_owned).into();
        for tool in REGISTERED {
            collect(&Value::Object(tool.input_schema()), &mut words);
        }
        // Generated strings may not spell serde's words, so that a message that quotes them
        // does not fail the check.
        words.retain(|word| {
            !SERDE_WORDS
                .iter()
                .any(|serde| word.to_lowercase().contains(serde))
        });
        words.into_iter().collect()
    }

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => proptest::sample::select(vocabulary()),
            1 => "[a-l0-9 ]{0,6}",
        ]
    }

    /// Any JSON value, leaning towards the names and values the tools know.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-100..200i64).prop_map(Value::from),
            (-1.0e6..1.0e6f64).prop_map(Value::from),
            word().prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(word(), inner, 0..4)
                    .prop_map(|object| Value::Object(object.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_arguments_get_a_plain_answer_from_every_tool(
            arguments in proptest::collection::btree_map(word(), json_value(), 0..5),
        ) {
            let arguments: Map<String, Value> = arguments.into_iter().collect();
            let fallbacks = FALLBACKS.with(std::cell::Cell::get);
            for tool in REGISTERED {
                let name = tool.def().name;
                let Err(error) = tool.parse_only(arguments.clone()) else {
                    continue;
                };
                let message = error.message.to_lowercase();
                prop_assert_eq!(error.code, crate::error::ToolErrorCode::InvalidInput);
                prop_assert!(
                    error.message.starts_with(&format!("invalid arguments for `{name}`: ")),
                    "{}", error.message
                );
                for serde in SERDE_WORDS {
                    prop_assert!(!message.contains(serde), "{name}: {}", error.message);
                }
                prop_assert_eq!(
                    FALLBACKS.with(std::cell::Cell::get),
                    fallbacks,
                    "{}: the schema did not explain {}",
                    name,
                    error.message
                );
            }
        }
    }
}
