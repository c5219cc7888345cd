//! The second local user that security tests play the attacker with: `paddock-test`, an
//! ordinary account with a home directory that `scripts/setup --dev` creates. Tests run as root
//! (CI does) and drop to it with `setpriv`; without root or without the account a test that
//! needs it fails with a message saying how to set it up — it never passes silently.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The account's name.
pub const NAME: &str = "paddock-test";

/// The `paddock-test` account.
#[derive(Debug, Clone)]
pub struct OtherUser {
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

impl OtherUser {
    /// Looks the account up; fails (with how to fix it) when the tests do not run as root or
    /// the account does not exist.
    pub fn get() -> anyhow::Result<Self> {
        if !rustix::process::geteuid().is_root() {
            bail!(
                "this test plays another local user and must run as root so it can drop to `{NAME}` with setpriv (CI runs as root)\nhint: run `sudo scripts/setup --dev`, then the tests as root"
            );
        }
        let passwd = std::fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
        let line = passwd
            .lines()
            .find(|line| line.split(':').next() == Some(NAME))
            .with_context(|| {
                format!("the test user `{NAME}` does not exist\nhint: run `scripts/setup --dev` (as root), which creates it with `useradd --create-home`")
            })?;
        let fields: Vec<&str> = line.split(':').collect();
        let field = |index: usize| fields.get(index).copied().unwrap_or_default();
        let user = Self {
            uid: field(2).parse().context("uid of the test user")?,
            gid: field(3).parse().context("gid of the test user")?,
            home: PathBuf::from(field(5)),
        };
        if !user.home.is_dir() {
            bail!(
                "the test user `{NAME}` has no home directory `{}`\nhint: recreate it with `userdel {NAME}; scripts/setup --dev`",
                user.home.display()
            );
        }
        Ok(user)
    }

    /// `program args…` run as this user through `setpriv`, with a clean environment holding
    /// only PATH, HOME, USER and LANG (add more with `.env`).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("setpriv");
        command
            .arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .arg("--clear-groups")
            .arg("--")
            .arg(program)
            .env_clear()
            .env("HOME", &self.home)
            .env("USER", NAME)
            .env("LANG", "C.UTF-8")
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            );
        command
    }

    /// Hands `path` (and, with `recursive`, everything below it) to this user.
    pub fn chown(&self, path: &Path, recursive: bool) -> anyhow::Result<()> {
        let uid = Some(rustix::process::Uid::from_raw(self.uid));
        let gid = Some(rustix::process::Gid::from_raw(self.gid));
        rustix::fs::chown(path, uid, gid).with_context(|| format!("chown {}", path.display()))?;
        if recursive && path.is_dir() {
            for entry in std::fs::read_dir(path)? {
                self.chown(&entry?.path(), true)?;
            }
        }
        Ok(())
    }
}
