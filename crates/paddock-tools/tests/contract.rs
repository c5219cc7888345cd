//! The tool surface is a contract (see CONTRACT.md): these snapshots change only with a
//! deliberate, versioned change of names, schemas, annotations or descriptions.
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

fn surface(profile: PolicyProfile) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("paddock.db")).unwrap());
    let registry = Registry::new(RegistryConfig {
        catalog: builtin(),
        startup: StartupSelection::default(),
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
    };
    serde_json::to_value(registry.listed_tools(&ctx, None)).unwrap()
}

#[test]
fn full_access_tool_surface() {
    insta::assert_json_snapshot!(surface(PolicyProfile::Full));
}

#[test]
fn readonly_tool_surface() {
    insta::assert_json_snapshot!(surface(PolicyProfile::Readonly));
}
