//! JSON-RPC requests checked before the MCP server sees them, so that a malformed request
//! gets the error the protocol names, with a message a client (or a model) can act on:
//! `-32601 Method not found: <method>` for a method Paddock does not serve, and `-32602` naming
//! the problem for `tools/call` and `tools/list` parameters of the wrong shape (rmcp, which
//! decodes a request's method and parameters in one step, would answer those `-32601` too).
//! Both transports call [`check_request`]: the HTTP route before its fast path, `paddock mcp`
//! before it forwards a line.

use serde_json::{Map, Value};

/// The request methods the server answers; any other request is `-32601`.
pub const SERVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "server/discover",
    "subscriptions/listen",
    "resources/list",
    "resources/read",
    "resources/templates/list",
];

/// JSON-RPC's code for an unknown method.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// JSON-RPC's code for parameters of the wrong shape.
pub const INVALID_PARAMS: i32 = -32602;
/// JSON-RPC's code for a message that is not a request object.
pub const INVALID_REQUEST: i32 = -32600;

/// Why a request is refused before it reaches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: i32,
    pub message: String,
}

impl Refusal {
    fn params(message: impl Into<String>) -> Self {
        Self {
            code: INVALID_PARAMS,
            message: message.into(),
        }
    }

    /// The JSON-RPC error response for a request with `id` (`null` when it had none).
    pub fn response(&self, id: Option<&Value>) -> Value {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": id.cloned().unwrap_or(Value::Null),
            "error": { "code": self.code, "message": self.message },
        })
    }
}

/// The message as one JSON-RPC object, or the refusal for a message that is not one (a
/// batch, a number).
pub fn request_object(message: Value) -> Result<Map<String, Value>, Refusal> {
    let problem = match message {
        Value::Object(message) => return Ok(message),
        Value::Array(_) => "Invalid request: JSON-RPC batches are not supported",
        _ => "Invalid request: expected a JSON-RPC object",
    };
    Err(Refusal {
        code: INVALID_REQUEST,
        message: problem.to_owned(),
    })
}

/// Checks one JSON-RPC request (a message with a `method` and an `id`); notifications and
/// responses pass unchecked.
pub fn check_request(message: &Map<String, Value>) -> Option<Refusal> {
    message.get("id")?;
    let Some(method) = message.get("method")?.as_str() else {
        return Some(Refusal {
            code: INVALID_REQUEST,
            message: "Invalid request: `method` must be a string".to_owned(),
        });
    };
    if !SERVED_METHODS.contains(&method) {
        return Some(Refusal {
            code: METHOD_NOT_FOUND,
            message: format!("Method not found: {method}"),
        });
    }
    let params = message.get("params");
    match method {
        "tools/call" => check_call(params),
        "tools/list" => check_list(params),
        _ => None,
    }
}

fn check_call(params: Option<&Value>) -> Option<Refusal> {
    let Some(Value::Object(params)) = params else {
        return Some(Refusal::params(format!(
            "Invalid params: `tools/call` needs `params`, an object with the tool's `name` and its `arguments`; got {}",
            described(params)
        )));
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
        other => {
            return Some(Refusal::params(format!(
                "Invalid params: `params.name` must be the tool's name, a string; got {}",
                described(other)
            )));
        }
    }
    match params.get("arguments") {
        None | Some(Value::Object(_)) => None,
        other => Some(Refusal::params(format!(
            "Invalid params: `params.arguments` must be an object of the tool's arguments by name; got {}",
            described(other)
        ))),
    }
}

fn check_list(params: Option<&Value>) -> Option<Refusal> {
    let params = match params {
        None | Some(Value::Null) => return None,
        Some(Value::Object(params)) => params,
        other => {
            return Some(Refusal::params(format!(
                "Invalid params: `tools/list` takes an object (with an optional `cursor`); got {}",
                described(other)
            )));
        }
    };
    match params.get("cursor") {
        None | Some(Value::Null | Value::String(_)) => None,
        other => Some(Refusal::params(format!(
            "Invalid params: `params.cursor` must be the `nextCursor` string of an earlier answer; got {}",
            described(other)
        ))),
    }
}

/// A value's kind in a client's words.
fn described(value: Option<&Value>) -> &'static str {
    match value {
        None => "nothing",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(message: Value) -> Option<Refusal> {
        check_request(message.as_object().expect("an object"))
    }

    #[test]
    fn malformed_tool_calls_are_invalid_params_naming_the_problem() {
        for (params, needle) in [
            (None, "needs `params`"),
            (Some(json!([])), "got an array"),
            (Some(json!({ "arguments": {} })), "`params.name`"),
            (Some(json!({ "name": 3 })), "got a number"),
            (
                Some(json!({ "name": "tapOn", "arguments": [] })),
                "`params.arguments`",
            ),
            (
                Some(json!({ "name": "tapOn", "arguments": "x" })),
                "got a string",
            ),
        ] {
            let mut message = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call" });
            if let Some(params) = params.clone() {
                message["params"] = params;
            }
            let refusal = check(message).unwrap_or_else(|| panic!("{params:?} passed"));
            assert_eq!(refusal.code, INVALID_PARAMS, "{params:?}");
            assert!(
                refusal.message.contains(needle),
                "{params:?}: {}",
                refusal.message
            );
        }
        let good = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "tapOn", "arguments": { "text": "OK" } } });
        assert_eq!(check(good), None);
        let no_arguments = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "listDevices" } });
        assert_eq!(check(no_arguments), None);
    }

    #[test]
    fn list_params_and_unknown_methods() {
        let bad_cursor =
            json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "cursor": 5 } });
        assert_eq!(check(bad_cursor).map(|r| r.code), Some(INVALID_PARAMS));
        let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
        assert_eq!(check(list), None);
        let unknown = check(json!({ "jsonrpc": "2.0", "id": "a", "method": "tools/explode" }))
            .expect("refused");
        assert_eq!(unknown.code, METHOD_NOT_FOUND);
        assert_eq!(unknown.message, "Method not found: tools/explode");
        assert_eq!(
            unknown.response(Some(&json!("a"))),
            json!({ "jsonrpc": "2.0", "id": "a", "error": { "code": -32601, "message": "Method not found: tools/explode" } })
        );
        // Notifications and responses are not requests.
        assert_eq!(
            check(json!({ "jsonrpc": "2.0", "method": "notifications/whatever" })),
            None
        );
        assert_eq!(
            check(json!({ "jsonrpc": "2.0", "id": 1, "result": {} })),
            None
        );
    }

    #[test]
    fn batches_and_scalars_are_not_requests() {
        assert_eq!(
            request_object(json!([])).map_err(|r| r.code),
            Err(INVALID_REQUEST)
        );
        assert_eq!(
            request_object(json!(7)).map_err(|r| r.code),
            Err(INVALID_REQUEST)
        );
        assert_eq!(request_object(json!({})), Ok(Map::new()));
        let refusal = request_object(json!([1])).expect_err("refused");
        assert_eq!(refusal.response(None)["id"], Value::Null);
    }
}
