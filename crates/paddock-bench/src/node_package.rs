//! What the Node peers under `bench/peers` share: reading the version of a package installed in
//! a peer's `node_modules`, for the report.

use std::path::Path;

use serde_json::Value;

/// The version of `package` installed in `dir`'s `node_modules`, or `(unknown version)`.
pub fn installed_version(dir: &Path, package: &str) -> String {
    let manifest = dir.join("node_modules").join(package).join("package.json");
    std::fs::read(manifest)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|manifest| manifest["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "(unknown version)".to_owned())
}
