//! `paddock bot …` (the owner's): define bots, message them, read what they sent. And the
//! commands an agent session runs on its own inbox — `paddock inbox pull|ack` and
//! `paddock message send` — which authenticate with the session's voucher.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Subcommand;
use paddock_client::control::{
    BotDefinition, BotMessageParams, BotParams, BotsAdd, BotsList, BotsMessage, BotsOutbox,
    BotsRemove, ControlClient, ControlClientError, InboxAck, InboxAckParams, InboxPull,
    MessageSend, MessageSendParams, SensitiveText,
};

/// How long one request may take (a message may open a session).
const TIMEOUT: Duration = Duration::from_secs(120);
/// The largest file `--file` reads.
const MAX_FILE_BYTES: u64 = 256 * 1024;

#[derive(Debug, Subcommand)]
pub enum BotCommand {
    /// Define (or redefine) a bot: what to launch when a message wakes it.
    Add {
        /// The bot id (letters, digits, `-`, `_`, `.`).
        id: String,
        #[arg(long, default_value = "claude")]
        backend: String,
        /// The working directory (default: the current one).
        #[arg(long)]
        cwd: Option<PathBuf>,
        #[arg(long)]
        model: Option<String>,
        /// Instructions given at every launch (a file).
        #[arg(long, value_name = "FILE")]
        instructions: Option<PathBuf>,
        /// `default`, `acceptEdits`, `plan` or `bypassPermissions`.
        #[arg(long)]
        mode: Option<String>,
        /// How permission requests are answered: `allow` or `deny` (default).
        #[arg(long)]
        permissions: Option<String>,
        #[command(flatten)]
        sandbox: crate::agent_cmd::SandboxArgs,
    },
    /// Remove a bot with its inbox and outbox.
    Remove { id: String },
    /// Every bot.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Send a bot a message (the file's UTF-8 text); it is woken with a notice.
    Message {
        bot: String,
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// The channel ref it arrives in (default `/.dm/owner`).
        #[arg(long)]
        target: Option<String>,
    },
    /// What a bot sent, and its held or blocked drafts.
    Outbox {
        bot: String,
        #[arg(long)]
        json: bool,
    },
}

/// `paddock inbox …`, inside an agent session.
#[derive(Debug, Subcommand)]
pub enum InboxCommand {
    /// The messages you have not seen, with their text; they count as seen.
    Pull {
        #[arg(long)]
        json: bool,
    },
    /// Acknowledge your inbox up to a sequence number (default: everything pulled).
    Ack {
        #[arg(long)]
        upto: Option<u64>,
    },
}

/// `paddock message send`, inside an agent session.
#[derive(Debug, Subcommand)]
pub enum MessageCommand {
    /// Send the file's text to a channel ref, through the freshness guard and your bot's PII
    /// filters.
    Send {
        #[arg(long)]
        target: String,
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// Send although messages arrived that you have not pulled.
        #[arg(long)]
        continue_anyway: bool,
    },
}

pub(crate) fn read_text(file: &PathBuf) -> anyhow::Result<String> {
    let size = std::fs::metadata(file)
        .with_context(|| format!("could not read `{}`", file.display()))?
        .len();
    if size > MAX_FILE_BYTES {
        anyhow::bail!(
            "`{}` holds {size} bytes; a message may hold at most {MAX_FILE_BYTES}",
            file.display()
        );
    }
    std::fs::read_to_string(file).with_context(|| format!("`{}` is not UTF-8 text", file.display()))
}

fn remote(error: ControlClientError) -> anyhow::Error {
    match error {
        ControlClientError::Remote(error) => anyhow::anyhow!("{}", error.message),
        error => error.into(),
    }
}

async fn client() -> anyhow::Result<Result<ControlClient, ExitCode>> {
    crate::connect_daemon().await
}

pub async fn run_bot(command: BotCommand) -> anyhow::Result<ExitCode> {
    let mut client = match client().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let mut stdout = std::io::stdout().lock();
    match command {
        BotCommand::Add {
            id,
            backend,
            cwd,
            model,
            instructions,
            mode,
            permissions,
            sandbox,
        } => {
            let cwd = match cwd {
                Some(dir) => std::path::absolute(dir)?,
                None => std::env::current_dir()?,
            };
            let instructions = instructions.as_ref().map(read_text).transpose()?;
            let bot = client
                .request::<BotsAdd>(
                    BotDefinition {
                        id,
                        backend,
                        model,
                        cwd,
                        instructions,
                        mode,
                        permissions,
                        sandbox: sandbox.to_wire()?,
                    },
                    TIMEOUT,
                )
                .await
                .map_err(remote)?;
            writeln!(
                stdout,
                "bot {} ({}) in {}",
                bot.id,
                bot.backend,
                bot.cwd.display()
            )?;
        }
        BotCommand::Remove { id } => {
            let removed = client
                .request::<BotsRemove>(BotParams { bot: id.clone() }, TIMEOUT)
                .await
                .map_err(remote)?;
            if !removed.removed {
                eprintln!("error: no bot `{id}`");
                return Ok(ExitCode::FAILURE);
            }
            writeln!(stdout, "removed {id}")?;
        }
        BotCommand::List { json } => {
            let list = client
                .request::<BotsList>((), TIMEOUT)
                .await
                .map_err(remote)?;
            if json {
                writeln!(stdout, "{}", serde_json::to_string(&list)?)?;
            } else {
                writeln!(stdout, "{:<20} {:<9} CWD", "BOT", "BACKEND")?;
                for bot in &list.bots {
                    writeln!(
                        stdout,
                        "{:<20} {:<9} {}",
                        bot.id,
                        bot.backend,
                        bot.cwd.display()
                    )?;
                }
            }
        }
        BotCommand::Message { bot, file, target } => {
            let text = read_text(&file)?;
            let bot_id = bot.clone();
            let sent = client
                .request::<BotsMessage>(
                    BotMessageParams {
                        bot,
                        target,
                        text: SensitiveText::new(text),
                    },
                    TIMEOUT,
                )
                .await
                .map_err(remote)?;
            match &sent.session {
                Some(session) => {
                    writeln!(stdout, "#{} for {bot_id}: notice to {session}", sent.seq)?
                }
                None => writeln!(stdout, "#{} for {bot_id}: starting its session", sent.seq)?,
            }
        }
        BotCommand::Outbox { bot, json } => {
            let outbox = client
                .request::<BotsOutbox>(BotParams { bot }, TIMEOUT)
                .await
                .map_err(remote)?;
            if json {
                writeln!(stdout, "{}", serde_json::to_string(&outbox)?)?;
            } else {
                for message in &outbox.messages {
                    writeln!(
                        stdout,
                        "#{} {} → {}{}\n{}",
                        message.id,
                        message.state,
                        message.target,
                        message
                            .reason
                            .as_deref()
                            .map(|reason| format!(" ({reason})"))
                            .unwrap_or_default(),
                        message.text
                    )?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn run_inbox(command: InboxCommand) -> anyhow::Result<ExitCode> {
    let mut client = match client().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let mut stdout = std::io::stdout().lock();
    match command {
        InboxCommand::Pull { json } => {
            let pulled = client
                .request::<InboxPull>((), TIMEOUT)
                .await
                .map_err(remote)?;
            if json {
                writeln!(stdout, "{}", serde_json::to_string(&pulled)?)?;
            } else if pulled.messages.is_empty() {
                writeln!(stdout, "no new messages")?;
            } else {
                for message in &pulled.messages {
                    writeln!(
                        stdout,
                        "#{} in {} from {}:\n{}\n",
                        message.seq, message.target, message.sender, message.text
                    )?;
                }
            }
        }
        InboxCommand::Ack { upto } => {
            let cursor = client
                .request::<InboxAck>(InboxAckParams { upto }, TIMEOUT)
                .await
                .map_err(remote)?;
            writeln!(stdout, "acknowledged up to #{}", cursor.acked)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn run_message(command: MessageCommand) -> anyhow::Result<ExitCode> {
    let MessageCommand::Send {
        target,
        file,
        continue_anyway,
    } = command;
    let text = read_text(&file)?;
    let mut client = match client().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let sent = client
        .request::<MessageSend>(
            MessageSendParams {
                target,
                text: SensitiveText::new(text),
                continue_anyway,
            },
            TIMEOUT,
        )
        .await
        .map_err(remote)?;
    let mut stdout = std::io::stdout().lock();
    match sent.state.as_str() {
        "sent" => {
            writeln!(stdout, "sent ({})", sent.producer_fact_id)?;
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            writeln!(
                stdout,
                "{}: {} — saved as a draft ({})",
                sent.state,
                sent.reason.unwrap_or_default(),
                sent.producer_fact_id
            )?;
            for message in &sent.unseen {
                writeln!(
                    stdout,
                    "unseen #{} in {} from {}:\n{}",
                    message.seq, message.target, message.sender, message.text
                )?;
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
