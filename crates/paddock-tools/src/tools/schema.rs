//! Input schemas, derived from each tool's argument type with schemars and brought to the
//! contract's plain dialect: one self-contained object schema per tool, which strict clients
//! and model APIs (those that enforce `additionalProperties: false`) read without surprises.
//!
//! What the derivation would add and the contract does not have is removed here, once:
//! `$schema` and the type's own `title`/`description` (the tool's description speaks for it),
//! `$ref` indirections (subschemas are generated inline), `null` in the type or enum of an
//! optional argument (absent is how an argument is not given), `format` annotations such as
//! `double`, and `default` values (defaults are stated in the descriptions). Doc comments keep
//! their paragraphs but not their line breaks.
//!
//! A tool that reads the routing session also declares the in-band `__mcpSessionId` argument
//! (the MCP spec's in-band session key), so a client or model API that enforces
//! `additionalProperties: false` may still send it.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::session::IN_BAND_ARGUMENT;

/// The in-band session argument, as declared by every tool that reads the routing session.
fn in_band_session_argument() -> Value {
    json!({
        "type": "string",
        "description": "The routing session's id (the `sessionUuid` getWeb returns), for a client that cannot send the `x-paddock-session-id` header.",
    })
}

/// The input schema of a tool whose arguments are `T`; with `routing_session`, it declares the
/// in-band session argument too, which the server removes before the arguments are parsed.
pub(crate) fn input_schema<T: JsonSchema>(routing_session: bool) -> Map<String, Value> {
    let mut schema = match argument_schema::<T>() {
        Value::Object(schema) => schema,
        // A type whose schema is `true` or `false` takes no object; the contract test fails.
        _ => Map::new(),
    };
    schema.remove("title");
    schema.remove("description");
    normalize(&mut schema);
    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if routing_session && let Value::Object(properties) = properties {
        properties.insert(IN_BAND_ARGUMENT.to_owned(), in_band_session_argument());
    }
    schema
}

/// The `outputSchema` of a tool whose structured result is `T` (a JSON Schema 2020-12 object
/// schema). Unlike an input schema it keeps `null` where a field may be null, since results
/// say null where arguments say nothing; descriptions are unwrapped like the inputs'.
pub(crate) fn output_schema<T: JsonSchema>() -> Map<String, Value> {
    let mut schema = match argument_schema::<T>() {
        Value::Object(schema) => schema,
        _ => Map::new(),
    };
    schema.remove("title");
    schema.remove("description");
    unwrap_descriptions(&mut schema);
    // MCP requires an object schema at the root (a union of objects is still one).
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    schema
}

/// Unwraps the doc-comment lines of every description in `schema`, and drops schemars' `format`
/// annotations (`uint`, `double`: not JSON Schema formats; validators warn about them).
fn unwrap_descriptions(schema: &mut Map<String, Value>) {
    schema.remove("format");
    for (key, value) in schema.iter_mut() {
        match value {
            Value::String(text) if key == "description" => *text = unwrap_lines(text),
            Value::Object(inner) => unwrap_descriptions(inner),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(inner) = item {
                        unwrap_descriptions(inner);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The schema of `T` as derived, before [`input_schema`] brings it to the contract's dialect:
/// inline, but with its `null` unions, which tell an optional argument (that serde accepts as
/// `null`) from a defaulted one (that it does not). Argument errors are phrased from it (see
/// `argument_error.rs`), and output schemas start from it.
pub(crate) fn argument_schema<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

fn normalize(schema: &mut Map<String, Value>) {
    schema.remove("format");
    schema.remove("default");
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|kind| kind != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            schema.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(variants)) = schema.get(key) else {
            continue;
        };
        let is_null = |variant: &Value| variant.get("type").is_some_and(|kind| kind == "null");
        let others: Vec<Value> = variants
            .iter()
            .filter(|variant| !is_null(variant))
            .cloned()
            .collect();
        if let [Value::Object(only)] = others.as_slice() {
            let only = only.clone();
            schema.remove(key);
            for (name, value) in only {
                schema.entry(name).or_insert(value);
            }
        }
    }
    if let Some(Value::String(description)) = schema.get_mut("description") {
        *description = unwrap_lines(description);
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            normalize_value(property);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(subschema) = schema.get_mut(key) {
            normalize_value(subschema);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(subschemas)) = schema.get_mut(key) {
            subschemas.iter_mut().for_each(normalize_value);
        }
    }
}

fn normalize_value(schema: &mut Value) {
    if let Value::Object(schema) = schema {
        normalize(schema);
    }
}

/// Joins a doc comment's lines into one per paragraph, as rustdoc renders it.
fn unwrap_lines(text: &str) -> String {
    text.split("\n\n")
        .map(|paragraph| {
            paragraph
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_comment_lines_join_within_paragraphs() {
        assert_eq!(unwrap_lines("one\ntwo\n\nthree"), "one two\n\nthree");
        assert_eq!(unwrap_lines("single"), "single");
    }

    #[test]
    fn optional_and_nested_arguments_read_as_plain_schemas() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        #[expect(dead_code, reason = "only the schema is read")]
        struct Inner {
            /// A number.
            n: Option<f64>,
        }
        #[derive(serde::Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        #[expect(dead_code, reason = "only the schema is read")]
        struct Outer {
            /// Given or not,
            /// on two lines.
            text: Option<String>,
            /// Nested.
            inner: Inner,
            #[serde(default)]
            flag: bool,
        }
        let schema = Value::Object(input_schema::<Outer>(true));
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "Given or not, on two lines." },
                    "inner": {
                        "type": "object",
                        "description": "Nested.",
                        "properties": { "n": { "type": "number", "description": "A number." } },
                        "additionalProperties": false
                    },
                    "flag": { "type": "boolean" },
                    IN_BAND_ARGUMENT: in_band_session_argument(),
                },
                "required": ["inner"],
                "additionalProperties": false
            })
        );
    }
}
