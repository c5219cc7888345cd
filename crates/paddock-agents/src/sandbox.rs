//! Confining agent launches: when the host has a [`SandboxConfig`], the launch's Landlock
//! ruleset is built in the host (every policy path resolved there) and the CLI's process enters
//! it between fork and exec (`paddock_process::sandbox::prepare`, `ChildSpec::sandbox`), so the
//! CLI runs confined from its first instruction and no wrapper program is exec'd first.
//!
//! The policy lets the agent work — read-write in its working directory, its launch directory
//! (home, tmp, voucher file) and `/dev`; read and execute in the system's program directories
//! and the CLI's own install root; read-only in `/etc`, `/proc`, `/sys` and `/var/lib` — and
//! nothing else. In particular not the rest of `$HOME`, `/tmp`, `/run/user` (the daemon's
//! runtime directory: its token), Paddock's state directory or its config directory (key
//! files), unless the host widens the policy with the `extra_*` lists.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

use paddock_process::sandbox::{PreparedSandbox, SandboxError, SandboxPolicy, SandboxSupport};

use crate::contract::OpenError;
use crate::host::{HostConfig, LaunchDir};

/// Directories of programs and libraries: read and execute.
pub const SYSTEM_EXEC: &[&str] = &[
    "/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/opt",
];
/// System configuration and kernel interfaces: read-only.
pub const SYSTEM_READ: &[&str] = &["/etc", "/proc", "/sys", "/var/lib"];
/// Devices: read-write (`/dev/null`, `/dev/tty`, `/dev/urandom`, ptys).
pub const SYSTEM_WRITE: &[&str] = &["/dev"];

/// How the host confines agent launches. The default confines each launch to the paths the
/// module documentation lists; the `extra_*` lists widen it for every launch of the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxConfig {
    /// More hierarchies (or files) the agent may read, e.g. a shared documentation folder.
    pub extra_read: Vec<PathBuf>,
    /// More hierarchies it may read and execute, e.g. a toolchain outside the system
    /// directories (`~/.cargo`, `~/.rustup`, `/nix/store`).
    pub extra_exec: Vec<PathBuf>,
    /// More hierarchies it may read and write, e.g. a second checkout or a shared cache.
    pub extra_write: Vec<PathBuf>,
    /// Where it may connect to pathname unix sockets — the directory of the daemon's control
    /// socket, so the `paddock` command inside the session reaches the daemon. Only kernels
    /// with Landlock ABI 9 or later restrict connecting; on earlier ones every socket stays
    /// connectable whatever this says.
    pub connect: Vec<PathBuf>,
    /// When the kernel has no Landlock, launch unconfined (with an info line) instead of
    /// failing `open`.
    pub allow_unconfined: bool,
}

/// Whether one launch runs confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchSandbox {
    /// The host configured no sandbox.
    Off,
    /// A sandbox was configured, but this launch runs without it, for `reason`.
    Unconfined { reason: String },
    /// Confined by Landlock, entered before the CLI's exec.
    Landlock { abi: u32 },
}

impl LaunchSandbox {
    pub fn is_confined(&self) -> bool {
        matches!(self, Self::Landlock { .. })
    }
}

impl fmt::Display for LaunchSandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("off"),
            Self::Unconfined { reason } => write!(f, "unconfined ({reason})"),
            Self::Landlock { abi } => write!(f, "landlock (ABI {abi})"),
        }
    }
}

/// The program and arguments to spawn for one launch, and whether (and how) it is confined.
#[derive(Debug)]
pub(crate) struct Wrapped {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub sandbox: LaunchSandbox,
    /// The ruleset the child enters before it execs, for a confined launch.
    pub confine: Option<PreparedSandbox>,
}

/// Plans a launch of `program args` in `working_directory` under the host's sandbox, if it has
/// one. `env` is the launch's environment (its PATH finds a `#!/usr/bin/env` interpreter).
/// Reads the file system: call it on the blocking pool.
pub(crate) fn wrap(
    host: &HostConfig,
    dir: &LaunchDir,
    working_directory: &Path,
    program: PathBuf,
    args: Vec<OsString>,
    env: &[(OsString, OsString)],
) -> Result<Wrapped, OpenError> {
    let unwrapped = |sandbox| Wrapped {
        program: program.clone(),
        args: args.clone(),
        sandbox,
        confine: None,
    };
    let Some(config) = &host.sandbox else {
        return Ok(unwrapped(LaunchSandbox::Off));
    };
    let unavailable = |support: SandboxSupport| {
        if config.allow_unconfined {
            Ok(unwrapped(LaunchSandbox::Unconfined {
                reason: support.to_string(),
            }))
        } else {
            Err(OpenError::Sandbox(format!(
                "{support}, and the host does not allow unconfined launches; enable Landlock (Linux 5.13 or later with `landlock` in the `lsm=` boot parameter) or switch the agent sandbox off"
            )))
        }
    };
    let support = paddock_process::sandbox::status();
    if !support.is_available() {
        return unavailable(support);
    }
    let policy = launch_policy(host, config, dir, working_directory, &program, env);
    let prepared = match paddock_process::sandbox::prepare(&policy) {
        Ok(prepared) => prepared,
        Err(SandboxError::Unavailable { support }) => return unavailable(support),
        Err(error) => {
            let cause = match &error {
                SandboxError::Ruleset(source) => format!(": {source}"),
                _ => String::new(),
            };
            return Err(OpenError::Sandbox(format!(
                "could not build the launch's sandbox: {error}{cause}"
            )));
        }
    };
    Ok(Wrapped {
        program,
        args,
        sandbox: LaunchSandbox::Landlock { abi: prepared.abi },
        confine: Some(prepared),
    })
}

/// Whether the host's sandbox can confine launches here: the kernel's Landlock support.
pub fn support() -> SandboxSupport {
    paddock_process::sandbox::status()
}

/// The policy for one launch.
pub(crate) fn launch_policy(
    host: &HostConfig,
    config: &SandboxConfig,
    dir: &LaunchDir,
    working_directory: &Path,
    program: &Path,
    env: &[(OsString, OsString)],
) -> SandboxPolicy {
    let forbidden = Forbidden::of(host);
    let mut policy = SandboxPolicy {
        read: paths(SYSTEM_READ),
        exec: paths(SYSTEM_EXEC),
        write: vec![working_directory.to_path_buf(), dir.root.clone()],
        connect: config.connect.clone(),
    };
    policy.write.extend(paths(SYSTEM_WRITE));
    // `/etc/resolv.conf` is often a link into `/run`, which stays closed as a whole.
    if let Ok(resolv) = std::fs::canonicalize("/etc/resolv.conf")
        && !beneath_any(&resolv, &policy.read)
    {
        policy.read.push(resolv);
    }
    let mut own = Vec::new();
    if let Some(paddock) = &host.paddock_command {
        // The session's `paddock` command (`bin/paddock` links to it): the binary alone.
        own.extend(std::fs::canonicalize(paddock).ok());
    }
    own.extend(install_roots(program, &forbidden));
    if let Some(interpreter) = interpreter(program, env) {
        own.extend(install_dir(&interpreter, &forbidden));
    }
    for path in own {
        if !beneath_any(&path, &policy.exec) && !policy.exec.contains(&path) {
            policy.exec.push(path);
        }
    }
    policy.read.extend(config.extra_read.iter().cloned());
    policy.exec.extend(config.extra_exec.iter().cloned());
    policy.write.extend(config.extra_write.iter().cloned());
    policy
}

fn paths(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

/// True when `path` lies beneath (or is) one of `roots`, comparing resolved paths.
fn beneath_any(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        path.starts_with(root)
    })
}

/// Places an install root must never cover: a rule on them (or on a folder holding them) would
/// open the user's files, Paddock's state or the runtime directory to the agent.
struct Forbidden(Vec<PathBuf>);

impl Forbidden {
    fn of(host: &HostConfig) -> Self {
        let mut places: Vec<PathBuf> = ["/", "/tmp", "/var/tmp", "/run", "/home", "/root"]
            .into_iter()
            .map(PathBuf::from)
            .collect();
        places.push(host.state_root.clone());
        for name in [
            "HOME",
            "XDG_RUNTIME_DIR",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
        ] {
            if let Some(value) = std::env::var_os(name).filter(|value| !value.is_empty()) {
                places.push(PathBuf::from(value));
            }
        }
        let resolved: Vec<PathBuf> = places
            .iter()
            .filter_map(|place| std::fs::canonicalize(place).ok())
            .collect();
        places.extend(resolved);
        Self(places)
    }

    /// True when a rule on `root` would cover a forbidden place.
    fn covers(&self, root: &Path) -> bool {
        self.0.iter().any(|place| place.starts_with(root))
    }
}

/// The folders a program needs beyond itself: for an npm package (a file beneath
/// `node_modules`, as `node_modules/.bin/claude` resolves to) its package folder and the
/// `node_modules` folder holding it and its dependencies; for another package with a
/// `package.json` its folder; else the folder the (resolved) program is in. A folder that would
/// cover a forbidden place is replaced by the program file alone.
fn install_roots(program: &Path, forbidden: &Forbidden) -> Vec<PathBuf> {
    let Ok(resolved) = std::fs::canonicalize(program) else {
        return Vec::new();
    };
    let package = resolved
        .ancestors()
        .skip(1)
        .take(8)
        .find(|dir| dir.join("package.json").is_file())
        .map(Path::to_path_buf);
    let node_modules = resolved
        .ancestors()
        .skip(1)
        .find(|dir| dir.file_name() == Some(OsStr::new("node_modules")))
        .map(Path::to_path_buf);
    let mut roots: Vec<PathBuf> = match (package, node_modules) {
        (Some(package), Some(node_modules)) if package.starts_with(&node_modules) => {
            vec![package, node_modules]
        }
        (_, Some(node_modules)) => vec![node_modules],
        (Some(package), None) => vec![package],
        (None, None) => resolved
            .parent()
            .map(Path::to_path_buf)
            .into_iter()
            .collect(),
    };
    if roots.iter().any(|root| forbidden.covers(root)) {
        roots = vec![resolved];
    }
    roots
}

/// The folder holding an interpreter binary (`node`), or the binary alone when the folder
/// would cover a forbidden place.
fn install_dir(interpreter: &Path, forbidden: &Forbidden) -> Option<PathBuf> {
    let resolved = std::fs::canonicalize(interpreter).ok()?;
    match resolved.parent() {
        Some(dir) if !forbidden.covers(dir) => Some(dir.to_path_buf()),
        _ => Some(resolved),
    }
}

/// The interpreter a script names on its `#!` line; `#!/usr/bin/env node` is looked up on the
/// launch's PATH.
fn interpreter(program: &Path, env: &[(OsString, OsString)]) -> Option<PathBuf> {
    use std::io::Read as _;
    let mut head = [0u8; 256];
    let mut file = std::fs::File::open(program).ok()?;
    let read = file.read(&mut head).ok()?;
    let line = head.get(..read)?.strip_prefix(b"#!")?;
    let line = line.split(|byte| *byte == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name() != Some(OsStr::new("env")) {
        return Some(first);
    }
    // `env [-S] [NAME=value]… node …`: the first word that is neither a flag nor a variable.
    let name = words.find(|word| !word.starts_with('-') && !word.contains('='))?;
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let path = env
        .iter()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| value.clone())?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(root: &Path) -> HostConfig {
        HostConfig::new(root.join("state"))
    }

    #[test]
    fn an_npm_cli_gets_its_package_and_node_modules() {
        let root = tempfile::tempdir().unwrap();
        let modules = root.path().join("app/node_modules");
        let package = modules.join("@vendor/cli");
        std::fs::create_dir_all(package.join("dist")).unwrap();
        std::fs::create_dir_all(modules.join(".bin")).unwrap();
        std::fs::write(package.join("package.json"), "{}").unwrap();
        std::fs::write(
            package.join("dist/cli.js"),
            "#!/usr/bin/env node\nconsole.log(1)\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("../@vendor/cli/dist/cli.js", modules.join(".bin/cli")).unwrap();
        let forbidden = Forbidden::of(&host(root.path()));
        let roots = install_roots(&modules.join(".bin/cli"), &forbidden);
        let modules = std::fs::canonicalize(&modules).unwrap();
        assert_eq!(roots, [modules.join("@vendor/cli"), modules.clone()]);
        let env = [(OsString::from("PATH"), OsString::from("/usr/bin:/bin"))];
        let node = interpreter(&modules.join(".bin/cli"), &env);
        assert!(
            node.as_deref()
                .is_none_or(|node| node.file_name() == Some(OsStr::new("node"))),
            "{node:?}"
        );
    }

    #[test]
    fn a_program_in_a_broad_folder_gets_only_itself() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state");
        std::fs::create_dir_all(state.join("tools")).unwrap();
        let program = state.join("tool");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        let forbidden = Forbidden::of(&host(root.path()));
        // Its folder is the state root itself: only the file is allowed.
        assert_eq!(
            install_roots(&program, &forbidden),
            [std::fs::canonicalize(&program).unwrap()]
        );
        let nested = state.join("tools/tool");
        std::fs::write(&nested, "#!/bin/sh\n").unwrap();
        assert_eq!(
            interpreter(&nested, &[]).as_deref(),
            Some(Path::new("/bin/sh"))
        );
        // A folder beneath the state root covers nothing forbidden.
        assert_eq!(
            install_roots(&nested, &forbidden),
            [std::fs::canonicalize(state.join("tools")).unwrap()]
        );
        assert!(forbidden.covers(Path::new("/")));
        assert!(forbidden.covers(Path::new("/tmp")));
    }

    #[test]
    fn the_policy_allows_the_launch_and_the_system_and_nothing_of_paddock() {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let mut host = host(root.path());
        host.paddock_command = Some(PathBuf::from("/bin/true"));
        let dir = LaunchDir::create(&host, "policy").unwrap();
        let config = SandboxConfig {
            extra_read: vec![PathBuf::from("/srv/docs")],
            extra_write: vec![PathBuf::from("/srv/cache")],
            connect: vec![PathBuf::from("/run/user/1000/paddock")],
            ..SandboxConfig::default()
        };
        let policy = launch_policy(&host, &config, &dir, &work, Path::new("/bin/sh"), &[]);
        assert_eq!(policy.write[..3], [work, dir.root.clone(), "/dev".into()]);
        assert!(policy.write.contains(&PathBuf::from("/srv/cache")));
        assert!(policy.read.contains(&PathBuf::from("/srv/docs")));
        for system in ["/usr", "/bin", "/lib"] {
            assert!(policy.exec.contains(&PathBuf::from(system)), "{policy:?}");
        }
        for system in ["/etc", "/proc", "/sys", "/var/lib"] {
            assert!(policy.read.contains(&PathBuf::from(system)), "{policy:?}");
        }
        assert_eq!(policy.connect, config.connect);
        let everything: Vec<&PathBuf> = policy
            .read
            .iter()
            .chain(&policy.exec)
            .chain(&policy.write)
            .collect();
        for closed in [
            PathBuf::from("/"),
            PathBuf::from("/tmp"),
            PathBuf::from("/run"),
            PathBuf::from("/run/user"),
            PathBuf::from("/home"),
            host.state_root.clone(),
        ] {
            assert!(!everything.contains(&&closed), "{closed:?} in {policy:?}");
        }
        if let Some(home) = std::env::var_os("HOME") {
            assert!(!everything.contains(&&PathBuf::from(home)), "{policy:?}");
        }
        dir.remove();
    }

    #[test]
    fn a_sandboxed_launch_runs_the_program_itself_with_a_prepared_ruleset() {
        let root = tempfile::tempdir().unwrap();
        let mut host = host(root.path());
        let dir = LaunchDir::create(&host, "plain").unwrap();
        let run = |host: &HostConfig| {
            wrap(
                host,
                &dir,
                root.path(),
                PathBuf::from("/bin/sh"),
                vec!["-c".into(), "true".into()],
                &[],
            )
            .unwrap()
        };
        let off = run(&host);
        assert_eq!(off.sandbox, LaunchSandbox::Off);
        assert!(off.confine.is_none());
        // No `paddock` command is needed: nothing is exec'd in front of the program.
        host.sandbox = Some(SandboxConfig::default());
        let confined = run(&host);
        assert_eq!(confined.program, Path::new("/bin/sh"));
        assert_eq!(confined.args, ["-c", "true"]);
        let prepared = confined.confine.as_ref().expect("a ruleset for the child");
        match support().abi() {
            Some(abi) => {
                assert_eq!(confined.sandbox, LaunchSandbox::Landlock { abi });
                assert_eq!(prepared.abi, abi);
            }
            None => unreachable!("the machines Paddock is tested on have Landlock"),
        }
        dir.remove();
    }
}
