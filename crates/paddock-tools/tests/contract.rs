//! The tool surface is a contract (see CONTRACT.md): these snapshots change only with a
//! deliberate, versioned change of names, schemas, annotations or descriptions.
#![cfg(test)]

use std::sync::Arc;

use paddock_store::Store;
use paddock_tools::audit::MemoryAuditSink;
use paddock_tools::backend::NoDevices;
use paddock_tools::catalog::{builtin, fleet};
use paddock_tools::discovery::SelectionInput;
use paddock_tools::{
    AuthContext, Policy, PolicyProfile, ProcessOptions, Registry, RegistryConfig, StartupSelection,
    ToolCtx,
};
use serde_json::Value;

fn surface(profile: PolicyProfile, selection: &SelectionInput) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("paddock.db")).unwrap());
    let catalog = builtin();
    let (startup, _) = StartupSelection::parse(&catalog, selection).unwrap();
    let registry = Registry::new(RegistryConfig {
        catalog,
        startup,
        process_options: ProcessOptions { debug: true },
        store,
        audit: Arc::new(MemoryAuditSink::default()),
        info: Arc::new(|| serde_json::json!({})),
    });
    let ctx = ToolCtx {
        auth: AuthContext::local_owner("uid:1000"),
        policy: Arc::new(Policy::for_profile(profile, registry.catalog())),
        profile: "owner:uid:1000".into(),
        session: None,
        backend: Arc::new(NoDevices),
        // The task tools are listed only with a task host; the surface pins them too.
        tasks: Some(Arc::new(paddock_tools::tasks::NoTasks)),
        recorder: None,
        fleet: None,
    };
    serde_json::to_value(registry.listed_tools(&ctx, None)).unwrap()
}

/// The tools the built-in defaults omit, so that a surface can list every tool.
fn omitted_by_default() -> Vec<String> {
    builtin()
        .iter()
        .filter(|tool| {
            tool.def.discovery
                == paddock_tools::catalog::DiscoveryClass::Configurable {
                    default_enabled: false,
                }
        })
        .map(|tool| tool.def.name.to_owned())
        .collect()
}

/// The fleet server's surface (spec 002's names) under `profile`.
fn fleet_surface(profile: PolicyProfile) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("paddock.db")).unwrap());
    let registry = Registry::new(RegistryConfig {
        catalog: fleet(),
        startup: StartupSelection::default(),
        process_options: ProcessOptions { debug: false },
        store,
        audit: Arc::new(MemoryAuditSink::default()),
        info: Arc::new(|| serde_json::json!({})),
    });
    let ctx = ToolCtx {
        auth: AuthContext::local_owner("uid:1000"),
        policy: Arc::new(Policy::for_profile(profile, registry.catalog())),
        profile: "api_key:k_1".into(),
        session: None,
        backend: Arc::new(NoDevices),
        tasks: None,
        recorder: None,
        fleet: None,
    };
    serde_json::to_value(registry.listed_tools(&ctx, None)).unwrap()
}

#[test]
fn fleet_full_surface() {
    let tools = fleet_surface(PolicyProfile::Full);
    assert_eq!(tools.as_array().map(Vec::len), Some(fleet().len()));
    insta::assert_json_snapshot!(tools);
}

/// Names and narrowed operations only: the schemas are pinned by the full surface.
#[test]
fn fleet_profiles_narrow_as_spec_002_says() {
    let names = |profile| -> Vec<String> {
        fleet_surface(profile)
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let no_commerce = names(PolicyProfile::NoCommerce);
    assert!(!no_commerce.contains(&"create_device".to_owned()));
    assert!(!no_commerce.contains(&"terminate_device".to_owned()));
    assert!(no_commerce.contains(&"device_action".to_owned()));
    let readonly = names(PolicyProfile::Readonly);
    for write in [
        "device_action",
        "run_task",
        "stop_task",
        "send_task_message",
        "create_device",
    ] {
        assert!(
            !readonly.contains(&write.to_owned()),
            "{write} under readonly"
        );
    }
    for read in [
        "list_devices",
        "get_task",
        "manage_device",
        "configure_device",
    ] {
        assert!(
            readonly.contains(&read.to_owned()),
            "{read} missing under readonly"
        );
    }
    insta::assert_json_snapshot!(readonly);
}

#[test]
fn full_access_tool_surface() {
    insta::assert_json_snapshot!(surface(PolicyProfile::Full, &SelectionInput::default()));
}

#[test]
fn readonly_tool_surface() {
    insta::assert_json_snapshot!(surface(PolicyProfile::Readonly, &SelectionInput::default()));
}

/// Every registered tool, the omitted-by-default ones too: nothing of the listed surface goes
/// unpinned (plan-only tools are never listed; they are called by name).
#[test]
fn every_tool_surface() {
    let selection = SelectionInput {
        cli_enabled: omitted_by_default(),
        ..SelectionInput::default()
    };
    let tools = surface(PolicyProfile::Full, &selection);
    let listable = builtin().iter().filter(|tool| !tool.def.plan_only).count();
    assert_eq!(tools.as_array().map(Vec::len), Some(listable));
    assert!(
        builtin().iter().any(|tool| tool.def.plan_only),
        "executePlan is registered, plan-only"
    );
    insta::assert_json_snapshot!(tools);
}

/// Finds every place in `schema` where the derivation's own dialect would show through.
fn derivation_leftovers(schema: &Value, path: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                let here = format!("{path}/{key}");
                let in_properties = path.ends_with("/properties");
                if !in_properties
                    && [
                        "$ref", "$defs", "$schema", "format", "anyOf", "oneOf", "default", "title",
                    ]
                    .contains(&key.as_str())
                {
                    found.push(here.clone());
                }
                if key == "description" && value.as_str().is_some_and(|text| text.contains('\n')) {
                    found.push(format!("{here} (a line break)"));
                }
                derivation_leftovers(value, &here, found);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                if item.is_null() || item == "null" {
                    found.push(format!("{path}[{index}] (null)"));
                }
                derivation_leftovers(item, &format!("{path}[{index}]"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn derived_schemas_are_plain_closed_objects() {
    for tool in builtin().into_iter().chain(fleet()) {
        let schema = Value::Object((*tool.input_schema).clone());
        let name = tool.def.name;
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        assert_eq!(schema["additionalProperties"], false, "{name}: {schema}");
        assert!(schema["properties"].is_object(), "{name}: {schema}");
        let mut found = Vec::new();
        derivation_leftovers(&schema, "", &mut found);
        assert!(found.is_empty(), "{name}: {found:?} in {schema}");
    }
}

#[test]
fn a_bundle_schema_offers_exactly_its_operations() {
    let bundles: Vec<_> = builtin()
        .into_iter()
        .chain(fleet())
        .filter(|tool| tool.def.is_bundle())
        .collect();
    assert!(!bundles.is_empty());
    for tool in bundles {
        let declared: Vec<&str> = tool.def.operations.iter().map(|op| op.name).collect();
        let offered: Vec<&str> = tool.input_schema["properties"]["operation"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(offered, declared, "{}", tool.def.name);
        let required = tool.input_schema["required"].as_array().unwrap();
        assert!(required.contains(&"operation".into()), "{}", tool.def.name);
    }
}

#[test]
fn tool_names_are_unique() {
    let catalog: Vec<_> = builtin().into_iter().chain(fleet()).collect();
    let names: std::collections::BTreeSet<&str> =
        catalog.iter().map(|tool| tool.def.name).collect();
    assert_eq!(names.len(), catalog.len(), "{names:?}");
}
