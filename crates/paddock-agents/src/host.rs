//! The host layer: where launches live and what environment they get.
//!
//! Each launch gets its own directory (`<state_root>/launches/<launch_id>/`) with `bin/` (put
//! first on PATH; it holds a stable `paddock` command), `home/` and `tmp/`; the directory is
//! removed when the session closes. The environment is built from explicit layers — a short
//! allowlist taken from the host process, the adapter's defaults, the host's layer, the
//! request's layer — and nothing else is inherited.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Variables taken from the host process when set; everything else must be given explicitly.
pub const DEFAULT_INHERIT: &[&str] = &[
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "TERM",
];

/// How the host runs agents.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Launch directories are created under `<state_root>/launches/`.
    pub state_root: PathBuf,
    /// Explicit program paths per backend name (`claude` …); otherwise PATH is searched.
    pub programs: BTreeMap<String, PathBuf>,
    /// Names inherited from the host process's environment.
    pub inherit: Vec<String>,
    /// The host's environment layer, applied over the adapter's defaults.
    pub env: Vec<(String, String)>,
    /// The `paddock` executable exposed on PATH inside every session.
    pub paddock_command: Option<PathBuf>,
    /// The credential broker; CLIs that call a model API cannot launch without one.
    pub credentials: Option<std::sync::Arc<dyn crate::credentials::LaunchCredentials>>,
    /// Confine every launch with Landlock (entered between fork and exec); `None`
    /// launches unconfined. See [`crate::sandbox`] for what a confined agent may reach.
    pub sandbox: Option<crate::sandbox::SandboxConfig>,
}

impl HostConfig {
    pub fn new(state_root: impl Into<PathBuf>) -> Self {
        Self {
            state_root: state_root.into(),
            programs: BTreeMap::new(),
            inherit: DEFAULT_INHERIT
                .iter()
                .map(|name| (*name).to_owned())
                .collect(),
            env: Vec::new(),
            paddock_command: None,
            credentials: None,
            sandbox: None,
        }
    }

    pub fn with_sandbox(mut self, sandbox: crate::sandbox::SandboxConfig) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    pub fn with_credentials(
        mut self,
        credentials: std::sync::Arc<dyn crate::credentials::LaunchCredentials>,
    ) -> Self {
        self.credentials = Some(credentials);
        self
    }

    pub fn with_program(mut self, backend: &str, path: impl Into<PathBuf>) -> Self {
        self.programs.insert(backend.to_owned(), path.into());
        self
    }

    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Finds `name`: the configured path, else the first executable on the inherited PATH.
    pub fn find_program(&self, backend: &str, name: &str) -> Option<PathBuf> {
        if let Some(path) = self.programs.get(backend) {
            return path.is_file().then(|| path.clone());
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// One launch's private directory.
#[derive(Debug, Clone)]
pub struct LaunchDir {
    pub root: PathBuf,
    pub bin: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
}

impl LaunchDir {
    /// Creates the directory tree (mode 0700) and the `paddock` command.
    pub fn create(host: &HostConfig, launch_id: &str) -> std::io::Result<Self> {
        let safe = !launch_id.is_empty()
            && launch_id.len() <= 128
            && launch_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
            && launch_id != "."
            && launch_id != "..";
        if !safe {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("launch id `{launch_id}` must be 1-128 letters, digits, `-`, `_` or `.`"),
            ));
        }
        let root = host.state_root.join("launches").join(launch_id);
        if root.exists() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!(
                    "launch `{launch_id}` already has a directory at `{}`",
                    root.display()
                ),
            ));
        }
        let dir = Self {
            bin: root.join("bin"),
            home: root.join("home"),
            tmp: root.join("tmp"),
            root,
        };
        for path in [&dir.root, &dir.bin, &dir.home, &dir.tmp] {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            {
                use std::os::unix::fs::DirBuilderExt;
                builder.mode(0o700);
            }
            builder.create(path)?;
        }
        if let Some(paddock) = &host.paddock_command {
            std::os::unix::fs::symlink(paddock, dir.bin.join("paddock"))?;
        }
        Ok(dir)
    }

    /// Removes the directory; true when it is gone.
    pub fn remove(&self) -> bool {
        let _ = std::fs::remove_dir_all(&self.root);
        !self.root.exists()
    }
}

/// Builds the child's environment from the layers, lowest first.
pub fn compose_env(
    host: &HostConfig,
    dir: &LaunchDir,
    adapter_defaults: &[(String, String)],
    request: &[(String, String)],
    secrets: &[(OsString, OsString)],
) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<String, OsString> = BTreeMap::new();
    for name in &host.inherit {
        if let Some(value) = std::env::var_os(name) {
            env.insert(name.clone(), value);
        }
    }
    env.insert("HOME".into(), dir.home.clone().into_os_string());
    // Temporary files go to the launch's own folder (a sandboxed agent cannot use `/tmp`).
    for name in ["TMPDIR", "TMP", "TEMP"] {
        env.insert(name.into(), dir.tmp.clone().into_os_string());
    }
    for (name, value) in adapter_defaults.iter().chain(&host.env).chain(request) {
        env.insert(name.clone(), value.into());
    }
    // The launch's bin directory comes first, so `paddock` resolves to the host's binary.
    let mut path = vec![dir.bin.clone()];
    if let Some(existing) = env.get("PATH") {
        path.extend(std::env::split_paths(existing));
    }
    if let Ok(joined) = std::env::join_paths(path) {
        env.insert("PATH".into(), joined);
    }
    // Credentials come last: no layer can replace the voucher with a real key.
    for (name, value) in secrets {
        env.insert(name.to_string_lossy().into_owned(), value.clone());
    }
    env.into_iter()
        .map(|(name, value)| (name.into(), value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_dirs_are_private_and_removed() {
        let root = tempfile::tempdir().unwrap();
        let mut host = HostConfig::new(root.path());
        host.paddock_command = Some(PathBuf::from("/bin/true"));
        let dir = LaunchDir::create(&host, "launch-1").unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&dir.root).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(
            std::fs::read_link(dir.bin.join("paddock")).unwrap(),
            PathBuf::from("/bin/true")
        );
        assert!(LaunchDir::create(&host, "launch-1").is_err(), "no reuse");
        assert!(LaunchDir::create(&host, "../escape").is_err());
        assert!(dir.remove());
    }

    fn get_value(env: &[(OsString, OsString)], name: &str) -> Option<String> {
        env.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.to_string_lossy().into_owned())
    }

    #[test]
    fn env_layers_in_order_and_nothing_else() {
        let root = tempfile::tempdir().unwrap();
        let host = HostConfig::new(root.path())
            .with_env("LAYER", "host")
            .with_env("HOST_ONLY", "1");
        let dir = LaunchDir::create(&host, "l").unwrap();
        let env = compose_env(
            &host,
            &dir,
            &[
                ("LAYER".into(), "adapter".into()),
                ("ADAPTER_ONLY".into(), "1".into()),
            ],
            &[
                ("LAYER".into(), "request".into()),
                ("ANTHROPIC_API_KEY".into(), "real".into()),
            ],
            &[("ANTHROPIC_API_KEY".into(), "voucher".into())],
        );
        assert_eq!(
            get_value(&env, "ANTHROPIC_API_KEY").as_deref(),
            Some("voucher")
        );
        let get = |name: &str| {
            env.iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.to_string_lossy().into_owned())
        };
        assert_eq!(get("LAYER").as_deref(), Some("request"));
        assert_eq!(get("HOST_ONLY").as_deref(), Some("1"));
        assert_eq!(get("ADAPTER_ONLY").as_deref(), Some("1"));
        assert!(
            get("PATH")
                .unwrap()
                .starts_with(&dir.bin.display().to_string())
        );
        assert_eq!(get("HOME"), Some(dir.home.display().to_string()));
        for name in ["TMPDIR", "TMP", "TEMP"] {
            assert_eq!(get(name), Some(dir.tmp.display().to_string()), "{name}");
        }
        assert!(
            get("CARGO").is_none() && get("RUST_LOG").is_none(),
            "nothing inherited beyond the allowlist"
        );
    }
}
