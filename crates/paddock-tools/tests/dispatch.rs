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
        _ => {
            // An object with its own required properties (a plan document) gets them too.
            let mut object = json!({});
            let required = schema.get("required").and_then(Value::as_array);
            for name in required.into_iter().flatten().filter_map(Value::as_str) {
                object[name] = valid_value(&schema["properties"][name]);
            }
            object
        }
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
            // A bundle's `operation` is checked before parsing, for the policy, and answered
            // with the operations it has.
            if argument != "operation" {
                assert!(
                    text(&result).contains(&format!("`{argument}` must be ")),
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
            "`direction` must be one of up, down, left, right; got `sideways`",
        ),
        (
            "swipeOn",
            json!({ "direction": "up", "maxSwipes": 51 }),
            "`maxSwipes` must be an integer from 1 to 50; got 51",
        ),
        (
            "pressButton",
            json!({ "button": "sleep" }),
            "`button` must be one of back, forward, home, reload, enter, tab, escape, backspace, delete, space, arrowUp, arrowDown, arrowLeft, arrowRight, pageUp, pageDown, appSwitch, volumeUp, volumeDown, power; got `sleep`",
        ),
        (
            "screenshot",
            json!({ "quality": 0 }),
            "`quality` must be an integer from 1 to 100; got 0",
        ),
        (
            "tapOn",
            json!({ "text": 5 }),
            "`text` must be a string; got the number 5",
        ),
        ("inputText", json!({}), "`text` is required"),
        (
            "getAndroid",
            json!({ "profile": "pixel7" }),
            "`profile` is not an argument of `getAndroid`; it takes: avdName, enableTools",
        ),
        (
            "listDevices",
            json!({ "extra": true }),
            "`extra` is not an argument of `listDevices`; it takes: platform",
        ),
        (
            "dragAndDrop",
            json!({ "from": { "ref": "e1", "z": 1 }, "to": { "ref": "e2" } }),
            "`from.z` is not a field of `from`; it takes: id, ref, text, x, y",
        ),
        (
            "highlight",
            json!({ "targets": [{ "ref": "e1" }, { "text": 5 }] }),
            "`targets[1].text` must be a string; got the number 5",
        ),
    ];
    for (name, arguments, expected) in cases {
        let result = fixture.call(name, arguments.clone()).await;
        let text = text(&result);
        assert!(
            text.starts_with(&format!("[invalid_input] invalid arguments for `{name}`: ")),
            "{name} {arguments}: {text}"
        );
        assert_eq!(
            text.strip_prefix(&format!("[invalid_input] invalid arguments for `{name}`: ")),
            Some(expected),
            "{name} {arguments}"
        );
    }
}
