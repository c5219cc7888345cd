//! The tool catalog: every tool Paddock registers, as the registry, policies and discovery see
//! it. Each tool's definition ([`ToolDef`]) and argument type sit beside its handler in
//! `tools/`; this module holds the shapes they share and builds the catalog from the registered
//! list. This is the contract clients see; `tests/snapshots` pins it.

use std::sync::Arc;

use paddock_devices::Platform;
use serde_json::{Map, Value};

use crate::tools::ErasedTool;

/// How a tool takes part in discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryClass {
    /// Always listed (subject to policy); `setToolEnabled` treats it as a no-op.
    AlwaysOn,
    /// Listed or omitted by the discovery layers; `default_enabled` is the built-in default.
    Configurable { default_enabled: bool },
}

/// A process option a tool needs; without it the tool is never listed or callable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessOption {
    /// `paddock daemon start --debug`.
    Debug,
}

impl ProcessOption {
    pub fn flag(self) -> &'static str {
        match self {
            Self::Debug => "--debug",
        }
    }
}

/// One operation of a bundle tool.
#[derive(Debug, Clone, Copy)]
pub struct OperationDef {
    pub name: &'static str,
    /// Reads only; allowed under the `readonly` profile.
    pub read_only: bool,
    /// Creates or destroys devices (or costs money); denied under `no-commerce`.
    pub commerce: bool,
}

/// Behaviour hints published as MCP tool annotations.
#[derive(Debug, Clone, Copy)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl Hints {
    /// Reads only: safe to repeat, changes nothing.
    pub const READ: Self = Self {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// Changes state without destroying anything, idempotently.
    pub const IDEMPOTENT_CHANGE: Self = Self {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
    /// Acts on a device: each call has an effect of its own.
    pub const ACT: Self = Self {
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: false,
    };
}

/// What a tool declares about itself, apart from its arguments (whose type gives the input
/// schema). Each tool's `DEF` is a `const` next to its handler.
#[derive(Debug, Clone, Copy)]
pub struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub hints: Hints,
    pub discovery: DiscoveryClass,
    pub requires: Option<ProcessOption>,
    /// Plan-only tools are never shown in public discovery.
    pub plan_only: bool,
    /// For a bundle tool: its operations, selected by the `operation` argument.
    pub operations: &'static [OperationDef],
    /// Creates or destroys devices; excluded from `no-commerce` and `readonly`.
    pub commerce: bool,
    /// For a tool that acts on the session's device: the platforms it supports. A call on a
    /// device of another platform is an `[unsupported_platform]` error.
    pub platforms: &'static [Platform],
    /// Reads the caller's routing session. Its input schema declares the in-band session
    /// argument, and only such a tool's handler is given the session.
    pub routing_session: bool,
    /// Needs the daemon's task host: listed and callable only where the transport gives one.
    pub needs_tasks: bool,
}

impl ToolDef {
    /// A configurable tool, listed by default, that needs no process option, has no
    /// operations, costs nothing, acts on no device and reads no routing session; the
    /// `const fn` methods below change one of those.
    pub const fn new(
        name: &'static str,
        title: &'static str,
        description: &'static str,
        hints: Hints,
    ) -> Self {
        Self {
            name,
            title,
            description,
            hints,
            discovery: DiscoveryClass::Configurable {
                default_enabled: true,
            },
            requires: None,
            plan_only: false,
            operations: &[],
            commerce: false,
            platforms: &[],
            routing_session: false,
            needs_tasks: false,
        }
    }

    /// Listed and callable only where the transport gives a task host.
    pub const fn needs_tasks(self) -> Self {
        Self {
            needs_tasks: true,
            ..self
        }
    }

    /// Listed whatever the discovery layers say.
    pub const fn always_on(self) -> Self {
        Self {
            discovery: DiscoveryClass::AlwaysOn,
            ..self
        }
    }

    /// Omitted from `tools/list` until a discovery layer enables it.
    pub const fn omitted_by_default(self) -> Self {
        Self {
            discovery: DiscoveryClass::Configurable {
                default_enabled: false,
            },
            ..self
        }
    }

    pub const fn requires(self, option: ProcessOption) -> Self {
        Self {
            requires: Some(option),
            ..self
        }
    }

    pub const fn operations(self, operations: &'static [OperationDef]) -> Self {
        Self { operations, ..self }
    }

    pub const fn commerce(self) -> Self {
        Self {
            commerce: true,
            ..self
        }
    }

    /// Acts on the session's device, which must be of one of `platforms`; reads the routing
    /// session.
    pub const fn on_device(self, platforms: &'static [Platform]) -> Self {
        Self {
            platforms,
            routing_session: true,
            ..self
        }
    }

    pub const fn routing_session(self) -> Self {
        Self {
            routing_session: true,
            ..self
        }
    }

    pub fn is_bundle(&self) -> bool {
        !self.operations.is_empty()
    }

    pub fn is_always_on(&self) -> bool {
        self.discovery == DiscoveryClass::AlwaysOn
    }

    pub fn operation(&self, name: &str) -> Option<&OperationDef> {
        self.operations
            .iter()
            .find(|operation| operation.name == name)
    }
}

/// A tool in the catalog: its definition, the input schema derived from its argument type, and
/// its handler.
#[derive(Clone)]
pub struct CatalogTool {
    pub def: ToolDef,
    /// The `inputSchema` of `tools/list`, built once.
    pub input_schema: Arc<Map<String, Value>>,
    /// The `outputSchema`, for a tool whose result is structured.
    pub output_schema: Option<Arc<Map<String, Value>>>,
    pub(crate) handler: &'static dyn ErasedTool,
}

impl std::fmt::Debug for CatalogTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogTool")
            .field("def", &self.def)
            .finish_non_exhaustive()
    }
}

/// Every tool Paddock registers, in listing order.
pub fn builtin() -> Vec<CatalogTool> {
    crate::tools::REGISTERED
        .iter()
        .map(|handler| CatalogTool {
            def: handler.def(),
            input_schema: Arc::new(handler.input_schema()),
            output_schema: handler.output_schema().map(Arc::new),
            handler: *handler,
        })
        .collect()
}

/// The fleet server's tools (spec 002's surface), in listing order.
pub fn fleet() -> Vec<CatalogTool> {
    crate::tools::fleet::REGISTERED
        .iter()
        .map(|handler| CatalogTool {
            def: handler.def(),
            input_schema: Arc::new(handler.input_schema()),
            output_schema: handler.output_schema().map(Arc::new),
            handler: *handler,
        })
        .collect()
}
