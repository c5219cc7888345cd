//! Web devices on pages built the way real apps are (the fixture's `/components`, `/frames`
//! and `/todo`): custom elements, open and closed shadow roots, controls drawn over transparent
//! ones, a same-origin and a cross-site iframe, and a hash router that renders late. The
//! scenario runs through the official Python SDK over `paddock mcp`
//! (`tests/clients/python/real_web_check.py`); the observations are snapshots.
#![cfg(test)]

use std::process::Command;

use paddock_testkit::fixture::FixtureApp;
use paddock_testkit::{DaemonHarness, McpHttp};
use serde_json::{Value, json};

use paddock_testkit::clients::{python, repo_root as repo};

const BIN: &str = env!("CARGO_BIN_EXE_paddock");

fn answer<'a>(report: &'a Value, key: &str) -> &'a str {
    assert_eq!(report[key]["error"], false, "{key}: {report:#}");
    report[key]["text"].as_str().unwrap_or_default()
}

fn error<'a>(report: &'a Value, key: &str) -> &'a str {
    assert_eq!(report[key]["error"], true, "{key} should fail: {report:#}");
    report[key]["text"].as_str().unwrap_or_default()
}

fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|line| line.contains(needle)).collect()
}

#[test]
fn python_sdk_drives_shadow_roots_frames_hidden_controls_and_a_late_router() {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&["--web-warm", "1"]).unwrap();
    let mut command = Command::new(python());
    command
        .arg(repo().join("tests/clients/python/real_web_check.py"))
        .args([BIN, "real-web-python", &app.url("/")])
        .env_clear()
        .envs(harness.client_env_vars())
        .env("PADDOCK_TOKEN_FILE", harness.paths().token_file)
        .current_dir(harness.launch_dir());
    let output = command.output().expect("run the Python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("not JSON ({error}): {stdout}"));
    answer(&report, "getWeb");

    // What a person sees: the counter as one line, in reading order, though its words sit in
    // a custom element; the shadow root's heading (slotted), checkbox and button; the closed
    // root's host; the SVG label; both hidden checkboxes, at the box a finger would hit.
    let components = answer(&report, "components");
    // Bounds only where a ref is not enough: the closed root's host and the hidden controls.
    for (expected, bounds) in [
        (r#" text "3 items left""#, false),
        (r#" heading/2 "Shadow settings""#, false),
        (r#" checkbox "Notifications""#, false),
        (r#" button "Save settings""#, false),
        (r#" x-vault "Vault" [closed-shadow-root] @"#, true),
        (r#" text "Chart label""#, false),
        (r#" checkbox "Fancy option" [hidden-control] @16,"#, true),
        (r#" checkbox "Quiet mode" [hidden-control] @"#, true),
    ] {
        let lines = lines_with(components, expected);
        assert_eq!(lines.len(), 1, "{expected} in:\n{components}");
        assert_eq!(
            lines[0].contains(" @"),
            bounds,
            "{expected} in:\n{components}"
        );
    }
    assert!(!components.contains(r#"text "items left""#), "{components}");
    // The transparent checkbox is 44x44 where it lies; the clipped one is its label's box.
    assert!(
        lines_with(components, "Fancy option\" [hidden-control]")[0].ends_with("44x44"),
        "{components}"
    );
    // Actions inside the shadow root, on the closed root's host, on hidden controls.
    assert!(
        answer(&report, "tapShadowCheckbox").contains("checkbox \"Notifications\" [checked"),
        "{report:#}"
    );
    assert!(
        answer(&report, "tapShadowButton").contains("Saved: notifications on"),
        "{report:#}"
    );
    assert!(
        answer(&report, "tapClosedHost").contains("Vault opened"),
        "{report:#}"
    );
    assert!(
        answer(&report, "tapTransparent").contains("fancy on, quiet off"),
        "{report:#}"
    );
    assert!(
        answer(&report, "tapSrOnly").contains("fancy on, quiet on"),
        "{report:#}"
    );
    // No silent substring tap: the near miss is named with its ref.
    let near = error(&report, "tapNearMiss");
    assert!(near.contains("[not_found]"), "{near}");
    assert!(near.contains("checkbox \"Fancy option\""), "{near}");

    // Frames: the same-origin form's refs are the page's; the cross-site form's come from its
    // own frame target (the `f<n>` prefix), merged at the iframe's place.
    let frames = answer(&report, "frames");
    let fields: Vec<&str> = report["frameFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(fields.len(), 2, "{frames}");
    assert!(fields[0].starts_with('e'), "{frames}");
    assert!(
        fields[1].starts_with('f') && fields[1].contains('e'),
        "{frames}"
    );
    assert!(
        frames.contains(" text \"Served by another site\"\n"),
        "{frames}"
    );
    assert!(
        frames.contains(" text \"Badge: Beta Badge: Fast\"\n"),
        "{frames}"
    );
    let order: Vec<usize> = [
        r#"iframe "Same-origin form""#,
        &format!("{} textbox \"Name\"", fields[0]),
        r#"iframe "Cross-site form""#,
        &format!("{} textbox \"Name\"", fields[1]),
        r#"iframe "Cross-site note""#,
    ]
    .iter()
    .map(|needle| {
        frames
            .find(needle)
            .unwrap_or_else(|| panic!("{needle}:\n{frames}"))
    })
    .collect();
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{frames}");
    assert!(
        answer(&report, "greetSameOrigin").contains("Hello, Ada from 127.0.0.1"),
        "{report:#}"
    );
    assert!(
        answer(&report, "greetCrossSite").contains("Hello, Grace from 127.0.0.2"),
        "{report:#}"
    );
    // The focus inside the cross-site frame: clearing and typing into the focused field.
    answer(&report, "clearCrossSite");
    assert!(
        answer(&report, "typeFocusedCrossSite").contains("=\"Linus\""),
        "{report:#}"
    );
    assert!(
        answer(&report, "enterCrossSite").contains("Hello, Linus from 127.0.0.2"),
        "{report:#}"
    );
    // The cross-site field sits inside its iframe's box in page coordinates.
    let elements = report["framesJson"]["elements"].as_array().unwrap();
    let bounds = |reference: &str| -> Vec<i64> {
        elements
            .iter()
            .find(|element| element["ref"] == reference)
            .and_then(|element| element["bounds"].as_array())
            .unwrap_or_else(|| panic!("{reference} in {elements:?}"))
            .iter()
            .filter_map(Value::as_i64)
            .collect()
    };
    let iframe = elements
        .iter()
        .find(|element| element["name"] == "Cross-site form")
        .and_then(|element| element["ref"].as_str())
        .unwrap();
    let (outer, inner) = (bounds(iframe), bounds(fields[1]));
    assert!(
        inner[0] >= outer[0]
            && inner[1] >= outer[1]
            && inner[0] + inner[2] <= outer[0] + outer[2]
            && inner[1] + inner[3] <= outer[1] + outer[3],
        "{outer:?} {inner:?}"
    );

    // A swipe within a cross-site or a same-origin frame scrolls the frame's document (its
    // last row comes into view), not the page.
    assert!(
        answer(&report, "scrollFrame").contains(" iframe \"Rows\""),
        "{report:#}"
    );
    let swiped = answer(&report, "swipeInFrame");
    assert!(swiped.contains("`Row 40` is visible after"), "{swiped}");
    let after = &report["swipeInFrameAfter"];
    assert_eq!(
        after["offscreen"]["abovePx"], 0,
        "the page moved: {after:#}"
    );
    let last = after["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|element| element["name"] == "Row 40")
        .unwrap_or_else(|| panic!("no Row 40 in {after:#}"));
    assert!(
        last["ref"].as_str().unwrap_or_default().starts_with('f'),
        "{last}"
    );
    assert!(
        !after["elements"]
            .as_array()
            .unwrap()
            .iter()
            .any(|element| element["name"] == "Row 1"),
        "the frame's first row scrolled out: {after:#}"
    );
    let swiped = answer(&report, "swipeInLocalFrame");
    assert!(
        swiped.contains("`Local row 40` is visible after"),
        "{swiped}"
    );
    let after = &report["swipeInLocalFrameAfter"];
    assert_eq!(
        after["offscreen"]["abovePx"], 0,
        "the page moved: {after:#}"
    );
    let names: Vec<&str> = after["elements"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|element| element["name"].as_str())
        .collect();
    assert!(
        names.contains(&"Local row 40") && !names.contains(&"Local row 1"),
        "{after:#}"
    );

    // The list app: the filter renders 150 ms after the hash changes, and the answer that
    // says settled shows the filtered list — as changes since the last observation (the
    // router redraws every row; the rows that stay keep their refs and are not listed): the
    // new URL, the other rows gone, the completed one not.
    let toggled = answer(&report, "toggle");
    assert!(
        toggled.contains("~ ") && toggled.contains("\"2 items left\""),
        "{toggled}"
    );
    let completed = answer(&report, "filterCompleted");
    assert!(completed.contains("settled: true"), "{completed}");
    assert!(
        completed.contains("/todo#/completed \"")
            && completed.contains(" change(s) since your last observation:\n"),
        "{completed}"
    );
    let gone = |name: &str| {
        completed
            .lines()
            .any(|line| line.starts_with("- ") && line.contains(name))
    };
    assert!(
        gone("\"Toggle Buy milk\"") && gone("\"Write code\"") && !gone("Walk dog"),
        "the answer shows the old route:\n{completed}"
    );
    assert!(!completed.contains("+ "), "{completed}");
    // `Completed` tapped the link, not "Clear completed"; `Clear` taps nothing.
    assert!(completed.contains("todo#/completed"), "{completed}");
    let clear = error(&report, "tapClear");
    assert!(clear.contains("button \"Clear completed\""), "{clear}");
    let all = answer(&report, "filterAll");
    assert!(
        all.contains("Buy milk") && all.contains("Write code"),
        "{all}"
    );
}

#[test]
fn observe_snapshots_of_real_web_pages() {
    let app = FixtureApp::start().unwrap();
    let harness = DaemonHarness::new(BIN).unwrap();
    harness.start_detached(&["--web-warm", "1"]).unwrap();
    let http = McpHttp::for_harness(&harness)
        .unwrap()
        .with_session("real-web-snap");
    let acquired = http.call("getWeb", json!({})).unwrap();
    assert_eq!(acquired["isError"], false, "{acquired}");
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[port]");
    settings.add_filter(r"web-\d+", "web-[n]");
    settings.add_filter(r"@-?\d+,-?\d+ \d+x\d+", "@[bounds]");
    settings.add_filter(r"\b[ef]\d+(e\d+)?\b", "[ref]");
    let _guard = settings.bind_to_scope();
    for (name, path) in [
        ("components", "/components"),
        ("frames", "/frames"),
        ("todo", "/todo"),
    ] {
        let opened = http
            .call("openLink", json!({ "url": app.url(path) }))
            .unwrap();
        assert_eq!(opened["isError"], false, "{opened}");
        let observed = http.call("observe", json!({})).unwrap();
        assert_eq!(observed["isError"], false, "{observed}");
        let text = observed["content"][0]["text"].as_str().unwrap_or_default();
        insta::assert_snapshot!(format!("observe_{name}"), text);
    }
    // By default a named element's line has no bounds; `bounds: true` gives every line its own.
    let observed = http.call("observe", json!({ "bounds": true })).unwrap();
    let text = observed["content"][0]["text"].as_str().unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|line| line.starts_with('e')).collect();
    assert!(lines.len() >= 7, "{text}");
    assert!(
        lines.iter().all(|line| line.contains(" @")),
        "every element with its bounds:\n{text}"
    );
}
