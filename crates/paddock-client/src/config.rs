//! Paddock's config file, and the one rule that picks an agent launch's model upstream and key
//! from command-line flags, the environment and that file.
//!
//! The CLI (`paddock agent`) and the daemon both call [`resolve_upstream`], so a launch reaches
//! the same model API with the same key whichever of them starts it. Resolution is pure: it
//! reads a [`ClientEnv`] and a loaded [`PaddockConfig`], never the process environment, and
//! never the key itself — it returns where the key is (`env:NAME`, `file:PATH`,
//! `keychain:SERVICE`), for `paddock-credentials` to read.
//!
//! # The file
//!
//! `$PADDOCK_CONFIG` if set (relative to the launch directory), else
//! `$XDG_CONFIG_HOME/paddock/config.toml`, else `$HOME/.config/paddock/config.toml`. A missing
//! file is an empty config. Every key is optional, and an unknown one is an error, so a typo
//! is reported (with its line and column) instead of ignored:
//!
//! ```toml
//! [agents]
//! sandbox = "landlock"      # or "off"; default: landlock where the kernel supports it
//! idle_stop_secs = 600      # stop an agent session idle this long
//! stall_after_secs = 600    # end a turn that sends no event this long
//! sandbox_exec = ["~/.cargo", "~/.rustup"]  # widen the sandbox: read+execute (also
//!                           # sandbox_read, sandbox_write)
//!
//! [upstreams.anthropic]     # Anthropic Messages (claude, pi)
//! url = "https://api.anthropic.com"
//! key = "file:~/.config/paddock/anthropic.key"  # env:NAME | file:PATH | keychain:SERVICE
//! header = "x-api-key"      # optional: the header the key travels in
//! scheme = "Bearer"         # optional: a word before the key, e.g. with header = "authorization"
//!
//! [upstreams.openai]        # OpenAI Responses (codex); Chat Completions too unless below
//! url = "https://api.openai.com"
//! key = "env:OPENAI_API_KEY"
//!
//! [upstreams.openai-chat]   # Chat Completions (opencode)
//! url = "http://127.0.0.1:4000"
//! key = "keychain:paddock-gateway"
//! ```
//!
//! In `file:` keys, a leading `~/` expands to `HOME` and a relative path is relative to the
//! config file's directory. A Chat Completions launch uses `[upstreams.openai-chat]` when the
//! file has that section and `[upstreams.openai]` otherwise (the whole section, never a mix:
//! a key configured for one host is never sent to another).
//!
//! # Precedence
//!
//! The URL: the flag; `PADDOCK_ANTHROPIC_UPSTREAM`, or for OpenAI's APIs
//! `PADDOCK_OPENAI_UPSTREAM` (for Chat Completions `PADDOCK_OPENAI_CHAT_UPSTREAM` first); the
//! file's `url`; the vendor's own `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL`; the vendor's public
//! endpoint. OpenAI URLs may end in `/v1`, as `OPENAI_BASE_URL` usually does: the agents'
//! clients add `/v1` themselves, so it is dropped (the resolved URL is the one the proxy
//! appends request paths such as `/v1/responses` to).
//!
//! The key: the flag; the file's `key`; then the vendor's variable — `ANTHROPIC_API_KEY` (sent
//! as `x-api-key`), else `ANTHROPIC_AUTH_TOKEN` (`authorization: Bearer`); `OPENAI_API_KEY`
//! (`authorization: Bearer`). The file's `header` and `scheme`, when set, say how any key
//! travels to that upstream.
//!
//! Two refusals keep an agent session from feeding Paddock its own credentials. A variable that
//! holds a voucher (`vch_…`) is never a key: the environment is inside an agent session. And
//! an upstream is never Paddock's own proxy: a vendor base URL on `PADDOCK_PROXY_URL`'s origin,
//! or on loopback `http` while the vendor's key variable holds a voucher, is skipped; a flag,
//! `PADDOCK_*` variable or file naming the proxy is an error.

use std::fmt;
use std::io::Read as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::env::ClientEnv;
use crate::paths::normalize;

/// Overrides where the config file is.
pub const CONFIG_VAR: &str = "PADDOCK_CONFIG";
/// Set inside an agent session: the credential proxy the session's calls go through.
pub const PROXY_URL_VAR: &str = "PADDOCK_PROXY_URL";
/// The Anthropic Messages upstream, ahead of the file.
pub const ANTHROPIC_UPSTREAM_VAR: &str = "PADDOCK_ANTHROPIC_UPSTREAM";
/// The upstream for both OpenAI APIs, ahead of the file.
pub const OPENAI_UPSTREAM_VAR: &str = "PADDOCK_OPENAI_UPSTREAM";
/// The Chat Completions upstream, ahead of [`OPENAI_UPSTREAM_VAR`].
pub const OPENAI_CHAT_UPSTREAM_VAR: &str = "PADDOCK_OPENAI_CHAT_UPSTREAM";

/// What every voucher starts with (the broker's default prefix).
const VOUCHER_PREFIX: &str = "vch_";
/// The largest config file read: a real one is a few hundred bytes, and `PADDOCK_CONFIG`
/// pointing at `/dev/zero` must not fill memory.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The wire API an agent's CLI speaks to its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelApiKind {
    AnthropicMessages,
    OpenAiResponses,
    OpenAiChat,
}

impl ModelApiKind {
    /// How people name the API, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Self::AnthropicMessages => "Anthropic Messages API",
            Self::OpenAiResponses => "OpenAI Responses API",
            Self::OpenAiChat => "OpenAI Chat Completions API",
        }
    }

    /// The config file section for this API: `upstreams.<name>`.
    pub fn section(self) -> &'static str {
        match self {
            Self::AnthropicMessages => "anthropic",
            Self::OpenAiResponses => "openai",
            Self::OpenAiChat => "openai-chat",
        }
    }

    fn vendor(self) -> &'static Vendor {
        match self {
            Self::AnthropicMessages => &ANTHROPIC,
            Self::OpenAiResponses | Self::OpenAiChat => &OPENAI,
        }
    }

    /// The `PADDOCK_*` variables that name this API's upstream, first match wins.
    fn paddock_vars(self) -> &'static [&'static str] {
        match self {
            Self::AnthropicMessages => &[ANTHROPIC_UPSTREAM_VAR],
            Self::OpenAiResponses => &[OPENAI_UPSTREAM_VAR],
            Self::OpenAiChat => &[OPENAI_CHAT_UPSTREAM_VAR, OPENAI_UPSTREAM_VAR],
        }
    }
}

/// How one vendor's own tools find its API.
struct Vendor {
    base_url_var: &'static str,
    default_url: &'static str,
    /// Trailing path the vendor's clients add themselves, dropped from a configured URL.
    client_base_path: Option<&'static str>,
    /// The key variables in the order they are tried, each with how its key travels.
    keys: &'static [VendorKey],
    /// How a key from a flag or the file travels when the file says nothing.
    style: KeyStyle,
}

struct VendorKey {
    var: &'static str,
    style: KeyStyle,
}

#[derive(Clone, Copy)]
struct KeyStyle {
    header: &'static str,
    scheme: Option<&'static str>,
}

const X_API_KEY: KeyStyle = KeyStyle {
    header: "x-api-key",
    scheme: None,
};
const BEARER: KeyStyle = KeyStyle {
    header: "authorization",
    scheme: Some("Bearer"),
};

static ANTHROPIC: Vendor = Vendor {
    base_url_var: "ANTHROPIC_BASE_URL",
    default_url: "https://api.anthropic.com",
    client_base_path: None,
    keys: &[
        VendorKey {
            var: "ANTHROPIC_API_KEY",
            style: X_API_KEY,
        },
        VendorKey {
            var: "ANTHROPIC_AUTH_TOKEN",
            style: BEARER,
        },
    ],
    style: X_API_KEY,
};

static OPENAI: Vendor = Vendor {
    base_url_var: "OPENAI_BASE_URL",
    default_url: "https://api.openai.com",
    client_base_path: Some("/v1"),
    keys: &[VendorKey {
        var: "OPENAI_API_KEY",
        style: BEARER,
    }],
    style: BEARER,
};

/// The config file, loaded and checked. Built by [`PaddockConfig::load`] or
/// [`PaddockConfig::parse`]; `Default` is the empty config with no file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PaddockConfig {
    /// Where the file is, or would be: hints name it even when it does not exist. `None` when
    /// no location could be worked out (no `PADDOCK_CONFIG`, `XDG_CONFIG_HOME` or `HOME`).
    pub path: Option<PathBuf>,
    pub agents: AgentsConfig,
    pub upstreams: UpstreamsConfig,
}

/// `[agents]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentsConfig {
    /// `sandbox`; `None` means the default, Landlock where the kernel supports it.
    pub sandbox: Option<SandboxMode>,
    /// `idle_stop_secs` (at least 1); `None` leaves the choice to the daemon.
    pub idle_stop: Option<Duration>,
    /// `stall_after_secs` (at least 1): a turn with no event for this long is ended.
    pub stall_after: Option<Duration>,
    /// `sandbox_read`, `sandbox_exec`, `sandbox_write`: more paths every sandboxed launch may
    /// read, read and execute, or read and write (`~/` is `HOME`).
    pub sandbox_read: Vec<PathBuf>,
    pub sandbox_exec: Vec<PathBuf>,
    pub sandbox_write: Vec<PathBuf>,
}

/// How agent processes are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    Landlock,
    Off,
}

/// `[upstreams.*]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamsConfig {
    pub anthropic: Option<UpstreamConfig>,
    pub openai: Option<UpstreamConfig>,
    pub openai_chat: Option<UpstreamConfig>,
}

/// One `[upstreams.<api>]` section, every value already checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamConfig {
    /// An `http` or `https` URL with a host and no user information, query or fragment.
    pub url: Option<String>,
    /// A key source (`env:NAME`, `file:PATH`, `keychain:SERVICE`); a `file:` path is absolute,
    /// with `~` already expanded.
    pub key: Option<String>,
    /// A header name, lowercase.
    pub header: Option<String>,
    /// One alphanumeric word such as `Bearer`.
    pub scheme: Option<String>,
}

impl PaddockConfig {
    /// Finds the config file through `env` (see [`config_path`]) and loads it; no file is an
    /// empty config.
    pub fn load(env: &ClientEnv) -> Result<Self, ConfigError> {
        match config_path(env) {
            Some(path) => Self::load_from(&path, env),
            None => Ok(Self::default()),
        }
    }

    /// Loads the file at `path`; a missing file is an empty config that remembers `path`.
    pub fn load_from(path: &Path, env: &ClientEnv) -> Result<Self, ConfigError> {
        let unreadable = |source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    path: Some(path.to_path_buf()),
                    ..Self::default()
                });
            }
            Err(error) => return Err(unreadable(error)),
        };
        let mut bytes = Vec::new();
        file.take(MAX_CONFIG_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
        if bytes.len() as u64 > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge {
                path: path.to_path_buf(),
            });
        }
        let text = String::from_utf8(bytes).map_err(|error| {
            let valid = error.utf8_error().valid_up_to();
            let bytes = error.as_bytes();
            let before = String::from_utf8_lossy(bytes.get(..valid).unwrap_or_default());
            ConfigError::Invalid {
                path: path.to_path_buf(),
                location: Some(Location::of(&before, before.len())),
                message: "the file is not valid UTF-8".to_owned(),
            }
        })?;
        Self::parse(&text, path, env)
    }

    /// Parses and checks `text` as the file at `path` (used for error messages and to resolve
    /// relative `file:` keys). `env` supplies `HOME` for `~`.
    pub fn parse(text: &str, path: &Path, env: &ClientEnv) -> Result<Self, ConfigError> {
        let invalid =
            |span: Option<std::ops::Range<usize>>, message: String| ConfigError::Invalid {
                path: path.to_path_buf(),
                location: span.map(|span| Location::of(text, span.start)),
                message,
            };
        // The message alone, never toml's rendering: that quotes the offending line, which
        // could hold a password in a URL or a key pasted in by mistake.
        let raw: RawConfig =
            toml::from_str(text).map_err(|error| invalid(error.span(), error.message().into()))?;
        let config_dir = env.absolute(path.parent().unwrap_or(Path::new("")));
        let context = ParseContext {
            env,
            config_dir: &config_dir,
        };
        let check = |section: Option<RawUpstream>| {
            section
                .map(|section| context.upstream(section))
                .transpose()
                .map_err(|(span, message)| invalid(Some(span), message))
        };
        let raw_upstreams = raw.upstreams.unwrap_or_default();
        let upstreams = UpstreamsConfig {
            anthropic: check(raw_upstreams.anthropic)?,
            openai: check(raw_upstreams.openai)?,
            openai_chat: check(raw_upstreams.openai_chat)?,
        };
        let raw_agents = raw.agents.unwrap_or_default();
        let seconds = |value: Option<Spanned<u64>>, name: &str| match value {
            Some(secs) if *secs.get_ref() == 0 => Err(invalid(
                Some(secs.span()),
                format!("`{name}` must be at least 1; leave it out for the default"),
            )),
            Some(secs) => Ok(Some(Duration::from_secs(secs.into_inner()))),
            None => Ok(None),
        };
        let idle_stop = seconds(raw_agents.idle_stop_secs, "idle_stop_secs")?;
        let stall_after = seconds(raw_agents.stall_after_secs, "stall_after_secs")?;
        Ok(Self {
            path: Some(path.to_path_buf()),
            agents: AgentsConfig {
                sandbox: raw_agents.sandbox.map(|mode| match mode {
                    RawSandbox::Landlock => SandboxMode::Landlock,
                    RawSandbox::Off => SandboxMode::Off,
                }),
                idle_stop,
                stall_after,
                sandbox_read: sandbox_paths(raw_agents.sandbox_read, env),
                sandbox_exec: sandbox_paths(raw_agents.sandbox_exec, env),
                sandbox_write: sandbox_paths(raw_agents.sandbox_write, env),
            },
            upstreams,
        })
    }

    /// The section a launch on `api` reads: Chat Completions falls back to `[upstreams.openai]`
    /// as a whole when the file has no `[upstreams.openai-chat]`.
    pub fn upstream(&self, api: ModelApiKind) -> Option<&UpstreamConfig> {
        match api {
            ModelApiKind::AnthropicMessages => self.upstreams.anthropic.as_ref(),
            ModelApiKind::OpenAiResponses => self.upstreams.openai.as_ref(),
            ModelApiKind::OpenAiChat => self
                .upstreams
                .openai_chat
                .as_ref()
                .or(self.upstreams.openai.as_ref()),
        }
    }

    fn origin(&self) -> Origin {
        Origin::ConfigFile(self.path.clone().unwrap_or_default())
    }
}

/// Where the config file is: `PADDOCK_CONFIG` (relative to the launch directory), else
/// `$XDG_CONFIG_HOME/paddock/config.toml`, else `$HOME/.config/paddock/config.toml`; `None`
/// when none of them is set.
pub fn config_path(env: &ClientEnv) -> Option<PathBuf> {
    if let Some(path) = env.var(CONFIG_VAR) {
        return Some(normalize(&env.absolute(Path::new(path))));
    }
    if let Some(dir) = env.var("XDG_CONFIG_HOME") {
        return Some(normalize(&env.absolute(Path::new(dir))).join("paddock/config.toml"));
    }
    env.var("HOME")
        .map(|home| PathBuf::from(home).join(".config/paddock/config.toml"))
}

/// A line and column in the config file, both from 1; the column counts characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// Where byte `offset` of `text` is.
    fn of(text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        Self {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// What one launch asks for: its API, and the command line's `--upstream` and `--key-from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamRequest<'a> {
    pub api: ModelApiKind,
    pub flag_url: Option<&'a str>,
    pub flag_key: Option<&'a str>,
}

/// The upstream a launch's credential proxy forwards to, and the key it swaps in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedUpstream {
    /// The URL the proxy appends the agent's request paths (`/v1/messages`, …) to.
    pub url: String,
    pub url_from: Origin,
    /// Where the key is, as a key source: `env:NAME`, `file:PATH` (absolute) or
    /// `keychain:SERVICE`. Never the key itself.
    pub key: String,
    pub key_from: Origin,
    /// The header the key travels in, lowercase.
    pub header: String,
    /// A word sent before the key in that header, such as `Bearer`.
    pub scheme: Option<String>,
    /// Sources passed over on the way, for a warning or a debug log.
    pub skipped: Vec<Skipped>,
}

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--upstream` or `--key-from`.
    Flag,
    /// A `PADDOCK_*` variable.
    PaddockEnv(&'static str),
    ConfigFile(PathBuf),
    /// The vendor's own variable (`ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`, …).
    VendorEnv(&'static str),
    /// The vendor's public endpoint.
    VendorDefault,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flag => f.write_str("the command line"),
            Self::PaddockEnv(name) | Self::VendorEnv(name) => {
                write!(f, "environment variable `{name}`")
            }
            Self::ConfigFile(path) => write!(f, "config file `{}`", path.display()),
            Self::VendorDefault => f.write_str("the vendor's default"),
        }
    }
}

/// A source [`resolve_upstream`] passed over rather than adopt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skipped {
    /// A vendor base-URL variable on the origin of `PADDOCK_PROXY_URL`.
    OwnProxy { var: &'static str },
    /// A vendor base-URL variable on loopback `http` while the vendor's key variable holds a
    /// voucher: the URL of the session's proxy, not a model API.
    SessionProxy { var: &'static str },
    /// A vendor key variable that holds a voucher.
    Voucher { var: &'static str },
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OwnProxy { var } => write!(
                f,
                "ignored `{var}`: it points at Paddock's own proxy (`{PROXY_URL_VAR}`)"
            ),
            Self::SessionProxy { var } => write!(
                f,
                "ignored `{var}`: a loopback http URL beside a Paddock voucher is an agent session's proxy"
            ),
            Self::Voucher { var } => {
                write!(f, "ignored `{var}`: it holds a Paddock voucher, not a key")
            }
        }
    }
}

/// What is wrong with an upstream URL. No variant carries the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlProblem {
    NotUnicode,
    NotAUrl,
    Scheme,
    NoHost,
    UserInfo,
    QueryOrFragment,
}

impl fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotUnicode => "it is not valid UTF-8",
            Self::NotAUrl => "it is not a URL",
            Self::Scheme => "it must start with `https://` (or `http://` for a local gateway)",
            Self::NoHost => "it has no host",
            Self::UserInfo => {
                "it holds user information (`user:password@`); credentials go in the key, never in the URL"
            }
            Self::QueryOrFragment => {
                "it may not have a query or fragment; the agent's own query is passed through"
            }
        })
    }
}

/// What is wrong with a key source. No variant carries the text: a key pasted where its source
/// belongs must not end up in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyProblem {
    /// Not `env:NAME`, `file:PATH` or `keychain:SERVICE`.
    NotASource,
    /// `~user/…`: only `~/` expands.
    TildeUser,
    /// `~` with no (UTF-8) `HOME` to expand it to.
    NoHome,
    /// A relative `file:` path under a directory whose name is not UTF-8.
    NotUnicode,
}

impl fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotASource => {
                "it is not `env:NAME`, `file:PATH` or `keychain:SERVICE` (a key itself never goes here)"
            }
            Self::TildeUser => "only `~/` expands (to `HOME`), not `~user`",
            Self::NoHome => "`~` expands to `HOME`, which is not set (or not UTF-8)",
            Self::NotUnicode => "the file's absolute path is not valid UTF-8",
        })
    }
}

/// Why no key was found among the vendor's variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MissingKey {
    /// None of the variables is set.
    NotSet(Vec<&'static str>),
    /// This one holds a voucher, and no other is set.
    Voucher(&'static str),
}

impl fmt::Display for MissingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSet(names) => {
                let names: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
                let verb = if names.len() == 1 { "is" } else { "are" };
                write!(f, "{} {verb} not set", names.join(" and "))
            }
            Self::Voucher(name) => write!(
                f,
                "`{name}` holds a Paddock voucher (`{VOUCHER_PREFIX}…`), not a key: this environment is inside a Paddock agent session"
            ),
        }
    }
}

/// Why the config file could not be used or no upstream resolved. Messages name values in
/// backticks and end with a `hint:` line where there is an obvious next step; none carries a
/// key, a voucher or a password.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("could not read config file `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config file `{}` is larger than 1 MiB; it should hold only settings", path.display())]
    TooLarge { path: PathBuf },
    /// Bad TOML, an unknown key, or a value that fails its check.
    #[error("invalid config file `{}`{}: {message}", path.display(), AtLocation(*location))]
    Invalid {
        path: PathBuf,
        location: Option<Location>,
        message: String,
    },
    #[error(
        "invalid upstream URL `{url}` from {from}: {problem}\nhint: use the model API's `https://` URL, such as `https://api.anthropic.com`, or `http://` for a gateway on this machine"
    )]
    InvalidUrl {
        /// The URL with any user information replaced by `***`.
        url: String,
        from: Origin,
        problem: UrlProblem,
    },
    #[error(
        "invalid key source from {from}: {problem}\nhint: use `env:NAME`, `file:PATH` (a 0600 file) or `keychain:SERVICE`"
    )]
    InvalidKey { from: Origin, problem: KeyProblem },
    #[error(
        "the key source `env:{var}` from {from} holds a Paddock voucher (`{VOUCHER_PREFIX}…`), not a key: this environment is inside a Paddock agent session\nhint: name a variable or file that holds the real key, or run this outside the agent session"
    )]
    VoucherKey { var: String, from: Origin },
    #[error(
        "upstream `{url}` from {from} is Paddock's own credential proxy (`{PROXY_URL_VAR}`): the agent's calls would loop back into it\nhint: name the model API itself, such as `https://api.anthropic.com`"
    )]
    OwnProxy { url: String, from: Origin },
    #[error(
        "no API key for the {}: {missing}\nhint: {}, or set `key = \"file:PATH\"` under `[upstreams.{}]` in {}",
        api.title(),
        FirstStep(*api, missing),
        api.section(),
        ConfigFileName(config_path.as_deref()),
    )]
    NoKey {
        api: ModelApiKind,
        missing: MissingKey,
        config_path: Option<PathBuf>,
    },
}

impl ConfigError {
    /// No key was given and none of the vendor's variables holds one.
    pub fn is_no_key(&self) -> bool {
        matches!(self, Self::NoKey { .. })
    }

    /// The config file itself is at fault (unreadable, too large, or invalid).
    pub fn is_config_file(&self) -> bool {
        matches!(
            self,
            Self::Read { .. } | Self::TooLarge { .. } | Self::Invalid { .. }
        )
    }
}

struct AtLocation(Option<Location>);

impl fmt::Display for AtLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(location) => write!(f, " at {location}"),
            None => Ok(()),
        }
    }
}

/// The first half of [`ConfigError::NoKey`]'s hint.
struct FirstStep<'a>(ModelApiKind, &'a MissingKey);

impl fmt::Display for FirstStep<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            MissingKey::NotSet(_) => write!(f, "export {}", self.0.vendor().keys[0].var),
            MissingKey::Voucher(_) => f.write_str("run this outside the agent session"),
        }
    }
}

struct ConfigFileName<'a>(Option<&'a Path>);

impl fmt::Display for ConfigFileName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(path) => write!(f, "`{}`", path.display()),
            None => write!(f, "the config file (`{CONFIG_VAR}` names it)"),
        }
    }
}

/// Picks the URL, key and key style for one launch. Pure: it reads `env` and `config`, no
/// files and no process state. See the module docs for the precedence.
pub fn resolve_upstream(
    request: &UpstreamRequest,
    env: &ClientEnv,
    config: &PaddockConfig,
) -> Result<ResolvedUpstream, ConfigError> {
    let mut skipped = Vec::new();
    let (url, url_from) = resolve_url(request, env, config, &mut skipped)?;
    let (key, key_from, style) = resolve_key(request, env, config, &mut skipped)?;
    let section = config.upstream(request.api);
    // The file's `header` and `scheme` say how any key travels to its upstream; without a
    // `header`, the key's own style applies (with the file's `scheme`, if it has one).
    let (header, scheme) = match section.and_then(|section| section.header.clone()) {
        Some(header) => (header, section.and_then(|section| section.scheme.clone())),
        None => (
            style.header.to_owned(),
            section
                .and_then(|section| section.scheme.clone())
                .or(style.scheme.map(str::to_owned)),
        ),
    };
    Ok(ResolvedUpstream {
        url,
        url_from,
        key,
        key_from,
        header,
        scheme,
        skipped,
    })
}

fn resolve_url(
    request: &UpstreamRequest,
    env: &ClientEnv,
    config: &PaddockConfig,
    skipped: &mut Vec<Skipped>,
) -> Result<(String, Origin), ConfigError> {
    let vendor = request.api.vendor();
    let proxy = env
        .var(PROXY_URL_VAR)
        .and_then(|value| value.to_str())
        .and_then(|value| parse_url(value).ok());
    let on_proxy = |url: &ParsedUrl| proxy.as_ref().is_some_and(|proxy| proxy.same_origin(url));
    // A choice made for Paddock that names its proxy is a mistake to report.
    let explicit = |text: &str, from: Origin| {
        let (url, parsed) = checked_url(text, &from, vendor)?;
        if on_proxy(&parsed) {
            return Err(ConfigError::OwnProxy {
                url: redact_url(text),
                from,
            });
        }
        Ok((url, from))
    };

    if let Some(text) = request.flag_url {
        return explicit(text, Origin::Flag);
    }
    for &name in request.api.paddock_vars() {
        if let Some(text) = utf8_var(env, name, Origin::PaddockEnv(name))? {
            return explicit(text, Origin::PaddockEnv(name));
        }
    }
    if let Some(text) = config.upstream(request.api).and_then(|s| s.url.as_deref()) {
        return explicit(text, config.origin());
    }
    // The vendor's own variable may be an agent session's wiring: there, it is passed over.
    let name = vendor.base_url_var;
    if let Some(text) = utf8_var(env, name, Origin::VendorEnv(name))? {
        let (url, parsed) = checked_url(text, &Origin::VendorEnv(name), vendor)?;
        let in_session = vendor.keys.iter().any(|key| holds_voucher(env, key.var));
        if on_proxy(&parsed) {
            skipped.push(Skipped::OwnProxy { var: name });
        } else if in_session && !parsed.https && parsed.is_loopback() {
            skipped.push(Skipped::SessionProxy { var: name });
        } else {
            return Ok((url, Origin::VendorEnv(name)));
        }
    }
    Ok((vendor.default_url.to_owned(), Origin::VendorDefault))
}

/// The URL in variable `name`, if set; a value that is not UTF-8 is an invalid URL.
fn utf8_var<'env>(
    env: &'env ClientEnv,
    name: &str,
    from: Origin,
) -> Result<Option<&'env str>, ConfigError> {
    let Some(value) = env.var(name) else {
        return Ok(None);
    };
    value
        .to_str()
        .map(Some)
        .ok_or_else(|| ConfigError::InvalidUrl {
            url: redact_url(&value.to_string_lossy()),
            from,
            problem: UrlProblem::NotUnicode,
        })
}

fn resolve_key(
    request: &UpstreamRequest,
    env: &ClientEnv,
    config: &PaddockConfig,
    skipped: &mut Vec<Skipped>,
) -> Result<(String, Origin, KeyStyle), ConfigError> {
    let vendor = request.api.vendor();
    // A key someone chose that turns out to be a voucher cannot be passed over silently.
    let explicit = |key: String, from: Origin| {
        if let Some(var) = key.strip_prefix("env:")
            && holds_voucher(env, var)
        {
            return Err(ConfigError::VoucherKey {
                var: var.to_owned(),
                from,
            });
        }
        Ok((key, from, vendor.style))
    };

    if let Some(text) = request.flag_key {
        let key = checked_key(text, env, env.current_dir()).map_err(|problem| {
            ConfigError::InvalidKey {
                from: Origin::Flag,
                problem,
            }
        })?;
        return explicit(key, Origin::Flag);
    }
    if let Some(key) = config.upstream(request.api).and_then(|s| s.key.clone()) {
        return explicit(key, config.origin());
    }
    let mut voucher = None;
    for key in vendor.keys {
        if holds_voucher(env, key.var) {
            skipped.push(Skipped::Voucher { var: key.var });
            voucher.get_or_insert(key.var);
        } else if env.var(key.var).is_some() {
            return Ok((
                format!("env:{}", key.var),
                Origin::VendorEnv(key.var),
                key.style,
            ));
        }
    }
    Err(ConfigError::NoKey {
        api: request.api,
        missing: match voucher {
            Some(name) => MissingKey::Voucher(name),
            None => MissingKey::NotSet(vendor.keys.iter().map(|key| key.var).collect()),
        },
        config_path: config.path.clone(),
    })
}

/// Whether the variable's value is a Paddock voucher.
fn holds_voucher(env: &ClientEnv, name: &str) -> bool {
    env.var(name).is_some_and(|value| {
        value
            .as_encoded_bytes()
            .starts_with(VOUCHER_PREFIX.as_bytes())
    })
}

/// The parts of an upstream URL that say which listener it reaches.
#[derive(Debug)]
struct ParsedUrl {
    https: bool,
    /// Lowercase, without IPv6 brackets.
    host: String,
    port: u16,
}

impl ParsedUrl {
    fn is_loopback(&self) -> bool {
        if self.host == "localhost" || self.host.ends_with(".localhost") {
            return true;
        }
        match self.host.parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) => ip.is_loopback(),
            Ok(IpAddr::V6(ip)) => {
                ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|ip| ip.is_loopback())
            }
            Err(_) => false,
        }
    }

    /// Same scheme and port, and the same host — every loopback name counting as one, since
    /// the proxy listens on loopback and `localhost` reaches it as well as `127.0.0.1`.
    fn same_origin(&self, other: &ParsedUrl) -> bool {
        self.https == other.https
            && self.port == other.port
            && (self.host == other.host || (self.is_loopback() && other.is_loopback()))
    }
}

/// Checks an upstream URL; on success, the URL the proxy should use (without the vendor's
/// client base path) and its parts.
fn checked_url(
    text: &str,
    from: &Origin,
    vendor: &Vendor,
) -> Result<(String, ParsedUrl), ConfigError> {
    let parsed = parse_url(text).map_err(|problem| ConfigError::InvalidUrl {
        url: redact_url(text),
        from: from.clone(),
        problem,
    })?;
    Ok((without_client_base_path(text, vendor), parsed))
}

fn parse_url(text: &str) -> Result<ParsedUrl, UrlProblem> {
    // Checked on the text first, so that a URL with a password is refused as such whatever
    // else is wrong with it.
    if authority_of(text).contains('@') {
        return Err(UrlProblem::UserInfo);
    }
    if text.contains(['?', '#']) {
        return Err(UrlProblem::QueryOrFragment);
    }
    let uri: http::Uri = text.parse().map_err(|_| UrlProblem::NotAUrl)?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(UrlProblem::Scheme),
    };
    let host = uri
        .host()
        .filter(|host| !host.is_empty())
        .ok_or(UrlProblem::NoHost)?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    Ok(ParsedUrl { https, host, port })
}

/// The authority part of a URL-like text: after `scheme://` up to the path, query or fragment.
fn authority_of(text: &str) -> &str {
    let start = text.find("://").map_or(0, |index| index + 3);
    let rest = &text[start..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

/// `text` with any user information (`user:password@`) replaced by `***`, for messages.
fn redact_url(text: &str) -> String {
    let start = text.find("://").map_or(0, |index| index + 3);
    let authority = authority_of(text);
    match authority.rfind('@') {
        Some(at) => format!("{}***{}", &text[..start], &text[start + at..]),
        None => text.to_owned(),
    }
}

/// Drops the vendor's client base path (`/v1` for OpenAI) from the end of the URL's path,
/// with a trailing `/`; any other URL is kept as written.
fn without_client_base_path(text: &str, vendor: &Vendor) -> String {
    let Some(base) = vendor.client_base_path else {
        return text.to_owned();
    };
    let trimmed = text.trim_end_matches('/');
    let path_start = text.find("://").map_or(0, |index| index + 3) + authority_of(text).len();
    // `base` starts with `/`, so only a whole segment of the path matches, never the host.
    match trimmed.strip_suffix(base) {
        Some(rest) if rest.len() >= path_start => rest.to_owned(),
        _ => text.to_owned(),
    }
}

/// Checks a key source and makes a `file:` path absolute: a leading `~/` expands to `HOME`,
/// and a relative path joins `base`.
fn checked_key(text: &str, env: &ClientEnv, base: &Path) -> Result<String, KeyProblem> {
    let (kind, rest) = text.split_once(':').ok_or(KeyProblem::NotASource)?;
    if rest.is_empty() {
        return Err(KeyProblem::NotASource);
    }
    match kind {
        "env" | "keychain" => Ok(text.to_owned()),
        "file" => {
            let path = if rest == "~" || rest.starts_with("~/") {
                let home = env
                    .var("HOME")
                    .and_then(|home| home.to_str())
                    .ok_or(KeyProblem::NoHome)?;
                let tail = rest.trim_start_matches('~').trim_start_matches('/');
                Path::new(home).join(tail)
            } else if rest.starts_with('~') {
                return Err(KeyProblem::TildeUser);
            } else {
                base.join(rest)
            };
            // `base` came from the environment, which may not be UTF-8; the source must be.
            let path = normalize(&path);
            let path = path.to_str().ok_or(KeyProblem::NotUnicode)?;
            Ok(format!("file:{path}"))
        }
        _ => Err(KeyProblem::NotASource),
    }
}

/// What checking a section needs beyond its text.
struct ParseContext<'a> {
    env: &'a ClientEnv,
    config_dir: &'a Path,
}

type SpannedProblem = (std::ops::Range<usize>, String);

impl ParseContext<'_> {
    fn upstream(&self, raw: RawUpstream) -> Result<UpstreamConfig, SpannedProblem> {
        let url = raw
            .url
            .map(|url| match parse_url(url.get_ref()) {
                Ok(_) => Ok(url.into_inner()),
                Err(problem) => Err((url.span(), format!("`url`: {problem}"))),
            })
            .transpose()?;
        let key = raw
            .key
            .map(|key| {
                checked_key(key.get_ref(), self.env, self.config_dir)
                    .map_err(|problem| (key.span(), format!("`key`: {problem}")))
            })
            .transpose()?;
        let header = raw
            .header
            .map(|header| {
                http::HeaderName::from_bytes(header.get_ref().as_bytes())
                    .map(|name| name.as_str().to_owned())
                    .map_err(|_| {
                        (
                            header.span(),
                            format!("`header`: `{}` is not a header name", header.get_ref()),
                        )
                    })
            })
            .transpose()?;
        let scheme = raw
            .scheme
            .map(|scheme| {
                let word = scheme.get_ref();
                if !word.is_empty() && word.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
                    Ok(scheme.into_inner())
                } else {
                    Err((
                        scheme.span(),
                        "`scheme` must be one word of letters and digits, such as `Bearer`"
                            .to_owned(),
                    ))
                }
            })
            .transpose()?;
        Ok(UpstreamConfig {
            url,
            key,
            header,
            scheme,
        })
    }
}

// The file's shape. Private: the checked types above are what the rest of Paddock sees.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    agents: Option<RawAgents>,
    upstreams: Option<RawUpstreams>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawAgents {
    sandbox: Option<RawSandbox>,
    idle_stop_secs: Option<Spanned<u64>>,
    stall_after_secs: Option<Spanned<u64>>,
    sandbox_read: Option<Vec<String>>,
    sandbox_exec: Option<Vec<String>>,
    sandbox_write: Option<Vec<String>>,
}

/// Sandbox widening paths, `~/` expanded to `HOME`.
fn sandbox_paths(paths: Option<Vec<String>>, env: &ClientEnv) -> Vec<PathBuf> {
    let home = env.var("HOME").map(PathBuf::from);
    paths
        .unwrap_or_default()
        .into_iter()
        .map(|path| match (path.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(path),
        })
        .collect()
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum RawSandbox {
    Landlock,
    Off,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawUpstreams {
    anthropic: Option<RawUpstream>,
    openai: Option<RawUpstream>,
    #[serde(rename = "openai-chat")]
    openai_chat: Option<RawUpstream>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstream {
    url: Option<Spanned<String>>,
    key: Option<Spanned<String>>,
    header: Option<Spanned<String>>,
    scheme: Option<Spanned<String>>,
}

#[cfg(test)]
mod tests;
