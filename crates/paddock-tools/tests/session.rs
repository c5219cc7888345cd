//! The in-band session argument (`__mcpSessionId`): declared in the input schema of every tool
//! that reads the routing session, accepted by each, and routed — the backend, or the answer,
//! sees that session. The server removes the key before parsing, and every argument type
//! denies unknown fields, so a handler that saw it would answer that it is not an argument.
#![cfg(test)]

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use common::{Fixture, is_error, properties, text};
use paddock_devices::{AppConfig, Device, DeviceError, DeviceInfo, Platform};
use paddock_tools::backend::{Acquired, Backend, BoxFuture, DeviceRequest};
use paddock_tools::catalog::builtin;
use serde_json::{Value, json};

const SESSION: &str = "routed-1";

/// A backend with no devices that records the session of every call it gets.
#[derive(Default)]
struct RecordingBackend {
    sessions: Mutex<Vec<String>>,
}

impl RecordingBackend {
    fn record(&self, session: &str) {
        self.sessions.lock().unwrap().push(session.to_owned());
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.sessions.lock().unwrap())
    }
}

fn none_bound(session: &str) -> DeviceError {
    DeviceError::NotFound(format!("no device is bound to `{session}`"))
}

impl Backend for RecordingBackend {
    fn list_devices(&self, _platform: Option<Platform>) -> Vec<DeviceInfo> {
        Vec::new()
    }

    fn acquire<'a>(
        &'a self,
        session: &'a str,
        _request: DeviceRequest<'a>,
    ) -> BoxFuture<'a, Result<Acquired, DeviceError>> {
        self.record(session);
        Box::pin(async move { Err(none_bound(session)) })
    }

    fn provision<'a>(
        &'a self,
        _platform: Platform,
        _profile: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String, DeviceError>> {
        Box::pin(async { Ok("web-9".to_owned()) })
    }

    fn device(&self, session: &str) -> Result<Arc<dyn Device>, DeviceError> {
        self.record(session);
        Err(none_bound(session))
    }

    fn release<'a>(&'a self, session: &'a str, _reason: &'a str) -> BoxFuture<'a, Option<String>> {
        self.record(session);
        Box::pin(async { None })
    }

    fn apps(&self) -> Vec<AppConfig> {
        vec![AppConfig {
            id: "shop".into(),
            name: "Shop".into(),
            url: "https://shop.example/".into(),
        }]
    }
}

/// For each tool that reads the routing session: arguments that get as far as the backend.
fn routed_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("getWeb", json!({})),
        ("getAndroid", json!({})),
        ("getApple", json!({})),
        (
            "provisionDevice",
            json!({ "platform": "web", "boot": true }),
        ),
        ("releaseDevice", json!({})),
        ("observe", json!({})),
        ("tapOn", json!({ "ref": "e1" })),
        ("swipeOn", json!({ "direction": "up" })),
        (
            "dragAndDrop",
            json!({ "from": { "ref": "e1" }, "to": { "x": 1, "y": 2 } }),
        ),
        ("inputText", json!({ "text": "hi", "label": "Name" })),
        ("clearText", json!({})),
        ("imeAction", json!({ "action": "done" })),
        ("pressButton", json!({ "button": "enter" })),
        ("sendKeys", json!({ "text": "hi" })),
        ("launchApp", json!({ "appId": "shop" })),
        ("terminateApp", json!({ "appId": "shop" })),
        ("openLink", json!({ "url": "https://shop.example/" })),
        ("rotate", json!({ "orientation": "landscape" })),
        ("screenshot", json!({ "quality": 50 })),
        ("clipboard", json!({ "operation": "read" })),
        ("highlight", json!({ "clear": true })),
        ("consoleLog", json!({})),
        ("networkLog", json!({ "failedOnly": true })),
        ("networkBody", json!({ "requestId": "1.2" })),
        ("configureDevice", json!({ "operation": "get" })),
        ("evaluate", json!({ "expression": "1 + 1" })),
        ("saveStorage", json!({ "name": "login" })),
        ("tabs", json!({ "operation": "list" })),
        (
            "uploadFile",
            json!({ "id": "file", "paths": ["/tmp/note.txt"] }),
        ),
        ("files", json!({ "operation": "list" })),
        ("savePdf", json!({})),
        ("installApp", json!({ "path": "/tmp/app.apk" })),
        (
            "sqlQuery",
            json!({ "package": "com.example.notes", "database": "notes.db", "sql": "SELECT 1" }),
        ),
        (
            "executePlan",
            json!({ "plan": { "version": 1, "steps": [{ "tool": "observe" }] } }),
        ),
    ]
}

/// The routing-session tools whose effect shows in their answer rather than in the backend.
const ANSWER_ROUTED: &[&str] = &["setToolEnabled", "discovery"];

fn with_session(mut arguments: Value) -> Value {
    arguments["__mcpSessionId"] = json!(SESSION);
    arguments
}

#[test]
fn every_routing_session_tool_declares_the_in_band_argument() {
    let mut declared = BTreeSet::new();
    for tool in builtin() {
        let name = tool.def.name;
        let property = properties(&tool.input_schema).get("__mcpSessionId");
        if tool.def.routing_session {
            declared.insert(name);
            assert_eq!(
                property.map(|property| &property["type"]),
                Some(&json!("string")),
                "{name}"
            );
            let required = tool.input_schema.get("required").and_then(Value::as_array);
            assert!(
                !required.is_some_and(|required| required.contains(&json!("__mcpSessionId"))),
                "{name}: the session argument is optional"
            );
        } else {
            assert!(property.is_none(), "{name} reads no session: {property:?}");
            assert!(tool.def.platforms.is_empty(), "{name} acts on a device");
        }
    }
    let covered: BTreeSet<&str> = routed_calls()
        .into_iter()
        .map(|(name, _)| name)
        .chain(ANSWER_ROUTED.iter().copied())
        .collect();
    assert_eq!(
        declared, covered,
        "routed_calls() covers every session tool"
    );
}

#[tokio::test]
async fn the_in_band_argument_routes_device_tools_to_its_session() {
    let backend = Arc::new(RecordingBackend::default());
    let fixture = Fixture::new(backend.clone());
    for (name, arguments) in routed_calls() {
        let arguments = with_session(arguments);
        let result = fixture.call(name, arguments.clone()).await;
        let text = text(&result);
        assert!(
            !text.starts_with("[invalid_input]"),
            "{name} {arguments}: {text}"
        );
        assert_eq!(backend.take(), [SESSION], "{name} {arguments}: {text}");
    }
}

#[tokio::test]
async fn the_in_band_argument_routes_discovery_to_its_session() {
    let fixture = Fixture::without_devices();
    let status = fixture
        .call("discovery", with_session(json!({ "operation": "status" })))
        .await;
    assert!(!is_error(&status), "{status}");
    assert_eq!(status["structuredContent"]["session"], SESSION);

    // A choice saved for the session shows in a profile write made from that session.
    let scoped = fixture
        .call(
            "setToolEnabled",
            json!({ "toolName": "highlight", "enabled": true, "sessionUuid": SESSION }),
        )
        .await;
    assert!(!is_error(&scoped), "{scoped}");
    let listed = |result: &Value| -> Vec<String> {
        result["structuredContent"]["enabledTools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let enable_clipboard = json!({ "toolName": "clipboard", "enabled": true });
    let elsewhere = fixture
        .call("setToolEnabled", enable_clipboard.clone())
        .await;
    assert!(
        !listed(&elsewhere).contains(&"highlight".to_owned()),
        "{elsewhere}"
    );
    let routed = fixture
        .call("setToolEnabled", with_session(enable_clipboard))
        .await;
    assert!(!is_error(&routed), "{routed}");
    assert!(
        listed(&routed).contains(&"highlight".to_owned()),
        "{routed}"
    );
    assert!(
        listed(&routed).contains(&"clipboard".to_owned()),
        "{routed}"
    );
}

#[tokio::test]
async fn a_tool_that_reads_no_session_still_accepts_the_argument() {
    let fixture = Fixture::without_devices();
    for name in ["listDevices", "listApps", "daemonInfo"] {
        let result = fixture.call(name, with_session(json!({}))).await;
        assert!(!is_error(&result), "{name}: {result}");
    }
    let result = fixture
        .call("listDevices", json!({ "__mcpSessionId": 7 }))
        .await;
    assert!(text(&result).starts_with("[invalid_input]"), "{result}");
}
