//! A private PostgreSQL cluster for a test: Debian's `postgresql` package (`initdb` and `pg_ctl`
//! under `/usr/lib/postgresql/<version>/bin`), a data directory in a temp dir, a free loopback
//! port and a unix socket directory inside the temp dir. PostgreSQL refuses to run as root, so
//! a test running as root (CI does) runs the cluster as [`OtherUser`]. Without the package the
//! test fails with how to install it — it never skips. Drop stops the cluster.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context as _, bail};

use crate::OtherUser;

/// The cluster's superuser (trust authentication on loopback and the socket).
pub const SUPERUSER: &str = "paddock";
/// The database `PgCluster::start` creates.
pub const DATABASE: &str = "paddock_test";

/// A running private cluster.
#[derive(Debug)]
pub struct PgCluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// The account the cluster runs as, when the test runs as root.
    user: Option<OtherUser>,
    /// With TLS: the CA's PEM file that signed the server's certificate.
    ca_pem: Option<PathBuf>,
    running: bool,
}

/// The newest installed `/usr/lib/postgresql/<version>/bin` holding `initdb`.
pub fn find_bin_dir() -> anyhow::Result<PathBuf> {
    let root = Path::new("/usr/lib/postgresql");
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry
                .file_name()
                .to_str()?
                .split('.')
                .next()?
                .parse()
                .ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => Ok(bin),
        None => bail!(
            "PostgreSQL is not installed (no `{}/<version>/bin/initdb`); the PostgreSQL store tests need a private cluster\nhint: run `scripts/setup --dev`, which installs Debian's `postgresql` package",
            root.display()
        ),
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl PgCluster {
    /// `initdb`, `pg_ctl start` on a free loopback port, and `createdb` [`DATABASE`].
    pub fn start() -> anyhow::Result<Self> {
        Self::start_with(false)
    }

    /// [`Self::start`] with TLS on (`ssl=on`), its certificate for `127.0.0.1` and `localhost`
    /// signed by a CA made now ([`Self::ca_pem`]).
    pub fn start_tls() -> anyhow::Result<Self> {
        Self::start_with(true)
    }

    fn start_with(tls: bool) -> anyhow::Result<Self> {
        let bin = find_bin_dir()?;
        let user = if rustix::process::geteuid().is_root() {
            Some(OtherUser::get().context(
                "PostgreSQL refuses to run as root, so the cluster runs as the test user",
            )?)
        } else {
            None
        };
        let dir = tempfile::Builder::new().prefix("paddock-pg-").tempdir()?;
        if let Some(user) = &user {
            user.chown(dir.path(), false)?;
        }
        let mut cluster = Self {
            bin,
            dir,
            port: 0,
            user,
            ca_pem: None,
            running: false,
        };
        if tls {
            cluster.write_certificates()?;
        }
        let data = cluster.data_dir();
        cluster.run_checked(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                SUPERUSER.as_ref(),
                "--auth=trust".as_ref(),
                "--no-sync".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--locale=C".as_ref(),
            ],
        )?;
        // A free port can be taken between the probe and the start: try a few.
        let mut last_error = None;
        for _ in 0..3 {
            cluster.port = free_port()?;
            match cluster.pg_ctl_start() {
                Ok(()) => {
                    cluster.running = true;
                    last_error = None;
                    break;
                }
                Err(error) => last_error = Some(error),
            }
        }
        if let Some(error) = last_error {
            return Err(error);
        }
        cluster.create_database(DATABASE)?;
        Ok(cluster)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The directory holding the cluster's unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    fn log_file(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// A CA and a server certificate signed by it, the key 0600 and the cluster's own.
    fn write_certificates(&mut self) -> anyhow::Result<()> {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.distinguished_name.push(
            DnType::CommonName,
            format!("Paddock test PostgreSQL CA {}", std::process::id()),
        );
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        let key = KeyPair::generate()?;
        let leaf = params.signed_by(&key, &ca)?;
        let dir = self.dir.path();
        let ca_pem = dir.join("ca.pem");
        std::fs::write(&ca_pem, ca.pem())?;
        std::fs::write(dir.join("server.crt"), leaf.pem())?;
        let key_file = dir.join("server.key");
        std::fs::write(&key_file, key.serialize_pem())?;
        std::fs::set_permissions(
            &key_file,
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )?;
        if let Some(user) = &self.user {
            user.chown(&dir.join("server.crt"), false)?;
            user.chown(&key_file, false)?;
        }
        self.ca_pem = Some(ca_pem);
        Ok(())
    }

    /// With [`Self::start_tls`]: the PEM file of the CA that signed the server's certificate.
    pub fn ca_pem(&self) -> Option<&Path> {
        self.ca_pem.as_deref()
    }

    fn pg_ctl_start(&self) -> anyhow::Result<()> {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            self.port,
            self.socket_dir().display()
        );
        if self.ca_pem.is_some() {
            let dir = self.dir.path().display();
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={dir}/server.crt -c ssl_key_file={dir}/server.key"
            ));
        }
        let data = self.data_dir();
        let log = self.log_file();
        self.run_checked(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-o".as_ref(),
                options.as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "start".as_ref(),
            ],
        )
        .with_context(|| {
            format!(
                "server log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        })?;
        Ok(())
    }

    /// `program args…` from the cluster's bin dir, as the cluster's account.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = match &self.user {
            Some(user) => user.command(&path),
            None => {
                let mut command = Command::new(&path);
                for (name, _) in std::env::vars_os() {
                    if name.to_string_lossy().starts_with("PG") {
                        command.env_remove(name);
                    }
                }
                command
            }
        };
        command.current_dir(self.dir.path());
        command
    }

    fn run_checked(&self, program: &str, args: &[&std::ffi::OsStr]) -> anyhow::Result<Output> {
        let output = self
            .command(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .with_context(|| format!("running `{}`", self.bin.join(program).display()))?;
        if !output.status.success() {
            bail!(
                "`{program}` failed ({}):\nstdout: {}\nstderr: {}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(output)
    }

    /// Creates database `name` (letters, digits and `_`) and returns its URL.
    pub fn create_database(&self, name: &str) -> anyhow::Result<String> {
        let port = self.port.to_string();
        self.run_checked(
            "createdb",
            &[
                "-h".as_ref(),
                "127.0.0.1".as_ref(),
                "-p".as_ref(),
                port.as_ref(),
                "-U".as_ref(),
                SUPERUSER.as_ref(),
                name.as_ref(),
            ],
        )?;
        Ok(self.url_of(name))
    }

    /// The loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://paddock@127.0.0.1:PORT/paddock_test`.
    pub fn url(&self) -> String {
        self.url_of(DATABASE)
    }

    /// The URL of database `name` on this cluster.
    pub fn url_of(&self, name: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{name}", self.port)
    }

    /// Stops the cluster now (Drop does too).
    pub fn stop(&mut self) -> anyhow::Result<()> {
        if !self.running {
            return Ok(());
        }
        self.running = false;
        let data = self.data_dir();
        self.run_checked(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        )?;
        Ok(())
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        if let Err(error) = self.stop() {
            eprintln!("stopping the test's PostgreSQL cluster: {error:#}");
        }
    }
}
