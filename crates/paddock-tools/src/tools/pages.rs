//! Web-only tools for what a page opens and hands over: tabs and popups, file uploads, the
//! session's downloads and the page as a PDF.

use paddock_devices::web::{MAX_PDF_BYTES, WebDevice, mime_type_of};
use paddock_devices::{ActionOutcome, Device, ObserveOptions, Target};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::catalog::{Hints, OperationDef, ToolDef};
use crate::error::{ToolError, ToolErrorCode};
use crate::tools::args::{NoArgs, wire_enum};
use crate::tools::device::{SETTLE, WEB, bounded, outcome_output, require_session, session_device};
use crate::tools::{Call, Output, Tool};

/// A download up to this size comes back as embedded content; a larger one as a link.
pub(crate) const EMBED_MAX_BYTES: u64 = 1024 * 1024;
/// The largest download `files` returns: half a session's resource budget
/// ([`crate::resources::MAX_BYTES_PER_SESSION`]), so one file never evicts everything else.
pub(crate) const LINK_MAX_BYTES: u64 = (crate::resources::MAX_BYTES_PER_SESSION / 2) as u64;

/// The web device behind `device`; `[unsupported_platform]` on any other.
fn web_of<'d>(call: &Call<'_>, device: &'d dyn Device) -> Result<&'d WebDevice, ToolError> {
    device.as_web().ok_or_else(|| {
        ToolError::new(
            ToolErrorCode::UnsupportedPlatform,
            format!(
                "`{}` is for web devices, not {} devices",
                call.tool.name,
                device.platform()
            ),
        )
    })
}

/// What a page tool does on the web device before it observes.
enum PageOperation {
    SelectTab(usize),
    CloseTab(Option<usize>),
    NewTab(Option<String>),
    Upload {
        target: Option<Target>,
        paths: Vec<String>,
    },
}

/// Performs `operation` on the session's web device and answers as an action does: once the
/// page settles, with the changes since the caller's last observation or the whole screen.
async fn page_act(call: &Call<'_>, operation: PageOperation) -> Result<Output, ToolError> {
    let device = session_device(call)?;
    let web = web_of(call, &*device)?;
    let previous = call
        .session
        .as_ref()
        .and_then(|session| call.registry.last_seen(session, device.id()));
    let detail = bounded(async {
        match operation {
            PageOperation::SelectTab(index) => web.select_tab(index).await.map(|()| None),
            PageOperation::CloseTab(index) => web.close_tab(index).await.map(|()| None),
            PageOperation::NewTab(url) => web.new_tab(url.as_deref()).await.map(|()| None),
            PageOperation::Upload { target, paths } => {
                web.upload_files(target.as_ref(), &paths).await.map(Some)
            }
        }
    })
    .await?;
    let observation = bounded(web.settle_and_observe(SETTLE, ObserveOptions::default())).await?;
    Ok(outcome_output(
        call,
        previous.as_ref(),
        ActionOutcome {
            detail,
            observation,
        },
    ))
}

wire_enum! {
    /// The operations of `tabs`, as in [`TABS_OPERATIONS`].
    TabsOperation { List, Select, Close, New }
}

const TABS_OPERATIONS: &[OperationDef] = &[
    OperationDef {
        name: "list",
        read_only: true,
        commerce: false,
    },
    OperationDef {
        name: "select",
        read_only: false,
        commerce: false,
    },
    OperationDef {
        name: "close",
        read_only: false,
        commerce: false,
    },
    OperationDef {
        name: "new",
        read_only: false,
        commerce: false,
    },
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct TabsArgs {
    operation: TabsOperation,
    /// With `select` (required) and `close` (default: the active tab): the tab's number,
    /// from 1, as `list` shows it.
    #[schemars(range(min = 1, max = 20))]
    index: Option<usize>,
    /// With `new`: an http or https URL to open (default a blank page).
    url: Option<String>,
}

/// One tab in `tabs` `list`.
#[derive(Debug, serde::Serialize)]
struct ListedTab {
    index: usize,
    title: String,
    url: String,
    active: bool,
}

#[derive(Debug)]
pub(crate) struct Tabs;

impl Tool for Tabs {
    type Args = TabsArgs;

    const DEF: ToolDef = ToolDef::new(
        "tabs",
        "Tabs",
        "The web device's tabs, numbered from 1 in the order they opened. Pages that open a popup or a `target=_blank` link get a new tab, which becomes active; when the active tab closes, its opener (else the tab before it) becomes active; closing the last tab leaves a blank one. The observation header says `tabs N (active K)` when there is more than one. `list` answers `{tabs: [{index, title, url, active}]}`; `select {index}`, `close {index?}` (default the active tab) and `new {url?}` answer with the screen like an action.",
        Hints::ACT,
    )
    .operations(TABS_OPERATIONS)
    .on_device(WEB);

    async fn run(call: Call<'_>, args: TabsArgs) -> Result<Output, ToolError> {
        match (args.operation, args.index, args.url) {
            (TabsOperation::List, None, None) => {
                let device = session_device(&call)?;
                let web = web_of(&call, &*device)?;
                let tabs: Vec<ListedTab> = bounded(web.list_tabs())
                    .await?
                    .into_iter()
                    .map(|tab| ListedTab {
                        index: tab.index,
                        title: tab.title,
                        url: tab.url,
                        active: tab.active,
                    })
                    .collect();
                Ok(Output::Json(json!({ "tabs": tabs })))
            }
            (TabsOperation::Select, Some(index), None) => {
                page_act(&call, PageOperation::SelectTab(index)).await
            }
            (TabsOperation::Select, None, _) => {
                Err(ToolError::invalid_input("`select` needs `index`"))
            }
            (TabsOperation::Close, index, None) => {
                page_act(&call, PageOperation::CloseTab(index)).await
            }
            (TabsOperation::New, None, url) => page_act(&call, PageOperation::NewTab(url)).await,
            (_, _, Some(_)) => Err(ToolError::invalid_input("`url` goes with `new` only")),
            (_, Some(_), None) => Err(ToolError::invalid_input(
                "`index` goes with `select` and `close` only",
            )),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct UploadFileArgs {
    /// The file input's ref from observe, such as `e12`.
    #[serde(rename = "ref")]
    reference: Option<String>,
    /// The file input's id attribute.
    id: Option<String>,
    /// The file input's label or accessible name (exact match).
    text: Option<String>,
    /// Files on the daemon's machine: each an existing regular file of at most 100 MiB.
    #[schemars(length(min = 1, max = 32))]
    paths: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct UploadFile;

impl Tool for UploadFile {
    type Args = UploadFileArgs;

    const DEF: ToolDef = ToolDef::new(
        "uploadFile",
        "Upload files",
        "Sets the files of the file input given by `ref`, `id` or `text` to `paths` (files on the machine running Paddock). Without a target, answers the file chooser the page opened (tap its upload button first). Each path must be an existing regular file of at most 100 MiB. Answers with the screen like an action.",
        Hints::ACT,
    )
    .on_device(WEB);

    async fn run(call: Call<'_>, args: UploadFileArgs) -> Result<Output, ToolError> {
        let target = match (args.reference, args.id, args.text) {
            (None, None, None) => None,
            (Some(reference), None, None) => Some(Target::Ref(reference)),
            (None, Some(id), None) => Some(Target::Id(id)),
            (None, None, Some(text)) => Some(Target::Text(text)),
            _ => {
                return Err(ToolError::invalid_input(
                    "give at most one target: `ref`, `id` or `text`",
                ));
            }
        };
        page_act(
            &call,
            PageOperation::Upload {
                target,
                paths: args.paths,
            },
        )
        .await
    }
}

wire_enum! {
    /// The operations of `files`, as in [`FILES_OPERATIONS`].
    FilesOperation { List, Download, Delete }
}

const FILES_OPERATIONS: &[OperationDef] = &[
    OperationDef {
        name: "list",
        read_only: true,
        commerce: false,
    },
    OperationDef {
        name: "download",
        read_only: true,
        commerce: false,
    },
    OperationDef {
        name: "delete",
        read_only: false,
        commerce: false,
    },
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct FilesArgs {
    operation: FilesOperation,
    /// With `download` and `delete`: the file's name as `list` shows it.
    name: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Files;

impl Tool for Files {
    type Args = FilesArgs;

    const DEF: ToolDef = ToolDef::new(
        "files",
        "Downloaded files",
        "The files the web device downloaded this session, kept in the session's own directory (emptied at release). `list` answers `{files: [{name, size, state, url}]}` (a download over the size limit is `canceled: too large`); `download {name}` returns the file: embedded when at most 1 MiB, else a `resource_link` (read it with resources/read; at most 16 MiB); `delete {name}` removes it.",
        Hints::ACT,
    )
    .operations(FILES_OPERATIONS)
    .on_device(WEB);

    async fn run(call: Call<'_>, args: FilesArgs) -> Result<Output, ToolError> {
        let device = session_device(&call)?;
        let web = web_of(&call, &*device)?;
        match (args.operation, args.name) {
            (FilesOperation::List, None) => {
                let listed: Vec<Value> = web
                    .downloads()
                    .await
                    .into_iter()
                    .map(|download| {
                        json!({
                            "name": download.name,
                            "size": download.size,
                            "state": download.state.to_string(),
                            "url": download.url,
                        })
                    })
                    .collect();
                Ok(Output::Json(json!({ "files": listed })))
            }
            (FilesOperation::List, Some(_)) => {
                Err(ToolError::invalid_input("`list` takes no `name`"))
            }
            (FilesOperation::Download, Some(name)) => {
                let (info, bytes) = bounded(web.read_download(&name, LINK_MAX_BYTES)).await?;
                let session = require_session(&call)?;
                let size = bytes.len() as u64;
                let embedded = (size <= EMBED_MAX_BYTES).then(|| bytes.clone());
                let resource = call.registry.resources.put(
                    &session,
                    "download",
                    extension_of(&info.name),
                    mime_type_of(&info.name),
                    bytes,
                );
                let how = if embedded.is_some() {
                    "embedded"
                } else {
                    "linked; read it with resources/read"
                };
                Ok(Output::Resource {
                    text: format!(
                        "{} ({size} bytes, {}) {how}: {}",
                        info.name, resource.mime_type, resource.uri
                    ),
                    resource,
                    embedded,
                })
            }
            (FilesOperation::Delete, Some(name)) => {
                bounded(web.delete_download(&name)).await?;
                Ok(Output::Json(json!({ "deleted": name })))
            }
            (FilesOperation::Download | FilesOperation::Delete, None) => Err(
                ToolError::invalid_input("`download` and `delete` need `name` (see `list`)"),
            ),
        }
    }
}

/// The extension a resource URI gets for `name`: its own when plain, else `bin`.
fn extension_of(name: &str) -> &'static str {
    match mime_type_of(name) {
        "text/csv" => "csv",
        "text/plain" => "txt",
        "application/json" => "json",
        "text/html" => "html",
        "application/xml" => "xml",
        "application/pdf" => "pdf",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/svg+xml" => "svg",
        "image/webp" => "webp",
        "application/zip" => "zip",
        "application/gzip" => "gz",
        _ => "bin",
    }
}

#[derive(Debug)]
pub(crate) struct SavePdf;

impl Tool for SavePdf {
    type Args = NoArgs;

    const DEF: ToolDef = ToolDef::new(
        "savePdf",
        "Save the page as PDF",
        "Prints the active tab to PDF (backgrounds included) and returns it as an embedded `application/pdf` resource, also kept as the session's `pdf` resource for resources/read.",
        Hints::READ,
    )
    .on_device(WEB);

    async fn run(call: Call<'_>, NoArgs {}: NoArgs) -> Result<Output, ToolError> {
        let device = session_device(&call)?;
        let web = web_of(&call, &*device)?;
        let pdf = bounded(web.save_pdf()).await?;
        let session = require_session(&call)?;
        let size = pdf.len();
        let resource =
            call.registry
                .resources
                .put(&session, "pdf", "pdf", "application/pdf", pdf.clone());
        Ok(Output::Resource {
            text: format!(
                "PDF of the page, {size} bytes (at most {MAX_PDF_BYTES}): {}",
                resource.uri
            ),
            resource,
            embedded: Some(pdf),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_devices::DeviceError;

    #[test]
    fn download_extensions_follow_their_mime_type() {
        assert_eq!(extension_of("report.csv"), "csv");
        assert_eq!(extension_of("big.bin"), "bin");
        assert_eq!(extension_of("../x.exe"), "bin");
        const { assert!(EMBED_MAX_BYTES < LINK_MAX_BYTES) };
    }

    #[test]
    fn device_errors_of_uploads_keep_their_kind() {
        let error = DeviceError::from(paddock_devices::web::UploadPathError::Missing {
            path: "/nope".into(),
        });
        assert!(matches!(error, DeviceError::NotFound(_)));
    }
}
