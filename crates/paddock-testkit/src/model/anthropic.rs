//! The Anthropic Messages API: `POST /v1/messages`, JSON or SSE.

use super::*;

pub(super) fn answer(
    stream: &mut Wire,
    turn: &Turn,
    pace: &Pace<'_>,
    streaming: bool,
    index: usize,
) -> anyhow::Result<()> {
    let parts = match &turn.reply {
        Reply::Status(code) => {
            let kind = match code {
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            return respond_json(
                stream,
                *code,
                &json!({ "type": "error", "error": { "type": kind, "message": format!("scripted {code}") } }),
            );
        }
        Reply::Parts(parts) | Reply::Disconnect { parts, .. } => parts,
    };
    let cut_after = match &turn.reply {
        Reply::Disconnect { after_chunks, .. } => Some(*after_chunks),
        _ => None,
    };
    let stop_reason = if parts
        .iter()
        .any(|part| matches!(part, Part::ToolUse { .. }))
    {
        "tool_use"
    } else {
        "end_turn"
    };
    let message_id = format!("msg_scripted_{index}");
    if !streaming {
        let content: Vec<Value> = parts
            .iter()
            .map(|part| match part {
                Part::Text(chunks) => json!({ "type": "text", "text": chunks.concat() }),
                Part::ToolUse { id, name, input } => {
                    json!({ "type": "tool_use", "id": id, "name": name, "input": input })
                }
            })
            .collect();
        return respond_json(
            stream,
            200,
            &json!({
                "id": message_id, "type": "message", "role": "assistant", "model": "scripted-model",
                "content": content, "stop_reason": stop_reason, "stop_sequence": null,
                "usage": { "input_tokens": 12, "output_tokens": 7 }
            }),
        );
    }
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )?;
    let mut sent = 0usize;
    let event = |stream: &mut Wire, name: &str, data: Value| -> anyhow::Result<bool> {
        write!(stream, "event: {name}\ndata: {data}\n\n")?;
        stream.flush()?;
        Ok(true)
    };
    event(
        stream,
        "message_start",
        json!({ "type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": "scripted-model",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": { "input_tokens": 12, "output_tokens": 1 } } }),
    )?;
    for (block, part) in parts.iter().enumerate() {
        match part {
            Part::Text(chunks) => {
                event(
                    stream,
                    "content_block_start",
                    json!({ "type": "content_block_start", "index": block, "content_block": { "type": "text", "text": "" } }),
                )?;
                for chunk in chunks {
                    if cut_after.is_some_and(|limit| sent >= limit) {
                        // Drop the connection mid-stream, as a failing upstream would.
                        stream.cut();
                        return Ok(());
                    }
                    pace.before_chunk(sent)?;
                    event(
                        stream,
                        "content_block_delta",
                        json!({ "type": "content_block_delta", "index": block, "delta": { "type": "text_delta", "text": chunk } }),
                    )?;
                    sent += 1;
                }
                event(
                    stream,
                    "content_block_stop",
                    json!({ "type": "content_block_stop", "index": block }),
                )?;
            }
            Part::ToolUse { id, name, input } => {
                event(
                    stream,
                    "content_block_start",
                    json!({ "type": "content_block_start", "index": block, "content_block": { "type": "tool_use", "id": id, "name": name, "input": {} } }),
                )?;
                event(
                    stream,
                    "content_block_delta",
                    json!({ "type": "content_block_delta", "index": block, "delta": { "type": "input_json_delta", "partial_json": input.to_string() } }),
                )?;
                event(
                    stream,
                    "content_block_stop",
                    json!({ "type": "content_block_stop", "index": block }),
                )?;
            }
        }
    }
    event(
        stream,
        "message_delta",
        json!({ "type": "message_delta", "delta": { "stop_reason": stop_reason, "stop_sequence": null }, "usage": { "output_tokens": 7 } }),
    )?;
    event(stream, "message_stop", json!({ "type": "message_stop" }))?;
    Ok(())
}
