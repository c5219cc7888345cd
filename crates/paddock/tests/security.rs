//! Attacks on the owner's daemon, run the way an attacker would: as a second, ordinary local
//! user (`paddock-test`, through `setpriv`) or as a child process of Paddock itself. Each test
//! runs the attack and asserts that the defence held. Time bounds here are generous deadlines
//! that catch a hang, never speed assertions.
#![cfg(test)]

use std::io::{BufRead as _, BufReader, Read as _};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use paddock_testkit::{DaemonHarness, OtherUser, RawRequest, wait_until};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

/// A process that is killed and reaped when the test ends, however it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Reaped {
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

fn sleeper() -> Reaped {
    Reaped(
        Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap_or_else(|error| panic!("sleep: {error}")),
    )
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|error| panic!("chmod {}: {error}", path.display()));
}

/// The attacker's squatter: as `paddock-test`, creates `dir` world-writable (as a `/tmp`
/// squatter would), plants a lock file anybody may open, a PID record naming `victim_pid`, a
/// token file, and a listening socket that answers like a daemon and writes down everything it
/// hears in `dir/heard.log`.
struct Squatter {
    process: Reaped,
    heard: PathBuf,
}

const SQUATTER: &str = r#"
use strict; use IO::Socket::UNIX; use IO::Handle;
my ($dir, $stem, $victim) = @ARGV;
$SIG{PIPE} = "IGNORE";
mkdir $dir; chmod 0777, $dir;
sub plant { my ($name, $content, $mode) = @_;
  open(my $f, ">", "$dir/$name") or die "$name: $!"; print $f $content; close $f; chmod $mode, "$dir/$name"; }
plant("$stem.lock", "", 0666);
plant("$stem.pid", qq({"pid":$victim,"version":"0.1.0","http_port":1,"socket":"$dir/$stem.sock","started_at_unix_ms":0}\n), 0644);
plant("$stem.token", "planted-token\n", 0600);
unlink "$dir/$stem.sock";
my $server = IO::Socket::UNIX->new(Local => "$dir/$stem.sock", Listen => 16) or die "listen: $!";
chmod 0777, "$dir/$stem.sock";
open(my $log, ">>", "$dir/heard.log") or die "log: $!"; $log->autoflush(1);
$| = 1; print "ready\n";
while (my $client = $server->accept) {
  print $log "connection\n";
  print $client qq({"id":1,"result":{"pid":1,"version":"9.9.9","uptime_ms":1,"state":"ready","http_endpoint":"http://127.0.0.1:1/mcp","socket":"x"}}\n);
  my $rin = ""; vec($rin, fileno($client), 1) = 1;
  while (select(my $ready = $rin, undef, undef, 2)) {
    my $n = sysread($client, my $chunk, 65536); last unless $n; print $log $chunk;
  }
  close $client;
}
"#;

impl Squatter {
    fn plant(attacker: &OtherUser, dir: &Path, stem: &str, victim_pid: u32) -> Self {
        let mut child = attacker
            .command("perl")
            .arg("-e")
            .arg(SQUATTER)
            .arg(dir)
            .arg(stem)
            .arg(victim_pid.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| panic!("squatter: {error}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("stdout"));
        let process = Reaped(child);
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap_or_else(|error| panic!("squatter output: {error}"));
        assert_eq!(line.trim(), "ready", "the squatter did not start");
        assert_eq!(
            std::fs::metadata(dir).map(|m| m.uid()).ok(),
            Some(attacker.uid),
            "the squatter owns {}",
            dir.display()
        );
        Self {
            process,
            heard: dir.join("heard.log"),
        }
    }

    /// Everything the squatter heard; stops it first.
    fn heard(self) -> String {
        drop(self.process);
        std::fs::read_to_string(&self.heard).unwrap_or_default()
    }
}

/// A victim harness whose runtime files (or socket, with `aux`) live in a world-writable,
/// sticky directory that the attacker can reach, the way `/tmp` is.
fn victim_with_shared_dir() -> (DaemonHarness, PathBuf) {
    let mut harness = DaemonHarness::new(BIN).unwrap();
    // The harness root is the victim's; the attacker may pass through it, as through `/`.
    chmod(harness.root(), 0o711);
    let shared = harness.root().join("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o1777);
    harness.set_env("XDG_RUNTIME_DIR", &shared);
    (harness, shared)
}

fn assert_refused(output: &paddock_testkit::CommandOutput, named: &Path) {
    assert_ne!(output.code(), Some(0), "{output}");
    let stderr = output.stderr();
    assert!(
        stderr.contains(&named.display().to_string()) && stderr.contains("uid"),
        "the refusal names the planted path and its owner: {output}"
    );
    assert!(!output.stdout().contains("9.9.9"), "{output}");
}

#[test]
fn a_squatted_runtime_directory_is_refused_and_hears_nothing() {
    let attacker = OtherUser::get().unwrap();
    let (mut harness, shared) = victim_with_shared_dir();
    // Without an aux dir the socket and lock live in the runtime directory too.
    harness.remove_env("PADDOCK_AUX_SOCKET_DIR");
    let paths = harness.paths();
    assert_eq!(paths.runtime_dir, shared.join("paddock"));
    let bystander = sleeper();
    let squatter = Squatter::plant(&attacker, &paths.runtime_dir, "daemon", bystander.pid());

    let start = harness.run(["daemon", "start"]).unwrap();
    assert_refused(&start, &paths.runtime_dir);
    assert!(!start.stdout().contains("already running"), "{start}");
    let status = harness.run(["daemon", "status"]).unwrap();
    assert_refused(&status, &paths.runtime_dir);
    let redact = harness
        .run_with_stdin(
            ["pii", "redact", "--bot", "helper"],
            b"card 4111 1111 1111 1111 key sk-ant-api03-planted",
        )
        .unwrap();
    assert_refused(&redact, &paths.runtime_dir);
    assert!(!redact.stdout().contains("4111"), "{redact}");
    let stop = harness.run(["daemon", "stop", "--timeout", "1"]).unwrap();
    assert_refused(&stop, &paths.runtime_dir);
    let mcp = harness
        .run_with_stdin(
            ["mcp"],
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"victim","version":"1"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inputText","arguments":{"text":"hunter2-password"}}}
"#,
        )
        .unwrap();
    assert_ne!(mcp.code(), Some(0), "{mcp}");
    assert!(!mcp.stdout().contains("9.9.9"), "{mcp}");

    assert!(
        paddock_testkit::process_alive(bystander.pid()),
        "stop signalled the pid the planted record named"
    );
    let heard = squatter.heard();
    assert!(
        heard.is_empty(),
        "the squatter's socket heard from the victim: {heard:?}"
    );
}

#[test]
fn a_squatted_socket_directory_is_refused_and_hears_nothing() {
    let attacker = OtherUser::get().unwrap();
    let (mut harness, shared) = victim_with_shared_dir();
    // The runtime directory is the victim's own; the attacker owns the aux socket directory.
    let private = harness.root().join("run");
    harness.set_env("XDG_RUNTIME_DIR", &private);
    let aux = shared.join("aux");
    harness.set_env("PADDOCK_AUX_SOCKET_DIR", &aux);
    let paths = harness.paths();
    let stem = paths
        .socket
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap()
        .to_owned();
    let bystander = sleeper();
    let squatter = Squatter::plant(&attacker, &aux, &stem, bystander.pid());

    let start = harness.run(["daemon", "start"]).unwrap();
    assert_refused(&start, &aux);
    let redact = harness
        .run_with_stdin(["pii", "redact", "--bot", "helper"], b"4111 1111 1111 1111")
        .unwrap();
    assert_refused(&redact, &aux);
    let devices = harness.run(["devices"]).unwrap();
    assert_refused(&devices, &aux);
    let heard = squatter.heard();
    assert!(heard.is_empty(), "the squatter heard: {heard:?}");
    assert!(paddock_testkit::process_alive(bystander.pid()));
}

/// Holds the instance lock the way a live daemon does, so that `stop` must rely on the PID
/// record.
fn hold_lock(path: &Path) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .unwrap();
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    file
}

fn write_record(path: &Path, record: &serde_json::Value, mode: u32) {
    std::fs::write(path, record.to_string()).unwrap();
    chmod(path, mode);
}

#[test]
fn daemon_stop_signals_only_the_process_its_record_names() {
    let harness = DaemonHarness::new(BIN).unwrap();
    let paths = harness.paths();
    harness.ensure_runtime_dir().unwrap();
    let _lock = hold_lock(&paths.lock_file);
    let bystander = sleeper();
    // Read its facts once it runs `sleep` (on a loaded machine `/proc` can show the moment
    // before the exec).
    let facts = paddock_testkit::wait_until(Duration::from_secs(10), || {
        paddock_client::pid::ProcessFacts::read(bystander.pid())
            .ok()
            .filter(|facts| facts.cmdline.first().is_some_and(|arg| arg == "sleep"))
    })
    .unwrap();
    let record = |start_ticks: u64, cmdline: Vec<String>| {
        serde_json::json!({
            "pid": bystander.pid(),
            "version": "0.1.0",
            "socket": paths.socket,
            "started_at_unix_ms": 0,
            "start_ticks": start_ticks,
            "cmdline": cmdline,
        })
    };
    let daemon_cmdline: Vec<String> = ["paddock", "daemon", "start", "--foreground"]
        .map(str::to_owned)
        .to_vec();
    let cases = [
        // The pid was reused: another process started later under the same number.
        (
            record(facts.start_ticks + 1, facts.cmdline.clone()),
            0o600,
            "started at a different time",
        ),
        // Same start time, different program.
        (
            record(facts.start_ticks, daemon_cmdline.clone()),
            0o600,
            "different command line",
        ),
        // A record others may have written.
        (
            record(facts.start_ticks, facts.cmdline.clone()),
            0o644,
            "must be 0600",
        ),
    ];
    for (record, mode, reason) in cases {
        write_record(&paths.pid_file, &record, mode);
        let stop = harness.run(["daemon", "stop", "--timeout", "1"]).unwrap();
        assert_eq!(stop.code(), Some(1), "{stop}");
        assert!(stop.stderr().contains(reason), "{reason}: {stop}");
        assert!(
            paddock_testkit::process_alive(bystander.pid()),
            "stop signalled an unrelated process ({reason})"
        );
    }
}

/// The attacker's probe, run as a child: reports whether it could open another process's
/// `environ` and `mem` and prints what it read.
const PROBE: &str = r#"
target=${1:-$PPID}
if cat /proc/$target/environ > /tmp/probe.$$ 2>/dev/null; then echo "environ readable"; tr '\0' '\n' < /tmp/probe.$$; fi
rm -f /tmp/probe.$$
if (exec 3< /proc/$target/mem) 2>/dev/null; then echo "mem readable"; fi
echo "own: ${SECRET_KEY:-unset}"
"#;

fn probe(attacker: &OtherUser, target: u32) -> String {
    let output = attacker
        .command("sh")
        .arg("-c")
        .arg(PROBE)
        .arg("probe")
        .arg(target.to_string())
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_same_user_process_cannot_read_keys_or_tokens_from_paddock_processes() {
    let attacker = OtherUser::get().unwrap();
    let key = "sk-ant-api03-real-key-7e1d9c";

    // The probe works: it reads an ordinary process of the same user.
    let mut plain = attacker.command("sleep");
    plain.arg("600").env("SECRET_KEY", key);
    let plain = Reaped(plain.spawn().unwrap());
    let control = wait_until(Duration::from_secs(10), || {
        let seen = probe(&attacker, plain.pid());
        seen.contains(key).then_some(seen)
    })
    .unwrap();
    assert!(control.contains("environ readable") && control.contains("mem readable"));

    // A child of `credentials exec` probes its parent, which holds the real key.
    let harness = DaemonHarness::new_as(BIN, &attacker).unwrap();
    let exec = harness
        .command([
            "credentials",
            "exec",
            "--upstream",
            "http://127.0.0.1:9",
            "--key-from",
            "env:SECRET_KEY",
            "--header",
            "x-api-key",
            "--voucher-env",
            "SECRET_KEY",
            "--allow",
            "POST /v1/messages",
            "--",
            "sh",
            "-c",
            PROBE,
            "probe",
        ])
        .env("SECRET_KEY", key)
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&exec.stdout);
    assert!(exec.status.success(), "{exec:?}");
    assert!(
        seen.contains("own: vch_"),
        "the child holds a voucher: {seen}"
    );
    assert!(!seen.contains(key), "the child read the key: {seen}");
    assert!(
        !seen.contains("environ readable") && !seen.contains("mem readable"),
        "{seen}"
    );

    // The daemon, run as the same user, holds its token in memory: no same-user process reads
    // its environment or memory.
    harness.run(["daemon", "start"]).unwrap().success().unwrap();
    let status = harness
        .run(["daemon", "status", "--json"])
        .unwrap()
        .success()
        .unwrap();
    let status: serde_json::Value = serde_json::from_str(status.stdout().trim()).unwrap();
    let pid = u32::try_from(status["pid"].as_u64().unwrap()).unwrap();
    let seen = probe(&attacker, pid);
    assert!(seen.contains("own: unset"), "the probe ran: {seen}");
    assert!(
        !seen.contains("environ readable") && !seen.contains("mem readable"),
        "{seen}"
    );
}

/// An agent CLI that attacks its parent: reads `/proc/$PPID/environ` and tries `mem`, writing
/// what it found to `$PROBE_OUT`.
const FAKE_AGENT: &str = r#"#!/bin/sh
case "$1" in --version|-v) echo "2.1.70 (Claude Code)"; exit 0;; esac
{
  if cat /proc/$PPID/environ > /dev/null 2>&1; then echo "environ readable"; tr '\0' '\n' < /proc/$PPID/environ; fi
  if (exec 3< /proc/$PPID/mem) 2>/dev/null; then echo "mem readable"; fi
  echo "own: $ANTHROPIC_API_KEY"
} > "$PROBE_OUT" 2>&1
exit 3
"#;

#[test]
fn an_agent_cannot_read_the_key_from_paddock_agent() {
    let attacker = OtherUser::get().unwrap();
    let key = "sk-ant-api03-agent-test-4b2f";
    let harness = DaemonHarness::new_as(BIN, &attacker).unwrap();
    let bin = harness.root().join("agent-bin");
    std::fs::create_dir(&bin).unwrap();
    paddock_process::write_executable(&bin.join("claude"), FAKE_AGENT.as_bytes()).unwrap();
    chmod(&bin, 0o755);
    let out = harness.launch_dir().join("probe.out");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = harness
        .command([
            "agent",
            "run",
            "--backend",
            "claude",
            "--upstream",
            "http://127.0.0.1:9",
            "--pass-env",
            "PROBE_OUT",
            "hello",
        ])
        .env("PATH", path)
        .env("ANTHROPIC_API_KEY", key)
        .env("PROBE_OUT", &out)
        .output()
        .unwrap();
    let seen = std::fs::read_to_string(&out)
        .unwrap_or_else(|error| panic!("the fake agent never ran ({error}): {run:?}"));
    assert!(
        seen.contains("own: vch_"),
        "the agent holds a voucher: {seen}"
    );
    assert!(!seen.contains(key), "the agent read the real key: {seen}");
    assert!(
        !seen.contains("environ readable") && !seen.contains("mem readable"),
        "{seen}"
    );
}

/// The attacker's slowloris: `count` connections, each holding a half-sent request head and
/// adding a header line every second; connections the server closes are opened again.
const SLOWLORIS: &str = r#"
use strict; use IO::Socket::INET;
my ($port, $count, $seconds) = @ARGV;
$SIG{PIPE} = "IGNORE";
sub open_one {
  my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port, Proto => "tcp") or return undef;
  $s->autoflush(1); print $s "GET /heartbeat HTTP/1.1\r\nHost: 127.0.0.1:$port\r\n"; return $s;
}
my @socks = map { open_one() } 1..$count;
$| = 1; print "open ", scalar(grep { defined } @socks), "\n";
my $end = time + $seconds;
while (time < $end) {
  for my $i (0..$#socks) { if (!$socks[$i] || !print { $socks[$i] } "X-Slow: 1\r\n") { $socks[$i] = open_one(); } }
  sleep 1;
}
"#;

/// Raises this process's soft open-file limit to the hard one, so the attacker (our child) can
/// open its connections.
fn raise_own_nofile() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    )
    .unwrap();
}

#[test]
fn slow_connections_from_another_user_do_not_stop_the_daemon() {
    let attacker = OtherUser::get().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    let status = harness.start_detached(&[]).unwrap();
    let port = paddock_testkit::http_port(&status).unwrap();
    let token = harness.token().unwrap();
    // A machine with the common 1024-descriptor limit: without a connection cap, 1,100 held
    // connections exhaust the daemon's descriptors.
    let limited = Command::new("prlimit")
        .arg(format!("--pid={}", status.pid))
        .arg("--nofile=1024:1024")
        .status()
        .unwrap();
    assert!(limited.success());
    let log = harness.paths().state_dir.join("logs/daemon.log");
    let log_before = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);

    raise_own_nofile();
    let mut attack = attacker.command("perl");
    attack
        .args(["-e", SLOWLORIS, &port.to_string(), "1100", "20"])
        .stdout(Stdio::piped());
    let mut attack = Reaped(attack.spawn().unwrap());
    let mut opened = String::new();
    BufReader::new(attack.0.stdout.take().unwrap())
        .read_line(&mut opened)
        .unwrap();
    let opened: usize = opened
        .trim()
        .strip_prefix("open ")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        opened >= 1000,
        "the attacker opened only {opened} connections"
    );

    // While the attack goes on, the owner's requests and commands are answered.
    let until = Instant::now() + Duration::from_secs(12);
    let mut answered = 0;
    while Instant::now() < until {
        // A generous deadline that catches a daemon starved by the attack, not a speed goal.
        let response = RawRequest::get("/heartbeat")
            .bearer(&token)
            .send_with_timeout(port, Duration::from_secs(5))
            .unwrap_or_else(|error| panic!("/heartbeat did not answer under attack: {error}"));
        assert_eq!(response.status, 200);
        harness
            .run(["daemon", "status"])
            .unwrap()
            .success()
            .unwrap();
        answered += 1;
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(answered > 5);
    drop(attack);
    let log_after = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    assert!(
        log_after.saturating_sub(log_before) < 10 * 1024 * 1024,
        "the log grew by {} bytes",
        log_after - log_before
    );
}

/// Every regular file under `root` is 0600, every directory 0700, every socket 0600.
fn loose_entries(root: &Path, found: &mut Vec<String>) {
    // A directory removed during the walk (a launch that just closed) has nothing to check;
    // one that cannot be read would hide what it holds, so it fails the test.
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
        Err(error) => panic!("could not read `{}`: {error}", root.display()),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(metadata) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let mode = metadata.mode() & 0o7777;
        let file_type = metadata.file_type();
        let expected = if file_type.is_dir() { 0o700 } else { 0o600 };
        if file_type.is_symlink() {
            found.push(format!("{} is a symlink", path.display()));
        } else if mode != expected {
            found.push(format!("{} {mode:04o}", path.display()));
        }
        if file_type.is_dir() {
            loose_entries(&path, found);
        }
    }
}

#[test]
fn every_file_the_daemon_creates_is_private() {
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&[]).unwrap();
    // Activity that writes: the database (WAL and shared memory), the PII store, the log.
    let plugin = harness.launch_dir().join("plugin.js");
    std::fs::write(
        &plugin,
        "export default (text) => ({ text, triggered: false });",
    )
    .unwrap();
    harness
        .run([
            "pii",
            "add",
            "--bot",
            "helper",
            "--file",
            plugin.to_str().unwrap(),
            "--description",
            "noop",
        ])
        .unwrap()
        .success()
        .unwrap();
    let mcp = paddock_testkit::McpHttp::for_harness(&harness).unwrap();
    mcp.with_session("private-files")
        .call(
            "setToolEnabled",
            serde_json::json!({"toolName": "observe", "enabled": true}),
        )
        .unwrap();
    let paths = harness.paths();
    assert!(paths.state_dir.join("paddock.db").exists());
    let mut found = Vec::new();
    for dir in [&paths.state_dir, &paths.runtime_dir, &paths.socket_dir] {
        let mode = std::fs::metadata(dir).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o700, "{}", dir.display());
        loose_entries(dir, &mut found);
    }
    assert!(found.is_empty(), "not private: {found:#?}");
    // Read the files once more after the daemon stopped (the WAL is checkpointed then).
    harness.run(["daemon", "stop"]).unwrap().success().unwrap();
    let mut found = Vec::new();
    loose_entries(&paths.state_dir, &mut found);
    assert!(found.is_empty(), "not private after stop: {found:#?}");
    let mut read = String::new();
    std::fs::File::open(paths.state_dir.join("logs/daemon.log"))
        .unwrap()
        .read_to_string(&mut read)
        .unwrap();
    assert!(read.contains("ready"));
}

#[test]
fn a_token_file_override_in_a_shared_directory_is_refused() {
    let (mut harness, shared) = victim_with_shared_dir();
    // `/tmp`-like: anybody could plant or replace the token file there.
    let token = shared.join("paddock.token");
    harness.set_env("PADDOCK_DAEMON_TOKEN_FILE_PATH", &token);
    let start = harness.run(["daemon", "start"]).unwrap();
    assert_eq!(start.code(), Some(1), "{start}");
    assert!(
        start.stderr().contains(&shared.display().to_string())
            && start.stderr().contains("mode 1777"),
        "{start}"
    );
    assert!(!token.exists());
}
