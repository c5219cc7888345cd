//! What an adapter is, as data: the [`AdapterDescriptor`] names the backend, its capabilities,
//! the model API it calls, the program it runs and how to ask that program its version. The
//! probe, the program lookup and the version check every adapter shares are implemented once
//! here, over the descriptor.

use std::borrow::Cow;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use paddock_process::{ChildSpec, RunError};

use crate::contract::{AgentConfig, BackendId, Capabilities, OpenError, Probe};
use crate::credentials::ModelApi;
use crate::host::HostConfig;

/// How long the version query may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// The fixed facts of one adapter. Built-in adapters keep theirs in a `const`; an ACP profile
/// builds one at run time and lends it out by reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterDescriptor {
    /// The identity sessions and probes report.
    pub backend: BackendId,
    pub capabilities: Capabilities,
    /// The model API the runtime calls through the credential proxy (it then needs a voucher
    /// from the broker); `None` for a runtime that reaches no model API of ours.
    pub model_api: Option<ModelApi>,
    /// Whether the runtime asks permission for tools (`permission_requested`).
    pub asks_permission: bool,
    /// Whether the runtime has an MCP client and can be given [`McpServer`]s.
    ///
    /// [`McpServer`]: crate::contract::McpServer
    pub mcp_client: bool,
    /// The executable's name, searched on PATH unless the host registered a path for the
    /// backend's name.
    pub program: Cow<'static, str>,
    /// The arguments that make the program print its version (`["--version"]`). Empty for a
    /// program that answers no such query: the probe then reports it installed when it exists.
    pub version_args: &'static [&'static str],
    /// What the probe says when the program is missing.
    pub install_hint: Cow<'static, str>,
    /// The versions whose protocol the adapter speaks; `None` drives any version.
    pub supported: Option<SupportedVersions>,
}

/// The program versions an adapter drives: one major version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupportedVersions {
    pub major: u64,
    /// What that is, for messages ("the OpenCode v1 server API (opencode 1.x)").
    pub description: &'static str,
}

impl AdapterDescriptor {
    /// Why `version` cannot be driven, if it cannot.
    pub fn unsupported(&self, version: &str) -> Option<String> {
        let supported = self.supported?;
        (major(version) != Some(supported.major)).then(|| {
            format!(
                "{} `{version}` is not supported: this release drives {}",
                self.program, supported.description
            )
        })
    }

    /// Checks, before anything is looked up, minted or written, that the runtime can be given
    /// `config`'s MCP servers: each is valid, and the runtime has an MCP client.
    pub(crate) fn check_config(&self, config: &AgentConfig) -> Result<(), OpenError> {
        config.check_mcp_servers()?;
        if !config.mcp_servers.is_empty() && !self.mcp_client {
            return Err(OpenError::NoMcpClient {
                backend: self.backend,
            });
        }
        Ok(())
    }

    /// Finds the program: the host's registered path for the backend's name, else PATH. The
    /// lookup reads the file system, so it runs on the blocking pool.
    pub(crate) async fn find_program(&self, host: &std::sync::Arc<HostConfig>) -> Option<PathBuf> {
        let host = host.clone();
        let (backend, program) = (self.backend, self.program.clone().into_owned());
        tokio::task::spawn_blocking(move || host.find_program(backend.as_str(), &program))
            .await
            .ok()
            .flatten()
    }

    /// Whether the program at `program` (or none, when it was not found) is installed, its
    /// version and why it is not usable.
    pub(crate) async fn probe(&self, host: &HostConfig, program: Option<PathBuf>) -> Probe {
        let probe = |installed, program, version, problem| Probe {
            backend: self.backend,
            installed,
            program,
            version,
            capabilities: self.capabilities,
            problem,
        };
        let Some(program) = program else {
            return probe(
                false,
                None,
                None,
                Some(self.install_hint.clone().into_owned()),
            );
        };
        if self.version_args.is_empty() {
            return probe(true, Some(program), None, None);
        }
        match self.query_version(host, &program).await {
            Ok(version) => {
                let problem = self.unsupported(&version);
                probe(true, Some(program), Some(version), problem)
            }
            Err(problem) => probe(false, Some(program), None, Some(problem)),
        }
    }

    /// Checks, before anything is minted or written, that `program` is a version this adapter
    /// drives. Adapters without [`Self::supported`] accept any.
    pub(crate) async fn check_version(
        &self,
        host: &HostConfig,
        program: &Path,
    ) -> Result<(), OpenError> {
        let Some(supported) = self.supported else {
            return Ok(());
        };
        // The same file (path, inode, size, modification time) answered before: its version
        // has not changed, and asking again would spawn the CLI once more on every open.
        let identity = program_identity(program, self.version_args).await;
        let cached = identity.as_ref().and_then(|identity| {
            known_versions()
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(identity)
                .cloned()
        });
        let version = match cached {
            Some(version) => version,
            None => {
                let version = self.query_version(host, program).await.map_err(|message| {
                    OpenError::Spawn {
                        program: program.display().to_string(),
                        message,
                    }
                })?;
                if let Some(identity) = identity {
                    known_versions()
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(identity, version.clone());
                }
                version
            }
        };
        match major(&version) {
            Some(major) if major == supported.major => Ok(()),
            _ => Err(OpenError::UnsupportedVersion {
                backend: self.backend,
                version,
                supported: supported.description.into(),
            }),
        }
    }

    /// Runs the version query; the version, or what went wrong.
    async fn query_version(&self, host: &HostConfig, program: &Path) -> Result<String, String> {
        let query = format!("`{} {}`", program.display(), self.version_args.join(" "));
        // Some CLIs create their config, data and cache folders even for `--version`: give them
        // a throwaway home so a probe leaves nothing in the user's.
        let home = ProbeHome::create()
            .await
            .map_err(|error| format!("could not make a home for {query}: {error}"))?;
        let spec = ChildSpec {
            program: program.to_path_buf(),
            args: self.version_args.iter().map(OsString::from).collect(),
            env: probe_env(host, &home.0),
            ..ChildSpec::default()
        };
        let output = paddock_process::output(spec, VERSION_TIMEOUT).await;
        home.remove().await;
        let output = match output {
            Ok(output) => output,
            Err(RunError::TimedOut { .. }) => {
                return Err(format!(
                    "{query} did not answer within {}s",
                    VERSION_TIMEOUT.as_secs()
                ));
            }
            Err(RunError::Spawn(error)) => {
                let cause = std::error::Error::source(&error)
                    .map_or_else(|| error.to_string(), ToString::to_string);
                return Err(format!("could not run `{}`: {cause}", program.display()));
            }
        };
        if !output.status.success() {
            return Err(format!("{query} exited with {}", output.status));
        }
        // Some CLIs print their version on stderr.
        [
            String::from_utf8_lossy(&output.stdout).as_ref(),
            &output.stderr,
        ]
        .into_iter()
        .find_map(|text| {
            text.split_whitespace()
                .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))
                .map(str::to_owned)
        })
        .ok_or_else(|| format!("{query} printed no version"))
    }
}

/// The major version of `version` (`1.18.33` and `v1.2` → 1).
fn major(version: &str) -> Option<u64> {
    version
        .trim()
        .trim_start_matches('v')
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// The version query's environment: the host's inherited allowlist, with home, config, data,
/// state, cache and temporary folders inside the throwaway `home`.
fn probe_env(host: &HostConfig, home: &Path) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = host
        .inherit
        .iter()
        .filter_map(|name| Some((OsString::from(name), std::env::var_os(name)?)))
        .collect();
    env.push(("HOME".into(), home.into()));
    env.push(("TMPDIR".into(), home.into()));
    for (name, sub) in [
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cache"),
    ] {
        env.push((name.into(), home.join(sub).into()));
    }
    env
}

/// A private, temporary home for one version query. [`Self::remove`] removes it; dropping it
/// unremoved (the query was cancelled) removes it on the blocking pool.
struct ProbeHome(PathBuf);

impl ProbeHome {
    async fn create() -> std::io::Result<Self> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("paddock-probe-{}-{n}", std::process::id()));
        tokio::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .await?;
        Ok(Self(path))
    }

    async fn remove(mut self) {
        let path = std::mem::take(&mut self.0);
        let _ = tokio::fs::remove_dir_all(&path).await;
    }
}

impl Drop for ProbeHome {
    fn drop(&mut self) {
        if self.0.as_os_str().is_empty() {
            return;
        }
        let path = std::mem::take(&mut self.0);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || std::fs::remove_dir_all(path));
            }
            Err(_) => {
                let _ = std::fs::remove_dir_all(path);
            }
        }
    }
}

/// What identifies one version answer: the program file (path, inode, size, modification
/// time) and the arguments that asked it.
type ProgramIdentity = (PathBuf, u64, u64, i64, i64, Vec<&'static str>);

/// Versions already read, by program file, for this process.
fn known_versions() -> &'static std::sync::Mutex<std::collections::HashMap<ProgramIdentity, String>>
{
    static KNOWN: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<ProgramIdentity, String>>,
    > = std::sync::OnceLock::new();
    KNOWN.get_or_init(Default::default)
}

/// The identity of the file `program` resolves to, if it can be read.
async fn program_identity(
    program: &Path,
    version_args: &'static [&'static str],
) -> Option<ProgramIdentity> {
    use std::os::unix::fs::MetadataExt as _;
    let metadata = tokio::fs::metadata(program).await.ok()?;
    Some((
        program.to_path_buf(),
        metadata.ino(),
        metadata.len(),
        metadata.mtime(),
        metadata.mtime_nsec(),
        version_args.to_vec(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Lifetime, MidTurnDelivery, Transport};

    const DESCRIPTOR: AdapterDescriptor = AdapterDescriptor {
        backend: BackendId::OpenCode,
        capabilities: Capabilities {
            lifetime: Lifetime::Session,
            transport: Transport::Process,
            mid_turn_delivery: MidTurnDelivery::Steer,
        },
        model_api: None,
        asks_permission: true,
        mcp_client: true,
        program: Cow::Borrowed("sh"),
        version_args: &["-c", "echo probe-tool 1.2.3"],
        install_hint: Cow::Borrowed("`sh` is missing"),
        supported: Some(SupportedVersions {
            major: 1,
            description: "version 1",
        }),
    };

    #[test]
    fn versions_outside_the_supported_major_are_unsupported() {
        assert_eq!(major("1.18.33"), Some(1));
        assert_eq!(major("v2.0"), Some(2));
        assert!(DESCRIPTOR.unsupported("1.18.33").is_none());
        assert_eq!(
            DESCRIPTOR.unsupported("2.0.0").as_deref(),
            Some("sh `2.0.0` is not supported: this release drives version 1")
        );
        assert!(DESCRIPTOR.unsupported("0.15.2").is_some());
        assert!(DESCRIPTOR.unsupported("dev").is_some());
        let any = AdapterDescriptor {
            supported: None,
            ..DESCRIPTOR
        };
        assert!(any.unsupported("dev").is_none());
    }

    fn sh() -> Option<PathBuf> {
        Some(PathBuf::from("/bin/sh"))
    }

    #[tokio::test]
    async fn the_probe_reports_the_version_and_the_capabilities() {
        let host = HostConfig::new("/nonexistent");
        let probe = DESCRIPTOR.probe(&host, sh()).await;
        assert!(probe.installed && probe.problem.is_none(), "{probe:?}");
        assert_eq!(probe.version.as_deref(), Some("1.2.3"));
        assert_eq!(probe.backend, BackendId::OpenCode);
        assert_eq!(probe.capabilities, DESCRIPTOR.capabilities);
        let missing = DESCRIPTOR.probe(&host, None).await;
        assert!(
            !missing.installed && missing.program.is_none(),
            "{missing:?}"
        );
        assert_eq!(missing.problem.as_deref(), Some("`sh` is missing"));
        let silent = AdapterDescriptor {
            version_args: &[],
            ..DESCRIPTOR
        };
        let probe = silent.probe(&host, sh()).await;
        assert!(probe.installed && probe.version.is_none() && probe.problem.is_none());
    }

    #[tokio::test]
    async fn the_version_query_runs_in_a_throwaway_home_it_removes() {
        let root = tempfile::tempdir().unwrap();
        let host = HostConfig::new(root.path());
        // The program notes where its home is, and answers only from a fresh probe home.
        let program = root.path().join("tool");
        paddock_process::write_executable(
            &program,
            b"#!/bin/sh\necho \"$HOME\" > \"${0%/*}/home-was\"\n\
              case \"$HOME\" in */paddock-probe-*) test -d \"$HOME\" && echo 7.0;; esac\n",
        )
        .unwrap();
        let descriptor = AdapterDescriptor {
            version_args: &["--version"],
            supported: None,
            ..DESCRIPTOR
        };
        let probe = descriptor.probe(&host, Some(program)).await;
        assert_eq!(probe.version.as_deref(), Some("7.0"), "{probe:?}");
        let home = std::fs::read_to_string(root.path().join("home-was")).unwrap();
        assert!(!Path::new(home.trim()).exists(), "{home} is left behind");
    }

    #[tokio::test]
    async fn failures_and_unsupported_versions_are_named() {
        let host = HostConfig::new("/nonexistent");
        let failing = AdapterDescriptor {
            version_args: &["-c", "exit 3"],
            ..DESCRIPTOR
        };
        let probe = failing.probe(&host, sh()).await;
        assert!(!probe.installed, "{probe:?}");
        assert!(
            probe
                .problem
                .as_deref()
                .is_some_and(|p| p.starts_with("`/bin/sh -c exit 3` exited with")),
            "{probe:?}"
        );
        let error = failing
            .check_version(&host, Path::new("/bin/sh"))
            .await
            .unwrap_err();
        assert!(matches!(error, OpenError::Spawn { .. }), "{error:?}");
        let missing = DESCRIPTOR
            .probe(&host, Some(PathBuf::from("/nonexistent/tool")))
            .await;
        assert!(
            missing
                .problem
                .as_deref()
                .is_some_and(|p| p.starts_with("could not run `/nonexistent/tool`: ")),
            "{missing:?}"
        );
        let newer = AdapterDescriptor {
            version_args: &["-c", "echo 2.0.0"],
            ..DESCRIPTOR
        };
        let error = newer
            .check_version(&host, Path::new("/bin/sh"))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, OpenError::UnsupportedVersion { version, .. } if version == "2.0.0"),
            "{error:?}"
        );
        let probe = newer.probe(&host, sh()).await;
        assert!(
            probe.installed,
            "an unsupported version is installed: {probe:?}"
        );
        assert!(probe.problem.is_some_and(|p| p.contains("2.0.0")));
        assert!(
            DESCRIPTOR
                .check_version(&host, Path::new("/bin/sh"))
                .await
                .is_ok()
        );
    }
}
