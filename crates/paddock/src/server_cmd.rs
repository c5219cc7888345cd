//! `paddock server`: the fleet server in the foreground, and the commands that manage its API
//! keys and pairing tokens (against the same database, `--database` or
//! `PADDOCK_SERVER_DATABASE`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use paddock_client::fleet::{AGENT_STOP_PATH, MESSAGES_PATH};
use paddock_server::store::{self, ApiKeyRecord};
use paddock_server::{Flags, ServerConfig, credential};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServerArgs {
    #[command(flatten)]
    serve: ServeArgs,
    #[command(subcommand)]
    command: Option<ServerCommand>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The address to listen on (`PADDOCK_SERVER_LISTEN`; default `127.0.0.1:8080`).
    #[arg(long)]
    listen: Option<String>,
    #[command(flatten)]
    database: DatabaseArg,
}

#[derive(Debug, Clone, Args)]
struct DatabaseArg {
    /// `sqlite:PATH` or `postgres://…` (`PADDOCK_SERVER_DATABASE`; default SQLite in the
    /// server's state directory).
    #[arg(long)]
    database: Option<String>,
}

#[derive(Debug, Subcommand)]
enum ServerCommand {
    /// API keys for MCP clients: create (printed once), list (never the values), revoke.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Prints a one-use pairing token, valid for 10 minutes, for `paddock daemon join`.
    Pair {
        /// The machine's name in the fleet (default: its hostname).
        #[arg(long, conflicts_with = "reconnect")]
        name: Option<String>,
        /// A reconnect token for this paired machine instead: `paddock daemon reconnect`
        /// trades it for a new machine key, and the old key stops working.
        #[arg(long, value_name = "MACHINE_ID")]
        reconnect: Option<String>,
        #[command(flatten)]
        database: DatabaseArg,
    },
    /// Bridges a stdio MCP client to a remote server's `/mcp`, with the API key from
    /// `PADDOCK_API_KEY` (`claude mcp add fleet -e PADDOCK_API_KEY=… -- paddock server mcp --url …`).
    Mcp {
        /// The server's URL (`https://HOST[:PORT]`; `/mcp` is added when it is not there).
        #[arg(long)]
        url: String,
    },
    /// Sends a bot on a joined machine a message (the file's UTF-8 text) through a remote
    /// server, with the API key from `PADDOCK_API_KEY`; the bot's daemon wakes it.
    Message {
        /// The bot's id (`paddock bot add` on its machine).
        bot: String,
        /// The message: a UTF-8 file.
        #[arg(long)]
        file: PathBuf,
        #[command(flatten)]
        remote: RemoteArgs,
    },
    /// Shows a bot's conversation through a remote server: the owners' messages and its
    /// replies, oldest first.
    Messages {
        bot: String,
        /// Only messages after this sequence number.
        #[arg(long)]
        after: Option<i64>,
        /// The server's JSON answer.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        remote: RemoteArgs,
    },
    /// Stops a bot's running session on its machine through a remote server.
    StopBot {
        bot: String,
        #[command(flatten)]
        remote: RemoteArgs,
    },
    /// Lists the paired machines.
    Machines {
        /// One JSON object per machine.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        database: DatabaseArg,
    },
}

/// Where a remote command reaches the server, and which machine it means.
#[derive(Debug, clap::Args)]
struct RemoteArgs {
    /// The server's URL (`https://HOST[:PORT]`); default `PADDOCK_SERVER_URL`.
    #[arg(long)]
    url: Option<String>,
    /// The machine (id or name), when the bot is defined on several.
    #[arg(long)]
    machine: Option<String>,
}

/// How long a pairing token stays valid.
const PAIRING_VALID_MS: i64 = 10 * 60 * 1000;

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Creates an API key and prints it once on stdout.
    Create {
        /// A name to recognise the key by (unique among live keys).
        #[arg(long)]
        name: String,
        /// The key's policy profile; it narrows the server's own, never widens it.
        #[arg(long, default_value = "no-commerce", value_parser = ["readonly", "no-commerce", "full"])]
        profile: String,
        #[command(flatten)]
        database: DatabaseArg,
    },
    /// Lists the keys: id, name, profile, created, revoked.
    Ls {
        /// One JSON object per key.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        database: DatabaseArg,
    },
    /// Revokes a key by id or name; the next request with it is 401.
    Revoke {
        /// The key's id (`k_…`) or name.
        key: String,
        #[command(flatten)]
        database: DatabaseArg,
    },
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

pub async fn run(args: ServerArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        None => serve(args.serve).await,
        Some(ServerCommand::Keys(command)) => keys(command).await,
        Some(ServerCommand::Pair {
            name,
            reconnect,
            database,
        }) => pair(name, reconnect, database).await,
        Some(ServerCommand::Machines { json, database }) => machines(json, database).await,
        Some(ServerCommand::Mcp { url }) => bridge(&url).await,
        Some(ServerCommand::Message { bot, file, remote }) => {
            let text = crate::bot_cmd::read_text(&file)?;
            let body = serde_json::json!({ "bot": bot, "text": text, "machine": remote.machine });
            let answer = remote_call(&remote, http::Method::POST, MESSAGES_PATH, body).await?;
            let seq = answer["seq"].as_i64().unwrap_or_default();
            let machine = answer["machineId"].as_str().unwrap_or("?");
            if answer["woken"].as_bool() == Some(true) {
                println!("#{seq} for {bot} on {machine}: woken");
            } else {
                let detail = answer["detail"].as_str().unwrap_or("not woken");
                println!("#{seq} for {bot} on {machine}: stored; {detail}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(ServerCommand::Messages {
            bot,
            after,
            json,
            remote,
        }) => {
            let mut query = format!("{MESSAGES_PATH}?bot={}", query_value(&bot));
            if let Some(machine) = &remote.machine {
                query.push_str(&format!("&machine={}", query_value(machine)));
            }
            if let Some(after) = after {
                query.push_str(&format!("&after={after}"));
            }
            let answer =
                remote_call(&remote, http::Method::GET, &query, serde_json::Value::Null).await?;
            if json {
                println!("{answer}");
                return Ok(ExitCode::SUCCESS);
            }
            let messages = answer["messages"].as_array().cloned().unwrap_or_default();
            if messages.is_empty() {
                println!("no messages");
            }
            for message in messages {
                let arrow = if message["direction"] == "in" {
                    "→"
                } else {
                    "←"
                };
                println!(
                    "#{} {arrow} {} ({}): {}",
                    message["seq"],
                    message["target"].as_str().unwrap_or_default(),
                    message["sender"].as_str().unwrap_or_default(),
                    message["text"].as_str().unwrap_or_default()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(ServerCommand::StopBot { bot, remote }) => {
            let body = serde_json::json!({ "bot": bot, "machine": remote.machine });
            let answer = remote_call(&remote, http::Method::POST, AGENT_STOP_PATH, body).await?;
            let stopped = answer
                .pointer("/answer/stopped")
                .and_then(serde_json::Value::as_bool);
            println!(
                "{bot}: {}",
                if stopped == Some(true) {
                    "stopped"
                } else {
                    "no session was running"
                }
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `value` percent-encoded for a query string (all but RFC 3986's unreserved characters).
fn query_value(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(byte).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// One request to a remote server's owner routes with `PADDOCK_API_KEY`; its JSON answer, or
/// the server's refusal as the error.
async fn remote_call(
    remote: &RemoteArgs,
    method: http::Method,
    path: &str,
    body: serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let url = remote
        .url
        .clone()
        .or_else(|| env("PADDOCK_SERVER_URL"))
        .context("name the server with `--url https://HOST[:PORT]` or `PADDOCK_SERVER_URL`")?;
    let key = env("PADDOCK_API_KEY")
        .map(paddock_client::SecretString::new)
        .context("`PADDOCK_API_KEY` is not set\nhint: create a key on the server with `paddock server keys create --name NAME`")?;
    let base = paddock_daemon::fleet::ServerUrl::parse(&url)?;
    let tls = std::sync::Arc::new(
        paddock_credentials::tls_client_config(
            &paddock_credentials::UpstreamTrust::from_env(),
            true,
        )
        .context("could not load the trusted certificate authorities")?,
    );
    let headers = [
        (http::header::CONTENT_TYPE, "application/json".to_owned()),
        (
            http::header::AUTHORIZATION,
            format!("Bearer {}", key.expose_secret()),
        ),
    ];
    let body = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let (status, answer) =
        paddock_daemon::fleet::request(&base, method, path, &headers, body, &tls).await?;
    if !status.is_success() {
        anyhow::bail!(
            "the server refused ({}): {}",
            status.as_u16(),
            paddock_client::fleet::refusal_message(&answer)
        );
    }
    serde_json::from_slice(&answer).context("the server's answer was not JSON")
}

async fn pair(
    name: Option<String>,
    reconnect: Option<String>,
    database: DatabaseArg,
) -> anyhow::Result<ExitCode> {
    if let Some(name) = &name
        && (name.trim().is_empty() || name.len() > 128)
    {
        anyhow::bail!("a machine's name must be 1 to 128 characters");
    }
    let store = open_store(database).await?;
    if let Some(machine) = &reconnect
        && store.machine(machine.clone()).await?.is_none()
    {
        eprintln!("error: no paired machine `{machine}`");
        eprintln!("hint: `paddock server machines` lists them");
        return Ok(ExitCode::FAILURE);
    }
    let token = credential::mint(credential::CredentialKind::Pairing)
        .map_err(|error| anyhow::anyhow!("OS random source: {error}"))?;
    let now = store::now_ms();
    store
        .insert_pairing(
            credential::CredentialHash::of(token.expose_secret()),
            store::Pairing {
                name,
                reconnect_machine: reconnect.clone(),
            },
            now,
            now + PAIRING_VALID_MS,
        )
        .await?;
    println!("{}", token.expose_secret());
    match reconnect {
        Some(machine) => eprintln!(
            "reconnect token for `{machine}`, valid for 10 minutes: on that machine, run `paddock daemon reconnect --id {machine} --server URL` and paste it"
        ),
        None => eprintln!(
            "pairing token valid for 10 minutes, for one use: on the machine, run `paddock daemon join --server URL` and paste it"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

async fn machines(json: bool, database: DatabaseArg) -> anyhow::Result<ExitCode> {
    let store = open_store(database).await?;
    for machine in store.list_machines().await? {
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "id": machine.id,
                    "name": machine.name,
                    "hostname": machine.hostname,
                    "platform": machine.platform,
                    "arch": machine.arch,
                    "createdAtMs": machine.created_at_ms,
                })
            );
        } else {
            println!(
                "{}\t{}\t{}\t{}/{}",
                machine.id, machine.name, machine.hostname, machine.platform, machine.arch
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let flags = Flags {
        listen: args.listen,
        database: args.database.database,
    };
    let config = match ServerConfig::load(&flags, env) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let state = paddock_server::http::ServerState::open(config).await?;
    paddock_server::http::serve(state, shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

async fn open_store(
    database: DatabaseArg,
) -> anyhow::Result<std::sync::Arc<dyn store::ServerStore>> {
    let flags = Flags {
        listen: None,
        database: database.database,
    };
    let url = paddock_server::config::database_only(&flags, env)?;
    // The store's error names the database (without its password) already.
    Ok(store::open(&url).await?)
}

async fn keys(command: KeysCommand) -> anyhow::Result<ExitCode> {
    match command {
        KeysCommand::Create {
            name,
            profile,
            database,
        } => {
            if name.trim().is_empty() || name.len() > 128 {
                anyhow::bail!("a key's name must be 1 to 128 characters");
            }
            let store = open_store(database).await?;
            let key = credential::mint(credential::CredentialKind::ApiKey)
                .map_err(|error| anyhow::anyhow!("OS random source: {error}"))?;
            let record = ApiKeyRecord {
                id: credential::record_id("k_")
                    .map_err(|error| anyhow::anyhow!("OS random source: {error}"))?,
                name,
                profile,
                created_at_ms: store::now_ms(),
                revoked_at_ms: None,
            };
            let id = record.id.clone();
            store
                .insert_api_key(record, credential::CredentialHash::of(key.expose_secret()))
                .await?;
            println!("{}", key.expose_secret());
            eprintln!("created API key `{id}`; it is shown only this once");
            Ok(ExitCode::SUCCESS)
        }
        KeysCommand::Ls { json, database } => {
            let store = open_store(database).await?;
            for key in store.list_api_keys().await? {
                if json {
                    println!(
                        "{}",
                        serde_json::json!({
                            "id": key.id,
                            "name": key.name,
                            "profile": key.profile,
                            "createdAtMs": key.created_at_ms,
                            "revokedAtMs": key.revoked_at_ms,
                        })
                    );
                } else {
                    let state = if key.revoked_at_ms.is_some() {
                        "revoked"
                    } else {
                        "live"
                    };
                    println!("{}\t{}\t{}\t{state}", key.id, key.name, key.profile);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        KeysCommand::Revoke { key, database } => {
            let store = open_store(database).await?;
            if store.revoke_api_key(key.clone(), store::now_ms()).await? {
                eprintln!("revoked `{key}`");
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("error: no live API key has the id or name `{key}`");
                eprintln!("hint: `paddock server keys ls` lists them");
                Ok(ExitCode::FAILURE)
            }
        }
    }
}

/// `paddock server mcp`: each JSON-RPC line on stdin is POSTed to the server's `/mcp`; each
/// answer goes to stdout as one line. Notifications get no line back. An HTTP refusal (a 401,
/// a 429) becomes a JSON-RPC error for the request, so the client sees why.
async fn bridge(url: &str) -> anyhow::Result<ExitCode> {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let Some(key) = env("PADDOCK_API_KEY") else {
        eprintln!("error: `PADDOCK_API_KEY` is not set");
        eprintln!("hint: create a key on the server with `paddock server keys create --name NAME`");
        return Ok(ExitCode::FAILURE);
    };
    let key = paddock_client::SecretString::new(key);
    let base = paddock_daemon::fleet::ServerUrl::parse(url.trim_end_matches("/mcp"))?;
    let trust = paddock_credentials::UpstreamTrust::from_env();
    let tls = std::sync::Arc::new(
        paddock_credentials::tls_client_config(&trust, true)
            .context("could not load the trusted certificate authorities")?,
    );
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut version: Option<String> = None;
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let message: Option<serde_json::Value> = serde_json::from_str(&line).ok();
        let id = message
            .as_ref()
            .and_then(|message| message.get("id"))
            .cloned();
        let mut headers = vec![
            (http::header::CONTENT_TYPE, "application/json".to_owned()),
            (
                http::header::ACCEPT,
                "application/json, text/event-stream".to_owned(),
            ),
            (
                http::header::AUTHORIZATION,
                format!("Bearer {}", key.expose_secret()),
            ),
        ];
        if let Some(version) = &version {
            headers.push((
                http::HeaderName::from_static("mcp-protocol-version"),
                version.clone(),
            ));
        }
        let answer =
            paddock_daemon::fleet::post(&base, "/mcp", &headers, line.into_bytes(), &tls).await;
        let reply = match answer {
            Ok((status, body)) if status.is_success() => {
                if body.is_empty() {
                    None
                } else {
                    let body: serde_json::Value =
                        serde_json::from_slice(&body).unwrap_or_else(|_| {
                            rpc_error(
                                id.as_ref(),
                                &format!("the server's answer was not JSON (HTTP {status})"),
                            )
                        });
                    if let Some(negotiated) = body
                        .pointer("/result/protocolVersion")
                        .and_then(serde_json::Value::as_str)
                    {
                        version = Some(negotiated.to_owned());
                    }
                    Some(body)
                }
            }
            Ok((status, body)) => {
                let parsed: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
                match parsed {
                    // A JSON-RPC error from the MCP layer passes through as it is.
                    Some(body) if body.get("jsonrpc").is_some() => Some(body),
                    _ => {
                        let reason = paddock_client::fleet::refusal_message(&body);
                        id.as_ref().map(|id| {
                            rpc_error(Some(id), &format!("HTTP {}: {reason}", status.as_u16()))
                        })
                    }
                }
            }
            Err(error) => id
                .as_ref()
                .map(|id| rpc_error(Some(id), &error.to_string())),
        };
        if let Some(reply) = reply {
            stdout.write_all(reply.to_string().as_bytes()).await?;
            stdout.write_all(b"\n").await?;
            stdout.flush().await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn rpc_error(id: Option<&serde_json::Value>, message: &str) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(serde_json::Value::Null),
        "error": { "code": -32000, "message": message },
    })
}
