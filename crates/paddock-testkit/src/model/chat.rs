//! OpenAI Chat Completions: `POST /v1/chat/completions`, JSON or SSE.
//!
//! A stream is a run of `data: {chat.completion.chunk}` lines: the assistant role, text in
//! `choices[0].delta.content`, tool calls in `choices[0].delta.tool_calls` (the id and name
//! first, then the arguments), a chunk carrying `finish_reason`, a usage chunk with no
//! choices, and `data: [DONE]`.

use std::io::Write;

use serde_json::{Value, json};

use super::{Pace, Part, Reply, Turn, Wire, respond_json};

const MODEL: &str = "scripted-model";

fn finish_reason(parts: &[Part]) -> &'static str {
    if parts
        .iter()
        .any(|part| matches!(part, Part::ToolUse { .. }))
    {
        "tool_calls"
    } else {
        "stop"
    }
}

fn usage() -> Value {
    json!({ "prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19 })
}

/// The whole reply as one `chat.completion` object.
fn completion(parts: &[Part], id: &str) -> Value {
    let text: String = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(chunks) => Some(chunks.concat()),
            Part::ToolUse { .. } => None,
        })
        .collect();
    let tool_calls: Vec<Value> = parts
        .iter()
        .filter_map(|part| match part {
            Part::ToolUse { id, name, input } => Some(json!({
                "id": id, "type": "function",
                "function": { "name": name, "arguments": input.to_string() }
            })),
            Part::Text(_) => None,
        })
        .collect();
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() && !tool_calls.is_empty() { Value::Null } else { json!(text) },
    });
    if !tool_calls.is_empty() {
        message["tool_calls"] = json!(tool_calls);
    }
    json!({
        "id": id, "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{ "index": 0, "message": message, "finish_reason": finish_reason(parts) }],
        "usage": usage(),
    })
}

/// The chunks of a streamed reply, without the `[DONE]` marker. Each entry is one `data:`
/// line; the bool says whether it carries a scripted text or tool chunk (what
/// [`Reply::Disconnect`] counts).
fn chunks(parts: &[Part], id: &str) -> Vec<(Value, bool)> {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": MODEL,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        })
    };
    let mut out = vec![(
        chunk(json!({ "role": "assistant", "content": "" }), Value::Null),
        false,
    )];
    let mut tool_index = 0usize;
    for part in parts {
        match part {
            Part::Text(texts) => {
                for text in texts {
                    out.push((chunk(json!({ "content": text }), Value::Null), true));
                }
            }
            Part::ToolUse { id, name, input } => {
                out.push((
                    chunk(
                        json!({ "tool_calls": [{ "index": tool_index, "id": id, "type": "function",
                            "function": { "name": name, "arguments": "" } }] }),
                        Value::Null,
                    ),
                    true,
                ));
                out.push((
                    chunk(
                        json!({ "tool_calls": [{ "index": tool_index,
                            "function": { "arguments": input.to_string() } }] }),
                        Value::Null,
                    ),
                    true,
                ));
                tool_index += 1;
            }
        }
    }
    out.push((chunk(json!({}), json!(finish_reason(parts))), false));
    out.push((
        json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": MODEL,
            "choices": [], "usage": usage(),
        }),
        false,
    ));
    out
}

pub(super) fn answer(
    stream: &mut Wire,
    turn: &Turn,
    pace: &Pace<'_>,
    streaming: bool,
    index: usize,
) -> anyhow::Result<()> {
    let parts = match &turn.reply {
        Reply::Status(code) => {
            return respond_json(stream, *code, &crate::model::openai_error_body(*code));
        }
        Reply::Parts(parts) | Reply::Disconnect { parts, .. } => parts,
    };
    let cut_after = match &turn.reply {
        Reply::Disconnect { after_chunks, .. } => Some(*after_chunks),
        _ => None,
    };
    let id = format!("chatcmpl-scripted-{index}");
    if !streaming {
        return respond_json(stream, 200, &completion(parts, &id));
    }
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )?;
    let mut sent = 0usize;
    for (data, scripted) in chunks(parts, &id) {
        if scripted {
            if cut_after.is_some_and(|limit| sent >= limit) {
                // Drop the connection mid-stream, as a failing upstream would.
                stream.cut();
                return Ok(());
            }
            pace.before_chunk(sent)?;
            sent += 1;
        }
        write!(stream, "data: {data}\n\n")?;
        stream.flush()?;
    }
    write!(stream, "data: [DONE]\n\n")?;
    stream.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::TcpStream;

    use super::*;

    fn tool() -> Part {
        Part::ToolUse {
            id: "call_1".into(),
            name: "bash".into(),
            input: json!({ "command": "ls" }),
        }
    }

    #[test]
    fn a_text_stream_ends_with_stop_and_usage() {
        let chunks = chunks(&[Part::Text(vec!["Hel".into(), "lo".into()])], "chatcmpl-1");
        assert_eq!(chunks[0].0["choices"][0]["delta"]["role"], "assistant");
        let text: String = chunks
            .iter()
            .filter_map(|(chunk, _)| chunk["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "Hello");
        assert_eq!(chunks.iter().filter(|(_, scripted)| *scripted).count(), 2);
        let finish = &chunks[chunks.len() - 2].0;
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
        assert_eq!(finish["object"], "chat.completion.chunk");
        let usage = &chunks[chunks.len() - 1].0;
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["total_tokens"], 19);
    }

    #[test]
    fn a_tool_call_streams_its_id_and_name_then_its_arguments() {
        let chunks = chunks(&[tool()], "chatcmpl-2");
        let calls: Vec<&Value> = chunks
            .iter()
            .filter_map(|(chunk, _)| chunk["choices"][0]["delta"]["tool_calls"].get(0))
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0]["id"], "call_1");
        assert_eq!(calls[0]["type"], "function");
        assert_eq!(calls[0]["function"]["name"], "bash");
        assert_eq!(calls[1]["index"], 0);
        let arguments: String = calls
            .iter()
            .filter_map(|call| call["function"]["arguments"].as_str())
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&arguments).unwrap(),
            json!({ "command": "ls" })
        );
        assert_eq!(
            chunks[chunks.len() - 2].0["choices"][0]["finish_reason"],
            "tool_calls"
        );
    }

    #[test]
    fn a_json_completion_carries_text_or_tool_calls() {
        let text = completion(&[Part::Text(vec!["a ".into(), "b".into()])], "x");
        assert_eq!(text["choices"][0]["message"]["content"], "a b");
        assert_eq!(text["choices"][0]["finish_reason"], "stop");
        assert!(text["choices"][0]["message"].get("tool_calls").is_none());
        let call = completion(&[tool()], "y");
        assert_eq!(call["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(
            call["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            r#"{"command":"ls"}"#
        );
        assert_eq!(call["choices"][0]["finish_reason"], "tool_calls");
    }

    #[test]
    fn errors_take_openais_shape() {
        let body = crate::model::openai_error_body(429);
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
        assert_eq!(body["error"]["message"], "scripted 429");
        assert_eq!(
            crate::model::openai_error_body(500)["error"]["type"],
            "server_error"
        );
    }

    /// Posts `body` to the scripted server on `port` and returns the raw response.
    fn post_to(port: u16, body: &Value) -> String {
        use std::io::Read;
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let body = body.to_string();
        write!(
            stream,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
    }

    fn post(model: &super::super::ScriptedModel, body: &Value) -> String {
        post_to(model.port(), body)
    }

    fn request(stream: bool) -> Value {
        json!({ "model": MODEL, "stream": stream, "messages": [{ "role": "user", "content": "hi" }],
            "tools": [{ "type": "function", "function": { "name": "bash", "parameters": {} } }] })
    }

    fn data_lines(response: &str) -> Vec<&str> {
        response
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .collect()
    }

    #[test]
    fn served_over_http_with_gates_statuses_and_disconnects() {
        use super::super::{ScriptedModel, Turn};
        let model = ScriptedModel::start(vec![
            Turn::streamed("one two").gated(),
            Turn::status(429),
            Turn::disconnect("a b c d", 2),
            Turn::text("whole"),
        ])
        .unwrap();
        // The gated turn answers only after release.
        let waiting = {
            let port = model.port();
            std::thread::spawn(move || post_to(port, &request(true)))
        };
        assert!(
            model
                .wait_streams_started(1, std::time::Duration::from_millis(300))
                .is_err(),
            "a gated turn waits"
        );
        model.release();
        let streamed = waiting.join().unwrap();
        assert!(streamed.starts_with("HTTP/1.1 200"), "{streamed}");
        assert!(streamed.contains("text/event-stream"));
        let lines = data_lines(&streamed);
        assert_eq!(lines.last(), Some(&"[DONE]"));
        let text: String = lines
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter_map(|chunk| {
                chunk["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(text, "one two");

        let limited = post(&model, &request(true));
        assert!(limited.starts_with("HTTP/1.1 429"), "{limited}");
        assert!(
            limited.contains(r#""code":"rate_limit_exceeded""#),
            "{limited}"
        );

        let cut = post(&model, &request(true));
        let lines = data_lines(&cut);
        assert!(!lines.contains(&"[DONE]"), "{cut}");
        let deltas = lines
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|chunk| {
                chunk["choices"][0]["delta"]["content"]
                    .as_str()
                    .is_some_and(|t| !t.is_empty())
            })
            .count();
        assert_eq!(deltas, 2, "{cut}");

        let whole = post(&model, &request(false));
        let body = whole.split("\r\n\r\n").nth(1).unwrap();
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["choices"][0]["message"]["content"], "whole");
    }
}
