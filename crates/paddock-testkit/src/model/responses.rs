//! The OpenAI Responses API: `POST /v1/responses`, JSON or SSE.

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
