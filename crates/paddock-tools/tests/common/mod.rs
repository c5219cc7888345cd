//! A registry over the built-in catalog, and calls through the same `McpServer` path the
//! transports use, answered as JSON.

use std::sync::Arc;

use paddock_store::Store;
use paddock_tools::audit::MemoryAuditSink;
use paddock_tools::backend::{Backend, NoDevices};
use paddock_tools::catalog::builtin;
use paddock_tools::{
    AuthContext, Policy, PolicyProfile, ProcessOptions, Registry, RegistryConfig, StartupSelection,
    ToolCtx,
};
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value};

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub registry: Arc<Registry>,
    backend: Arc<dyn Backend>,
}

impl Fixture {
    /// Every tool, under the `full` profile with `--debug`, over `backend`.
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&dir.path().join("paddock.db")).unwrap());
        let registry = Registry::new(RegistryConfig {
            catalog: builtin(),
            startup: StartupSelection::default(),
            process_options: ProcessOptions { debug: true },
            store,
            audit: Arc::new(MemoryAuditSink::default()),
            info: Arc::new(|| serde_json::json!({ "pid": 1 })),
        });
        Self {
            _dir: dir,
            registry,
            backend,
        }
    }

    pub fn without_devices() -> Self {
        Self::new(Arc::new(NoDevices))
    }

    fn ctx(&self) -> ToolCtx {
        ToolCtx {
            auth: AuthContext::local_owner("uid:1000"),
            policy: Arc::new(Policy::for_profile(
                PolicyProfile::Full,
                self.registry.catalog(),
            )),
            profile: "owner:uid:1000".into(),
            session: None,
            backend: self.backend.clone(),
            tasks: Some(Arc::new(paddock_tools::tasks::NoTasks)),
            recorder: None,
            fleet: None,
        }
    }

    /// `tools/call` of `name` with `arguments` (an object), as the JSON a client receives.
    pub async fn call(&self, name: &str, arguments: Value) -> Value {
        let Value::Object(arguments) = arguments else {
            panic!("arguments must be an object: {arguments}");
        };
        let request = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let result = self
            .registry
            .server(self.ctx())
            .call(request, None, None)
            .await
            .unwrap_or_else(|error| panic!("`{name}` answered a protocol error: {error:?}"));
        serde_json::to_value(result).unwrap()
    }
}

/// The first text block of a tool result.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

pub fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

/// The `properties` of a tool's input schema.
pub fn properties(schema: &Map<String, Value>) -> &Map<String, Value> {
    schema["properties"].as_object().unwrap()
}
