//! OpenAI Chat Completions: `POST /v1/chat/completions`, JSON or SSE.

use std::net::TcpStream;

use serde_json::json;

use super::{Turn, respond_json};

pub(super) fn answer(
    stream: &mut TcpStream,
    _turn: &Turn,
    _streaming: bool,
    _index: usize,
) -> anyhow::Result<()> {
    respond_json(
        stream,
        501,
        &json!({ "error": { "type": "not_implemented", "message": "scripted server: renderer not written yet" } }),
    )
}
