//! `paddock pii`: a bot's PII filters. `list` and `add` are what an agent session may do (the
//! bot defaults to its `PADDOCK_BOT_ID`); `enable`, `disable`, `delete` and the `test`
//! playground are the owner's and name the bot explicitly; `redact` filters stdin for scripts.
//! Everything goes through the daemon's control socket except `redact --defaults`, which runs
//! the five default filters in this process.

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use paddock_client::control::{
    ControlClientError, ErrorCode, Method, PiiAdd, PiiAddParams, PiiBotParams, PiiDelete,
    PiiFilter, PiiFilterKind, PiiFilterParams, PiiList, PiiRedact, PiiRedactResult, PiiSetEnabled,
    PiiSetEnabledParams, PiiTest, PiiTextParams, SensitiveText,
};

/// The environment variable that names an agent session's bot.
const BOT_ID_VAR: &str = "PADDOCK_BOT_ID";

/// The most text `test` and `redact` read from stdin. JSON escaping can grow a text up to six
/// times on the control socket, whose frames stop at 16 MiB.
const MAX_STDIN_BYTES: usize = 2 * 1024 * 1024;

/// Exit code for a command line that cannot work (clap's usage errors use it too).
const EXIT_USAGE: u8 = 2;

#[derive(Debug, Args)]
pub struct PiiArgs {
    #[command(subcommand)]
    command: PiiCommand,
}

#[derive(Debug, Subcommand)]
enum PiiCommand {
    /// List a bot's filters in pipeline order.
    List {
        #[command(flatten)]
        bot: BotFlag,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Append a plugin filter: a TypeScript or JavaScript file whose default export is
    /// `(text) => ({ text, triggered })`. Never replaces a filter.
    Add {
        /// The plugin source.
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// What the filter does (one line, 1–200 characters).
        #[arg(long, value_name = "TEXT")]
        description: String,
        #[command(flatten)]
        bot: BotFlag,
        /// Print the new filter as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Enable a filter (the owner's command; agent sessions only list and add).
    Enable(OwnerSwitch),
    /// Disable a filter (the owner's command; agent sessions only list and add).
    Disable(OwnerSwitch),
    /// Delete a filter; deleted defaults stay deleted (the owner's command).
    Delete(OwnerSwitch),
    /// The playground: run a bot's pipeline over text on stdin (at most 1024 UTF-8 bytes in
    /// and out) and print the result. Nothing is stored or sent.
    Test {
        /// The bot whose pipeline runs (required: `PADDOCK_BOT_ID` is not used here).
        #[arg(long, value_parser = parse_bot_id)]
        bot: Option<String>,
        /// Print `{"text": …, "triggeredFilters": […]}` instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Filter text on stdin and print `{"text": …, "triggeredFilters": […]}` (for scripts).
    Redact {
        /// The bot whose pipeline runs (default: `PADDOCK_BOT_ID`).
        #[arg(long, value_parser = parse_bot_id, conflicts_with = "defaults")]
        bot: Option<String>,
        /// Run the five default filters in this process, without a daemon or a bot.
        #[arg(long)]
        defaults: bool,
    },
}

#[derive(Debug, Args)]
struct BotFlag {
    /// The bot (default: `PADDOCK_BOT_ID`, an agent session's identity).
    #[arg(long, value_parser = parse_bot_id)]
    bot: Option<String>,
}

#[derive(Debug, Args)]
struct OwnerSwitch {
    /// The filter's id (`keys`, `email`, `id-numbers`, `phone-numbers`, `bank-cards`,
    /// `plugin-N`).
    filter_id: String,
    /// The bot (required: `PADDOCK_BOT_ID` is not used for owner commands).
    #[arg(long, value_parser = parse_bot_id)]
    bot: Option<String>,
}

/// Checks a bot id: 1–64 ASCII letters, digits, `-`, `_` or `.`, and not `.` or `..`.
fn parse_bot_id(text: &str) -> Result<String, String> {
    let valid = (1..=64).contains(&text.len())
        && text != "."
        && text != ".."
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'));
    if valid {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` is not a bot id: use 1–64 letters, digits, `-`, `_` or `.`"
        ))
    }
}

/// A command line that cannot name its bot: the message and the hint, exit 2.
fn usage_error(message: &str, hint: &str) -> ExitCode {
    eprintln!("error: {message}");
    eprintln!("hint: {hint}");
    ExitCode::from(EXIT_USAGE)
}

/// The bot of an agent-session command: `--bot`, else `PADDOCK_BOT_ID`.
fn session_bot(flag: Option<String>, command: &str, hint: &str) -> Result<String, ExitCode> {
    if let Some(bot) = flag {
        return Ok(bot);
    }
    match std::env::var_os(BOT_ID_VAR).filter(|value| !value.is_empty()) {
        None => Err(usage_error(
            &format!("`paddock pii {command}` needs a bot"),
            hint,
        )),
        Some(value) => match value.to_str().map(parse_bot_id) {
            Some(Ok(bot)) => Ok(bot),
            Some(Err(reason)) => Err(usage_error(
                &format!("`{BOT_ID_VAR}` is not valid: {reason}"),
                &format!("fix `{BOT_ID_VAR}` or pass `--bot B`"),
            )),
            None => Err(usage_error(
                &format!("`{BOT_ID_VAR}` is not valid UTF-8"),
                &format!("fix `{BOT_ID_VAR}` or pass `--bot B`"),
            )),
        },
    }
}

/// The bot of an owner command: `--bot` only, so that an agent session's environment never
/// picks the bot an owner command changes.
fn owner_bot(flag: Option<String>, command: &str) -> Result<String, ExitCode> {
    flag.ok_or_else(|| {
        usage_error(
            &format!("`paddock pii {command}` needs `--bot B`"),
            &format!(
                "owner commands name their bot explicitly (`{BOT_ID_VAR}` is not used); `paddock pii list --bot B` shows a bot's filters"
            ),
        )
    })
}

const SESSION_BOT_HINT: &str =
    "pass `--bot B` or set `PADDOCK_BOT_ID` (agent sessions have it set)";

pub async fn run(args: PiiArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        PiiCommand::List { bot, json } => {
            let bot = match session_bot(bot.bot, "list", SESSION_BOT_HINT) {
                Ok(bot) => bot,
                Err(code) => return Ok(code),
            };
            list(bot, json).await
        }
        PiiCommand::Add {
            file,
            description,
            bot,
            json,
        } => {
            let bot = match session_bot(bot.bot, "add", SESSION_BOT_HINT) {
                Ok(bot) => bot,
                Err(code) => return Ok(code),
            };
            add(bot, &file, description, json).await
        }
        PiiCommand::Enable(switch) => set_enabled(switch, "enable", true).await,
        PiiCommand::Disable(switch) => set_enabled(switch, "disable", false).await,
        PiiCommand::Delete(switch) => {
            let bot = match owner_bot(switch.bot, "delete") {
                Ok(bot) => bot,
                Err(code) => return Ok(code),
            };
            let params = PiiFilterParams {
                bot: bot.clone(),
                filter_id: switch.filter_id.clone(),
            };
            let listing = match call_daemon::<PiiDelete>(params, CALL_TIMEOUT, &bot).await? {
                Ok(listing) => listing,
                Err(code) => return Ok(code),
            };
            println!(
                "deleted `{}` (bot `{}`, revision {})",
                switch.filter_id, listing.bot, listing.revision
            );
            Ok(ExitCode::SUCCESS)
        }
        PiiCommand::Test { bot, json } => {
            let bot = match owner_bot(bot, "test") {
                Ok(bot) => bot,
                Err(code) => return Ok(code),
            };
            playground(bot, json).await
        }
        PiiCommand::Redact { bot, defaults } => {
            if defaults {
                return redact_defaults();
            }
            let bot = match session_bot(
                bot,
                "redact",
                "pass `--bot B` (or set `PADDOCK_BOT_ID`), or `--defaults` for the five default filters without a daemon",
            ) {
                Ok(bot) => bot,
                Err(code) => return Ok(code),
            };
            redact(bot).await
        }
    }
}

/// How long a management call may take; `add` compiles, runs may take each plugin's limit.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// Calls method `M` and decodes its answer. `Ok(Err(code))` means the failure was already
/// reported on stderr (daemon not running: exit 3; the daemon refused: exit 1).
async fn call_daemon<M: Method>(
    params: M::Params,
    timeout: Duration,
    bot: &str,
) -> anyhow::Result<Result<M::Output, ExitCode>> {
    use anyhow::Context as _;
    let mut client = match crate::connect_daemon().await? {
        Ok(client) => client,
        Err(code) => return Ok(Err(code)),
    };
    let playground = M::NAME == PiiTest::NAME;
    match client.request::<M>(params, timeout).await {
        Ok(output) => Ok(Ok(output)),
        Err(ControlClientError::Remote(error)) => {
            eprintln!("error: {}", error.message);
            let hint = match error.code {
                ErrorCode::NotFound => Some(format!(
                    "`paddock pii list --bot {bot}` shows the bot's filter ids"
                )),
                ErrorCode::FilterFailed => Some(format!(
                    "nothing was sent; fix the plugin, or disable it with `paddock pii disable ID --bot {bot}`"
                )),
                ErrorCode::CorruptPipeline => Some(
                    "other bots are unaffected; after fixing the file run `paddock daemon restart`"
                        .to_owned(),
                ),
                ErrorCode::InvalidParams if playground => Some(
                    "the playground takes at most 1024 UTF-8 bytes; `paddock pii redact` filters longer text"
                        .to_owned(),
                ),
                _ => None,
            };
            if let Some(hint) = hint {
                eprintln!("hint: {hint}");
            }
            Ok(Err(ExitCode::FAILURE))
        }
        Err(ControlClientError::Malformed(error)) => {
            Err(error).context("the daemon sent an answer this paddock does not understand")
        }
        Err(error) => Err(error).context("calling the daemon"),
    }
}

async fn list(bot: String, json: bool) -> anyhow::Result<ExitCode> {
    let listing = match call_daemon::<PiiList>(
        PiiBotParams { bot: bot.clone() },
        CALL_TIMEOUT,
        &bot,
    )
    .await?
    {
        Ok(listing) => listing,
        Err(code) => return Ok(code),
    };
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string(&listing)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(stdout, "bot {}, revision {}", listing.bot, listing.revision)?;
    if listing.filters.is_empty() {
        writeln!(stdout, "no filters: text passes unchanged")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        stdout,
        "{:<16} {:<8} {:<8} DESCRIPTION",
        "ID", "ENABLED", "KIND"
    )?;
    for filter in &listing.filters {
        writeln!(stdout, "{}", filter_row(filter))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn filter_row(filter: &PiiFilter) -> String {
    let kind = match filter.kind {
        PiiFilterKind::Default => "default",
        PiiFilterKind::Plugin => "plugin",
    };
    let added = filter
        .created_at
        .as_deref()
        .map(|at| format!(" (added {at})"))
        .unwrap_or_default();
    format!(
        "{:<16} {:<8} {:<8} {}{added}",
        filter.id,
        if filter.enabled { "yes" } else { "no" },
        kind,
        filter.description
    )
}

async fn add(
    bot: String,
    file: &Path,
    description: String,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let source = match read_plugin(file) {
        Ok(source) => source,
        Err(message) => {
            eprintln!("error: {message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let params = PiiAddParams {
        bot: bot.clone(),
        source: SensitiveText::new(source),
        description,
    };
    let added = match call_daemon::<PiiAdd>(params, CALL_TIMEOUT, &bot).await? {
        Ok(added) => added,
        Err(code) => return Ok(code),
    };
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string(&added)?)?;
    } else {
        writeln!(stdout, "added {} to bot {}", added.id, bot)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The plugin file as UTF-8, refusing sizes the daemon would refuse anyway before sending them.
fn read_plugin(file: &Path) -> Result<String, String> {
    let limit = paddock_pii::plugin::MAX_SOURCE_BYTES;
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|opened| opened.take(limit as u64 + 1).read_to_end(&mut bytes))
        .map_err(|error| format!("could not read `{}`: {error}", file.display()))?;
    if bytes.len() > limit {
        let len = std::fs::metadata(file).map_or(bytes.len(), |meta| {
            usize::try_from(meta.len()).unwrap_or(usize::MAX)
        });
        return Err(format!(
            "`{}`: {}",
            file.display(),
            paddock_pii::PluginError::TooLarge { len, limit }
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("`{}` is not UTF-8 text", file.display()))
}

async fn set_enabled(
    switch: OwnerSwitch,
    command: &str,
    enabled: bool,
) -> anyhow::Result<ExitCode> {
    let bot = match owner_bot(switch.bot, command) {
        Ok(bot) => bot,
        Err(code) => return Ok(code),
    };
    let params = PiiSetEnabledParams {
        bot: bot.clone(),
        filter_id: switch.filter_id.clone(),
        enabled,
    };
    let listing = match call_daemon::<PiiSetEnabled>(params, CALL_TIMEOUT, &bot).await? {
        Ok(listing) => listing,
        Err(code) => return Ok(code),
    };
    println!(
        "{} `{}` (bot `{}`, revision {})",
        if enabled { "enabled" } else { "disabled" },
        switch.filter_id,
        listing.bot,
        listing.revision
    );
    Ok(ExitCode::SUCCESS)
}

/// Reads the text to filter from stdin; a failure is reported on stderr and becomes exit 1.
fn stdin_text() -> Result<String, ExitCode> {
    read_stdin().map_err(|message| {
        eprintln!("error: {message}");
        ExitCode::FAILURE
    })
}

/// Reads stdin, at most [`MAX_STDIN_BYTES`], as UTF-8.
fn read_stdin() -> Result<String, String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprintln!("reading text from stdin; end it with Ctrl-D");
    }
    let mut bytes = Vec::new();
    stdin
        .lock()
        .take(MAX_STDIN_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("could not read stdin: {error}"))?;
    if bytes.len() > MAX_STDIN_BYTES {
        return Err(format!(
            "stdin holds more than {MAX_STDIN_BYTES} bytes; filter longer text in parts"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "stdin is not UTF-8 text".to_owned())
}

/// Runs a bot's pipeline in the daemon over stdin: the playground (`test`) or a full run.
async fn filter_stdin(
    bot: String,
    playground: bool,
) -> anyhow::Result<Result<PiiRedactResult, ExitCode>> {
    let text = match stdin_text() {
        Ok(text) => SensitiveText::new(text),
        Err(code) => return Ok(Err(code)),
    };
    let params = PiiTextParams {
        bot: bot.clone(),
        text,
    };
    if playground {
        call_daemon::<PiiTest>(params, RUN_TIMEOUT, &bot).await
    } else {
        call_daemon::<PiiRedact>(params, RUN_TIMEOUT, &bot).await
    }
}

async fn playground(bot: String, json: bool) -> anyhow::Result<ExitCode> {
    let result = match filter_stdin(bot, true).await? {
        Ok(result) => result,
        Err(code) => return Ok(code),
    };
    if json {
        return print_redacted(&result);
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(result.text.as_bytes())?;
    stdout.flush()?;
    if result.triggered_filters.is_empty() {
        eprintln!("triggered: none");
    } else {
        eprintln!("triggered: {}", result.triggered_filters.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

async fn redact(bot: String) -> anyhow::Result<ExitCode> {
    match filter_stdin(bot, false).await? {
        Ok(result) => print_redacted(&result),
        Err(code) => Ok(code),
    }
}

/// `redact --defaults`: the five default filters in this process; no daemon, no bot. A filter
/// that fails (runs out of its time) blocks the text like a daemon run would: exit 1, nothing
/// on stdout.
fn redact_defaults() -> anyhow::Result<ExitCode> {
    let text = match stdin_text() {
        Ok(text) => text,
        Err(code) => return Ok(code),
    };
    let redacted = match paddock_pii::redact_defaults(&text) {
        Ok(redacted) => redacted,
        Err(error) => {
            eprintln!("error: {error}");
            eprintln!("hint: nothing was printed; filter the text in smaller parts");
            return Ok(ExitCode::FAILURE);
        }
    };
    print_redacted(&PiiRedactResult {
        text: redacted.text,
        triggered_filters: redacted.triggered_filters,
    })
}

fn print_redacted(result: &PiiRedactResult) -> anyhow::Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", serde_json::to_string(result)?)?;
    Ok(ExitCode::SUCCESS)
}
