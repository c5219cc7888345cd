//! What the Node packages the benchmarks run share: reading the version of a package installed
//! in a `node_modules` (a peer's under `bench/peers`, the agent CLIs'), for the report, and
//! where `scripts/setup --dev` installs the real agent CLIs.

use std::path::{Path, PathBuf};

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

/// The real agent CLIs' package directory in this checkout, as of the build (`tests/agents`).
pub fn agents_package_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents")
}

/// Where their programs are: `tests/agents/node_modules/.bin`.
pub fn default_agents_dir() -> PathBuf {
    agents_package_dir().join("node_modules/.bin")
}
