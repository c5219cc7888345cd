//! Bots and their inboxes (spec 004, "Inbox layer"): named agents with a stored definition,
//! messages that arrive for them, and what they send. A message for a bot is stored, and the
//! bot is woken — its running session is handed a notice, or a session is opened from its
//! definition — through the bot's manager (`crate::runner`). The notice carries metadata only
//! (`[inbox notice: N new in <ref> from <sender>, latest #<seq>]`); the agent pulls bodies with
//! `paddock inbox pull`, authenticated by its voucher. An outgoing `message send` passes the
//! freshness guard ([`plan_send`], a pure function) and then the bot's PII pipeline, which
//! fails closed; a held or blocked send is saved as a draft.

use std::sync::Arc;

use paddock_client::control::{
    AgentsOpenParams, BotDefinition, BotMessageParams, BotMessageResult, BotParams, BotRemoved,
    BotsListResult, ControlError, ErrorCode, InboxAckParams, InboxCursorResult, InboxEntry,
    InboxPullResult, MessageSendParams, MessageSendResult, OutboxMessage, OutboxResult,
    PiiTextParams, SensitiveText,
};
use paddock_store::{InboxMessage, Store};
use sha2::{Digest as _, Sha256};
use tracing::info;

use crate::agents::AgentsHost;
use crate::pii::PiiHost;

/// Where the owner's messages arrive when no server names a channel.
pub const OWNER_DM: &str = "/.dm/owner";
/// Channel refs that live on the fleet server (an owner's messages through it arrive in
/// `/.dm/owner#fleet`): a send to one goes there, after the freshness guard and the PII
/// pipeline.
const FLEET_SUFFIX: &str = "#fleet";
/// How many unseen messages a held send shows.
const HELD_CONTEXT: usize = 3;
/// The largest message body.
const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// What every bot's session is told at launch, before its own instructions.
const INBOX_INSTRUCTIONS: &str = "Messages for you arrive as `[inbox notice: …]` lines that carry no text. Read them with `paddock inbox pull`, acknowledge them with `paddock inbox ack`, and reply with `paddock message send --target <ref> --file <file>`, where <ref> is the channel the message arrived in.";

/// The freshness guard's decision for an outward action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendPlan {
    /// Nothing arrived that the agent has not seen: let it through.
    Forward,
    /// Messages after the agent's seen boundary: hold the send, show the latest unseen ones.
    Held { unseen: Vec<u64> },
    /// Newer messages exist, and the agent said to continue anyway.
    Bypass,
}

/// Plans a send from the bot's seen boundary and the sequence numbers of its pending messages
/// (`pending` sorted ascending). Pure: the same inputs give the same plan.
pub fn plan_send(seen: u64, pending: &[u64], continue_anyway: bool) -> SendPlan {
    let unseen: Vec<u64> = pending.iter().copied().filter(|seq| *seq > seen).collect();
    match (unseen.is_empty(), continue_anyway) {
        (true, _) => SendPlan::Forward,
        (false, true) => SendPlan::Bypass,
        (false, false) => SendPlan::Held {
            unseen: unseen[unseen.len().saturating_sub(HELD_CONTEXT)..].to_vec(),
        },
    }
}

/// A stable id for one attempted send: the same bot, target, text and seen boundary give the
/// same id, so a retried send is recognisable.
pub fn producer_fact_id(bot: &str, target: &str, text: &str, seen: u64) -> String {
    let mut hasher = Sha256::new();
    for part in [bot, target, text, &seen.to_string()] {
        hasher.update(part.len().to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    format!(
        "pf-{}",
        digest[..8]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect::<String>()
    )
}

/// The metadata-only notice for `pending` (all after the seen boundary), one line per target.
pub fn notice(pending: &[InboxMessage]) -> String {
    let mut targets: Vec<&str> = Vec::new();
    for message in pending {
        if !targets.contains(&message.target.as_str()) {
            targets.push(&message.target);
        }
    }
    targets
        .iter()
        .map(|target| {
            let here: Vec<&InboxMessage> = pending
                .iter()
                .filter(|message| message.target == *target)
                .collect();
            let mut senders: Vec<&str> = Vec::new();
            for message in &here {
                if !senders.contains(&message.sender.as_str()) {
                    senders.push(&message.sender);
                }
            }
            let latest = here.last().map_or(0, |message| message.seq);
            format!(
                "[inbox notice: {} new in {target} from {}, latest #{latest}]",
                here.len(),
                senders.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Channel refs: `/<server>#<handle>/<channel>` or `/.dm/<name>[#<handle>]`.
fn check_target(target: &str) -> Result<(), ControlError> {
    let plain = |part: &str| {
        !part.is_empty()
            && part.len() <= 64
            && part
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"-_.#".contains(&byte))
    };
    let parts: Vec<&str> = target.strip_prefix('/').unwrap_or("").split('/').collect();
    let ok = match parts.as_slice() {
        [".dm", name] => plain(name),
        [server, channel] => plain(server) && server.contains('#') && plain(channel),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(ControlError::new(
            ErrorCode::InvalidParams,
            format!(
                "invalid target `{target}`: use `/<server>#<handle>/<channel>` or `/.dm/<name>` (the owner is `{OWNER_DM}`)"
            ),
        ))
    }
}

/// The daemon's bots. Cheap to clone.
#[derive(Clone)]
pub struct BotsHost {
    store: Arc<Store>,
    agents: AgentsHost,
    pii: PiiHost,
    /// One manager per bot: single flight, coalescing, idle stop, stall detection.
    runners: crate::runner::Runners,
    /// The fleet server's agent data plane, for messages that arrive through the server.
    fleet: crate::fleet_inbox::FleetInbox,
}

impl std::fmt::Debug for BotsHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BotsHost").finish_non_exhaustive()
    }
}

fn store_error(error: paddock_store::StoreError) -> ControlError {
    ControlError::new(ErrorCode::Internal, error.to_string())
}

fn entry(message: &InboxMessage) -> InboxEntry {
    InboxEntry {
        seq: message.seq,
        target: message.target.clone(),
        sender: message.sender.clone(),
        text: message.body.clone(),
        received_at_unix_ms: message.received_at_ms,
    }
}

impl BotsHost {
    pub fn new(
        store: Arc<Store>,
        agents: AgentsHost,
        pii: PiiHost,
        timing: crate::runner::Timing,
        fleet: crate::fleet_inbox::FleetInbox,
    ) -> Self {
        Self {
            runners: crate::runner::Runners::new(agents.clone(), store.clone(), timing),
            store,
            agents,
            pii,
            fleet,
        }
    }

    /// The ids of the defined bots (what the fleet server may address).
    pub async fn ids(&self) -> Vec<String> {
        self.blocking(|store| store.bots())
            .await
            .map(|bots| bots.into_iter().map(|bot| bot.id).collect())
            .unwrap_or_default()
    }

    /// `agent:wake` from the fleet server: takes the waiting messages into the bot's inbox
    /// with its runner key, then wakes it as a local message does.
    pub async fn fleet_wake(&self, bot: &str) -> Result<serde_json::Value, ControlError> {
        let definition = self.definition(bot).await?;
        let taken = self
            .fleet
            .take(bot, &self.store)
            .await
            .map_err(|error| ControlError::new(ErrorCode::Internal, error.to_string()))?;
        let session = match taken.last() {
            Some(seq) => self.wake(&definition, *seq),
            None => self.agents.running_for_bot(bot),
        };
        info!(bot, taken = taken.len(), "woken by the fleet server");
        Ok(serde_json::json!({ "taken": taken.len(), "session": session }))
    }

    /// `agent:stop` from the fleet server: stops the bot's running session, if any.
    pub async fn fleet_stop(&self, bot: &str) -> Result<serde_json::Value, ControlError> {
        self.definition(bot).await?;
        let Some(id) = self.agents.running_for_bot(bot) else {
            return Ok(serde_json::json!({ "stopped": false }));
        };
        self.agents
            .stop(paddock_client::control::AgentsStopParams {
                id: id.clone(),
                reason: Some("stopped through the fleet server".to_owned()),
                force_after_ms: None,
            })
            .await?;
        info!(bot, session = %id, "stopped by the fleet server");
        Ok(serde_json::json!({ "stopped": true, "session": id }))
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Store) -> Result<T, paddock_store::StoreError> + Send + 'static,
    ) -> Result<T, ControlError> {
        self.store.blocking(work).await.map_err(store_error)
    }

    /// `bots/add`.
    pub async fn add(&self, bot: BotDefinition) -> Result<BotDefinition, ControlError> {
        crate::agents::check_bot(&bot.id)?;
        if paddock_agents::BackendId::parse(&bot.backend).is_none() {
            return Err(ControlError::new(
                ErrorCode::InvalidParams,
                format!(
                    "unknown backend `{}`; known: claude, codex, opencode, pi, cursor",
                    bot.backend
                ),
            ));
        }
        if !bot.cwd.is_absolute() {
            return Err(ControlError::new(
                ErrorCode::InvalidParams,
                format!(
                    "the working directory `{}` must be absolute",
                    bot.cwd.display()
                ),
            ));
        }
        let stored = paddock_store::BotDefinition {
            id: bot.id.clone(),
            backend: bot.backend.clone(),
            model: bot.model.clone(),
            cwd: bot.cwd.display().to_string(),
            instructions: bot.instructions.clone(),
            mode: bot.mode.clone().unwrap_or_else(|| "default".to_owned()),
            permissions: bot.permissions.clone().unwrap_or_else(|| "deny".to_owned()),
            sandbox: bot
                .sandbox
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(|error| ControlError::new(ErrorCode::Internal, error.to_string()))?,
            created_at_ms: 0,
        };
        self.blocking(move |store| store.put_bot(&stored)).await?;
        info!(bot = %bot.id, backend = %bot.backend, "bot defined");
        Ok(bot)
    }

    /// `bots/remove`.
    pub async fn remove(&self, params: BotParams) -> Result<BotRemoved, ControlError> {
        let bot = params.bot.clone();
        let removed = self.blocking(move |store| store.remove_bot(&bot)).await?;
        Ok(BotRemoved {
            bot: params.bot,
            removed,
        })
    }

    /// `bots/list`.
    pub async fn list(&self) -> Result<BotsListResult, ControlError> {
        let bots = self.blocking(|store| store.bots()).await?;
        Ok(BotsListResult {
            bots: bots.into_iter().map(definition).collect(),
        })
    }

    async fn definition(&self, bot: &str) -> Result<paddock_store::BotDefinition, ControlError> {
        let id = bot.to_owned();
        self.blocking(move |store| store.bot(&id))
            .await?
            .ok_or_else(|| {
                ControlError::new(
                    ErrorCode::NotFound,
                    format!("no bot `{bot}`\nhint: define it with `paddock bot add {bot} …`"),
                )
            })
    }

    /// `bots/message`: stores the owner's message and wakes the bot with a notice.
    pub async fn message(
        &self,
        params: BotMessageParams,
    ) -> Result<BotMessageResult, ControlError> {
        let definition = self.definition(&params.bot).await?;
        let target = params.target.clone().unwrap_or_else(|| OWNER_DM.to_owned());
        check_target(&target)?;
        let text = params.text.expose().to_owned();
        if text.len() > MAX_MESSAGE_BYTES {
            return Err(ControlError::new(
                ErrorCode::InvalidParams,
                format!("a message may hold at most {MAX_MESSAGE_BYTES} bytes"),
            ));
        }
        let bot = params.bot.clone();
        let seq = self
            .blocking(move |store| store.inbox_append(&bot, &target, "owner", &text))
            .await?;
        let session = self.wake(&definition, seq);
        info!(bot = %definition.id, seq, "message for a bot");
        Ok(BotMessageResult { seq, session })
    }

    /// Hands the message to the bot's manager (`crate::runner`): it starts a session from the
    /// definition when none runs, and delivers one notice of everything unseen at the next
    /// safe boundary. Returns the session running now, if any.
    fn wake(&self, definition: &paddock_store::BotDefinition, seq: u64) -> Option<String> {
        let instructions = match &definition.instructions {
            Some(own) => format!("{INBOX_INSTRUCTIONS}\n\n{own}"),
            None => INBOX_INSTRUCTIONS.to_owned(),
        };
        let launch = crate::runner::Launch {
            open: AgentsOpenParams {
                backend: definition.backend.clone(),
                cwd: definition.cwd.clone().into(),
                model: definition.model.clone(),
                mode: Some(definition.mode.clone()),
                instructions: Some(instructions),
                env: Vec::new(),
                bot: Some(definition.id.clone()),
                permissions: Some(definition.permissions.clone()),
                upstream: None,
                prompt: None,
                sandbox: stored_sandbox(definition.sandbox.as_deref()),
            },
        };
        self.runners
            .message(&definition.id, seq.to_string(), launch);
        self.agents.running_for_bot(&definition.id)
    }

    /// `bots/outbox`.
    pub async fn outbox(&self, params: BotParams) -> Result<OutboxResult, ControlError> {
        let bot = params.bot.clone();
        let entries = self.blocking(move |store| store.outbox(&bot)).await?;
        Ok(OutboxResult {
            bot: params.bot,
            messages: entries
                .into_iter()
                .map(|entry| OutboxMessage {
                    id: entry.id,
                    target: entry.target,
                    text: entry.body,
                    state: entry.state,
                    reason: entry.reason,
                    producer_fact_id: entry.producer_fact_id,
                    created_at_unix_ms: entry.created_at_ms,
                })
                .collect(),
        })
    }

    /// `inbox/pull` for `bot` (the session's own): unseen messages with bodies; now seen.
    pub async fn pull(&self, bot: &str) -> Result<InboxPullResult, ControlError> {
        // Anything still on the fleet server (a wake that never came) first.
        match self.fleet.take(bot, &self.store).await {
            Ok(_) | Err(crate::fleet_inbox::FleetInboxError::NotJoined) => {}
            Err(error) => {
                tracing::warn!(bot, %error, "could not take the bot's messages from the fleet server");
            }
        }
        let id = bot.to_owned();
        let (messages, cursor) = self
            .blocking(move |store| {
                let cursor = store.inbox_cursor(&id)?;
                let messages = store.inbox_after(&id, cursor.seen)?;
                let seen = messages.last().map_or(cursor.seen, |message| message.seq);
                let cursor = store.inbox_advance(&id, seen, 0)?;
                Ok((messages, cursor))
            })
            .await?;
        Ok(InboxPullResult {
            bot: bot.to_owned(),
            messages: messages.iter().map(entry).collect(),
            seen: cursor.seen,
            acked: cursor.acked,
        })
    }

    /// `inbox/ack` for `bot`.
    pub async fn ack(
        &self,
        bot: &str,
        params: InboxAckParams,
    ) -> Result<InboxCursorResult, ControlError> {
        let id = bot.to_owned();
        let cursor = self
            .blocking(move |store| {
                let cursor = store.inbox_cursor(&id)?;
                let upto = params.upto.unwrap_or(cursor.seen).min(cursor.seen);
                store.inbox_advance(&id, 0, upto)
            })
            .await?;
        Ok(InboxCursorResult {
            bot: bot.to_owned(),
            seen: cursor.seen,
            acked: cursor.acked,
        })
    }

    /// `message/send` for `bot`: freshness guard, then the bot's PII pipeline (fail closed).
    pub async fn send(
        &self,
        bot: &str,
        params: MessageSendParams,
    ) -> Result<MessageSendResult, ControlError> {
        check_target(&params.target)?;
        let text = params.text.expose().to_owned();
        if text.len() > MAX_MESSAGE_BYTES {
            return Err(ControlError::new(
                ErrorCode::InvalidParams,
                format!("a message may hold at most {MAX_MESSAGE_BYTES} bytes"),
            ));
        }
        let id = bot.to_owned();
        let (cursor, pending) = self
            .blocking(move |store| {
                let cursor = store.inbox_cursor(&id)?;
                let pending = store.inbox_after(&id, cursor.seen)?;
                Ok((cursor, pending))
            })
            .await?;
        let seqs: Vec<u64> = pending.iter().map(|message| message.seq).collect();
        let plan = plan_send(cursor.seen, &seqs, params.continue_anyway);
        let fact = producer_fact_id(bot, &params.target, &text, cursor.seen);
        let plan_name = match &plan {
            SendPlan::Forward => "forward",
            SendPlan::Held { .. } => "held",
            SendPlan::Bypass => "bypass",
        };
        if let SendPlan::Held { unseen } = &plan {
            let reason = format!(
                "{} message(s) arrived that you have not seen (latest #{}): run `paddock inbox pull`, then send again (or pass --continue-anyway)",
                seqs.len(),
                seqs.last().copied().unwrap_or(0)
            );
            self.draft(bot, &params.target, &text, "held", &reason, &fact)
                .await?;
            return Ok(MessageSendResult {
                state: "held".to_owned(),
                plan: plan_name.to_owned(),
                producer_fact_id: fact,
                reason: Some(reason),
                unseen: pending
                    .iter()
                    .filter(|message| unseen.contains(&message.seq))
                    .map(entry)
                    .collect(),
                triggered_filters: Vec::new(),
            });
        }
        let filtered = self
            .pii
            .redact(PiiTextParams {
                bot: bot.to_owned(),
                text: SensitiveText::new(text.clone()),
            })
            .await;
        let redacted = match filtered {
            Ok(redacted) => redacted,
            Err(error) => {
                let reason = format!(
                    "the bot's PII pipeline failed, so nothing was sent: {}",
                    error.message
                );
                return self
                    .blocked(
                        bot,
                        &params.target,
                        &text,
                        reason,
                        fact,
                        plan_name,
                        Vec::new(),
                    )
                    .await;
            }
        };
        if params.target.ends_with(FLEET_SUFFIX)
            && let Err(error) = self.fleet.send(bot, &params.target, &redacted.text).await
        {
            let reason = format!("the fleet server did not take the message: {error}");
            return self
                .blocked(
                    bot,
                    &params.target,
                    &redacted.text,
                    reason,
                    fact,
                    plan_name,
                    redacted.triggered_filters,
                )
                .await;
        }
        let (id, target, sent, fact_id) = (
            bot.to_owned(),
            params.target.clone(),
            redacted.text.clone(),
            fact.clone(),
        );
        self.blocking(move |store| store.outbox_add(&id, &target, &sent, "sent", None, &fact_id))
            .await?;
        info!(bot, target = %params.target, plan = plan_name, "message sent");
        Ok(MessageSendResult {
            state: "sent".to_owned(),
            plan: plan_name.to_owned(),
            producer_fact_id: fact,
            reason: None,
            unseen: Vec::new(),
            triggered_filters: redacted.triggered_filters,
        })
    }

    /// Saves `text` as a `blocked` draft with `reason` and answers the send with it.
    #[expect(
        clippy::too_many_arguments,
        reason = "the parts of one answer, all required"
    )]
    async fn blocked(
        &self,
        bot: &str,
        target: &str,
        text: &str,
        reason: String,
        fact: String,
        plan: &str,
        triggered_filters: Vec<String>,
    ) -> Result<MessageSendResult, ControlError> {
        self.draft(bot, target, text, "blocked", &reason, &fact)
            .await?;
        Ok(MessageSendResult {
            state: "blocked".to_owned(),
            plan: plan.to_owned(),
            producer_fact_id: fact,
            reason: Some(reason),
            unseen: Vec::new(),
            triggered_filters,
        })
    }

    async fn draft(
        &self,
        bot: &str,
        target: &str,
        text: &str,
        state: &'static str,
        reason: &str,
        fact: &str,
    ) -> Result<(), ControlError> {
        let (bot, target, text, reason, fact) = (
            bot.to_owned(),
            target.to_owned(),
            text.to_owned(),
            reason.to_owned(),
            fact.to_owned(),
        );
        self.blocking(move |store| {
            store.outbox_add(&bot, &target, &text, state, Some(&reason), &fact)
        })
        .await
        .map(drop)
    }
}

fn definition(bot: paddock_store::BotDefinition) -> BotDefinition {
    BotDefinition {
        id: bot.id,
        backend: bot.backend,
        model: bot.model,
        cwd: bot.cwd.into(),
        instructions: bot.instructions,
        mode: Some(bot.mode),
        permissions: Some(bot.permissions),
        sandbox: stored_sandbox(bot.sandbox.as_deref()),
    }
}

/// A bot's stored sandbox setting (written by `bots/add`, so it parses; anything else is the
/// daemon's default).
fn stored_sandbox(json: Option<&str>) -> Option<paddock_client::control::AgentSandbox> {
    json.and_then(|json| serde_json::from_str(json).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(seq: u64, target: &str, sender: &str) -> InboxMessage {
        InboxMessage {
            seq,
            target: target.to_owned(),
            sender: sender.to_owned(),
            body: "a body that never reaches the notice".to_owned(),
            received_at_ms: 0,
        }
    }

    #[test]
    fn the_notice_is_metadata_only_one_line_per_target() {
        let pending = [
            message(3, OWNER_DM, "owner"),
            message(4, "/acme#42/general", "ada"),
            message(5, OWNER_DM, "owner"),
            message(6, "/acme#42/general", "grace"),
        ];
        assert_eq!(
            notice(&pending),
            "[inbox notice: 2 new in /.dm/owner from owner, latest #5]\n[inbox notice: 2 new in /acme#42/general from ada, grace, latest #6]"
        );
        assert!(!notice(&pending).contains("body"));
    }

    #[test]
    fn the_freshness_guard_forwards_holds_or_bypasses() {
        assert_eq!(plan_send(5, &[], false), SendPlan::Forward);
        assert_eq!(plan_send(5, &[3, 4, 5], false), SendPlan::Forward);
        assert_eq!(
            plan_send(5, &[6, 7, 8, 9], false),
            SendPlan::Held {
                unseen: vec![7, 8, 9]
            }
        );
        assert_eq!(plan_send(5, &[6], true), SendPlan::Bypass);
    }

    #[test]
    fn the_producer_fact_id_is_stable_and_tells_inputs_apart() {
        let one = producer_fact_id("helper", OWNER_DM, "hi", 4);
        assert_eq!(one, producer_fact_id("helper", OWNER_DM, "hi", 4));
        assert_ne!(one, producer_fact_id("helper", OWNER_DM, "hi", 5));
        assert_ne!(one, producer_fact_id("helper", OWNER_DM, "hi!", 4));
        assert_ne!(
            producer_fact_id("ab", "c", "", 0),
            producer_fact_id("a", "bc", "", 0)
        );
        assert!(one.starts_with("pf-") && one.len() == 19, "{one}");
    }

    #[test]
    fn targets_are_channel_refs() {
        for good in [OWNER_DM, "/.dm/ada#7", "/acme#42/general"] {
            assert!(check_target(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "owner",
            "/acme/general",
            "/.dm/",
            "/a#1/b/c",
            "/.dm/../x",
        ] {
            assert!(check_target(bad).is_err(), "{bad}");
        }
    }
}
