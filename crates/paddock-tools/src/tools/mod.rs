//! The tools: each one is a unit struct implementing [`Tool`] — its definition, its argument
//! type and its handler in one place — and one line of [`REGISTERED`].
//!
//! # Adding a tool
//!
//! 1. In the module of its idea (`core`, `acquisition`, `observation`, `actions`), write the
//!    argument type: a struct deriving `Deserialize` and `JsonSchema`, with
//!    `#[serde(deny_unknown_fields, rename_all = "camelCase")]`. Doc comments on its fields
//!    become the schema's descriptions; a closed set of strings is an enum (see
//!    [`args::wire_enum!`], which also converts it into the device crate's type); a bounded
//!    integer is an [`args::Bounded`]. An empty argument list is [`args::NoArgs`].
//! 2. Beside it, a unit struct and its `impl Tool`: `const DEF` (name, title, description,
//!    hints and what [`ToolDef`]'s `const fn` methods add — `.on_device(WEB)` for a device
//!    tool, `.routing_session()` for another tool that reads the session) and `run`, which gets
//!    the parsed arguments.
//! 3. Add the struct to [`REGISTERED`], where it belongs in listing order.
//! 4. Run `cargo test -p paddock-tools`, review the new surface in the failing snapshot and
//!    accept it; a new tool is a minor version (see `CONTRACT.md`).
//!
//! Arguments that fail to parse are `[invalid_input]` before the handler runs, in words a model
//! can act on, phrased from the argument type's schema (see [`argument_error`]). The in-band
//! session argument is declared in the schema of every tool whose definition reads the routing
//! session, and removed before parsing (see `server.rs`), so no argument type names it.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::backend::BoxFuture;
use crate::catalog::ToolDef;
use crate::error::ToolError;
use crate::server::{Registry, ToolCtx};
use crate::session::SessionKey;

pub(crate) mod acquisition;
pub(crate) mod actions;
pub(crate) mod android;
pub(crate) mod args;
mod argument_error;
pub(crate) mod core;
mod device;
pub(crate) mod fleet;
pub(crate) mod observation;
pub(crate) mod pages;
pub(crate) mod results;
pub(crate) mod schema;
pub(crate) mod tasks;
pub(crate) mod web_data;

/// Every tool Paddock registers, in listing order.
pub(crate) const REGISTERED: &[&dyn ErasedTool] = &[
    &core::SetToolEnabled,
    &core::ListDevices,
    &core::Discovery,
    &core::DaemonInfo,
    &acquisition::GetWeb,
    &acquisition::GetAndroid,
    &acquisition::GetApple,
    &acquisition::ProvisionDevice,
    &acquisition::ReleaseDevice,
    &observation::Observe,
    &actions::TapOn,
    &actions::SwipeOn,
    &actions::DragAndDrop,
    &actions::InputText,
    &actions::ClearText,
    &actions::ImeAction,
    &actions::PressButton,
    &actions::SendKeys,
    &actions::LaunchApp,
    &actions::TerminateApp,
    &actions::ListApps,
    &actions::OpenLink,
    &actions::Rotate,
    &observation::Screenshot,
    &actions::Clipboard,
    &actions::Highlight,
    &web_data::ConsoleLog,
    &web_data::NetworkLog,
    &web_data::NetworkBody,
    &web_data::ConfigureDevice,
    &web_data::Evaluate,
    &web_data::SaveStorage,
    &web_data::ListStorage,
    &web_data::DeleteStorage,
    &pages::Tabs,
    &pages::UploadFile,
    &pages::Files,
    &pages::SavePdf,
    &android::InstallApp,
    &android::SqlQuery,
    &tasks::RunTask,
    &tasks::GetTask,
    &tasks::ListTasks,
    &tasks::StopTask,
    &tasks::SendTaskMessage,
    &tasks::GetTaskMedia,
    &tasks::ExportPlan,
    &tasks::ExecutePlan,
];

/// One tool: its definition, its arguments and its handler.
pub(crate) trait Tool: Send + Sync + 'static {
    /// The arguments, parsed from the call's JSON object; the input schema is derived from
    /// this type.
    type Args: DeserializeOwned + JsonSchema + Send;

    const DEF: ToolDef;

    /// The `outputSchema` of a tool whose result is structured (built with
    /// [`schema::output_schema`] from the type its handler returns through
    /// [`Output::structured`]); `None` for a tool that answers with text.
    fn output_schema() -> Option<Map<String, Value>> {
        None
    }

    fn run(
        call: Call<'_>,
        args: Self::Args,
    ) -> impl Future<Output = Result<Output, ToolError>> + Send;
}

/// What the catalog holds of a [`Tool`]: the same, without the types.
pub(crate) trait ErasedTool: Send + Sync {
    fn def(&self) -> ToolDef;
    fn input_schema(&self) -> Map<String, Value>;
    fn output_schema(&self) -> Option<Map<String, Value>>;
    /// Parses `arguments` (an `[invalid_input]` error when they do not fit) and runs the tool.
    fn call<'a>(
        &'a self,
        call: Call<'a>,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, Result<Output, ToolError>>;
    /// Parses `arguments` without running the tool, for tests of argument errors.
    #[cfg(test)]
    fn parse_only(&self, arguments: Map<String, Value>) -> Result<(), ToolError>;
}

impl<T: Tool> ErasedTool for T {
    fn def(&self) -> ToolDef {
        T::DEF
    }

    fn input_schema(&self) -> Map<String, Value> {
        schema::input_schema::<T::Args>(T::DEF.routing_session)
    }

    fn output_schema(&self) -> Option<Map<String, Value>> {
        T::output_schema()
    }

    fn call<'a>(
        &'a self,
        call: Call<'a>,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, Result<Output, ToolError>> {
        Box::pin(async move {
            let args = parse(call.tool.name, arguments)?;
            T::run(call, args).await
        })
    }

    #[cfg(test)]
    fn parse_only(&self, arguments: Map<String, Value>) -> Result<(), ToolError> {
        parse::<T::Args>(T::DEF.name, arguments).map(drop)
    }
}

/// What a handler knows of its call, besides its arguments.
pub(crate) struct Call<'a> {
    pub registry: &'a Registry,
    pub ctx: &'a ToolCtx,
    /// The tool as registered (a test may register one definition under another name).
    pub tool: &'a ToolDef,
    /// The routing session; always `None` for a tool whose definition does not read it.
    pub session: Option<SessionKey>,
}

/// What a handler returns.
pub(crate) enum Output {
    /// Structured JSON, mirrored as text.
    Json(Value),
    /// Text for a model, an optional image, and optional structured data.
    Rich {
        text: String,
        image: Option<Image>,
        structured: Option<Value>,
    },
    /// Another Paddock's answer, passed on as it is (the fleet server's tools, answered by a
    /// daemon's).
    Forwarded(rmcp::model::CallToolResult),
    /// Text and a session resource: embedded (a base64 `resource` blob) when `embedded` holds
    /// its bytes, else a `resource_link` to it.
    Resource {
        text: String,
        resource: crate::resources::ResourceRef,
        embedded: Option<Vec<u8>>,
    },
}

/// An image in a tool's answer: inline (base64 `image` content) or a link to the resource
/// holding it (`resource_link` content), as the call's `imageAs` asked.
pub(crate) enum Image {
    Inline(Vec<u8>),
    Link(crate::resources::ResourceRef),
}

impl Output {
    /// A structured result of the type the tool's `outputSchema` is derived from.
    pub(crate) fn structured<T: serde::Serialize>(value: &T) -> Result<Self, ToolError> {
        serde_json::to_value(value)
            .map(Self::Json)
            .map_err(|error| ToolError::internal(format!("could not encode the result: {error}")))
    }
}

/// Parses a tool's arguments; a mismatch is `[invalid_input]`, phrased from the argument type's
/// schema (see [`argument_error`]).
fn parse<T: DeserializeOwned + JsonSchema>(
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<T, ToolError> {
    let arguments = Value::Object(arguments);
    serde_path_to_error::deserialize(&arguments).map_err(|error| {
        let schema = schema::argument_schema::<T>();
        ToolError::invalid_input(argument_error::message(tool, &schema, &arguments, &error))
    })
}
