//! Registry rules that the built-in catalog cannot show on its own: plan-only tools and tools
//! that need a process option never appear, and an empty policy registers nothing.
#![cfg(test)]

use std::sync::Arc;

use paddock_store::Store;
use paddock_tools::audit::MemoryAuditSink;
use paddock_tools::backend::NoDevices;
use paddock_tools::catalog::builtin;
use paddock_tools::{
    AuthContext, Policy, PolicyProfile, ProcessOptions, Registry, RegistryConfig, StartupSelection,
    ToolCtx,
};

fn registry(debug: bool) -> (tempfile::TempDir, Arc<Registry>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("paddock.db")).unwrap());
    let mut catalog = builtin();
    let mut planned = catalog[1].clone();
    planned.def.name = "planOnlyTool";
    planned.def.plan_only = true;
    catalog.push(planned);
    let registry = Registry::new(RegistryConfig {
        catalog,
        startup: StartupSelection::default(),
        process_options: ProcessOptions { debug },
        store,
        audit: Arc::new(MemoryAuditSink::default()),
        info: Arc::new(|| serde_json::json!({})),
    });
    (dir, registry)
}

fn ctx(policy: Policy) -> ToolCtx {
    ToolCtx {
        auth: AuthContext::local_owner("uid:1"),
        policy: Arc::new(policy),
        profile: "owner:uid:1".into(),
        session: None,
        backend: Arc::new(NoDevices),
        tasks: None,
        recorder: None,
        fleet: None,
    }
}

#[test]
fn plan_only_and_process_option_tools_stay_hidden() {
    let (_dir, plain) = registry(false);
    let full = Policy::for_profile(PolicyProfile::Full, plain.catalog());
    assert!(
        full.allows_tool("planOnlyTool"),
        "policy allows it; discovery still hides it"
    );
    let names = plain.listed_names(&ctx(full.clone()), None);
    assert!(!names.contains("planOnlyTool"));
    assert!(!names.contains("daemonInfo"));

    let (_dir, debug) = registry(true);
    let names = debug.listed_names(&ctx(full), None);
    assert!(names.contains("daemonInfo"));
    assert!(!names.contains("planOnlyTool"));
}

#[test]
fn an_empty_policy_registers_nothing() {
    let (_dir, registry) = registry(true);
    assert!(
        registry
            .listed_names(&ctx(Policy::empty()), None)
            .is_empty()
    );
}
