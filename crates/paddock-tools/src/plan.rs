//! Plans: the device tool calls of a task or a recorded session as a versioned JSON document
//! that `executePlan` (and `paddock plan run`) replays without a model. Targets are by text,
//! id or label, never by ref (refs are per observation), and text typed into a password field
//! is a `${PASSWORD_n}` variable the replay must be given. The document's JSON Schema is
//! [`schema`], published as `docs/plan.schema.json`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tasks::RecordedCall;

/// The plan format this release writes and reads.
pub const PLAN_VERSION: u32 = 1;

/// A replayable plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plan {
    /// The format version: 1.
    pub version: u32,
    /// Where the plan came from (`task tsk-…`, `session …`), for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Variables the replay needs (`PASSWORD_1`, …), each referenced as `${NAME}` in a step's
    /// string arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<String>,
    pub steps: Vec<PlanStep>,
}

/// One device tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanStep {
    /// A device tool's name (`tapOn`, `inputText`, …).
    pub tool: String,
    /// Its arguments, as the tool takes them.
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

impl Plan {
    /// The plan of `calls`: the ones that changed the device and succeeded, in order.
    pub fn from_calls(source: Option<String>, calls: &[RecordedCall]) -> Self {
        let mut passwords = 0;
        let steps: Vec<PlanStep> = calls
            .iter()
            .filter(|call| call.ok)
            .filter_map(|call| {
                let mut arguments = call.plan_arguments.clone()?;
                for value in arguments.values_mut() {
                    if value.as_str() == Some(crate::recording::PASSWORD_VARIABLE) {
                        passwords += 1;
                        *value = Value::String(format!("${{PASSWORD_{passwords}}}"));
                    }
                }
                Some(PlanStep {
                    tool: call.tool.clone(),
                    arguments,
                })
            })
            .collect();
        let mut variables = Vec::new();
        for step in &steps {
            for value in step.arguments.values() {
                if let Value::String(text) = value {
                    for name in variable_names(text) {
                        if !variables.contains(&name) {
                            variables.push(name);
                        }
                    }
                }
            }
        }
        Self {
            version: PLAN_VERSION,
            source,
            variables,
            steps,
        }
    }

    /// Parses and checks a plan document: its version, and that every variable it uses is
    /// declared.
    pub fn parse(value: Value) -> Result<Self, String> {
        let plan: Self = serde_json::from_value(value)
            .map_err(|error| format!("the plan is not a Paddock plan document: {error}"))?;
        plan.check_version()?;
        Ok(plan)
    }

    /// Whether this release reads the plan's format version.
    pub fn check_version(&self) -> Result<(), String> {
        if self.version == PLAN_VERSION {
            Ok(())
        } else {
            Err(format!(
                "plan version {} is not supported; this release reads version {PLAN_VERSION}",
                self.version
            ))
        }
    }
}

/// `${NAME}` references in `text`, in order.
fn variable_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        if !name.is_empty()
            && name
                .bytes()
                .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit() || byte == b'_')
        {
            names.push(name.to_owned());
        }
        rest = &after[end + 1..];
    }
    names
}

/// Replaces every `${NAME}` in the string arguments with its value; a name without a value is
/// an error naming it.
pub fn substitute(
    arguments: &Map<String, Value>,
    values: &BTreeMap<String, String>,
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (key, value) in arguments {
        let value = match value {
            Value::String(text) if text.contains("${") => {
                let mut replaced = text.clone();
                for name in variable_names(text) {
                    let Some(given) = values.get(&name) else {
                        return Err(format!(
                            "the plan needs variable `{name}`; pass it in `variables` (`paddock plan run --var {name}=…`)"
                        ));
                    };
                    replaced = replaced.replace(&format!("${{{name}}}"), given);
                }
                Value::String(replaced)
            }
            other => other.clone(),
        };
        out.insert(key.clone(), value);
    }
    Ok(out)
}

/// The plan document's JSON Schema.
pub fn schema() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(Plan)).unwrap_or(Value::Null);
    if let Some(object) = schema.as_object_mut() {
        object.insert("title".into(), Value::String("Paddock plan".into()));
        object.insert(
            "$id".into(),
            Value::String(format!(
                "https://paddock.dev/schemas/plan-v{PLAN_VERSION}.json"
            )),
        );
    }
    schema
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(tool: &str, ok: bool, plan: Option<Value>) -> RecordedCall {
        RecordedCall {
            tool: tool.to_owned(),
            arguments: Map::new(),
            plan_arguments: plan.and_then(|value| value.as_object().cloned()),
            ok,
            outcome: String::new(),
            duration_ms: 1,
            ui_state: None,
        }
    }

    #[test]
    fn a_plan_keeps_the_successful_changes_in_order_and_declares_its_variables() {
        let plan = Plan::from_calls(
            Some("task t".into()),
            &[
                call("observe", true, None),
                call("tapOn", true, Some(json!({ "text": "Sign in" }))),
                call("tapOn", false, Some(json!({ "text": "Nope" }))),
                call(
                    "inputText",
                    true,
                    Some(json!({ "label": "Password", "text": "${PASSWORD}" })),
                ),
            ],
        );
        assert_eq!(plan.steps.len(), 2);
        assert_eq!(plan.steps[0].tool, "tapOn");
        assert_eq!(plan.variables, ["PASSWORD_1"]);
        assert_eq!(plan.steps[1].arguments["text"], "${PASSWORD_1}");
        let round = Plan::parse(serde_json::to_value(&plan).unwrap()).unwrap();
        assert_eq!(round, plan);
    }

    #[test]
    fn variables_are_substituted_and_a_missing_one_is_named() {
        let arguments = json!({ "text": "${PASSWORD_1}!", "label": "Password" });
        let arguments = arguments.as_object().unwrap();
        let mut values = BTreeMap::new();
        let error = substitute(arguments, &values).unwrap_err();
        assert!(error.contains("`PASSWORD_1`"), "{error}");
        values.insert("PASSWORD_1".to_owned(), "hunter2".to_owned());
        let done = substitute(arguments, &values).unwrap();
        assert_eq!(done["text"], "hunter2!");
        assert_eq!(done["label"], "Password");
    }

    #[test]
    fn a_wrong_version_or_shape_is_refused_in_words() {
        let error = Plan::parse(json!({ "version": 2, "steps": [] })).unwrap_err();
        assert!(error.contains("version 2"), "{error}");
        let error = Plan::parse(json!({ "version": 1, "steps": [{ "tool": 3 }] })).unwrap_err();
        assert!(error.contains("not a Paddock plan"), "{error}");
    }

    #[test]
    fn the_published_schema_is_the_derived_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/plan.schema.json");
        let published: Value = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null);
        let derived = schema();
        if std::env::var_os("PADDOCK_WRITE_PLAN_SCHEMA").is_some() && published != derived {
            std::fs::write(path, serde_json::to_string_pretty(&derived).unwrap() + "\n").unwrap();
            panic!("wrote docs/plan.schema.json; run again to check it");
        }
        assert_eq!(
            published, derived,
            "docs/plan.schema.json is out of date: run with PADDOCK_WRITE_PLAN_SCHEMA=1"
        );
    }
}
