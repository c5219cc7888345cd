//! Tests for the config file and upstream resolution. Every environment is built by hand:
//! nothing here reads the real user's variables or files.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;

use super::*;

const CONFIG: &str = "/home/me/.config/paddock/config.toml";
const VOUCHER: &str = "vch_0123456789abcdef";

/// A home directory and a launch directory, and nothing else.
fn base_env() -> ClientEnv {
    ClientEnv::empty("/work/project").with_var("HOME", "/home/me")
}

fn config(text: &str) -> PaddockConfig {
    PaddockConfig::parse(text, Path::new(CONFIG), &base_env())
        .unwrap_or_else(|error| panic!("{error}"))
}

fn config_error(text: &str) -> ConfigError {
    match PaddockConfig::parse(text, Path::new(CONFIG), &base_env()) {
        Ok(config) => panic!("parsed: {config:?}"),
        Err(error) => error,
    }
}

/// An empty config that still knows where its file would be.
fn no_file() -> PaddockConfig {
    PaddockConfig {
        path: Some(CONFIG.into()),
        ..PaddockConfig::default()
    }
}

fn request(api: ModelApiKind) -> UpstreamRequest<'static> {
    UpstreamRequest {
        api,
        flag_url: None,
        flag_key: None,
    }
}

fn flag_url(api: ModelApiKind, url: &str) -> UpstreamRequest<'_> {
    UpstreamRequest {
        flag_url: Some(url),
        ..request(api)
    }
}

fn flag_key(api: ModelApiKind, key: &str) -> UpstreamRequest<'_> {
    UpstreamRequest {
        flag_key: Some(key),
        ..request(api)
    }
}

fn resolve(request: UpstreamRequest, env: &ClientEnv, config: &PaddockConfig) -> ResolvedUpstream {
    resolve_upstream(&request, env, config).unwrap_or_else(|error| panic!("{error}"))
}

fn resolve_error(request: UpstreamRequest, env: &ClientEnv, config: &PaddockConfig) -> ConfigError {
    match resolve_upstream(&request, env, config) {
        Ok(resolved) => panic!("resolved: {resolved:?}"),
        Err(error) => error,
    }
}

fn config_origin() -> Origin {
    Origin::ConfigFile(CONFIG.into())
}

use ModelApiKind::{AnthropicMessages, OpenAiChat, OpenAiResponses};

// Finding the file.

#[test]
fn the_config_path_is_paddock_config_then_xdg_then_home() {
    let env = base_env()
        .with_var("XDG_CONFIG_HOME", "/xdg")
        .with_var(CONFIG_VAR, "conf/../paddock.toml");
    assert_eq!(
        config_path(&env),
        Some("/work/project/paddock.toml".into()),
        "relative to the launch directory"
    );
    let env = env.without_var(CONFIG_VAR);
    assert_eq!(config_path(&env), Some("/xdg/paddock/config.toml".into()));
    let env = env.without_var("XDG_CONFIG_HOME");
    assert_eq!(config_path(&env), Some(CONFIG.into()));
    // An empty value counts as unset.
    let env = env.with_var("XDG_CONFIG_HOME", "");
    assert_eq!(config_path(&env), Some(CONFIG.into()));
    assert_eq!(config_path(&ClientEnv::empty("/")), None);
}

#[test]
fn a_missing_file_is_an_empty_config_that_remembers_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let env = ClientEnv::empty("/").with_var(CONFIG_VAR, &path);
    let loaded = PaddockConfig::load(&env).unwrap();
    assert_eq!(
        loaded,
        PaddockConfig {
            path: Some(path.clone()),
            ..PaddockConfig::default()
        }
    );
    assert_eq!(
        PaddockConfig::load(&ClientEnv::empty("/")).unwrap(),
        PaddockConfig::default()
    );
}

#[test]
fn load_reads_the_file_and_reports_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "[agents]\nsandbox = \"off\"\n").unwrap();
    let env = ClientEnv::empty("/").with_var(CONFIG_VAR, &path);
    let loaded = PaddockConfig::load(&env).unwrap();
    assert_eq!(loaded.agents.sandbox, Some(SandboxMode::Off));
    assert_eq!(loaded.path.as_deref(), Some(path.as_path()));

    let error = PaddockConfig::load_from(dir.path(), &env).unwrap_err();
    assert!(matches!(error, ConfigError::Read { .. }), "{error:?}");
    assert!(error.is_config_file());
    assert_eq!(
        error.to_string(),
        format!("could not read config file `{}`", dir.path().display())
    );

    std::fs::write(&path, vec![b'#'; 1024 * 1024 + 1]).unwrap();
    let error = PaddockConfig::load(&env).unwrap_err();
    assert!(matches!(error, ConfigError::TooLarge { .. }), "{error:?}");

    std::fs::write(&path, b"[agents]\nsandbox = \"o\xff\"\n").unwrap();
    let error = PaddockConfig::load(&env).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "invalid config file `{}` at line 2, column 13: the file is not valid UTF-8",
            path.display()
        )
    );
}

#[test]
fn dev_null_is_an_empty_config() {
    let loaded = PaddockConfig::load_from(Path::new("/dev/null"), &base_env()).unwrap();
    assert_eq!(loaded.upstreams, UpstreamsConfig::default());
}

// Parsing.

#[test]
fn the_documented_example_parses() {
    let parsed = config(
        r#"
[agents]
sandbox = "landlock"
idle_stop_secs = 600
stall_after_secs = 120
sandbox_exec = ["~/.cargo", "/nix/store"]
sandbox_write = ["/srv/shared"]

[upstreams.anthropic]
url = "https://api.anthropic.com"
key = "file:~/.config/paddock/anthropic.key"
header = "X-Api-Key"

[upstreams.openai]
url = "https://api.openai.com"
key = "env:OPENAI_API_KEY"

[upstreams.openai-chat]
url = "http://127.0.0.1:4000"
key = "keychain:paddock-gateway"
header = "authorization"
scheme = "Bearer"
"#,
    );
    assert_eq!(
        parsed,
        PaddockConfig {
            path: Some(CONFIG.into()),
            agents: AgentsConfig {
                sandbox: Some(SandboxMode::Landlock),
                idle_stop: Some(Duration::from_secs(600)),
                stall_after: Some(Duration::from_secs(120)),
                sandbox_read: Vec::new(),
                sandbox_exec: vec!["/home/me/.cargo".into(), "/nix/store".into()],
                sandbox_write: vec!["/srv/shared".into()],
            },
            upstreams: UpstreamsConfig {
                anthropic: Some(UpstreamConfig {
                    url: Some("https://api.anthropic.com".into()),
                    key: Some("file:/home/me/.config/paddock/anthropic.key".into()),
                    header: Some("x-api-key".into()),
                    scheme: None,
                }),
                openai: Some(UpstreamConfig {
                    url: Some("https://api.openai.com".into()),
                    key: Some("env:OPENAI_API_KEY".into()),
                    header: None,
                    scheme: None,
                }),
                openai_chat: Some(UpstreamConfig {
                    url: Some("http://127.0.0.1:4000".into()),
                    key: Some("keychain:paddock-gateway".into()),
                    header: Some("authorization".into()),
                    scheme: Some("Bearer".into()),
                }),
            },
        }
    );
}

#[test]
fn an_empty_file_and_empty_sections_are_the_defaults() {
    assert_eq!(config(""), no_file());
    let parsed = config("[agents]\n[upstreams]\n");
    assert_eq!(parsed, no_file());
    let parsed = config("[upstreams.openai]\n");
    assert_eq!(parsed.upstreams.openai, Some(UpstreamConfig::default()));
}

#[test]
fn tilde_expands_to_home_and_relative_key_files_sit_beside_the_config() {
    let key = |text: &str| {
        config(&format!("[upstreams.anthropic]\nkey = \"{text}\"\n"))
            .upstreams
            .anthropic
            .and_then(|section| section.key)
    };
    assert_eq!(key("file:~/k").as_deref(), Some("file:/home/me/k"));
    assert_eq!(key("file:~").as_deref(), Some("file:/home/me"));
    assert_eq!(
        key("file:keys/anthropic").as_deref(),
        Some("file:/home/me/.config/paddock/keys/anthropic")
    );
    assert_eq!(key("file:../k").as_deref(), Some("file:/home/me/.config/k"));
    assert_eq!(key("file:/abs/k").as_deref(), Some("file:/abs/k"));
    // `~` means something only at the start of a file path.
    assert_eq!(key("env:~X").as_deref(), Some("env:~X"));

    let error = PaddockConfig::parse(
        "[upstreams.anthropic]\nkey = \"file:~/k\"\n",
        Path::new(CONFIG),
        &ClientEnv::empty("/"),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "invalid config file `{CONFIG}` at line 2, column 7: `key`: `~` expands to `HOME`, which is not set (or not UTF-8)"
        )
    );
}

#[test]
fn a_syntax_error_names_its_line_and_column() {
    let error = config_error("[agents]\nsandbox = \"off\"\nidle_stop_secs = = 5\n");
    let ConfigError::Invalid { location, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(
        *location,
        Some(Location {
            line: 3,
            column: 18
        })
    );
    assert!(error.is_config_file());
    assert!(error.to_string().starts_with(&format!(
        "invalid config file `{CONFIG}` at line 3, column 18: "
    )));
}

#[test]
fn unknown_keys_are_errors() {
    for (text, line) in [
        ("[agents]\nsandbx = \"off\"\n", 2),
        ("[agent]\nsandbox = \"off\"\n", 1),
        ("[upstreams.antropic]\nurl = \"https://a\"\n", 1),
        (
            "[upstreams.openai]\n\nurl = \"https://a\"\nkey_from = \"env:K\"\n",
            4,
        ),
        ("top = 1\n", 1),
    ] {
        let error = config_error(text);
        let ConfigError::Invalid {
            location, message, ..
        } = &error
        else {
            panic!("{error:?}");
        };
        assert!(message.starts_with("unknown field"), "{text}: {message}");
        assert_eq!(location.map(|location| location.line), Some(line), "{text}");
    }
}

#[test]
fn values_are_checked_without_echoing_secrets() {
    let error = config_error("[upstreams.anthropic]\nurl = \"https://me:hunter2@gw.example\"\n");
    let text = error.to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("line 2, column 7"), "{text}");

    let error = config_error("[upstreams.openai]\nkey = \"sk-live-abcdef\"\n");
    let text = error.to_string();
    assert!(!text.contains("sk-live"), "{text}");
    assert!(text.contains("`key`: it is not `env:NAME`"), "{text}");
}

#[test]
fn config_error_messages() {
    let cases = [
        "[agents]\nsandbox = \"docker\"\n",
        "[agents]\nidle_stop_secs = 0\n",
        "[agents]\nidle_stop_secs = -5\n",
        "[agents]\nsandbx = \"off\"\n",
        "[upstreams.anthropic]\nurl = \"ftp://files.example\"\n",
        "[upstreams.anthropic]\nurl = \"https://me:hunter2@gw.example\"\n",
        "[upstreams.anthropic]\nurl = \"https://gw.example/?x=1\"\n",
        "[upstreams.anthropic]\nurl = 443\n",
        "[upstreams.anthropic]\nkey = \"sk-ant-abcdef\"\n",
        "[upstreams.anthropic]\nkey = \"file:~alice/k\"\n",
        "[upstreams.anthropic]\nheader = \"x api key\"\n",
        "[upstreams.anthropic]\nscheme = \"Bearer token\"\n",
        "[upstreams.anthropic\nurl = \"https://a\"\n",
        "[upstreams.anthropic]\nurl = \"https://a\"\nurl = \"https://b\"\n",
    ];
    let report: String = cases
        .iter()
        .map(|text| format!("{text}=> {}\n\n", config_error(text)))
        .collect();
    insta::assert_snapshot!("config_error_messages", report);
}

// The URL, step by step.

fn anthropic_config() -> PaddockConfig {
    config("[upstreams.anthropic]\nurl = \"https://file.example\"\n")
}

#[test]
fn the_anthropic_url_follows_its_precedence() {
    let with_key = base_env().with_var("ANTHROPIC_API_KEY", "sk-ant");
    let url = |env: &ClientEnv, config: &PaddockConfig, flag: Option<&str>| {
        let resolved = resolve(
            UpstreamRequest {
                flag_url: flag,
                ..request(AnthropicMessages)
            },
            env,
            config,
        );
        (resolved.url, resolved.url_from)
    };
    let env = with_key
        .clone()
        .with_var(ANTHROPIC_UPSTREAM_VAR, "https://paddock-env.example")
        .with_var("ANTHROPIC_BASE_URL", "https://vendor-env.example");
    let file = anthropic_config();

    assert_eq!(
        url(&env, &file, Some("https://flag.example")),
        ("https://flag.example".into(), Origin::Flag)
    );
    assert_eq!(
        url(&env, &file, None),
        (
            "https://paddock-env.example".into(),
            Origin::PaddockEnv(ANTHROPIC_UPSTREAM_VAR)
        )
    );
    let env = env.without_var(ANTHROPIC_UPSTREAM_VAR);
    assert_eq!(
        url(&env, &file, None),
        ("https://file.example".into(), config_origin())
    );
    assert_eq!(
        url(&env, &no_file(), None),
        (
            "https://vendor-env.example".into(),
            Origin::VendorEnv("ANTHROPIC_BASE_URL")
        )
    );
    let env = env.without_var("ANTHROPIC_BASE_URL");
    assert_eq!(
        url(&env, &no_file(), None),
        ("https://api.anthropic.com".into(), Origin::VendorDefault)
    );
    // A section without `url` falls through to the next source.
    let keyed = config("[upstreams.anthropic]\nkey = \"env:K\"\n");
    assert_eq!(
        url(&env, &keyed, None),
        ("https://api.anthropic.com".into(), Origin::VendorDefault)
    );
}

#[test]
fn the_openai_apis_share_their_variables_and_chat_may_have_its_own() {
    let env = base_env()
        .with_var("OPENAI_API_KEY", "sk-openai")
        .with_var(OPENAI_UPSTREAM_VAR, "https://openai-env.example")
        .with_var(OPENAI_CHAT_UPSTREAM_VAR, "https://chat-env.example");
    let url = |api, env: &ClientEnv, config: &PaddockConfig| {
        let resolved = resolve(request(api), env, config);
        (resolved.url, resolved.url_from)
    };
    assert_eq!(
        url(OpenAiResponses, &env, &no_file()),
        (
            "https://openai-env.example".into(),
            Origin::PaddockEnv(OPENAI_UPSTREAM_VAR)
        )
    );
    assert_eq!(
        url(OpenAiChat, &env, &no_file()),
        (
            "https://chat-env.example".into(),
            Origin::PaddockEnv(OPENAI_CHAT_UPSTREAM_VAR)
        )
    );
    let env = env.without_var(OPENAI_CHAT_UPSTREAM_VAR);
    assert_eq!(
        url(OpenAiChat, &env, &no_file()),
        (
            "https://openai-env.example".into(),
            Origin::PaddockEnv(OPENAI_UPSTREAM_VAR)
        )
    );

    let env = env
        .without_var(OPENAI_UPSTREAM_VAR)
        .with_var("OPENAI_BASE_URL", "https://vendor.example/v1");
    assert_eq!(
        url(OpenAiChat, &env, &no_file()),
        (
            "https://vendor.example".into(),
            Origin::VendorEnv("OPENAI_BASE_URL")
        ),
        "the clients add `/v1` themselves"
    );
    let env = env.without_var("OPENAI_BASE_URL");
    for api in [OpenAiResponses, OpenAiChat] {
        assert_eq!(
            url(api, &env, &no_file()),
            ("https://api.openai.com".into(), Origin::VendorDefault)
        );
    }

    // Chat reads `[upstreams.openai]` when it has no section of its own, and only its own
    // when it has one.
    let shared = config("[upstreams.openai]\nurl = \"https://shared.example\"\n");
    assert_eq!(url(OpenAiChat, &env, &shared).0, "https://shared.example");
    let both = config(
        "[upstreams.openai]\nurl = \"https://shared.example\"\nkey = \"env:SHARED\"\n\
         [upstreams.openai-chat]\nurl = \"https://chat.example\"\n",
    );
    let chat = resolve(request(OpenAiChat), &env, &both);
    assert_eq!(chat.url, "https://chat.example");
    assert_eq!(
        (chat.key.as_str(), chat.key_from),
        ("env:OPENAI_API_KEY", Origin::VendorEnv("OPENAI_API_KEY")),
        "the shared section's key never goes to the chat section's host"
    );
    assert_eq!(
        resolve(request(OpenAiResponses), &env, &both).url,
        "https://shared.example"
    );
}

#[test]
fn only_openai_urls_lose_a_trailing_v1() {
    let env = base_env()
        .with_var("OPENAI_API_KEY", "sk")
        .with_var("ANTHROPIC_API_KEY", "sk");
    let url = |api, flag: &str| resolve(flag_url(api, flag), &env, &no_file()).url;
    for (flag, expected) in [
        ("https://api.openai.com/v1", "https://api.openai.com"),
        ("https://api.openai.com/v1/", "https://api.openai.com"),
        ("https://gw.example/openai/v1", "https://gw.example/openai"),
        ("https://gw.example/xv1", "https://gw.example/xv1"),
        ("https://gw.example/v1/x", "https://gw.example/v1/x"),
        ("https://v1", "https://v1"),
        ("http://127.0.0.1:4000", "http://127.0.0.1:4000"),
    ] {
        assert_eq!(url(OpenAiResponses, flag), expected, "{flag}");
    }
    assert_eq!(
        url(AnthropicMessages, "https://gw.example/v1"),
        "https://gw.example/v1"
    );
}

// The key, step by step.

#[test]
fn the_anthropic_key_follows_its_precedence() {
    let env = base_env()
        .with_var("ANTHROPIC_API_KEY", "sk-ant")
        .with_var("ANTHROPIC_AUTH_TOKEN", "token");
    let file = config("[upstreams.anthropic]\nkey = \"file:~/anthropic.key\"\n");
    let key = |env: &ClientEnv, config: &PaddockConfig, flag: Option<&str>| {
        let resolved = resolve(
            UpstreamRequest {
                flag_key: flag,
                ..request(AnthropicMessages)
            },
            env,
            config,
        );
        (
            resolved.key,
            resolved.key_from,
            resolved.header,
            resolved.scheme,
        )
    };
    assert_eq!(
        key(&env, &file, Some("file:~/flag.key")),
        (
            "file:/home/me/flag.key".into(),
            Origin::Flag,
            "x-api-key".into(),
            None
        )
    );
    assert_eq!(
        key(&env, &file, Some("file:keys/flag.key")).0,
        "file:/work/project/keys/flag.key",
        "a relative flag path is relative to the launch directory"
    );
    assert_eq!(
        key(&env, &file, None),
        (
            "file:/home/me/anthropic.key".into(),
            config_origin(),
            "x-api-key".into(),
            None
        )
    );
    assert_eq!(
        key(&env, &no_file(), None),
        (
            "env:ANTHROPIC_API_KEY".into(),
            Origin::VendorEnv("ANTHROPIC_API_KEY"),
            "x-api-key".into(),
            None
        )
    );
    let env = env.with_var("ANTHROPIC_API_KEY", "");
    assert_eq!(
        key(&env, &no_file(), None),
        (
            "env:ANTHROPIC_AUTH_TOKEN".into(),
            Origin::VendorEnv("ANTHROPIC_AUTH_TOKEN"),
            "authorization".into(),
            Some("Bearer".into())
        ),
        "an empty variable counts as unset"
    );
    let env = env.without_var("ANTHROPIC_AUTH_TOKEN");
    let error = resolve_error(request(AnthropicMessages), &env, &no_file());
    assert!(error.is_no_key(), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "no API key for the Anthropic Messages API: `ANTHROPIC_API_KEY` and `ANTHROPIC_AUTH_TOKEN` are not set\n\
             hint: export ANTHROPIC_API_KEY, or set `key = \"file:PATH\"` under `[upstreams.anthropic]` in `{CONFIG}`"
        )
    );
}

#[test]
fn the_openai_key_is_openai_api_key_as_a_bearer_token() {
    let env = base_env().with_var("OPENAI_API_KEY", "sk-openai");
    for api in [OpenAiResponses, OpenAiChat] {
        let resolved = resolve(request(api), &env, &no_file());
        assert_eq!(
            resolved,
            ResolvedUpstream {
                url: "https://api.openai.com".into(),
                url_from: Origin::VendorDefault,
                key: "env:OPENAI_API_KEY".into(),
                key_from: Origin::VendorEnv("OPENAI_API_KEY"),
                header: "authorization".into(),
                scheme: Some("Bearer".into()),
                skipped: Vec::new(),
            }
        );
    }
    let error = resolve_error(request(OpenAiChat), &base_env(), &no_file());
    assert_eq!(
        error.to_string(),
        format!(
            "no API key for the OpenAI Chat Completions API: `OPENAI_API_KEY` is not set\n\
             hint: export OPENAI_API_KEY, or set `key = \"file:PATH\"` under `[upstreams.openai-chat]` in `{CONFIG}`"
        )
    );
}

#[test]
fn the_files_header_and_scheme_say_how_any_key_travels() {
    let env = base_env().with_var("ANTHROPIC_API_KEY", "sk-ant");
    let style = |text: &str, flag: Option<&str>| {
        let resolved = resolve(
            UpstreamRequest {
                flag_key: flag,
                ..request(AnthropicMessages)
            },
            &env,
            &config(text),
        );
        (resolved.header, resolved.scheme)
    };
    let gateway = "[upstreams.anthropic]\nurl = \"http://127.0.0.1:4000\"\n\
                   header = \"Authorization\"\nscheme = \"Bearer\"\n";
    let bearer = ("authorization".to_owned(), Some("Bearer".to_owned()));
    assert_eq!(style(gateway, Some("env:GATEWAY_KEY")), bearer, "flag key");
    assert_eq!(
        style(&format!("{gateway}key = \"env:GATEWAY_KEY\"\n"), None),
        bearer,
        "file key"
    );
    assert_eq!(style(gateway, None), bearer, "vendor key");
    // A header alone means no scheme; a scheme alone keeps the API's header.
    assert_eq!(
        style("[upstreams.anthropic]\nheader = \"api-key\"\n", None),
        ("api-key".to_owned(), None)
    );
    assert_eq!(
        style("[upstreams.anthropic]\nscheme = \"Token\"\n", None),
        ("x-api-key".to_owned(), Some("Token".to_owned()))
    );
    let openai = resolve(
        request(OpenAiResponses),
        &base_env().with_var("OPENAI_API_KEY", "sk"),
        &config("[upstreams.openai]\nheader = \"api-key\"\n"),
    );
    assert_eq!((openai.header.as_str(), openai.scheme), ("api-key", None));
}

// Vouchers are never keys.

#[test]
fn a_voucher_in_a_vendor_key_variable_is_skipped() {
    let env = base_env()
        .with_var("ANTHROPIC_API_KEY", VOUCHER)
        .with_var("ANTHROPIC_AUTH_TOKEN", "token");
    let resolved = resolve(request(AnthropicMessages), &env, &no_file());
    assert_eq!(resolved.key, "env:ANTHROPIC_AUTH_TOKEN");
    assert_eq!(
        resolved.skipped,
        vec![Skipped::Voucher {
            var: "ANTHROPIC_API_KEY"
        }]
    );

    let env = env.without_var("ANTHROPIC_AUTH_TOKEN");
    let error = resolve_error(request(AnthropicMessages), &env, &no_file());
    assert!(matches!(
        &error,
        ConfigError::NoKey {
            missing: MissingKey::Voucher("ANTHROPIC_API_KEY"),
            ..
        }
    ));
    let text = error.to_string();
    assert!(text.contains("holds a Paddock voucher"), "{text}");
    assert!(!text.contains(VOUCHER), "{text}");

    let env = base_env().with_var("OPENAI_API_KEY", VOUCHER);
    let error = resolve_error(request(OpenAiResponses), &env, &no_file());
    assert!(matches!(
        error,
        ConfigError::NoKey {
            missing: MissingKey::Voucher("OPENAI_API_KEY"),
            ..
        }
    ));
}

#[test]
fn a_chosen_key_variable_that_holds_a_voucher_is_an_error() {
    let env = base_env()
        .with_var("MY_KEY", VOUCHER)
        .with_var("ANTHROPIC_API_KEY", "sk-ant");
    let error = resolve_error(flag_key(AnthropicMessages, "env:MY_KEY"), &env, &no_file());
    assert!(
        matches!(&error, ConfigError::VoucherKey { var, from: Origin::Flag } if var == "MY_KEY"),
        "{error:?}"
    );
    let error = resolve_error(
        request(AnthropicMessages),
        &env,
        &config("[upstreams.anthropic]\nkey = \"env:MY_KEY\"\n"),
    );
    assert!(
        matches!(&error, ConfigError::VoucherKey { from, .. } if *from == config_origin()),
        "{error:?}"
    );
    assert!(!error.to_string().contains(VOUCHER));
}

// Paddock's own proxy is never an upstream.

#[test]
fn a_vendor_base_url_on_paddocks_proxy_is_skipped() {
    let env = base_env()
        .with_var("ANTHROPIC_API_KEY", "sk-ant")
        .with_var(PROXY_URL_VAR, "http://127.0.0.1:41000");
    for candidate in [
        "http://127.0.0.1:41000",
        "http://localhost:41000/",
        "http://[::1]:41000/base",
    ] {
        let resolved = resolve(
            request(AnthropicMessages),
            &env.clone().with_var("ANTHROPIC_BASE_URL", candidate),
            &no_file(),
        );
        assert_eq!(
            (resolved.url.as_str(), &resolved.url_from),
            ("https://api.anthropic.com", &Origin::VendorDefault),
            "{candidate}"
        );
        assert_eq!(
            resolved.skipped,
            vec![Skipped::OwnProxy {
                var: "ANTHROPIC_BASE_URL"
            }]
        );
    }
    // Another port on loopback is a local gateway, and it is adopted.
    let resolved = resolve(
        request(AnthropicMessages),
        &env.clone()
            .with_var("ANTHROPIC_BASE_URL", "http://127.0.0.1:4000"),
        &no_file(),
    );
    assert_eq!(resolved.url, "http://127.0.0.1:4000");
    assert!(resolved.skipped.is_empty());
    // The next source after the vendor variable is the default, but a file still wins.
    let resolved = resolve(
        request(AnthropicMessages),
        &env.with_var("ANTHROPIC_BASE_URL", "http://127.0.0.1:41000"),
        &anthropic_config(),
    );
    assert_eq!(resolved.url, "https://file.example");
}

#[test]
fn a_loopback_base_url_beside_a_voucher_is_a_sessions_proxy() {
    // Inside an agent session: the vendor variables are the proxy and the voucher.
    let env = base_env()
        .with_var("OPENAI_BASE_URL", "http://127.0.0.1:41001/v1")
        .with_var("OPENAI_API_KEY", VOUCHER)
        .with_var(OPENAI_UPSTREAM_VAR, "https://gw.example")
        .with_var("GATEWAY_KEY", "sk-gw");
    let resolved = resolve(
        flag_key(OpenAiResponses, "env:GATEWAY_KEY"),
        &env,
        &no_file(),
    );
    assert_eq!(resolved.url, "https://gw.example");
    assert!(
        resolved.skipped.is_empty(),
        "a PADDOCK_* variable came first"
    );

    let env = env.without_var(OPENAI_UPSTREAM_VAR);
    let resolved = resolve(
        flag_key(OpenAiResponses, "env:GATEWAY_KEY"),
        &env,
        &no_file(),
    );
    assert_eq!(
        (resolved.url.as_str(), &resolved.url_from),
        ("https://api.openai.com", &Origin::VendorDefault)
    );
    assert_eq!(
        resolved.skipped,
        vec![Skipped::SessionProxy {
            var: "OPENAI_BASE_URL"
        }]
    );
    // https on loopback, or http elsewhere, is not a session's proxy.
    for candidate in ["https://localhost:41001", "http://gw.internal:8080"] {
        let resolved = resolve(
            flag_key(OpenAiResponses, "env:GATEWAY_KEY"),
            &env.clone().with_var("OPENAI_BASE_URL", candidate),
            &no_file(),
        );
        assert_eq!(resolved.url, candidate);
    }
}

#[test]
fn an_explicit_upstream_on_paddocks_proxy_is_an_error() {
    let env = base_env()
        .with_var("ANTHROPIC_API_KEY", "sk-ant")
        .with_var(PROXY_URL_VAR, "http://127.0.0.1:41000");
    let flag = flag_url(AnthropicMessages, "http://localhost:41000");
    let error = resolve_error(flag, &env, &no_file());
    assert!(
        matches!(
            &error,
            ConfigError::OwnProxy {
                from: Origin::Flag,
                ..
            }
        ),
        "{error:?}"
    );
    let error = resolve_error(
        request(AnthropicMessages),
        &env.clone()
            .with_var(ANTHROPIC_UPSTREAM_VAR, "http://127.0.0.1:41000"),
        &no_file(),
    );
    assert!(matches!(error, ConfigError::OwnProxy { .. }), "{error:?}");
    let error = resolve_error(
        request(AnthropicMessages),
        &env,
        &config("[upstreams.anthropic]\nurl = \"http://127.0.0.1:41000/\"\n"),
    );
    assert!(matches!(error, ConfigError::OwnProxy { .. }), "{error:?}");
}

// Checking what came from flags and variables.

#[test]
fn urls_with_a_password_are_refused_without_echoing_it() {
    let env = base_env()
        .with_var("ANTHROPIC_API_KEY", "sk-ant")
        .with_var("ANTHROPIC_BASE_URL", "https://me:hunter2@gw.example/v1");
    let error = resolve_error(request(AnthropicMessages), &env, &no_file());
    assert!(
        matches!(
            &error,
            ConfigError::InvalidUrl {
                problem: UrlProblem::UserInfo,
                ..
            }
        ),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("`https://***@gw.example/v1`"), "{text}");
    // Even when the rest is not a URL at all.
    for flag in [
        "me:hunter2@gw example",
        "https://u:hunter2@@x",
        "ftp://a:hunter2@b",
    ] {
        let error = resolve_error(flag_url(AnthropicMessages, flag), &env, &no_file());
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }
}

#[test]
fn url_checks() {
    use UrlProblem::*;
    for (text, expected) in [
        ("https://api.anthropic.com", Ok(())),
        ("http://127.0.0.1:4000/base/", Ok(())),
        ("http://[::1]:4000", Ok(())),
        ("api.anthropic.com", Err(Scheme)),
        ("ftp://files.example", Err(Scheme)),
        ("ws://gw.example", Err(Scheme)),
        ("https://", Err(NotAUrl)),
        ("https:///path", Err(NotAUrl)),
        ("https://gw.example/ path", Err(NotAUrl)),
        ("", Err(NotAUrl)),
        ("https://gw.example/?key=1", Err(QueryOrFragment)),
        ("https://gw.example/#top", Err(QueryOrFragment)),
        ("https://user@gw.example", Err(UserInfo)),
    ] {
        assert_eq!(parse_url(text).map(|_| ()), expected, "{text}");
    }
}

#[test]
fn a_flag_key_must_be_a_source_and_is_never_echoed() {
    let env = base_env().with_var("ANTHROPIC_API_KEY", "sk-ant");
    for (flag, problem) in [
        ("sk-ant-secret-123", KeyProblem::NotASource),
        ("argv:sk-ant-secret-123", KeyProblem::NotASource),
        ("env:", KeyProblem::NotASource),
        ("file:~root/.key", KeyProblem::TildeUser),
    ] {
        let error = resolve_error(flag_key(AnthropicMessages, flag), &env, &no_file());
        assert!(
            matches!(&error, ConfigError::InvalidKey { from: Origin::Flag, problem: found } if *found == problem),
            "{flag}: {error:?}"
        );
        assert!(!error.to_string().contains("secret"), "{error}");
    }
    let error = resolve_error(
        flag_key(AnthropicMessages, "file:~/k"),
        &ClientEnv::empty("/"),
        &no_file(),
    );
    assert!(matches!(
        error,
        ConfigError::InvalidKey {
            problem: KeyProblem::NoHome,
            ..
        }
    ));
}

#[test]
fn a_variable_that_is_not_utf8_is_an_invalid_url() {
    let env = base_env().with_var("ANTHROPIC_API_KEY", "sk-ant").with_var(
        ANTHROPIC_UPSTREAM_VAR,
        OsString::from_vec(b"https://gw\xff.example".to_vec()),
    );
    let error = resolve_error(request(AnthropicMessages), &env, &no_file());
    assert!(
        matches!(
            error,
            ConfigError::InvalidUrl {
                problem: UrlProblem::NotUnicode,
                from: Origin::PaddockEnv(ANTHROPIC_UPSTREAM_VAR),
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn resolution_error_messages() {
    let env = base_env().with_var(PROXY_URL_VAR, "http://127.0.0.1:41000");
    let flags = |url: Option<&'static str>, key: Option<&'static str>| UpstreamRequest {
        api: AnthropicMessages,
        flag_url: url,
        flag_key: key,
    };
    let cases: Vec<(&str, ConfigError)> = vec![
        (
            "no key anywhere",
            resolve_error(request(AnthropicMessages), &env, &no_file()),
        ),
        (
            "no key and no config path",
            resolve_error(request(OpenAiResponses), &env, &PaddockConfig::default()),
        ),
        (
            "only a voucher",
            resolve_error(
                request(AnthropicMessages),
                &env.clone().with_var("ANTHROPIC_API_KEY", VOUCHER),
                &no_file(),
            ),
        ),
        (
            "a flag key holding a voucher",
            resolve_error(
                flags(None, Some("env:ANTHROPIC_API_KEY")),
                &env.clone().with_var("ANTHROPIC_API_KEY", VOUCHER),
                &no_file(),
            ),
        ),
        (
            "a flag upstream on the proxy",
            resolve_error(
                flags(Some("http://localhost:41000/"), Some("env:K")),
                &env,
                &no_file(),
            ),
        ),
        (
            "a flag upstream with a password",
            resolve_error(
                flags(Some("https://me:hunter2@gw.example"), Some("env:K")),
                &env,
                &no_file(),
            ),
        ),
        (
            "a vendor URL with another scheme",
            resolve_error(
                request(OpenAiChat),
                &env.clone()
                    .with_var("OPENAI_BASE_URL", "ws://gw.example/v1")
                    .with_var("OPENAI_API_KEY", "sk"),
                &no_file(),
            ),
        ),
        (
            "a raw key as a flag key",
            resolve_error(flags(None, Some("sk-ant-api03-xyz")), &env, &no_file()),
        ),
        (
            "a file key under another user's home",
            resolve_error(flags(None, Some("file:~alice/key")), &env, &no_file()),
        ),
    ];
    let report: String = cases
        .iter()
        .map(|(what, error)| format!("{what}:\n{error}\n\n"))
        .collect();
    insta::assert_snapshot!("resolution_error_messages", report);
}

#[test]
fn skipped_sources_say_why() {
    let lines: Vec<String> = [
        Skipped::OwnProxy {
            var: "ANTHROPIC_BASE_URL",
        },
        Skipped::SessionProxy {
            var: "OPENAI_BASE_URL",
        },
        Skipped::Voucher {
            var: "ANTHROPIC_API_KEY",
        },
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
        lines,
        [
            "ignored `ANTHROPIC_BASE_URL`: it points at Paddock's own proxy (`PADDOCK_PROXY_URL`)",
            "ignored `OPENAI_BASE_URL`: a loopback http URL beside a Paddock voucher is an agent session's proxy",
            "ignored `ANTHROPIC_API_KEY`: it holds a Paddock voucher, not a key",
        ]
    );
}

#[test]
fn redaction_keeps_everything_but_the_user_information() {
    for (text, expected) in [
        ("https://u:p@h:1/x", "https://***@h:1/x"),
        ("u:p@h", "***@h"),
        ("https://a@b@c/p@q", "https://***@c/p@q"),
        ("https://h/p@q", "https://h/p@q"),
        ("https://h", "https://h"),
    ] {
        assert_eq!(redact_url(text), expected, "{text}");
    }
}

#[test]
fn locations_count_lines_and_characters_from_one() {
    assert_eq!(Location::of("", 0), Location { line: 1, column: 1 });
    assert_eq!(Location::of("ab\ncd", 4), Location { line: 2, column: 2 });
    assert_eq!(Location::of("é\né", 5), Location { line: 2, column: 2 });
    // Past the end, or inside a character, is clamped rather than a panic.
    assert_eq!(Location::of("ab", 99), Location { line: 1, column: 3 });
    assert_eq!(Location::of("é", 1), Location { line: 1, column: 1 });
}

proptest::proptest! {
    #[test]
    fn any_text_parses_or_fails_without_panicking(text in "(?s).{0,200}") {
        let _ = PaddockConfig::parse(&text, Path::new(CONFIG), &base_env());
    }

    #[test]
    fn toml_like_text_parses_or_fails_without_panicking(
        lines in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("[agents]".to_owned()),
                proptest::strategy::Just("[upstreams.anthropic]".to_owned()),
                proptest::strategy::Just("[upstreams.openai-chat]".to_owned()),
                "(url|key|header|scheme|sandbox|idle_stop_secs) = \"[a-z:/~.@\\[\\]0-9 -]{0,24}\"",
                "idle_stop_secs = -?[0-9]{1,22}",
                "[\\[\\]a-z._\"=# -]{0,30}",
            ],
            0..12,
        )
    ) {
        let text = lines.join("\n");
        let _ = PaddockConfig::parse(&text, Path::new(CONFIG), &base_env());
    }

    #[test]
    fn resolution_never_panics_and_never_adopts_a_voucher(
        flag_url in proptest::option::of("[a-z:/@\\[\\]0-9.?#]{0,30}"),
        flag_key in proptest::option::of("(env|file|keychain|x):[A-Z~/._]{0,12}"),
        base_url in "[a-z:/@\\[\\]0-9.]{0,30}",
        api_key in proptest::prop_oneof![
            proptest::strategy::Just(String::new()),
            proptest::strategy::Just(VOUCHER.to_owned()),
            "sk-[a-z]{4}",
        ],
    ) {
        let env = base_env()
            .with_var("ANTHROPIC_BASE_URL", base_url)
            .with_var("ANTHROPIC_API_KEY", api_key)
            .with_var("ANTHROPIC_AUTH_TOKEN", VOUCHER)
            .with_var(PROXY_URL_VAR, "http://127.0.0.1:41000");
        let request = UpstreamRequest {
            api: AnthropicMessages,
            flag_url: flag_url.as_deref(),
            flag_key: flag_key.as_deref(),
        };
        if let Ok(resolved) = resolve_upstream(&request, &env, &no_file()) {
            proptest::prop_assert_ne!(resolved.key.as_str(), "env:ANTHROPIC_AUTH_TOKEN");
            let proxy = parse_url("http://127.0.0.1:41000").unwrap();
            let on_proxy = parse_url(&resolved.url).is_ok_and(|url| proxy.same_origin(&url));
            proptest::prop_assert!(!on_proxy, "{}", resolved.url);
        }
    }
}
