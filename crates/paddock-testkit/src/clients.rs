//! The independent MCP clients the tests run: the repository's root and the Python that has the
//! official SDK (`scripts/setup --dev` makes its venv).

use std::path::PathBuf;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `PADDOCK_TEST_PYTHON`, else the venv `scripts/setup --dev` makes; panics with the hint when
/// it is missing, so a machine without it fails loudly rather than skipping.
pub fn python() -> PathBuf {
    let path = std::env::var_os("PADDOCK_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-clients/venv/bin/python"));
    assert!(
        path.exists(),
        "{} is missing\nhint: run `scripts/setup --dev`",
        path.display()
    );
    path
}
