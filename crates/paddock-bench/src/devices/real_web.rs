//! The real-web half of `paddock-bench devices`: the frames page (three iframes, two of
//! another site, and two shadow roots) observed by both servers, and a list-app scenario (add,
//! complete, filter, edit, delete) scripted identically against both, counting every character
//! the script had to read and the wall time.
//!
//! The script reads Paddock's action answers (the screen, or the changes since the last
//! observation, applied to the screen it knows as an agent would: [`Screen`]) where it reads
//! `browser_snapshot` after Playwright MCP's actions, and it checks the final screen with
//! `observe`.
//! Playwright's refs are looked up in its snapshot text by role and name, as an agent would.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use super::{Measurement, check_observation};
use crate::mcp_client::{McpClient, ToolAnswer};

/// Items the scenario adds.
const ITEMS: [&str; 3] = ["Buy milk", "Walk dog", "Write code"];

/// Both servers on the frames page, alternating.
#[derive(Debug, Default)]
pub(super) struct FramesMeasurements {
    pub observe: Measurement,
    pub snapshot: Measurement,
}

pub(super) fn measure_frames(
    paddock: &mut McpClient,
    mut playwright: Option<&mut McpClient>,
    url: &str,
    iterations: u32,
    warmup: u32,
) -> anyhow::Result<FramesMeasurements> {
    let session = "bench-frames";
    paddock.call_tool("getWeb", &json!({}), Some(session))?;
    paddock.call_tool("openLink", &json!({ "url": url }), Some(session))?;
    if let Some(playwright) = playwright.as_deref_mut() {
        playwright.call_tool("browser_navigate", &json!({ "url": url }), None)?;
    }
    // Frames load after the page: wait until both show the cross-site note.
    let note = "Served by another site";
    wait_for_text(
        || paddock.call_tool("observe", &json!({}), Some(session)),
        note,
    )
    .context("paddock never showed the cross-site frame")?;
    if let Some(playwright) = playwright.as_deref_mut() {
        wait_for_text(
            || playwright.call_tool("browser_snapshot", &json!({}), None),
            note,
        )
        .context("Playwright MCP never showed the cross-site frame")?;
    }
    let mut frames = FramesMeasurements::default();
    for iteration in 0..warmup + iterations {
        let timed = iteration >= warmup;
        let answer = paddock.call_tool("observe", &json!({}), Some(session))?;
        check_observation(&answer, &[note, "Badge: Beta", "Greet"], false)
            .context("paddock observe of the frames page")?;
        if timed {
            frames.observe.record(&answer);
        }
        if let Some(playwright) = playwright.as_deref_mut() {
            let answer = playwright.call_tool("browser_snapshot", &json!({}), None)?;
            check_observation(&answer, &[note, "Greet"], false)
                .context("playwright browser_snapshot of the frames page")?;
            if timed {
                frames.snapshot.record(&answer);
            }
        }
    }
    paddock.call_tool("releaseDevice", &json!({}), Some(session))?;
    Ok(frames)
}

fn wait_for_text(
    mut observe: impl FnMut() -> anyhow::Result<ToolAnswer>,
    needle: &str,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if observe()?.text().contains(needle) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("`{needle}` did not appear within 30 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What one run of the scenario cost its script.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ScenarioCost {
    pub chars: usize,
    pub calls: usize,
    pub wall: Duration,
}

struct Reader<'a> {
    client: &'a mut McpClient,
    session: Option<&'a str>,
    cost: ScenarioCost,
}

impl Reader<'_> {
    fn call(&mut self, tool: &str, arguments: Value) -> anyhow::Result<String> {
        let answer = self.client.call_tool(tool, &arguments, self.session)?;
        if answer.result["isError"] == json!(true) {
            bail!("{tool} {arguments} failed: {}", answer.text());
        }
        let text = answer.text();
        self.cost.chars += text.chars().count();
        self.cost.calls += 1;
        Ok(text)
    }
}

/// Paddock's screen as a script that reads its answers knows it: a whole screen replaces what
/// it knew, a change list (`+` new, `-` gone, `~` changed, by ref) is applied to it.
#[derive(Debug, Default)]
struct Screen {
    /// Element lines by ref, in the order they were learnt.
    lines: Vec<(String, String)>,
}

impl Screen {
    fn read(&mut self, answer: &str) -> &mut Self {
        let changes = answer.lines().any(|line| {
            line.ends_with(" since your last observation:")
                || line == "no element changed since your last observation"
        });
        if !changes {
            self.lines = answer
                .lines()
                .filter_map(|line| Some((element_ref(line)?.to_owned(), line.to_owned())))
                .collect();
            return self;
        }
        for line in answer.lines() {
            let Some((mark, element)) = line.split_at_checked(2) else {
                continue;
            };
            let Some(reference) = element_ref(element) else {
                continue;
            };
            let known = self.lines.iter().position(|(known, _)| known == reference);
            match (mark, known) {
                ("+ " | "~ ", Some(index)) => self.lines[index].1 = element.to_owned(),
                ("+ " | "~ ", None) => self.lines.push((reference.to_owned(), element.to_owned())),
                ("- ", Some(index)) => {
                    self.lines.remove(index);
                }
                _ => {}
            }
        }
        self
    }

    fn text(&self) -> String {
        self.lines
            .iter()
            .map(|(_, line)| format!("{line}\n"))
            .collect()
    }
}

/// The ref an observation line starts with (`e12`, `f2e5`), if it is an element's line.
fn element_ref(line: &str) -> Option<&str> {
    let number = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let word = line.split(' ').next()?;
    let local = match word.strip_prefix('f') {
        Some(rest) => {
            let (frame, local) = rest.split_once('e')?;
            number(frame).then_some(local)?
        }
        None => word.strip_prefix('e')?,
    };
    number(local).then_some(word)
}

/// The ref Playwright MCP's snapshot gives the element with `role` and exactly `name`.
fn playwright_ref(snapshot: &str, role: &str, name: &str) -> anyhow::Result<String> {
    let head = format!("{role} \"{name}\"");
    for line in snapshot.lines() {
        let line = line.trim_start().trim_start_matches("- ");
        // `role "name" [ref=…]`, or a text element: `role [ref=…]: name`.
        let named = line.strip_prefix(&head).or_else(|| {
            let rest = line.strip_prefix(role)?.strip_prefix(' ')?;
            (rest.starts_with("[ref=") && rest.ends_with(&format!(": {name}"))).then_some(rest)
        });
        if let Some(rest) = named
            && let Some(start) = rest.find("[ref=")
        {
            let rest = &rest[start + 5..];
            if let Some(end) = rest.find(']') {
                return Ok(rest[..end].to_owned());
            }
        }
    }
    let excerpt: String = snapshot.chars().take(1500).collect();
    bail!("Playwright's snapshot has no {head} with a ref; it begins:\n{excerpt}")
}

/// The scenario on Paddock: every target by its text or label, as an agent writes it.
pub(super) fn paddock_scenario(client: &mut McpClient, url: &str) -> anyhow::Result<ScenarioCost> {
    let session = "bench-scenario";
    client.call_tool("getWeb", &json!({}), Some(session))?;
    let started = Instant::now();
    let mut reader = Reader {
        client,
        session: Some(session),
        cost: ScenarioCost::default(),
    };
    let mut screen = Screen::default();
    screen.read(&reader.call("openLink", json!({ "url": url }))?);
    for item in ITEMS {
        screen.read(&reader.call(
            "inputText",
            json!({ "label": "What needs to be done?", "text": item }),
        )?);
        screen.read(&reader.call("pressButton", json!({ "button": "enter" }))?);
    }
    screen.read(&reader.call("tapOn", json!({ "text": "Toggle Walk dog" }))?);
    let completed = screen
        .read(&reader.call("tapOn", json!({ "text": "Completed" }))?)
        .text();
    check_scenario(&completed, &["Walk dog"], &["Buy milk"]).context("paddock filter")?;
    screen.read(&reader.call("tapOn", json!({ "text": "All" }))?);
    check_scenario(&screen.text(), &["Buy milk"], &[]).context("paddock all")?;
    screen.read(&reader.call(
        "tapOn",
        json!({ "text": "Buy milk", "action": "doubleTap" }),
    )?);
    screen.read(&reader.call("clearText", json!({ "label": "Edit Buy milk" }))?);
    screen.read(&reader.call("inputText", json!({ "text": "Buy oat milk" }))?);
    screen.read(&reader.call("pressButton", json!({ "button": "enter" }))?);
    let deleted = screen
        .read(&reader.call("tapOn", json!({ "text": "Delete Write code" }))?)
        .text();
    check_scenario(&deleted, &["Buy oat milk", "Walk dog"], &["Write code"])
        .context("paddock after the delete, as its answers told it")?;
    let last = reader.call("observe", json!({}))?;
    check_scenario(&last, &["Buy oat milk", "Walk dog"], &["Write code"])
        .context("paddock final screen")?;
    let mut cost = reader.cost;
    cost.wall = started.elapsed();
    client.call_tool("releaseDevice", &json!({}), Some(session))?;
    Ok(cost)
}

/// The same scenario on Playwright MCP: targets by the refs of its latest snapshot. Its
/// action answers name a snapshot file rather than carry the snapshot, so the script reads
/// `browser_snapshot` whenever it needs refs or checks the page, as an agent would.
pub(super) fn playwright_scenario(
    client: &mut McpClient,
    url: &str,
) -> anyhow::Result<ScenarioCost> {
    let started = Instant::now();
    let mut reader = Reader {
        client,
        session: None,
        cost: ScenarioCost::default(),
    };
    reader.call("browser_navigate", json!({ "url": url }))?;
    let mut snapshot = reader.call("browser_snapshot", json!({}))?;
    for item in ITEMS {
        let field = playwright_ref(&snapshot, "textbox", "What needs to be done?")?;
        reader.call(
            "browser_type",
            json!({ "element": "new todo field", "target": field, "text": item, "submit": true }),
        )?;
        snapshot = reader.call("browser_snapshot", json!({}))?;
    }
    let toggle = playwright_ref(&snapshot, "checkbox", "Toggle Walk dog")?;
    reader.call(
        "browser_click",
        json!({ "element": "Toggle Walk dog", "target": toggle }),
    )?;
    snapshot = reader.call("browser_snapshot", json!({}))?;
    let link = playwright_ref(&snapshot, "link", "Completed")?;
    reader.call(
        "browser_click",
        json!({ "element": "Completed filter", "target": link }),
    )?;
    let completed =
        settled_snapshot(&mut reader, &["Walk dog"], &["Buy milk"]).context("playwright filter")?;
    let all = playwright_ref(&completed, "link", "All")?;
    reader.call(
        "browser_click",
        json!({ "element": "All filter", "target": all }),
    )?;
    snapshot = settled_snapshot(&mut reader, &["Buy milk"], &[]).context("playwright all")?;
    let label = playwright_ref(&snapshot, "generic", "Buy milk")?;
    reader.call(
        "browser_click",
        json!({ "element": "Buy milk", "target": label, "doubleClick": true }),
    )?;
    snapshot = reader.call("browser_snapshot", json!({}))?;
    let edit = playwright_ref(&snapshot, "textbox", "Edit Buy milk")?;
    reader.call(
        "browser_type",
        json!({ "element": "edit field", "target": edit, "text": "Buy oat milk", "submit": true }),
    )?;
    snapshot = reader.call("browser_snapshot", json!({}))?;
    let delete = playwright_ref(&snapshot, "button", "Delete Write code")?;
    reader.call(
        "browser_click",
        json!({ "element": "Delete Write code", "target": delete }),
    )?;
    let last = reader.call("browser_snapshot", json!({}))?;
    check_scenario(&last, &["Buy oat milk", "Walk dog"], &["Write code"])
        .context("playwright final screen")?;
    let mut cost = reader.cost;
    cost.wall = started.elapsed();
    Ok(cost)
}

/// `browser_snapshot` until the page shows what the route should (the late router renders
/// after Playwright's click has answered); every snapshot read counts.
fn settled_snapshot(
    reader: &mut Reader<'_>,
    present: &[&str],
    absent: &[&str],
) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let snapshot = reader.call("browser_snapshot", json!({}))?;
        match check_scenario(&snapshot, present, absent) {
            Ok(()) => return Ok(snapshot),
            Err(error) if Instant::now() > deadline => return Err(error),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn check_scenario(text: &str, present: &[&str], absent: &[&str]) -> anyhow::Result<()> {
    for needle in present {
        if !text.contains(needle) {
            bail!("`{needle}` is missing from:\n{text}");
        }
    }
    for needle in absent {
        if text.contains(needle) {
            bail!("`{needle}` should be gone from:\n{text}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_list_is_applied_to_the_known_screen() {
        let mut screen = Screen::default();
        screen.read("web-1 pixel7 portrait 412x915 http://x/ \"T\"\ne1 heading/1 \"todos\"\nf2e1 text \"Buy milk\"\ne3 text \"1 items left\"\nsettled: true\n");
        let text = screen
            .read("focused e2\n3 change(s) since your last observation:\n+ e4 text \"Walk dog\"\n- f2e1 text \"Buy milk\"\n~ e3 text \"2 items left\"\nsettled: true\n")
            .text();
        assert_eq!(
            text,
            "e1 heading/1 \"todos\"\ne3 text \"2 items left\"\ne4 text \"Walk dog\"\n"
        );
        screen.read("no element changed since your last observation\nsettled: true\n");
        assert_eq!(screen.text(), text);
        assert_eq!(element_ref("focused e2"), None);
        assert_eq!(element_ref("fxe1 text"), None);
        assert_eq!(element_ref("e"), None);
    }

    #[test]
    fn playwright_refs_are_found_by_role_and_exact_name() {
        let snapshot = "- generic [ref=e2]:\n  - textbox \"What needs to be done?\" [ref=e7]\n  - checkbox \"Toggle Walk dog\" [ref=e12]\n  - link \"Completed\" [ref=e20] [cursor=pointer]:\n";
        assert_eq!(
            playwright_ref(snapshot, "textbox", "What needs to be done?").unwrap(),
            "e7"
        );
        assert_eq!(
            playwright_ref(snapshot, "link", "Completed").unwrap(),
            "e20"
        );
        assert!(playwright_ref(snapshot, "link", "Complete").is_err());
        let text = "    - listitem [ref=f5e55]:\n      - generic [ref=f5e57]: Buy milk\n";
        assert_eq!(
            playwright_ref(text, "generic", "Buy milk").unwrap(),
            "f5e57"
        );
        assert!(playwright_ref(text, "generic", "milk").is_err());
    }
}
