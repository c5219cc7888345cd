//! The launch environment a client or daemon resolves paths against.
//!
//! Discovery depends on environment variables and the launch directory; passing them explicitly
//! (instead of reading the process environment deep inside) lets tests and embedding hosts
//! describe another process's environment exactly.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Environment variables and working directory, as the daemon or a client was launched with.
#[derive(Debug, Clone, Default)]
pub struct ClientEnv {
    vars: BTreeMap<String, OsString>,
    current_dir: PathBuf,
}

impl ClientEnv {
    /// The calling process's own environment and working directory.
    pub fn from_process() -> Self {
        let vars = std::env::vars_os()
            .filter_map(|(name, value)| name.into_string().ok().map(|name| (name, value)))
            .collect();
        let current_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        Self { vars, current_dir }
    }

    /// An empty environment rooted at `current_dir`, for describing another process.
    pub fn empty(current_dir: impl Into<PathBuf>) -> Self {
        Self {
            vars: BTreeMap::new(),
            current_dir: current_dir.into(),
        }
    }

    pub fn with_var(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    pub fn without_var(mut self, name: &str) -> Self {
        self.vars.remove(name);
        self
    }

    /// The variable's value, treating an empty value as unset.
    pub fn var(&self, name: &str) -> Option<&OsString> {
        self.vars.get(name).filter(|value| !value.is_empty())
    }

    pub fn current_dir(&self) -> &Path {
        &self.current_dir
    }

    /// `path` made absolute against the launch directory, without touching the file system.
    pub fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.current_dir.join(path)
        }
    }
}
