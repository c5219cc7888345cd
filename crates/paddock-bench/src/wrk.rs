//! Driving `wrk` and reading its report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail};

#[derive(Debug, Clone)]
pub struct Load {
    pub threads: u32,
    pub connections: u32,
    pub duration: Duration,
}

impl Load {
    pub fn warmup(&self) -> Self {
        Self {
            duration: Duration::from_secs(2),
            ..self.clone()
        }
    }

    /// A one-second run that checks a server's answers before it is measured.
    pub fn check(&self) -> Self {
        Self {
            duration: Duration::from_secs(1),
            ..self.clone()
        }
    }
}

/// Throughput and latency of one run.
#[derive(Debug, Clone)]
pub struct Summary {
    pub requests_per_sec: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub non_2xx: u64,
    /// Connect, read, write errors and timeouts.
    pub socket_errors: u64,
    /// Responses whose body lacked the expected text; only reported by scripts written with
    /// [`Script::expect_body`].
    pub unexpected_bodies: Option<u64>,
}

impl Summary {
    /// The run with the highest throughput.
    pub fn best(runs: &[Summary]) -> anyhow::Result<Summary> {
        runs.iter()
            .max_by(|a, b| a.requests_per_sec.total_cmp(&b.requests_per_sec))
            .cloned()
            .context("no runs")
    }
}

pub fn check_installed() -> anyhow::Result<()> {
    match Command::new("wrk").arg("--version").output() {
        Ok(_) => Ok(()),
        Err(_) => bail!("`wrk` is not installed\nhint: apt-get install wrk"),
    }
}

/// The request wrk sends, written as a Lua script. The default is a plain `GET`.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub method: Option<String>,
    pub body: Option<String>,
    pub headers: Vec<(String, String)>,
    /// A token file read when wrk starts and sent as `Authorization: Bearer <token>`, so the
    /// token never appears in wrk's argument list.
    pub bearer_token_file: Option<PathBuf>,
    /// Counts responses whose body lacks this text and reports the count. Only for check runs:
    /// handing every body to Lua slows wrk down.
    pub expect_body: Option<String>,
}

impl Script {
    pub fn to_lua(&self) -> String {
        let mut lua = String::new();
        if let Some(path) = &self.bearer_token_file {
            let path = lua_string(&path.display().to_string());
            // `writeln!` into a String cannot fail.
            let _ = writeln!(
                lua,
                "local f = assert(io.open({path}, \"r\"))\nlocal token = f:read(\"*l\")\nf:close()\nwrk.headers[\"Authorization\"] = \"Bearer \" .. token"
            );
        }
        if let Some(method) = &self.method {
            let _ = writeln!(lua, "wrk.method = {}", lua_string(method));
        }
        if let Some(body) = &self.body {
            let _ = writeln!(lua, "wrk.body = {}", lua_string(body));
        }
        for (name, value) in &self.headers {
            let _ = writeln!(
                lua,
                "wrk.headers[{}] = {}",
                lua_string(name),
                lua_string(value)
            );
        }
        if let Some(expected) = &self.expect_body {
            // Each wrk thread runs the script in its own Lua state; `done` runs in the main
            // one and sums the threads' counters.
            let _ = writeln!(
                lua,
                "unexpected = 0\nlocal threads = {{}}\nfunction setup(thread) table.insert(threads, thread) end\nfunction response(status, headers, body)\n  if not string.find(body, {}, 1, true) then unexpected = unexpected + 1 end\nend\nfunction done(summary, latency, requests)\n  local total = 0\n  for _, thread in ipairs(threads) do total = total + thread:get(\"unexpected\") end\n  io.write(string.format(\"Unexpected bodies: %d\\n\", total))\nend",
                lua_string(expected)
            );
        }
        lua
    }

    /// Writes the script to `path` and returns that path.
    pub fn write(&self, path: &Path) -> anyhow::Result<PathBuf> {
        std::fs::write(path, self.to_lua())
            .with_context(|| format!("write wrk script `{}`", path.display()))?;
        Ok(path.to_path_buf())
    }
}

/// `text` as a double-quoted Lua string literal. Lua strings are bytes, so everything but the
/// quote, the backslash and control characters passes through unchanged.
fn lua_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            // Three digits, so a following digit cannot extend the escape.
            c if c.is_ascii_control() => {
                let _ = write!(quoted, "\\{:03}", u32::from(c));
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// Runs wrk against `url` and parses its report.
pub fn run(load: &Load, url: &str, script: Option<&Path>) -> anyhow::Result<Summary> {
    let mut command = Command::new("wrk");
    command
        .arg(format!("-t{}", load.threads))
        .arg(format!("-c{}", load.connections))
        .arg(format!("-d{}s", load.duration.as_secs()))
        .arg("--latency");
    if let Some(script) = script {
        command.arg("-s").arg(script);
    }
    let output = command.arg(url).output().context("run wrk")?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "wrk failed: {text}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    parse(&text)
}

fn parse(report: &str) -> anyhow::Result<Summary> {
    let mut summary = Summary {
        requests_per_sec: 0.0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        non_2xx: 0,
        socket_errors: 0,
        unexpected_bodies: None,
    };
    for line in report.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["Requests/sec:", value] => summary.requests_per_sec = value.parse()?,
            ["50%", value] => summary.p50_ms = millis(value)?,
            ["99%", value] => summary.p99_ms = millis(value)?,
            ["Non-2xx", "or", "3xx", "responses:", value] => summary.non_2xx = value.parse()?,
            ["Unexpected", "bodies:", value] => summary.unexpected_bodies = Some(value.parse()?),
            ["Socket", "errors:", counts @ ..] => summary.socket_errors = socket_errors(counts)?,
            _ => {}
        }
    }
    if summary.requests_per_sec == 0.0 {
        bail!("could not read wrk's report:\n{report}");
    }
    Ok(summary)
}

/// Sums `connect 0, read 1, write 0, timeout 12`, split on whitespace.
fn socket_errors(fields: &[&str]) -> anyhow::Result<u64> {
    let mut total = 0;
    for pair in fields.chunks(2) {
        let [_, count] = pair else {
            bail!("unexpected socket error counts `{}`", fields.join(" "));
        };
        let count: u64 = count
            .trim_end_matches(',')
            .parse()
            .with_context(|| format!("socket error count `{count}`"))?;
        total += count;
    }
    Ok(total)
}

fn millis(text: &str) -> anyhow::Result<f64> {
    let (number, factor) = if let Some(n) = text.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        bail!("unknown latency unit in `{text}`")
    };
    Ok(number.parse::<f64>()? * factor)
}

pub fn print_table(rows: &[(&str, &Summary)]) {
    println!(
        "{:<20} {:>12} {:>10} {:>10} {:>10}",
        "server", "req/s", "p50 ms", "p99 ms", "sock err"
    );
    for (name, summary) in rows {
        println!(
            "{:<20} {:>12.0} {:>10.3} {:>10.3} {:>10}",
            name, summary.requests_per_sec, summary.p50_ms, summary.p99_ms, summary.socket_errors
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_wrk_report() {
        let report = "Running 1s test\n  Latency Distribution\n     50%  210.00us\n     75%  1.20ms\n     90%  2ms\n     99%    1.50ms\n  1000 requests in 1.00s\n  Non-2xx or 3xx responses: 3\nRequests/sec:  12345.67\nTransfer/sec: 1MB\n";
        let summary = parse(report).expect("parse");
        assert!((summary.requests_per_sec - 12345.67).abs() < 1e-6);
        assert!((summary.p50_ms - 0.21).abs() < 1e-9);
        assert!((summary.p99_ms - 1.5).abs() < 1e-9);
        assert_eq!(summary.non_2xx, 3);
        assert_eq!(summary.socket_errors, 0);
        assert_eq!(summary.unexpected_bodies, None);
    }

    #[test]
    fn parses_socket_errors_and_the_check_scripts_count() {
        let report = "  Socket errors: connect 1, read 2, write 3, timeout 40\nRequests/sec:  10.00\nUnexpected bodies: 7\n";
        let summary = parse(report).expect("parse");
        assert_eq!(summary.socket_errors, 46);
        assert_eq!(summary.unexpected_bodies, Some(7));
    }

    #[test]
    fn refuses_malformed_socket_error_counts() {
        assert!(parse("  Socket errors: connect\nRequests/sec:  10.00\n").is_err());
        assert!(parse("  Socket errors: connect x,\nRequests/sec:  10.00\n").is_err());
    }

    #[test]
    fn quotes_lua_strings() {
        assert_eq!(lua_string("plain"), "\"plain\"");
        assert_eq!(lua_string(r#"{"a":"b\c"}"#), r#""{\"a\":\"b\\c\"}""#);
        assert_eq!(lua_string("a\nb\r\t\u{1}9"), "\"a\\nb\\r\\t\\0019\"");
        assert_eq!(lua_string("é"), "\"é\"");
    }

    #[test]
    fn writes_method_body_headers_and_token_file_into_the_script() {
        let script = Script {
            method: Some("POST".to_owned()),
            body: Some(r#"{"id":1}"#.to_owned()),
            headers: vec![("Accept".to_owned(), "application/json".to_owned())],
            bearer_token_file: Some(PathBuf::from("/tmp/a \"b\".token")),
            expect_body: Some(r#""devices":[]"#.to_owned()),
        };
        let lua = script.to_lua();
        assert!(lua.contains(r#"io.open("/tmp/a \"b\".token", "r")"#));
        assert!(lua.contains("wrk.headers[\"Authorization\"] = \"Bearer \" .. token"));
        assert!(lua.contains("wrk.method = \"POST\"\n"));
        assert!(lua.contains(r#"wrk.body = "{\"id\":1}""#));
        assert!(lua.contains(r#"wrk.headers["Accept"] = "application/json""#));
        assert!(lua.contains(r#"string.find(body, "\"devices\":[]", 1, true)"#));
        assert_eq!(Script::default().to_lua(), "");
    }
}
