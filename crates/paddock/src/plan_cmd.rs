//! `paddock plan run`: replays a plan document (as `exportPlan` writes it) on a fresh web
//! device through the daemon's `getWeb` and `executePlan` tools, and prints each step's
//! outcome.
//!
//! Exit codes: 0 when every step ran and succeeded; 1 when a step failed (or, with
//! `--keep-going`, any did) or the daemon could not run the plan; 2 for input that is wrong
//! before anything runs — a malformed `--var`, a variable given twice, a plan file that cannot
//! be read, is not JSON or is not a plan; 3 when the daemon is not running.
//!
//! Variable values are secrets: they reach the daemon in the `executePlan` call and nowhere
//! else. Every text this command prints that came from the daemon (step errors, the screen at a
//! failure, error messages, `--json` output) has each value replaced by `${NAME}` first.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use paddock_client::SecretString;
use paddock_tools::plan::Plan;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::mcp_client::{McpClient, print_error};

/// Exit code for input that is wrong before anything runs (as clap's usage errors).
const EXIT_USAGE: u8 = 2;

/// How long acquiring the web device may take (a cold pool boots Chromium).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(180);

/// How long a whole replay may take; each step is bounded by the daemon on its own.
const PLAN_TIMEOUT: Duration = Duration::from_secs(60 * 60);

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Replay a plan on a fresh web device and print each step's outcome. Exit 0 when every
    /// step succeeded, 1 when one failed, 2 when the plan file or a `--var` is wrong.
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan document (JSON, schema docs/plan.schema.json); `-` reads it from stdin.
    file: PathBuf,
    /// The web device's emulation profile (`pixel7`, `iphone15`, `desktop`; default: the
    /// daemon's).
    #[arg(long)]
    profile: Option<String>,
    /// A configured app to open before the first step (see the `listApps` tool).
    #[arg(long)]
    app: Option<String>,
    /// A value for one of the plan's variables, e.g. `--var PASSWORD_1=…` (repeatable). Names
    /// are capitals, digits and `_`. Values are never printed; they are visible to `ps`
    /// while the command runs, like any argument.
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = VariableParser)]
    vars: Vec<PlanVariable>,
    /// Run every step even after one fails (default: stop at the first failure).
    #[arg(long)]
    keep_going: bool,
    /// Print `executePlan`'s structured answer as JSON instead of one line per step.
    #[arg(long)]
    json: bool,
}

/// One `--var NAME=VALUE`.
#[derive(Debug, Clone)]
pub struct PlanVariable {
    name: String,
    value: SecretString,
}

/// Whether `name` can be a plan variable: capitals, digits and `_`, as `${NAME}` in a plan.
fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit() || byte == b'_')
}

/// Parses `NAME=VALUE`. The reason for a refusal never quotes the argument: it may be the
/// value itself, written without its name.
fn parse_variable(text: &str) -> Result<PlanVariable, String> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(
            "`--var` takes NAME=VALUE (`--var PASSWORD_1=…`), and this one has no `=`".into(),
        );
    };
    if !is_variable_name(name) {
        return Err(
            "`--var` takes NAME=VALUE, and this NAME is not one: a variable name is capitals, digits and `_` (`PASSWORD_1`)"
                .into(),
        );
    }
    Ok(PlanVariable {
        name: name.to_owned(),
        value: SecretString::new(value),
    })
}

/// clap's parser for `--var`. Its own errors quote the rejected argument, which may hold the
/// value; this one says what is wrong in its own words.
#[derive(Debug, Clone, Copy)]
struct VariableParser;

impl clap::builder::TypedValueParser for VariableParser {
    type Value = PlanVariable;

    fn parse_ref(
        &self,
        command: &clap::Command,
        _argument: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<PlanVariable, clap::Error> {
        let refuse = |reason: &str| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("{reason}\n"),
            )
            .with_cmd(command)
        };
        let text = value
            .to_str()
            .ok_or_else(|| refuse("`--var` must be UTF-8"))?;
        parse_variable(text).map_err(|reason| refuse(&reason))
    }
}

/// Replaces every variable value in daemon-sent text with its `${NAME}`, longest value first
/// (so a value that contains another is replaced whole).
#[derive(Debug, Default)]
struct Redactor {
    values: Vec<(String, SecretString)>,
}

impl Redactor {
    fn new(variables: &[PlanVariable]) -> Self {
        let mut values: Vec<(String, SecretString)> = variables
            .iter()
            .filter(|variable| !variable.value.expose_secret().is_empty())
            .map(|variable| (variable.name.clone(), variable.value.clone()))
            .collect();
        values.sort_by_key(|(_, value)| std::cmp::Reverse(value.expose_secret().len()));
        Self { values }
    }

    fn text(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (name, value) in &self.values {
            text = text.replace(value.expose_secret(), &format!("${{{name}}}"));
        }
        text
    }

    fn json(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.text(text)),
            Value::Array(items) => Value::Array(items.iter().map(|item| self.json(item)).collect()),
            Value::Object(object) => Value::Object(
                object
                    .iter()
                    .map(|(key, value)| (self.text(key), self.json(value)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// `executePlan`'s answer, as far as this command prints it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlanRun {
    ok: bool,
    steps: Vec<StepOutcome>,
    failed_step: Option<usize>,
    observation: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StepOutcome {
    step: usize,
    tool: String,
    ok: bool,
    error: Option<String>,
    duration_ms: u64,
}

pub async fn run(command: PlanCommand) -> anyhow::Result<ExitCode> {
    match command {
        PlanCommand::Run(args) => run_plan(args).await,
    }
}

/// A wrong input before anything ran: the message, a hint, exit 2.
fn usage_error(message: &str, hint: &str) -> ExitCode {
    eprintln!("error: {message}");
    eprintln!("hint: {hint}");
    ExitCode::from(EXIT_USAGE)
}

async fn run_plan(args: RunArgs) -> anyhow::Result<ExitCode> {
    let redactor = Redactor::new(&args.vars);
    let mut variables = BTreeMap::new();
    for variable in &args.vars {
        let value = variable.value.expose_secret().to_owned();
        if variables.insert(variable.name.clone(), value).is_some() {
            return Ok(usage_error(
                &format!("`--var {}` is given twice", variable.name),
                "give each variable once",
            ));
        }
    }
    let plan = match read_plan(&args.file) {
        Ok(plan) => plan,
        Err(error) => {
            return Ok(usage_error(
                &redactor.text(&format!("{error:#}")),
                "a plan is the JSON document `exportPlan` returns (schema: docs/plan.schema.json)",
            ));
        }
    };
    for name in variables.keys() {
        if !plan.variables.contains(name) {
            eprintln!(
                "warning: the plan does not declare `{name}` (it declares: {})",
                if plan.variables.is_empty() {
                    "none".to_owned()
                } else {
                    plan.variables.join(", ")
                }
            );
        }
    }
    let mut client = match McpClient::connect().await? {
        Ok(client) => client,
        Err(code) => return Ok(code),
    };
    let outcome = replay(&mut client, &args, &plan, variables).await;
    client.close().await;
    match outcome {
        Ok(run) => report(&args, &plan, &run, &redactor),
        Err(error) => Ok(print_error(
            &error,
            "the daemon may be of another release: `paddock daemon status` shows its version",
            |text| redactor.text(text),
        )),
    }
}

/// Reads and checks the plan document at `file` (`-`: stdin).
fn read_plan(file: &std::path::Path) -> anyhow::Result<Plan> {
    let (name, text) = if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the plan from stdin")?;
        ("stdin".to_owned(), text)
    } else {
        let name = format!("`{}`", file.display());
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading the plan {name}"))?;
        (name, text)
    };
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("{name} is not JSON"))?;
    Plan::parse(value).map_err(|reason| anyhow::anyhow!("{name}: {reason}"))
}

/// `getWeb`, then `executePlan`, on the client's session.
async fn replay(
    client: &mut McpClient,
    args: &RunArgs,
    plan: &Plan,
    variables: BTreeMap<String, String>,
) -> anyhow::Result<Value> {
    let mut acquire = Map::new();
    if let Some(profile) = &args.profile {
        acquire.insert("profile".into(), json!(profile));
    }
    if let Some(app) = &args.app {
        acquire.insert("app".into(), json!(app));
    }
    client
        .call_tool("getWeb", Value::Object(acquire), ACQUIRE_TIMEOUT)
        .await
        .context("could not get a web device")?;
    let answer = client
        .call_tool(
            "executePlan",
            json!({ "plan": plan, "variables": variables, "stopOnError": !args.keep_going }),
            PLAN_TIMEOUT,
        )
        .await?;
    Ok(answer.structured().clone())
}

/// Prints the run (as JSON, or a line per step and the screen at the first failure) and gives
/// the exit code.
fn report(
    args: &RunArgs,
    plan: &Plan,
    structured: &Value,
    redactor: &Redactor,
) -> anyhow::Result<ExitCode> {
    let run: PlanRun = serde_json::from_value(structured.clone())
        .context("the daemon's `executePlan` answer is not the shape this command reads")?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{}", redactor.json(structured))?;
    } else {
        for step in &run.steps {
            match (&step.error, step.ok) {
                (_, true) => writeln!(
                    stdout,
                    "step {} {} ok {} ms",
                    step.step, step.tool, step.duration_ms
                )?,
                (error, false) => writeln!(
                    stdout,
                    "step {} {} error: {}",
                    step.step,
                    step.tool,
                    redactor.text(error.as_deref().unwrap_or("failed"))
                )?,
            }
        }
        for (index, step) in plan.steps.iter().enumerate().skip(run.steps.len()) {
            writeln!(stdout, "step {} {} not run", index + 1, step.tool)?;
        }
        if let (Some(failed), Some(observation)) = (run.failed_step, &run.observation) {
            writeln!(stdout, "screen at step {failed}:")?;
            for line in redactor.text(observation).lines() {
                writeln!(stdout, "  {line}")?;
            }
        }
    }
    stdout.flush()?;
    drop(stdout);
    if run.ok {
        return Ok(ExitCode::SUCCESS);
    }
    let failed = run.steps.iter().filter(|step| !step.ok).count();
    match run.failed_step {
        Some(first) if args.keep_going => eprintln!(
            "error: {failed} of {} steps failed (the first: step {first})",
            plan.steps.len()
        ),
        Some(first) => eprintln!(
            "error: the plan failed at step {first} of {}",
            plan.steps.len()
        ),
        None => eprintln!(
            "error: the plan did not run to the end ({} of {} steps ran)",
            run.steps.len(),
            plan.steps.len()
        ),
    }
    Ok(ExitCode::FAILURE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_is_a_name_and_a_value_and_a_refusal_never_quotes_it() {
        let variable = parse_variable("PASSWORD_1=hunter2=x").unwrap();
        assert_eq!(variable.name, "PASSWORD_1");
        assert_eq!(variable.value.expose_secret(), "hunter2=x");
        assert!(!format!("{variable:?}").contains("hunter2"));
        assert_eq!(parse_variable("EMPTY=").unwrap().value.expose_secret(), "");
        for bad in [
            "hunter2",
            "password_1=hunter2",
            "=hunter2",
            "PASS WORD=hunter2",
        ] {
            let reason = parse_variable(bad).unwrap_err();
            assert!(reason.contains("`--var`"), "{reason}");
            assert!(!reason.contains("hunter2"), "{reason}");
        }
    }

    #[test]
    fn daemon_text_has_the_values_replaced_by_their_names() {
        let redactor = Redactor::new(&[
            parse_variable("SHORT=hunter").unwrap(),
            parse_variable("LONG=hunter2").unwrap(),
            parse_variable("EMPTY=").unwrap(),
        ]);
        assert_eq!(
            redactor.text("typed hunter2 then hunter"),
            "typed ${LONG} then ${SHORT}"
        );
        let json = redactor.json(&json!({ "steps": [{ "error": "no hunter2 here", "step": 3 }] }));
        assert_eq!(
            json,
            json!({ "steps": [{ "error": "no ${LONG} here", "step": 3 }] })
        );
    }
}
