//! Tools for Android devices only, both off by default (enable them with `setToolEnabled`):
//! installing an APK from the daemon's machine, and querying a debuggable app's database.

use std::path::PathBuf;

use paddock_devices::{Platform, SqlQuery as Query};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::{Hints, ToolDef};
use crate::error::ToolError;
use crate::tools::device::{bounded, session_device};
use crate::tools::results::schema_of;
use crate::tools::{Call, Output, Tool};

/// Android tools.
const ANDROID: &[Platform] = &[Platform::Android];

/// The largest APK `installApp` pushes.
const MAX_APK_BYTES: u64 = 1024 * 1024 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct InstallAppArgs {
    /// An `.apk` file on the machine the daemon runs on (absolute path).
    path: String,
}

/// `installApp`'s answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Installed {
    /// The APK's path on the daemon's machine.
    installed: String,
    /// The installer's verdict (`Success`).
    installer: String,
}

#[derive(Debug)]
pub(crate) struct InstallApp;

impl Tool for InstallApp {
    type Args = InstallAppArgs;

    const DEF: ToolDef = ToolDef::new(
        "installApp",
        "Install an Android app",
        "Installs (or updates) the APK at `path` on the daemon's machine onto the session's Android device: the file is pushed over adb and installed with `pm install -r`. Answers the installer's verdict.",
        Hints::ACT,
    )
    .omitted_by_default()
    .on_device(ANDROID);

    fn output_schema() -> Option<Map<String, Value>> {
        schema_of::<Installed>()
    }

    async fn run(call: Call<'_>, args: InstallAppArgs) -> Result<Output, ToolError> {
        let device = session_device(&call)?;
        let path = PathBuf::from(&args.path);
        if !path.is_absolute() || path.extension().is_none_or(|extension| extension != "apk") {
            return Err(ToolError::invalid_input(format!(
                "`path` must be the absolute path of an `.apk` file; got `{}`",
                args.path
            )));
        }
        let metadata = tokio::fs::metadata(&path).await.map_err(|error| {
            ToolError::not_found(format!("cannot read `{}`: {error}", args.path))
        })?;
        if !metadata.is_file() {
            return Err(ToolError::invalid_input(format!(
                "`{}` is not a regular file",
                args.path
            )));
        }
        if metadata.len() > MAX_APK_BYTES {
            return Err(ToolError::invalid_input(format!(
                "`{}` is {} bytes; installApp takes APKs up to 1 GiB",
                args.path,
                metadata.len()
            )));
        }
        let bytes = tokio::fs::read(&path).await.map_err(|error| {
            ToolError::not_found(format!("cannot read `{}`: {error}", args.path))
        })?;
        let verdict = bounded(device.install_app(bytes)).await?;
        Output::structured(&Installed {
            installed: args.path,
            installer: verdict,
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SqlQueryArgs {
    /// The app's package name (`com.example.app`); it must be debuggable (`run-as`).
    package: String,
    /// A database file in the app's `databases/` directory (`notes.db`).
    database: String,
    /// One SQL statement.
    sql: String,
    /// Open the database writable (read-only by default).
    #[serde(default)]
    write: bool,
}

#[derive(Debug)]
pub(crate) struct SqlQuery;

impl Tool for SqlQuery {
    type Args = SqlQueryArgs;

    const DEF: ToolDef = ToolDef::new(
        "sqlQuery",
        "Query an app's database",
        "Runs `sql` against the SQLite database `database` of the debuggable Android app `package` (through `run-as` and the device's `sqlite3`), read-only unless `write: true`. Answers the rows as text, one per line, columns separated by `|`.",
        Hints::ACT,
    )
    .omitted_by_default()
    .on_device(ANDROID);

    async fn run(call: Call<'_>, args: SqlQueryArgs) -> Result<Output, ToolError> {
        let device = session_device(&call)?;
        let rows = bounded(device.sql_query(Query {
            package: args.package,
            database: args.database,
            sql: args.sql,
            write: args.write,
        }))
        .await?;
        Ok(Output::Rich {
            text: rows,
            image: None,
            structured: None,
        })
    }
}
