//! Tool calls as a [`CallRecorder`] sees them: arguments with password text masked, the
//! arguments a plan replays (targets by text, id or label rather than by ref), and the screen
//! after a device action.

use paddock_devices::Element;
use serde_json::{Map, Value, json};

use crate::catalog::ToolDef;
use crate::render::element_json;
use crate::tasks::RecordedCall;

/// What a masked password reads as in a recorded call.
pub const MASK: &str = "••••••••";
/// A password's place in a recorded call's plan arguments, before the plan numbers it.
pub const PASSWORD_VARIABLE: &str = "${PASSWORD}";

/// What the recorder knows before a call runs.
pub(crate) struct Before {
    pub arguments: Map<String, Value>,
    /// The elements the session saw last, on the device it has (refs resolve against them).
    pub seen: Option<Vec<Element>>,
}

/// Whether a plan replays calls of `tool`: device tools that change the device, except a
/// replay itself (its steps are the plan's; a plan within a plan would replay them twice).
fn replayable(tool: &ToolDef) -> bool {
    !tool.platforms.is_empty() && !tool.hints.read_only && !tool.plan_only
}

/// The element a call's target arguments name, among `elements`.
fn targeted<'a>(arguments: &Map<String, Value>, elements: &'a [Element]) -> Option<&'a Element> {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str);
    if let Some(reference) = text("ref") {
        return elements
            .iter()
            .find(|element| element.reference == reference);
    }
    if let Some(id) = text("id") {
        return elements
            .iter()
            .find(|element| element.id.as_deref() == Some(id));
    }
    if let Some(label) = text("label") {
        return elements.iter().find(|element| element.name == label);
    }
    None
}

fn is_password(element: &Element) -> bool {
    element.states.iter().any(|state| state == "password")
}

/// Builds the recorded call once the call has run; `after` is what the session sees now.
pub(crate) fn recorded(
    tool: &ToolDef,
    before: Before,
    after: Option<Vec<Element>>,
    ok: bool,
    outcome: String,
    duration_ms: u64,
) -> RecordedCall {
    let mut arguments = before.arguments;
    let seen = before.seen.unwrap_or_default();
    let target = targeted(&arguments, &seen).cloned();
    // Typing goes into the named field, or the focused one (which is focused after the call).
    let typed_into_password = tool.name == "inputText"
        && (target.as_ref().is_some_and(is_password)
            || (target.is_none()
                && !arguments.contains_key("ref")
                && after.as_deref().unwrap_or_default().iter().any(|element| {
                    is_password(element) && element.states.iter().any(|s| s == "focused")
                })));
    // A replayed plan's variables are the passwords its recording took out: never stored.
    if tool.name == "executePlan"
        && let Some(Value::Object(variables)) = arguments.get_mut("variables")
    {
        variables
            .values_mut()
            .for_each(|value| *value = json!(MASK));
    }
    let mut plan_arguments = replayable(tool).then(|| arguments.clone());
    if typed_into_password {
        arguments.insert("text".into(), json!(MASK));
        if let Some(plan) = plan_arguments.as_mut() {
            // Numbered when a plan is built from the calls (`PASSWORD_1`, `PASSWORD_2`, …).
            plan.insert("text".into(), json!(PASSWORD_VARIABLE));
        }
    }
    if let Some(plan) = plan_arguments.as_mut()
        && plan.contains_key("ref")
    {
        match &target {
            Some(element) => {
                plan.remove("ref");
                let field = plan.contains_key("text") || tool.name == "clearText";
                match (&element.id, field) {
                    (Some(id), _) => {
                        plan.insert("id".into(), json!(id));
                    }
                    (None, true) => {
                        plan.insert("label".into(), json!(element.name));
                    }
                    (None, false) => {
                        plan.insert("text".into(), json!(element.name));
                    }
                }
            }
            // A ref the session never saw cannot be made robust: the plan keeps no such step.
            None => plan_arguments = None,
        }
    }
    RecordedCall {
        tool: tool.name.to_owned(),
        arguments,
        plan_arguments,
        ok,
        outcome,
        duration_ms,
        ui_state: after
            .filter(|_| !tool.platforms.is_empty())
            .map(|elements| Value::Array(elements.iter().map(element_json).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Hints;

    fn element(reference: &str, name: &str, id: Option<&str>, states: &[&str]) -> Element {
        Element {
            reference: reference.into(),
            role: "textbox".into(),
            name: name.into(),
            value: None,
            states: states.iter().map(|state| (*state).to_owned()).collect(),
            level: None,
            id: id.map(str::to_owned),
            bounds: [0, 0, 10, 10],
            offscreen: false,
        }
    }

    const INPUT: ToolDef =
        ToolDef::new("inputText", "", "", Hints::ACT).on_device(&[paddock_devices::Platform::Web]);
    const TAP: ToolDef =
        ToolDef::new("tapOn", "", "", Hints::ACT).on_device(&[paddock_devices::Platform::Web]);

    fn run(tool: &ToolDef, arguments: Value, seen: Vec<Element>) -> RecordedCall {
        recorded(
            tool,
            Before {
                arguments: arguments.as_object().cloned().unwrap(),
                seen: Some(seen.clone()),
            },
            Some(seen),
            true,
            "ok".into(),
            3,
        )
    }

    #[test]
    fn password_text_is_masked_and_becomes_a_plan_variable() {
        let seen = vec![element("e3", "Password", None, &["password"])];
        let call = run(&INPUT, json!({ "ref": "e3", "text": "hunter2" }), seen);
        assert_eq!(call.arguments["text"], MASK);
        let plan = call.plan_arguments.unwrap();
        assert_eq!(plan["text"], PASSWORD_VARIABLE);
        assert_eq!(plan["label"], "Password");
        assert!(!plan.contains_key("ref"));
        assert!(
            !serde_json::to_string(&call.arguments)
                .unwrap()
                .contains("hunter2")
        );
    }

    #[test]
    fn a_replayed_plans_variables_are_masked() {
        const EXECUTE: ToolDef = ToolDef {
            plan_only: true,
            ..ToolDef::new("executePlan", "", "", Hints::ACT)
                .on_device(&[paddock_devices::Platform::Web])
        };
        let call = run(
            &EXECUTE,
            json!({ "plan": { "version": 1, "steps": [] }, "variables": { "PASSWORD_1": "hunter2" } }),
            Vec::new(),
        );
        assert_eq!(call.arguments["variables"]["PASSWORD_1"], MASK);
        assert!(call.plan_arguments.is_none(), "a replay is not replayed");
        assert!(!serde_json::to_string(&call).unwrap().contains("hunter2"));
    }

    #[test]
    fn the_focused_password_field_is_masked_too() {
        let seen = vec![element(
            "e3",
            "Password",
            Some("pw"),
            &["password", "focused"],
        )];
        let call = run(&INPUT, json!({ "text": "hunter2" }), seen);
        assert_eq!(call.arguments["text"], MASK);
    }

    #[test]
    fn refs_become_ids_or_texts_and_unknown_refs_are_not_replayed() {
        let seen = vec![
            element("e1", "Sign in", None, &[]),
            element("e2", "Email", Some("email"), &[]),
        ];
        let tap = run(&TAP, json!({ "ref": "e1" }), seen.clone());
        assert_eq!(
            tap.plan_arguments.unwrap(),
            *json!({ "text": "Sign in" }).as_object().unwrap()
        );
        let typed = run(
            &INPUT,
            json!({ "ref": "e2", "text": "ada@example.com" }),
            seen.clone(),
        );
        assert_eq!(typed.arguments["text"], "ada@example.com");
        assert_eq!(typed.plan_arguments.unwrap()["id"], "email");
        let unknown = run(&TAP, json!({ "ref": "e9" }), seen);
        assert!(unknown.plan_arguments.is_none());
    }
}
