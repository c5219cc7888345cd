//! Hover, tabs and popups, uploads, downloads and PDF on a real web device, through the
//! official Python SDK over the daemon's HTTP endpoint (`tests/clients/python/web_pages_check.py`
//! drives the tools; this test asserts on its report).
#![cfg(test)]

use std::path::{Path, PathBuf};
use std::process::Command;

use paddock_testkit::fixture::{FixtureApp, REPORT_CSV};
use paddock_testkit::{DaemonHarness, McpHttp};
use serde_json::{Value, json};

use paddock_testkit::clients::{python, repo_root as repo};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");
/// Below the 4 MiB of `/files/big.bin?mb=4`, above the 2 MiB of `/files/big.bin?mb=2`.
const DOWNLOAD_LIMIT: &str = "3145728";

/// Files under `dir` whose name starts with one of `prefixes`, skipping `skip`.
fn files_named(dir: &Path, prefixes: &[&str], skip: &Path, found: &mut Vec<PathBuf>) {
    // A directory that went away during the scan (a temporary one) has no files left; any
    // other failure to read one would hide files, so it fails the test.
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
        Err(error) => panic!("cannot scan {}: {error}", dir.display()),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.starts_with(skip) {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            files_named(&path, prefixes, skip, found);
        } else {
            let name = entry.file_name().to_string_lossy().into_owned();
            if prefixes.iter().any(|prefix| name.starts_with(prefix)) {
                found.push(path);
            }
        }
    }
}

fn text<'a>(report: &'a Value, pointer: &str) -> &'a str {
    report
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no text at {pointer} in {report:#}"))
}

#[test]
fn hover_tabs_files_and_pdf_through_the_python_sdk() {
    let app = FixtureApp::start().unwrap();
    let mut harness = DaemonHarness::new(BIN).unwrap();
    let temp = harness.root().join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let scratch = harness.root().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    harness.set_env("TMPDIR", &temp);
    harness.set_env("PADDOCK_WEB_DOWNLOAD_LIMIT_BYTES", DOWNLOAD_LIMIT);
    let url = harness
        .start_detached(&["--web-warm", "1"])
        .unwrap()
        .http_endpoint
        .unwrap();
    let output = Command::new(python())
        .arg(repo().join("tests/clients/python/web_pages_check.py"))
        .args([&url, &app.url(""), &scratch.display().to_string()])
        .env_clear()
        .envs(harness.client_env_vars())
        .env("PADDOCK_TOKEN_FILE", harness.paths().token_file)
        .current_dir(harness.launch_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "client failed: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("not JSON ({error}):\n{stdout}\n{stderr}"));
    for step in [
        "hover", "popup", "tabs", "upload", "download", "pdf", "release",
    ] {
        assert!(
            report[step].get("error").is_none(),
            "step {step} failed: {}",
            report[step]["error"].as_str().unwrap_or_default()
        );
    }
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in ["tabs", "uploadFile", "files", "savePdf"] {
        assert!(tools.contains(&tool), "{tool} is not listed: {tools:?}");
    }

    // Hover: the delete button shows only while the row is hovered, then it can be tapped.
    assert!(
        !text(&report, "/hover/before").contains("Delete Alpha"),
        "{report:#}"
    );
    assert!(
        !report["hover"]["hover"]["isError"].as_bool().unwrap(),
        "{report:#}"
    );
    assert!(
        text(&report, "/hover/afterHover").contains("\"Delete Alpha\""),
        "{report:#}"
    );
    assert!(
        !report["hover"]["delete"]["isError"].as_bool().unwrap(),
        "{report:#}"
    );
    let deleted = text(&report, "/hover/afterDelete");
    assert!(deleted.contains("Deleted Alpha"), "{deleted}");
    assert!(!deleted.contains("\"Alpha\""), "{deleted}");

    // A popup login: the popup is the active tab, and closing it returns to its opener.
    let popup = text(&report, "/popup/inPopup");
    assert!(popup.contains("/provider"), "{popup}");
    assert!(popup.contains("tabs 2 (active 2)"), "{popup}");
    let back = text(&report, "/popup/back");
    assert!(back.contains("Signed in as Ada"), "{back}");
    assert!(back.contains("/popup-login"), "{back}");
    assert!(
        !back.lines().next().unwrap_or_default().contains("tabs "),
        "{back}"
    );
    assert_eq!(
        report["popup"]["tabs"]["tabs"].as_array().map(Vec::len),
        Some(1)
    );

    // `target=_blank` opens tab 2; select, new and close manage the tabs.
    let help = text(&report, "/tabs/help");
    assert!(help.contains("Help - Fixture"), "{help}");
    assert!(help.contains("tabs 2 (active 2)"), "{help}");
    let listed = report["tabs"]["list"]["tabs"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed[0]["url"].as_str().unwrap().ends_with("/popup-login"));
    assert_eq!(listed[0]["active"], false);
    assert_eq!(listed[1]["index"], 2);
    assert_eq!(listed[1]["title"], "Help - Fixture");
    assert_eq!(listed[1]["active"], true);
    assert!(
        text(&report, "/tabs/select/text").contains("tabs 2 (active 1)"),
        "{report:#}"
    );
    assert!(
        text(&report, "/tabs/new/text").contains("tabs 3 (active 3)"),
        "{report:#}"
    );
    let three = report["tabs"]["listThree"]["tabs"].as_array().unwrap();
    assert_eq!(three.len(), 3);
    assert!(three[2]["url"].as_str().unwrap().ends_with("/hover"));
    assert!(
        text(&report, "/tabs/closeActive/text").contains("tabs 2 (active 2)"),
        "{report:#}"
    );
    let last = text(&report, "/tabs/observeAfterLast/text");
    assert!(last.contains("about:blank"), "{last}");
    assert!(
        !report["tabs"]["observeAfterLast"]["isError"]
            .as_bool()
            .unwrap()
    );
    let after = report["tabs"]["listAfterLast"]["tabs"].as_array().unwrap();
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0]["url"], "about:blank");
    assert!(
        report["tabs"]["selectMissing"]["isError"]
            .as_bool()
            .unwrap()
    );
    assert!(
        text(&report, "/tabs/selectMissing/text").contains("[not_found]"),
        "{report:#}"
    );

    // Uploads: by ref and through the page's file chooser; refusals are typed.
    assert!(report["upload"]["inputRef"].is_string(), "{report:#}");
    assert!(
        text(&report, "/upload/shownRef")
            .contains("Chose note.txt (35 bytes): first line of the note"),
        "{report:#}"
    );
    assert!(report["upload"]["noChooser"]["isError"].as_bool().unwrap());
    assert!(text(&report, "/upload/noChooser/text").contains("no file chooser is open"));
    assert!(
        text(&report, "/upload/shownChooser").contains("Chose other.txt (13 bytes): chooser line"),
        "{report:#}"
    );
    for (step, code, words) in [
        ("directory", "[invalid_input]", "is not a regular file"),
        ("missing", "[not_found]", "does not exist"),
        (
            "tooLarge",
            "[invalid_input]",
            "over the upload limit of 104857600 bytes",
        ),
    ] {
        let answer = &report["upload"][step];
        assert_eq!(answer["isError"], true, "{step}: {answer}");
        let message = answer["text"].as_str().unwrap();
        assert!(
            message.contains(code) && message.contains(words),
            "{step}: {message}"
        );
    }

    // Downloads: listed, returned embedded with their text; one over the limit is canceled.
    let files = report["download"]["list"].as_array().unwrap();
    let report_csv = files
        .iter()
        .find(|file| file["name"] == "report.csv")
        .unwrap();
    assert_eq!(report_csv["state"], "completed");
    assert_eq!(report_csv["size"], REPORT_CSV.len());
    assert!(
        report_csv["url"]
            .as_str()
            .unwrap()
            .ends_with("/files/report.csv")
    );
    assert_eq!(report["download"]["download"]["content"], REPORT_CSV);
    assert_eq!(report["download"]["download"]["mimeType"], "text/csv");
    assert!(
        text(&report, "/download/download/uri").contains("/download/"),
        "{report:#}"
    );
    assert_eq!(report["download"]["readBack"], REPORT_CSV);
    // Over 1 MiB: a resource link (no bytes in the answer), read back whole.
    let mid = report["download"]["midList"]
        .as_array()
        .unwrap()
        .iter()
        .find(|file| file["name"] == "big.bin")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(mid["state"], "completed", "{report:#}");
    assert_eq!(mid["size"], 2 * 1024 * 1024, "{report:#}");
    let link = &report["download"]["midLink"];
    assert!(
        link["uri"]
            .as_str()
            .unwrap_or_default()
            .contains("/download/"),
        "{report:#}"
    );
    assert_eq!(link["embedded"], false, "{report:#}");
    assert!(
        text(&report, "/download/midText").contains("linked; read it with resources/read"),
        "{report:#}"
    );
    assert_eq!(report["download"]["midRead"]["size"], 2 * 1024 * 1024);
    assert_eq!(report["download"]["midRead"]["zeros"], 2 * 1024 * 1024);
    assert_eq!(
        report["download"]["midRead"]["mimeType"],
        "application/octet-stream"
    );
    assert!(
        text(&report, "/download/midDeleted/text").contains("big.bin"),
        "{report:#}"
    );
    let big = report["download"]["bigList"]
        .as_array()
        .unwrap()
        .iter()
        .find(|file| file["name"] == "big.bin")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(big["state"], "canceled: too large");
    assert!(
        !report["download"]["observeAfterBig"]["isError"]
            .as_bool()
            .unwrap()
    );
    assert!(text(&report, "/download/observeAfterBig/text").contains("Download big file"));
    assert!(
        !report["download"]["listAfterDelete"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|file| file["name"] == "report.csv")
    );
    assert!(text(&report, "/download/downloadMissing/text").contains("[not_found]"));

    // PDF: embedded and readable as the session's `pdf` resource.
    assert_eq!(report["pdf"]["isError"], false, "{report:#}");
    assert_eq!(report["pdf"]["head"], "%PDF-");
    assert_eq!(report["pdf"]["readHead"], "%PDF-");
    assert_eq!(report["pdf"]["mimeType"], "application/pdf");
    assert!(text(&report, "/pdf/uri").contains("/pdf/"));

    // A released device comes back with no downloads and one tab.
    assert_eq!(
        report["release"]["before"]["files"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "{report:#}"
    );
    assert_eq!(
        report["release"]["after"]["files"],
        Value::Array(Vec::new())
    );
    assert_eq!(
        report["release"]["tabs"]["tabs"].as_array().map(Vec::len),
        Some(1)
    );

    // No file a page named ever reached the disk: downloads are named by GUID inside the
    // device's own directory, and the canceled one is gone.
    let mut found = Vec::new();
    files_named(harness.root(), &["report", "big"], &scratch, &mut found);
    assert!(found.is_empty(), "files named by a page: {found:?}");
}

/// A tab that keeps loading in the background (`/slow?again=1` reloads itself) does not hold
/// up the active tab: an action there settles.
#[test]
fn a_tab_loading_in_the_background_does_not_hold_up_the_active_one() {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&["--web-warm", "1"]).unwrap();
    let http = McpHttp::for_harness(&harness)
        .unwrap()
        .with_session("background-tab");
    let text = |answer: &Value| {
        assert_eq!(answer["isError"], false, "{answer}");
        answer["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    text(&http.call("getWeb", json!({})).unwrap());
    text(
        &http
            .call("openLink", json!({ "url": app.url("/login") }))
            .unwrap(),
    );
    let opened = text(
        &http
            .call(
                "tabs",
                json!({ "operation": "new", "url": app.url("/slow?again=1") }),
            )
            .unwrap(),
    );
    assert!(opened.contains("tabs 2 (active 2)"), "{opened}");
    let selected = text(
        &http
            .call("tabs", json!({ "operation": "select", "index": 1 }))
            .unwrap(),
    );
    assert!(selected.contains("/login"), "{selected}");
    for _ in 0..3 {
        let typed = text(
            &http
                .call(
                    "inputText",
                    json!({ "label": "Email", "text": "ada@example.com" }),
                )
                .unwrap(),
        );
        assert!(typed.contains("settled: true"), "{typed}");
        let cleared = text(&http.call("clearText", json!({ "label": "Email" })).unwrap());
        assert!(cleared.contains("settled: true"), "{cleared}");
    }
    let listed = http.call("tabs", json!({ "operation": "list" })).unwrap();
    assert!(
        listed.to_string().contains("/slow?again=1"),
        "the background tab is still there: {listed}"
    );
}
