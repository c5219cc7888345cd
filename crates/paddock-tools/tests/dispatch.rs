//! Every registered tool dispatches: called through the real `McpServer` path, it answers with
//! a result or a typed `[code] message` error — never an unknown tool, a missing handler or an
//! internal failure — and arguments its schema rules out are `[invalid_input]`.
#![cfg(test)]

mod common;

use common::{Fixture, is_error, properties, text};
use paddock_tools::catalog::builtin;
use serde_json::{Value, json};

/// The codes a tool may answer with for arguments alone; `internal` is not among them.
const INPUT_CODES: &[&str] = &[
    "not_found",
    "forbidden",
    "rate_limited",
    "upstream_error",
    "invalid_input",
    "unsupported_platform",
    "device_lost",
    "unavailable",
];

fn error_code(result: &Value) -> Option<&str> {
    let text = text(result);
    let code = text.strip_prefix('[')?.split_once("] ")?.0;
    Some(code)
}

#[tokio::test]
async fn every_registered_tool_answers_a_typed_result_or_error() {
    let fixture = Fixture::without_devices();
    let catalog = builtin();
    assert_eq!(fixture.registry.catalog().len(), catalog.len());
    for tool in &catalog {
        let name = tool.def.name;
        let result = fixture.call(name, json!({})).await;
        if is_error(&result) {
            let code = error_code(&result);
            assert!(
                code.is_some_and(|code| INPUT_CODES.contains(&code)),
                "`{name}` with no arguments: {result}"
            );
            assert!(!text(&result).contains("no handler"), "{name}: {result}");
        } else {
            assert!(
                result["structuredContent"].is_object() || !text(&result).is_empty(),
                "`{name}` with no arguments answered nothing: {result}"
            );
        }
    }
}

#[tokio::test]
async fn unknown_arguments_are_invalid_input_for_every_tool() {
    let fixture = Fixture::without_devices();
    for tool in builtin() {
        let name = tool.def.name;
        let result = fixture.call(name, json!({ "noSuchArgument": 1 })).await;
        assert!(is_error(&result), "{name}: {result}");
        assert_eq!(
            error_code(&result),
            Some("invalid_input"),
            "{name}: {result}"
        );
    }
}

/// A value of the wrong JSON type for a property of `schema`.
fn wrong_value(schema: &Value) -> Value {
    match schema["type"].as_str() {
        Some("string") => json!(7),
        _ => json!("wrong type"),
    }
}

/// A value that `schema` admits.
fn valid_value(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].get(0) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("string") => json!("x"),
        Some("boolean") => json!(false),
        Some("integer") => schema["minimum"].clone(),
        Some("number") => json!(1),
        Some("array") => json!([]),
        _ => json!({}),
    }
}

#[tokio::test]
async fn every_argument_rejects_a_value_of_the_wrong_type() {
    let fixture = Fixture::without_devices();
    for tool in builtin() {
        let name = tool.def.name;
        let properties = properties(&tool.input_schema);
        // The required arguments get valid values, so the one under test is what fails.
        let mut valid = json!({});
        let required = tool.input_schema.get("required").and_then(Value::as_array);
        for required in required.into_iter().flatten() {
            let required = required.as_str().unwrap();
            valid[required] = valid_value(&properties[required]);
        }
        for (argument, schema) in properties {
            if argument == "__mcpSessionId" {
                continue;
            }
            let mut arguments = valid.clone();
            arguments[argument] = wrong_value(schema);
            let result = fixture.call(name, arguments.clone()).await;
            assert_eq!(
                error_code(&result),
                Some("invalid_input"),
                "{name} {arguments}: {result}"
            );
            if argument != "operation" {
                assert!(
                    text(&result).contains("invalid type"),
                    "{name} {arguments}: {result}"
                );
            }
        }
    }
}

#[tokio::test]
async fn argument_errors_name_the_argument_and_what_it_takes() {
    let fixture = Fixture::without_devices();
    let cases = [
        (
            "swipeOn",
            json!({ "direction": "sideways" }),
            "`direction`: unknown variant `sideways`, expected one of `up`, `down`, `left`, `right`",
        ),
        (
            "swipeOn",
            json!({ "direction": "up", "maxSwipes": 51 }),
            "`maxSwipes`: invalid value: integer `51`, expected an integer from 1 to 50",
        ),
        (
            "pressButton",
            json!({ "button": "power" }),
            "`button`: unknown variant `power`",
        ),
        (
            "screenshot",
            json!({ "quality": 0 }),
            "`quality`: invalid value: integer `0`, expected an integer from 1 to 100",
        ),
        (
            "getAndroid",
            json!({ "profile": "pixel7" }),
            "unknown field `profile`",
        ),
        (
            "listDevices",
            json!({ "extra": true }),
            "unknown field `extra`",
        ),
        (
            "dragAndDrop",
            json!({ "from": { "ref": "e1", "z": 1 }, "to": { "ref": "e2" } }),
            "`from`: unknown field `z`",
        ),
    ];
    for (name, arguments, expected) in cases {
        let result = fixture.call(name, arguments.clone()).await;
        let text = text(&result);
        assert!(
            text.starts_with(&format!("[invalid_input] invalid arguments for `{name}`: ")),
            "{name} {arguments}: {text}"
        );
        assert!(text.contains(expected), "{name} {arguments}: {text}");
    }
}
