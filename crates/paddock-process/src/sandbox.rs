//! Landlock confinement of a program: either the calling process confines itself and then execs
//! the program ([`confine_self`], `paddock sandbox-exec`), or the parent builds the ruleset
//! ([`prepare`]) and the child enters it between fork and exec ([`crate::ChildSpec::sandbox`]),
//! which costs no second exec. Either way the program inherits the ruleset and can never shed
//! it.
//!
//! A [`SandboxPolicy`] names the hierarchies the program may use — read-only, read and
//! execute, read-write — and everything else on the file system is denied. The ruleset handles
//! every file-system access right the running kernel's Landlock ABI knows (so a newer kernel
//! denies more, never less), and on older kernels it is applied best-effort: what the kernel
//! supports is enforced. A kernel without Landlock is an error ([`SandboxError::Unavailable`]),
//! never a silent pass.
//!
//! Landlock does not restrict everything: TCP (the policy handles no network rights, since
//! agents reach their model through a loopback proxy), signals and abstract unix sockets are
//! left alone, and connecting to a pathname unix socket is only restricted from ABI 9 on (then
//! only beneath [`SandboxPolicy::connect`] and the writable hierarchies). `stat(2)` and path
//! lookups are never restricted: names of files stay visible, their contents do not.

use std::fmt;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access as _, AccessFs, BitFlags, CompatLevel, Compatible as _, LandlockStatus,
    PathBeneath, RestrictSelf, Ruleset, RulesetAttr as _, RulesetCreatedAttr as _, RulesetStatus,
};

/// What a confined program may reach. Paths may name directories (the rule covers everything
/// beneath) or single files; paths that do not exist are skipped (a distribution without
/// `/lib32`, say) and reported in [`Confinement::skipped`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// Read files and list directories beneath each of these.
    pub read: Vec<PathBuf>,
    /// Read and execute beneath each of these (programs, libraries, interpreters).
    pub exec: Vec<PathBuf>,
    /// Everything beneath each of these: read, execute, create, write, truncate, remove,
    /// rename, device ioctls.
    pub write: Vec<PathBuf>,
    /// Connect to pathname unix sockets beneath each of these. Only kernels with Landlock ABI 9
    /// or later restrict connecting at all; on earlier ones every socket stays connectable.
    pub connect: Vec<PathBuf>,
}

/// Whether the running kernel can confine processes with Landlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxSupport {
    /// Landlock works; `abi` is the ABI version used (the kernel's, or the newest this build
    /// knows when the kernel is newer).
    Available { abi: u32 },
    /// The kernel has Landlock but it is not enabled (not in the `lsm=` boot list).
    NotEnabled,
    /// The kernel was built without Landlock.
    NotImplemented,
}

impl SandboxSupport {
    /// The ABI version, when Landlock is available.
    pub fn abi(self) -> Option<u32> {
        match self {
            Self::Available { abi } => Some(abi),
            Self::NotEnabled | Self::NotImplemented => None,
        }
    }

    pub fn is_available(self) -> bool {
        self.abi().is_some()
    }

    /// Whether connecting to pathname unix sockets is restricted (Landlock ABI 9 and later).
    pub fn restricts_unix_connect(self) -> bool {
        self.abi().is_some_and(|abi| abi >= 9)
    }
}

impl fmt::Display for SandboxSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Available { abi } => write!(f, "Landlock ABI {abi}"),
            Self::NotEnabled => {
                f.write_str("Landlock is built into this kernel but not enabled at boot")
            }
            Self::NotImplemented => f.write_str("this kernel has no Landlock"),
        }
    }
}

/// What [`confine_self`] applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// The Landlock ABI the ruleset was built for.
    pub abi: u32,
    /// False when the kernel enforced only part of the ruleset (best-effort compatibility).
    pub fully_enforced: bool,
    /// Policy paths that do not exist and so got no rule.
    pub skipped: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot confine the program: {support}")]
    Unavailable { support: SandboxSupport },
    #[error("cannot open `{}` for a sandbox rule: {source}", path.display())]
    Path {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not apply the Landlock ruleset")]
    Ruleset(#[source] landlock::RulesetError),
}

impl SandboxError {
    /// True when the kernel cannot confine at all (no Landlock, or it is disabled).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }
}

/// Whether the running kernel supports Landlock, and which ABI. Has no side effect on the
/// calling process.
pub fn status() -> SandboxSupport {
    // A `RestrictSelf` without flags and without `no_new_privs` probes the kernel and makes no
    // system call that changes the process.
    match RestrictSelf::default().no_new_privs(false).apply() {
        Ok(applied) => support_of(applied.landlock),
        Err(_) => SandboxSupport::NotImplemented,
    }
}

fn support_of(status: LandlockStatus) -> SandboxSupport {
    match status {
        LandlockStatus::Available { effective_abi, .. } => SandboxSupport::Available {
            abi: effective_abi as u32,
        },
        LandlockStatus::NotEnabled => SandboxSupport::NotEnabled,
        _ => SandboxSupport::NotImplemented,
    }
}

/// The ABI value for `abi`, the running kernel's version.
fn abi_of(abi: u32) -> ABI {
    ABI::from(i32::try_from(abi).unwrap_or(i32::MAX))
}

/// The rights a rule of each kind grants, for `abi`.
fn rights(abi: ABI) -> [(BitFlags<AccessFs>, Kind); 4] {
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let exec = read | AccessFs::Execute;
    let all = AccessFs::from_all(abi);
    let connect = all & AccessFs::ResolveUnix;
    [
        (read, Kind::Read),
        (exec, Kind::Exec),
        (all, Kind::Write),
        (connect, Kind::Connect),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Exec,
    Write,
    Connect,
}

impl SandboxPolicy {
    fn paths(&self, kind: Kind) -> &[PathBuf] {
        match kind {
            Kind::Read => &self.read,
            Kind::Exec => &self.exec,
            Kind::Write => &self.write,
            Kind::Connect => &self.connect,
        }
    }
}

/// Confines the calling thread — and every program it execs from now on — to `policy`: the
/// process gets `no_new_privs` (setuid programs no longer elevate) and a Landlock domain that
/// handles every file-system right of the running ABI. Call it from a single-threaded process
/// right before `exec`: Landlock confines the calling thread only.
pub fn confine_self(policy: &SandboxPolicy) -> Result<Confinement, SandboxError> {
    let (ruleset, abi_number, skipped) = build(policy)?;
    let status = ruleset.restrict_self().map_err(SandboxError::Ruleset)?;
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(SandboxError::Unavailable {
            support: support_of(status.landlock),
        }),
        enforced => Ok(Confinement {
            abi: abi_number,
            fully_enforced: enforced == RulesetStatus::FullyEnforced,
            skipped,
        }),
    }
}

/// A Landlock ruleset built by the parent for one child, which enters it right before it execs
/// (hand it to [`crate::ChildSpec::sandbox`]). Every path of the policy was resolved here; the
/// child only makes two system calls.
#[derive(Debug)]
pub struct PreparedSandbox {
    /// The ruleset's descriptor (close-on-exec, as the kernel makes it).
    ruleset: OwnedFd,
    /// The Landlock ABI the ruleset was built for (the running kernel's).
    pub abi: u32,
    /// Policy paths that do not exist and so got no rule.
    pub skipped: Vec<PathBuf>,
}

/// Builds the ruleset for `policy` without confining anyone. Reads the file system (it opens
/// every policy path): call it off async threads.
pub fn prepare(policy: &SandboxPolicy) -> Result<PreparedSandbox, SandboxError> {
    let (ruleset, abi, skipped) = build(policy)?;
    match Option::<OwnedFd>::from(ruleset) {
        Some(ruleset) => Ok(PreparedSandbox {
            ruleset,
            abi,
            skipped,
        }),
        None => Err(SandboxError::Unavailable { support: status() }),
    }
}

/// Makes the child of `command` enter `sandbox` between fork and exec: `no_new_privs`, then
/// `landlock_restrict_self(2)`. A failure of either fails the spawn with the system's error.
#[expect(
    unsafe_code,
    reason = "`pre_exec` is the only way to run code in the forked child before it execs; the \
              hook makes two system calls and touches no lock and no allocator"
)]
pub(crate) fn confine_at_exec(command: &mut tokio::process::Command, sandbox: PreparedSandbox) {
    let ruleset = sandbox.ruleset;
    let hook = move || -> std::io::Result<()> {
        rustix::thread::set_no_new_privs(true)?;
        // SAFETY: a system call with an open descriptor (the closure owns it until the
        // command is dropped, after the spawn) and a flags word; no memory is passed.
        let done = unsafe {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                ruleset.as_raw_fd(),
                0 as libc::c_uint,
            )
        };
        if done == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    // SAFETY: the hook runs in the child after fork, where only async-signal-safe work is
    // allowed: it makes the two system calls above and builds its result from an errno, with
    // no allocation, no lock and no access to state another thread could have left half-done.
    unsafe {
        command.pre_exec(hook);
    }
}

/// The ruleset for `policy`, its ABI number and the policy paths that do not exist.
fn build(
    policy: &SandboxPolicy,
) -> Result<(landlock::RulesetCreated, u32, Vec<PathBuf>), SandboxError> {
    let support = status();
    let Some(abi_number) = support.abi() else {
        return Err(SandboxError::Unavailable { support });
    };
    let abi = abi_of(abi_number);
    let handled = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)
        .map_err(SandboxError::Ruleset)?
        .create()
        .map_err(SandboxError::Ruleset)?;
    let mut skipped = Vec::new();
    for (access, kind) in rights(abi) {
        let access = access & handled;
        if access.is_empty() {
            // Connect rules on an ABI that does not restrict connecting: nothing to grant.
            continue;
        }
        for path in policy.paths(kind) {
            let Some((fd, is_dir)) = open_path(path)? else {
                skipped.push(path.clone());
                continue;
            };
            // Directory-only rights on a file would make the kernel refuse the rule.
            let access = if is_dir {
                access
            } else {
                access & AccessFs::from_file(abi)
            };
            if access.is_empty() {
                continue;
            }
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, access))
                .map_err(SandboxError::Ruleset)?;
        }
    }
    Ok((ruleset, abi_number, skipped))
}

/// An `O_PATH` descriptor for `path` and whether it is a directory; `None` when it does not
/// exist.
fn open_path(path: &Path) -> Result<Option<(std::os::fd::OwnedFd, bool)>, SandboxError> {
    use rustix::fs::{FileType, Mode, OFlags};
    let error = |source: rustix::io::Errno| SandboxError::Path {
        path: path.to_path_buf(),
        source: source.into(),
    };
    let fd = match rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(errno) => return Err(error(errno)),
    };
    let stat = rustix::fs::fstat(&fd).map_err(error)?;
    let is_dir = FileType::from_raw_mode(stat.st_mode) == FileType::Directory;
    Ok(Some((fd, is_dir)))
}

#[cfg(test)]
mod tests {
    //! Each confinement runs in a child: the test binary runs itself for one test with
    //! [`CHILD`] set, the child confines itself and reports, and the parent (never confined)
    //! checks the report.

    use super::*;

    /// Set in the child run of a test; its value is the scratch directory.
    const CHILD: &str = "PADDOCK_SANDBOX_TEST_CHILD";

    /// Runs the test `name` of this binary in a child with [`CHILD`] = `scratch`; its stdout.
    fn in_child(name: &str, scratch: &Path) -> String {
        let exe = std::env::current_exe().unwrap();
        let output = std::process::Command::new(exe)
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, scratch)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "the child failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    /// The scratch directory when this is the child run.
    fn child_scratch() -> Option<PathBuf> {
        std::env::var_os(CHILD).map(PathBuf::from)
    }

    fn system_exec() -> Vec<PathBuf> {
        ["/usr", "/lib", "/lib64", "/bin"]
            .into_iter()
            .map(PathBuf::from)
            .collect()
    }

    #[test]
    fn status_reports_the_kernel_abi() {
        let support = status();
        // The machines Paddock is developed and tested on run kernels with Landlock.
        assert!(support.is_available(), "{support}");
        assert!(
            support.to_string().starts_with("Landlock ABI "),
            "{support}"
        );
        // Probing twice changes nothing (and does not confine this test process).
        assert_eq!(status(), support);
        assert!(std::fs::read_to_string("/proc/self/status").is_ok());
    }

    #[test]
    fn confined_child_reads_only_what_the_policy_allows() {
        if let Some(scratch) = child_scratch() {
            // The harness prints the test's name on the line the first output joins.
            println!();
            let policy = SandboxPolicy {
                read: vec![scratch.join("allowed"), scratch.join("missing")],
                write: vec![scratch.join("work")],
                ..SandboxPolicy::default()
            };
            let confinement = confine_self(&policy).unwrap();
            println!("abi={}", confinement.abi);
            println!("skipped={:?}", confinement.skipped);
            let report = |what: &str, result: std::io::Result<()>| match result {
                Ok(()) => println!("{what}=ok"),
                Err(error) => println!("{what}={:?}", error.kind()),
            };
            report(
                "read-allowed",
                std::fs::read_to_string(scratch.join("allowed/file")).map(drop),
            );
            report(
                "read-secret",
                std::fs::read_to_string(scratch.join("secret/key")).map(drop),
            );
            report(
                "list-secret",
                std::fs::read_dir(scratch.join("secret")).map(drop),
            );
            report(
                "write-allowed-dir",
                std::fs::write(scratch.join("allowed/new"), "x"),
            );
            report("write-work", std::fs::write(scratch.join("work/new"), "x"));
            report(
                "read-work",
                std::fs::read_to_string(scratch.join("work/new")).map(drop),
            );
            report(
                "remove-work",
                std::fs::remove_file(scratch.join("work/new")),
            );
            return;
        }
        let scratch = tempfile::tempdir().unwrap();
        for dir in ["allowed", "secret", "work"] {
            std::fs::create_dir(scratch.path().join(dir)).unwrap();
        }
        std::fs::write(scratch.path().join("allowed/file"), "public").unwrap();
        std::fs::write(scratch.path().join("secret/key"), "sk-secret").unwrap();
        let report = in_child(
            "sandbox::tests::confined_child_reads_only_what_the_policy_allows",
            scratch.path(),
        );
        for line in [
            "read-allowed=ok",
            "read-secret=PermissionDenied",
            "list-secret=PermissionDenied",
            "write-allowed-dir=PermissionDenied",
            "write-work=ok",
            "read-work=ok",
            "remove-work=ok",
        ] {
            assert!(report.lines().any(|l| l == line), "{line} in\n{report}");
        }
        let abi = status().abi().unwrap_or_default();
        assert!(report.contains(&format!("abi={abi}\n")), "{report}");
        let missing = scratch.path().join("missing");
        assert!(
            report.contains(&format!("skipped=[{missing:?}]")),
            "{report}"
        );
        assert!(!scratch.path().join("allowed/new").exists());
    }

    #[test]
    fn confined_child_executes_only_beneath_exec_paths() {
        if let Some(scratch) = child_scratch() {
            // The harness prints the test's name on the line the first output joins.
            println!();
            let policy = SandboxPolicy {
                exec: system_exec(),
                read: vec![scratch.join("readable")],
                write: vec![scratch.join("work")],
                ..SandboxPolicy::default()
            };
            confine_self(&policy).unwrap();
            for (what, program) in [
                ("system", PathBuf::from("/bin/true")),
                ("readable", scratch.join("readable/tool")),
                ("work", scratch.join("work/tool")),
            ] {
                match std::process::Command::new(&program).status() {
                    Ok(status) => println!("exec-{what}={}", status.success()),
                    Err(error) => println!("exec-{what}={:?}", error.kind()),
                }
            }
            return;
        }
        let scratch = tempfile::tempdir().unwrap();
        for dir in ["readable", "work"] {
            let dir = scratch.path().join(dir);
            std::fs::create_dir(&dir).unwrap();
            let tool = dir.join("tool");
            crate::write_executable(&tool, b"#!/bin/sh\nexit 0\n").unwrap();
        }
        let report = in_child(
            "sandbox::tests::confined_child_executes_only_beneath_exec_paths",
            scratch.path(),
        );
        for line in [
            "exec-system=true",
            "exec-readable=PermissionDenied",
            "exec-work=true",
        ] {
            assert!(report.lines().any(|l| l == line), "{line} in\n{report}");
        }
    }

    #[test]
    fn single_files_can_be_allowed() {
        if let Some(scratch) = child_scratch() {
            // The harness prints the test's name on the line the first output joins.
            println!();
            let policy = SandboxPolicy {
                read: vec![scratch.join("dir/one")],
                write: vec![PathBuf::from("/dev/null")],
                ..SandboxPolicy::default()
            };
            confine_self(&policy).unwrap();
            let read = |name: &str| std::fs::read_to_string(scratch.join("dir").join(name)).is_ok();
            println!("one={} two={}", read("one"), read("two"));
            println!(
                "devnull={}",
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/null")
                    .is_ok()
            );
            return;
        }
        let scratch = tempfile::tempdir().unwrap();
        std::fs::create_dir(scratch.path().join("dir")).unwrap();
        std::fs::write(scratch.path().join("dir/one"), "1").unwrap();
        std::fs::write(scratch.path().join("dir/two"), "2").unwrap();
        let report = in_child(
            "sandbox::tests::single_files_can_be_allowed",
            scratch.path(),
        );
        assert!(report.contains("one=true two=false"), "{report}");
        assert!(report.contains("devnull=true"), "{report}");
    }

    #[test]
    fn errors_say_what_failed() {
        let unavailable = SandboxError::Unavailable {
            support: SandboxSupport::NotEnabled,
        };
        assert!(unavailable.is_unavailable());
        assert_eq!(
            unavailable.to_string(),
            "cannot confine the program: Landlock is built into this kernel but not enabled at boot"
        );
        assert_eq!(
            SandboxSupport::Available { abi: 7 }.to_string(),
            "Landlock ABI 7"
        );
        assert!(!SandboxSupport::Available { abi: 8 }.restricts_unix_connect());
        assert!(SandboxSupport::Available { abi: 9 }.restricts_unix_connect());
        assert_eq!(SandboxSupport::NotImplemented.abi(), None);
    }
}
