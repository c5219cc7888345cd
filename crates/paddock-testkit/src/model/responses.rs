//! The OpenAI Responses API: `POST /v1/responses`, JSON or SSE.
//!
//! A streamed reply follows the event order OpenAI's server uses, since clients such as Codex
//! build their state from it: `response.created`, `response.in_progress`, then per output item
//! `response.output_item.added`, its content events (`response.content_part.added`,
//! `response.output_text.delta`…, `response.output_text.done`, `response.content_part.done`,
//! or `response.function_call_arguments.delta`/`.done` for a tool call) and
//! `response.output_item.done` with the whole item, and last `response.completed` carrying the
//! finished response with its usage. Codex acts on `output_item.done` (the whole item) and on
//! `response.completed`; a stream that ends without it counts as a dropped connection.
//!
//! A client may offer tools grouped in a `namespace` tool (Codex puts each MCP server's tools
//! in one, `mcp__<server>`, holding plain `<tool>` functions); a model then calls one with the
//! short `name` and the `namespace` beside it. A scripted call names the tool the way the
//! client qualifies it elsewhere (`mcp__paddock__observe`, as Claude Code names the same tool),
//! and when the request offers a namespace whose `<namespace>__<tool>` is that name, the call
//! goes out in the namespaced shape — so one script drives either client.

use std::io::Write;

use serde_json::{Value, json};

use super::{Pace, Part, Reply, Turn, Wire, respond_json};

const MODEL: &str = "scripted-model";
const INPUT_TOKENS: u64 = 12;
const OUTPUT_TOKENS: u64 = 7;

pub(super) fn answer(
    stream: &mut Wire,
    turn: &Turn,
    pace: &Pace<'_>,
    streaming: bool,
    index: usize,
    offered: &Value,
) -> anyhow::Result<()> {
    let (parts, cut_after) = match &turn.reply {
        Reply::Status(code) => {
            return respond_json(stream, *code, &crate::model::openai_error_body(*code));
        }
        Reply::Parts(parts) => (parts, None),
        Reply::Disconnect {
            parts,
            after_chunks,
        } => (parts, Some(*after_chunks)),
    };
    let response_id = format!("resp_scripted_{index}");
    let items: Vec<Value> = parts
        .iter()
        .enumerate()
        .map(|(position, part)| finished_item(part, index, position, offered))
        .collect();
    if !streaming {
        return respond_json(stream, 200, &response(&response_id, "completed", &items));
    }
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    )?;
    let mut events = Events {
        stream,
        sequence: 0,
    };
    events.send(
        "response.created",
        json!({ "response": response(&response_id, "in_progress", &[]) }),
    )?;
    events.send(
        "response.in_progress",
        json!({ "response": response(&response_id, "in_progress", &[]) }),
    )?;
    let mut sent = 0usize;
    for (output_index, (part, item)) in parts.iter().zip(&items).enumerate() {
        let item_id = item["id"].clone();
        match part {
            Part::Text(chunks) => {
                events.send(
                    "response.output_item.added",
                    json!({ "output_index": output_index, "item": {
                        "id": item_id, "type": "message", "status": "in_progress",
                        "role": "assistant", "content": []
                    } }),
                )?;
                let place =
                    json!({ "item_id": item_id, "output_index": output_index, "content_index": 0 });
                events.send(
                    "response.content_part.added",
                    merged(
                        &place,
                        json!({ "part": { "type": "output_text", "text": "", "annotations": [] } }),
                    ),
                )?;
                for chunk in chunks {
                    if cut_after.is_some_and(|limit| sent >= limit) {
                        // Drop the connection mid-stream, as a failing upstream would.
                        events.stream.cut();
                        return Ok(());
                    }
                    pace.before_chunk(sent)?;
                    events.send(
                        "response.output_text.delta",
                        merged(&place, json!({ "delta": chunk, "logprobs": [] })),
                    )?;
                    sent += 1;
                }
                let text = chunks.concat();
                events.send(
                    "response.output_text.done",
                    merged(&place, json!({ "text": text, "logprobs": [] })),
                )?;
                events.send(
                    "response.content_part.done",
                    merged(
                        &place,
                        json!({ "part": { "type": "output_text", "text": text, "annotations": [] } }),
                    ),
                )?;
            }
            Part::ToolUse { .. } => {
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                added["arguments"] = json!("");
                events.send(
                    "response.output_item.added",
                    json!({ "output_index": output_index, "item": added }),
                )?;
                let place = json!({ "item_id": item_id, "output_index": output_index });
                events.send(
                    "response.function_call_arguments.delta",
                    merged(&place, json!({ "delta": item["arguments"] })),
                )?;
                events.send(
                    "response.function_call_arguments.done",
                    merged(&place, json!({ "arguments": item["arguments"] })),
                )?;
            }
        }
        events.send(
            "response.output_item.done",
            json!({ "output_index": output_index, "item": item }),
        )?;
    }
    events.send(
        "response.completed",
        json!({ "response": response(&response_id, "completed", &items) }),
    )?;
    Ok(())
}

/// Writes numbered SSE events; the event name is repeated as the data's `type`.
struct Events<'a> {
    stream: &'a mut Wire,
    sequence: u64,
}

impl Events<'_> {
    fn send(&mut self, name: &str, data: Value) -> anyhow::Result<()> {
        let data = merged(
            &json!({ "type": name, "sequence_number": self.sequence }),
            data,
        );
        self.sequence += 1;
        write!(self.stream, "event: {name}\ndata: {data}\n\n")?;
        self.stream.flush()?;
        Ok(())
    }
}

/// `base`'s fields followed by `extra`'s (both objects).
fn merged(base: &Value, extra: Value) -> Value {
    let mut object = base.as_object().cloned().unwrap_or_default();
    if let Value::Object(extra) = extra {
        object.extend(extra);
    }
    Value::Object(object)
}

/// The output item a part becomes once finished; `offered` is the request's `tools`.
fn finished_item(part: &Part, turn: usize, position: usize, offered: &Value) -> Value {
    match part {
        Part::Text(chunks) => json!({
            "id": format!("msg_scripted_{turn}_{position}"),
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{ "type": "output_text", "text": chunks.concat(), "annotations": [] }]
        }),
        // The Responses API carries a call's arguments as a JSON string.
        Part::ToolUse { id, name, input } => {
            let mut item = json!({
                "id": format!("fc_scripted_{turn}_{position}"),
                "type": "function_call",
                "status": "completed",
                "call_id": id,
                "name": name,
                "arguments": input.to_string()
            });
            if let Some((namespace, short)) = namespaced(name, offered) {
                item["namespace"] = json!(namespace);
                item["name"] = json!(short);
            }
            item
        }
    }
}

/// `(namespace, tool)` when `offered` holds a `namespace` tool whose name, `__` and one of its
/// functions' names make up `name`.
fn namespaced<'a>(name: &str, offered: &'a Value) -> Option<(&'a str, &'a str)> {
    offered
        .as_array()?
        .iter()
        .filter(|tool| tool["type"] == "namespace")
        .find_map(|namespace| {
            let prefix = namespace["name"].as_str()?;
            let short = name.strip_prefix(prefix)?.strip_prefix("__")?;
            namespace["tools"]
                .as_array()?
                .iter()
                .find_map(|tool| tool["name"].as_str().filter(|offered| *offered == short))
                .map(|short| (prefix, short))
        })
}

fn response(id: &str, status: &str, output: &[Value]) -> Value {
    let usage = if status == "completed" {
        json!({
            "input_tokens": INPUT_TOKENS,
            "input_tokens_details": { "cached_tokens": 0 },
            "output_tokens": OUTPUT_TOKENS,
            "output_tokens_details": { "reasoning_tokens": 0 },
            "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS
        })
    } else {
        Value::Null
    };
    json!({
        "id": id,
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": true,
        "usage": usage
    })
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::TcpStream;
    use std::time::Duration;

    use super::super::{ScriptedModel, Turn};
    use super::*;

    /// Posts `body` to `/v1/responses` and returns the raw HTTP response.
    fn post(model: &ScriptedModel, body: &Value) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", model.port())).unwrap();
        let body = body.to_string();
        write!(
            stream,
            "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    fn with_tools(stream: bool) -> Value {
        json!({
            "model": "scripted-model",
            "stream": stream,
            "input": [{ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "hi" }] }],
            "tools": [{ "type": "function", "name": "shell", "parameters": {} }]
        })
    }

    /// `(event name, data)` for each SSE event in an HTTP response.
    fn events(answer: &str) -> Vec<(String, Value)> {
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        body.split("\n\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| {
                let name = block
                    .lines()
                    .find_map(|line| line.strip_prefix("event: "))
                    .unwrap_or_default()
                    .to_owned();
                let data = block
                    .lines()
                    .find_map(|line| line.strip_prefix("data: "))
                    .unwrap_or("null");
                (name, serde_json::from_str(data).unwrap())
            })
            .collect()
    }

    #[test]
    fn streams_text_in_openai_event_order() {
        let model = ScriptedModel::start(vec![Turn::streamed("hello there")]).unwrap();
        let answer = post(&model, &with_tools(true));
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("Content-Type: text/event-stream"));
        let events = events(&answer);
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        for (position, (name, data)) in events.iter().enumerate() {
            assert_eq!(data["type"], name.as_str());
            assert_eq!(data["sequence_number"], position);
        }
        let deltas: Vec<&str> = events
            .iter()
            .filter(|(name, _)| name == "response.output_text.delta")
            .map(|(_, data)| data["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, ["hello ", "there"]);
        let done = &events[8].1["item"];
        assert_eq!(done["type"], "message");
        assert_eq!(done["role"], "assistant");
        assert_eq!(done["content"][0]["type"], "output_text");
        assert_eq!(done["content"][0]["text"], "hello there");
        let completed = &events[9].1["response"];
        assert_eq!(completed["status"], "completed");
        assert_eq!(completed["id"], events[0].1["response"]["id"]);
        assert_eq!(completed["usage"]["input_tokens"], INPUT_TOKENS);
        assert_eq!(completed["usage"]["output_tokens"], OUTPUT_TOKENS);
        assert_eq!(completed["output"][0], *done);
    }

    #[test]
    fn a_tool_call_is_a_function_call_item_with_string_arguments() {
        let input = json!({ "command": ["bash", "-lc", "echo hi"] });
        let model =
            ScriptedModel::start(vec![Turn::tool("call_1", "shell", input.clone())]).unwrap();
        let events = events(&post(&model, &with_tools(true)));
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let item = &events[5].1["item"];
        assert_eq!(item["type"], "function_call");
        assert_eq!(item["call_id"], "call_1");
        assert_eq!(item["name"], "shell");
        let arguments: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments, input);
        assert!(item.get("namespace").is_none(), "{item}");
    }

    #[test]
    fn a_qualified_call_of_a_namespaced_tool_names_its_namespace() {
        let model = ScriptedModel::start(vec![
            Turn::tool("call_1", "mcp__paddock__observe", json!({})),
            Turn::tool("call_2", "mcp__paddock__missing", json!({})),
        ])
        .unwrap();
        let mut body = with_tools(true);
        body["tools"] = json!([
            { "type": "function", "name": "shell", "parameters": {} },
            { "type": "namespace", "name": "mcp__paddock", "description": "d", "tools": [
                { "type": "function", "name": "observe", "parameters": {} },
            ] },
        ]);
        let first = events(&post(&model, &body));
        let added = &first[2].1["item"];
        let done = &first[5].1["item"];
        for item in [added, done] {
            assert_eq!(item["type"], "function_call");
            assert_eq!(item["namespace"], "mcp__paddock", "{item}");
            assert_eq!(item["name"], "observe", "{item}");
            assert_eq!(item["call_id"], "call_1", "{item}");
        }
        assert_eq!(added["status"], "in_progress");
        assert_eq!(added["arguments"], "");
        assert_eq!(done["arguments"], "{}");
        // A name the namespace does not hold goes out as scripted.
        let done = &events(&post(&model, &body))[5].1["item"];
        assert_eq!(done["name"], "mcp__paddock__missing", "{done}");
        assert!(done.get("namespace").is_none(), "{done}");
    }

    #[test]
    fn answers_json_when_not_streaming() {
        let model = ScriptedModel::start(vec![Turn::text("plain")]).unwrap();
        let answer = post(&model, &with_tools(false));
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let body: Value = serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["object"], "response");
        assert_eq!(body["status"], "completed");
        assert_eq!(body["output"][0]["content"][0]["text"], "plain");
        assert_eq!(body["usage"]["total_tokens"], INPUT_TOKENS + OUTPUT_TOKENS);
    }

    #[test]
    fn errors_use_the_openai_shape() {
        let model = ScriptedModel::start(vec![Turn::status(429), Turn::status(500)]).unwrap();
        let answer = post(&model, &with_tools(true));
        assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
        let body: Value = serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
        assert_eq!(body["error"]["message"], "scripted 429");
        let answer = post(&model, &with_tools(true));
        assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
        let body: Value = serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["error"]["type"], "server_error");
    }

    #[test]
    fn a_disconnect_cuts_the_stream_before_completion() {
        let model = ScriptedModel::start(vec![Turn::disconnect("one two three four", 2)]).unwrap();
        let events = events(&post(&model, &with_tools(true)));
        let deltas = events
            .iter()
            .filter(|(name, _)| name == "response.output_text.delta")
            .count();
        assert_eq!(deltas, 2);
        assert!(
            events.iter().all(
                |(name, _)| name != "response.completed" && name != "response.output_item.done"
            )
        );
    }

    #[test]
    fn a_gated_turn_waits_for_release_and_side_requests_do_not_consume_it() {
        let model = ScriptedModel::start(vec![
            Turn::streamed("slow words")
                .gated()
                .slow(Duration::from_millis(1)),
        ])
        .unwrap();
        // A request without tools (a title, a summary) gets the fallback and leaves the turn.
        let side = post(
            &model,
            &json!({ "model": "scripted-model", "stream": true, "input": "name this" }),
        );
        assert!(side.contains("\"delta\":\"OK\""), "{side}");
        assert_eq!(model.remaining(), 1);
        let waiting = std::thread::spawn({
            let port = model.port();
            move || {
                let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let body = with_tools(true).to_string();
                write!(
                    stream,
                    "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
                let mut answer = String::new();
                stream.read_to_string(&mut answer).unwrap();
                answer
            }
        });
        assert!(
            model
                .wait_streams_started(1, Duration::from_millis(300))
                .is_err(),
            "nothing streams before the gate opens"
        );
        model.release();
        model
            .wait_streams_started(1, Duration::from_secs(30))
            .unwrap();
        let answer = waiting.join().unwrap();
        assert!(answer.contains("slow words"), "{answer}");
    }
}
