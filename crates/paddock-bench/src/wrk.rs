//! Driving `wrk` and reading its report.

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
}

/// Throughput and latency of one run.
#[derive(Debug, Clone)]
pub struct Summary {
    pub requests_per_sec: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub non_2xx: u64,
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

/// A Lua script that reads the token from its file when wrk starts, so the token never
/// appears in wrk's argument list.
pub fn auth_script(dir: &Path, token_file: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join("auth.lua");
    let lua_path = token_file
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    std::fs::write(
        &path,
        format!(
            "local f = assert(io.open(\"{lua_path}\", \"r\"))\nlocal token = f:read(\"*l\")\nf:close()\nwrk.headers[\"Authorization\"] = \"Bearer \" .. token\n"
        ),
    )?;
    Ok(path)
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
    };
    for line in report.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["Requests/sec:", value] => summary.requests_per_sec = value.parse()?,
            ["50%", value] => summary.p50_ms = millis(value)?,
            ["99%", value] => summary.p99_ms = millis(value)?,
            ["Non-2xx", "or", "3xx", "responses:", value] => summary.non_2xx = value.parse()?,
            _ => {}
        }
    }
    if summary.requests_per_sec == 0.0 {
        bail!("could not read wrk's report:\n{report}");
    }
    Ok(summary)
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
        "{:<20} {:>12} {:>10} {:>10}",
        "server", "req/s", "p50 ms", "p99 ms"
    );
    for (name, summary) in rows {
        println!(
            "{:<20} {:>12.0} {:>10.3} {:>10.3}",
            name, summary.requests_per_sec, summary.p50_ms, summary.p99_ms
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
    }
}
