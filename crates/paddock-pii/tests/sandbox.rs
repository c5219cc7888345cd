#![cfg(test)]
//! Plugin sandbox: escape attempts, limits, result validation, fail-closed runs.

use std::time::{Duration, Instant};

use paddock_pii::{
    BotId, DEFAULT_FILTERS_TIME, FilterFailure, PiiConfig, PiiError, PiiService, PluginLimits,
};

/// Tight enough that runaway plugins end quickly, loose enough that a well-behaved one finishes
/// on a loaded two-core machine running the whole suite.
fn test_limits() -> PluginLimits {
    PluginLimits {
        time: Duration::from_secs(1),
        memory_bytes: 16 * 1024 * 1024,
        ..PluginLimits::default()
    }
}

fn service_with(dir: &tempfile::TempDir, limits: PluginLimits) -> PiiService {
    PiiService::new(PiiConfig {
        state_dir: dir.path().to_path_buf(),
        machine_id: "m1".into(),
        limits,
        default_filters_time: DEFAULT_FILTERS_TIME,
    })
    .unwrap()
}

fn service(dir: &tempfile::TempDir) -> PiiService {
    service_with(dir, test_limits())
}

fn bot() -> BotId {
    BotId::new("bot").unwrap()
}

/// Adds `source` as the only enabled filter and runs it on `text`.
fn run_plugin(source: &str, text: &str) -> Result<paddock_pii::Redacted, PiiError> {
    run_plugin_with(test_limits(), source, text)
}

/// [`run_plugin`] under `limits`.
fn run_plugin_with(
    limits: PluginLimits,
    source: &str,
    text: &str,
) -> Result<paddock_pii::Redacted, PiiError> {
    let dir = tempfile::tempdir().unwrap();
    let service = service_with(&dir, limits);
    for filter in paddock_pii::DefaultFilter::ALL {
        service.set_enabled(&bot(), filter.id(), false).unwrap();
    }
    service.add(&bot(), source, "under test").unwrap();
    service.run(&bot(), text)
}

/// Generous bound on a run that must be stopped: it catches a hang, it does not measure speed.
const HANG: Duration = Duration::from_secs(20);

fn failure(result: Result<paddock_pii::Redacted, PiiError>) -> FilterFailure {
    match result {
        Err(PiiError::FilterFailed { filter, failure }) => {
            assert_eq!(filter, "plugin-1");
            failure
        }
        other => panic!("expected a filter failure, got {other:?}"),
    }
}

/// Each probe returns a string naming what it could reach; the plugin passes the text through
/// with that report, so the test sees exactly what the sandbox exposed.
fn probe(expression: &str) -> String {
    let source = format!(
        "export default (text) => {{ let r; try {{ r = String({expression}); }} catch (e) {{ r = 'threw'; }} return {{ text: r, triggered: false }}; }}"
    );
    run_plugin(&source, "x").unwrap().text
}

#[test]
fn no_host_capabilities_are_reachable() {
    for name in [
        "require",
        "process",
        "fetch",
        "XMLHttpRequest",
        "WebSocket",
        "std",
        "os",
        "Deno",
        "Bun",
        "module",
        "exports",
        "__dirname",
        "setTimeout",
        "performance",
        "console",
    ] {
        assert_eq!(
            probe(&format!("typeof {name}")),
            "undefined",
            "{name} is reachable"
        );
        assert_eq!(
            probe(&format!("typeof globalThis.{name}")),
            "undefined",
            "globalThis.{name} is reachable"
        );
    }
    // Blocking waits are refused rather than hanging the run past its deadline.
    assert_eq!(
        probe(
            "(() => { try { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000); return 'waited'; } catch (e) { return 'refused'; } })()"
        ),
        "refused"
    );
    // The Function constructor and indirect eval only reach the same sandbox.
    assert_eq!(probe("Function('return typeof process')()"), "undefined");
    assert_eq!(probe("(0, eval)('typeof require')"), "undefined");
    // Plugins are strict-mode modules: a sloppy `this` does not hand out the global object.
    assert_eq!(probe("(function(){ return typeof this })()"), "undefined");
    assert_eq!(
        probe(
            "Object.getOwnPropertyNames(globalThis).filter(n => /^(process|require|fetch|std|os|Deno|Bun|console|print|setTimeout|performance)$/.test(n)).length"
        ),
        "0"
    );
}

#[test]
fn module_imports_are_rejected_or_fail() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(&dir);
    for source in [
        "import fs from 'fs'; export default (t) => t;",
        "import * as os from 'os'; export default (t) => t;",
        "export default (t) => { import('fs'); return t; };",
        "export { readFile as default } from 'fs';",
        "import x = require('fs'); export default (t: string) => t;",
        "export default (t) => import.meta.url;",
    ] {
        let error = service.add(&bot(), source, "escape").unwrap_err();
        assert!(error.is_invalid_input(), "{source}: {error}");
    }
    // A dynamic import smuggled through eval gets no loader: the result is a promise, which
    // is not a valid filter result.
    let result = run_plugin("export default (t) => eval('import(\"fs\")');", "hello");
    assert!(matches!(
        failure(result),
        FilterFailure::InvalidResult { .. }
    ));
}

#[test]
fn prototype_pollution_stays_inside_one_run() {
    // Inherited `triggered`/`text` do not make a result valid.
    let polluted = "export default (t) => { Object.prototype.triggered = true; Object.prototype.text = 'leak'; return {}; };";
    assert!(matches!(
        failure(run_plugin(polluted, "secret")),
        FilterFailure::InvalidResult { .. }
    ));
    // Replacing built-ins the host might use changes nothing for the host.
    let tampered = "export default (t) => { String.prototype.toString = () => 'x'; JSON.stringify = () => 'x'; Object.keys = () => []; return { text: t.toUpperCase(), triggered: true }; };";
    let redacted = run_plugin(tampered, "abc").unwrap();
    assert_eq!(redacted.text, "ABC");
    // State does not survive between runs: every run starts from a fresh runtime.
    let dir = tempfile::tempdir().unwrap();
    let service = service(&dir);
    let counter = "export default (t) => { globalThis.n = (globalThis.n || 0) + 1; return { text: String(globalThis.n), triggered: false }; };";
    service.add(&bot(), counter, "counter").unwrap();
    for filter in paddock_pii::DefaultFilter::ALL {
        service.set_enabled(&bot(), filter.id(), false).unwrap();
    }
    assert_eq!(service.run(&bot(), "a").unwrap().text, "1");
    assert_eq!(service.run(&bot(), "a").unwrap().text, "1");
}

#[test]
fn getters_and_proxies_cannot_fake_a_result() {
    let getter = "export default (t) => ({ get text() { return 'x'; }, triggered: false });";
    // A getter is plugin code under the same limits; its value is still checked.
    assert_eq!(run_plugin(getter, "t").unwrap().text, "x");
    let proxy = "export default (t) => new Proxy({}, { get: () => 'x' });";
    assert!(matches!(
        failure(run_plugin(proxy, "t")),
        FilterFailure::InvalidResult { .. }
    ));
    let wrong = "export default (t) => ({ text: 5, triggered: false });";
    assert!(matches!(
        failure(run_plugin(wrong, "t")),
        FilterFailure::InvalidResult { .. }
    ));
    let wrong = "export default (t) => ({ text: t, triggered: 'yes' });";
    assert!(matches!(
        failure(run_plugin(wrong, "t")),
        FilterFailure::InvalidResult { .. }
    ));
    let not_function = "export default 42;";
    assert!(matches!(
        failure(run_plugin(not_function, "t")),
        FilterFailure::InvalidResult { .. }
    ));
    let asynchronous = "export default async (t) => ({ text: t, triggered: false });";
    assert!(matches!(
        failure(run_plugin(asynchronous, "t")),
        FilterFailure::InvalidResult { .. }
    ));
}

#[test]
fn infinite_loop_is_stopped_within_the_time_limit() {
    let started = Instant::now();
    let result = run_plugin("export default (t) => { while (true) {} };", "text");
    assert!(matches!(failure(result), FilterFailure::TimeLimit { .. }));
    // Generous bound: the point is that the run ends, not how fast (no timing assertions on
    // performance; this only proves the loop was interrupted).
    assert!(started.elapsed() < HANG);
    // A loop that catches the interrupt cannot keep running either.
    let result = run_plugin(
        "export default (t) => { for (;;) { try { while (true) {} } catch (e) {} } };",
        "text",
    );
    assert!(matches!(failure(result), FilterFailure::TimeLimit { .. }));
    // The process and the sandbox still work.
    assert_eq!(
        run_plugin("export default (t) => t + '!'", "ok")
            .unwrap()
            .text,
        "ok!"
    );
}

#[test]
fn a_microtask_chain_is_stopped_by_the_time_limit() {
    // With no job cap and room to grow (the chains keep their promises alive), only the
    // deadline can end these.
    let uncapped = PluginLimits {
        max_jobs: usize::MAX,
        memory_bytes: 512 * 1024 * 1024,
        ..test_limits()
    };
    for source in [
        // The loop-free chain from the report: each job queues the next.
        "const go = () => Promise.resolve().then(go); go();\nexport default (t) => t;",
        // The same, with the module kept pending by a top-level await.
        "const go = () => Promise.resolve().then(go); go();\nawait new Promise(() => {});\nexport default (t) => t;",
        // An async function awaiting in a loop, and a top-level await loop.
        "(async () => { for (;;) await null; })();\nexport default (t) => t;",
        "for (;;) await null;\nexport default (t) => t;",
        // A chain that yields to the interrupt handler at a different step count each time.
        "let n = 0; const go = () => { for (let i = 0; i < n % 7; i++) {} n++; return Promise.resolve().then(go); }; go();\nexport default (t) => t;",
    ] {
        let started = Instant::now();
        let result = run_plugin_with(uncapped, source, "the secret text");
        let error = result.as_ref().err().map(|error| error.to_string());
        assert!(
            matches!(failure(result), FilterFailure::TimeLimit { .. }),
            "{source}"
        );
        assert!(started.elapsed() < HANG, "{source}");
        let error = error.unwrap_or_default();
        assert!(error.contains("`plugin-1`"), "{error}");
        assert!(!error.contains("secret"), "{error}");
    }
}

#[test]
fn the_job_queue_is_capped() {
    let capped = PluginLimits {
        time: Duration::from_secs(30),
        max_jobs: 1000,
        ..test_limits()
    };
    for source in [
        "for (;;) await null;\nexport default (t) => t;",
        "const go = () => Promise.resolve().then(go); go();\nexport default (t) => t;",
    ] {
        let started = Instant::now();
        assert_eq!(
            failure(run_plugin_with(capped, source, "text")),
            FilterFailure::JobLimit { limit: 1000 },
            "{source}"
        );
        assert!(started.elapsed() < HANG, "{source}");
    }
    // A module that awaits a little finishes; one that awaits forever is an invalid module,
    // and one whose top-level await rejects threw.
    let awaits = "for (let i = 0; i < 100; i++) await null;\nexport default (t) => t + '!';";
    assert_eq!(run_plugin_with(capped, awaits, "ok").unwrap().text, "ok!");
    assert!(matches!(
        failure(run_plugin_with(
            capped,
            "await new Promise(() => {});\nexport default (t) => t;",
            "text"
        )),
        FilterFailure::InvalidResult { .. }
    ));
    assert_eq!(
        failure(run_plugin_with(
            capped,
            "await Promise.reject(new Error('no'));\nexport default (t) => t;",
            "text"
        )),
        FilterFailure::Threw
    );
    // A job that runs out of memory fails the run, though the rejection it causes is
    // never handled and the queue then runs dry.
    assert_eq!(
        failure(run_plugin_with(
            capped,
            "const grow = (a) => Promise.resolve().then(() => grow([a, 'x'.repeat(1 << 20) + a.length])); grow([]);\nexport default (t) => t;",
            "text"
        )),
        FilterFailure::MemoryLimit {
            limit_bytes: 16 * 1024 * 1024
        }
    );
    // Jobs queued by the filter call itself never run: the call is synchronous.
    let queues =
        "export default (t) => { const go = () => Promise.resolve().then(go); go(); return t; };";
    assert_eq!(
        run_plugin_with(capped, queues, "same").unwrap().text,
        "same"
    );
}

#[test]
fn native_calls_cannot_outlast_the_deadline() {
    // QuickJS checks its interrupt handler only between bytecode steps, so a loop of long
    // native calls overruns the deadline by thousands of calls; the caller is answered at the
    // deadline plus a grace period regardless, and the run's thread winds down on its own.
    for source in [
        "const a = new Float64Array(1 << 16); export default (t) => { for (;;) a.sort(); };",
        "const a = new Array(1 << 16).fill(1); export default (t) => { for (;;) a.reverse(); };",
    ] {
        let started = Instant::now();
        assert!(
            matches!(
                failure(run_plugin(source, "text")),
                FilterFailure::TimeLimit { .. }
            ),
            "{source}"
        );
        assert!(started.elapsed() < HANG, "{source}");
    }
}

#[test]
fn memory_bomb_is_stopped_within_the_memory_limit() {
    // The time limit is a hang guard here, not the limit under test: on a loaded machine a
    // 200 ms deadline could end the bomb before it reaches the memory limit.
    let run = |source: &str| {
        let limits = PluginLimits {
            time: Duration::from_secs(30),
            ..test_limits()
        };
        failure(run_plugin_with(limits, source, "text"))
    };
    let bomb =
        "export default (t) => { const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length); };";
    let stopped = run(bomb);
    assert!(
        matches!(stopped, FilterFailure::MemoryLimit { .. }),
        "{stopped:?}"
    );
    let single = "export default (t) => 'x'.repeat(1 << 28);";
    let stopped = run(single);
    assert!(
        matches!(stopped, FilterFailure::MemoryLimit { .. }),
        "{stopped:?}"
    );
    let recursion = "const f = (n) => f(n + 1) + 1; export default (t) => String(f(0));";
    let stopped = run(recursion);
    assert!(
        matches!(stopped, FilterFailure::StackOverflow),
        "{stopped:?}"
    );
    assert_eq!(
        run_plugin("export default (t) => t", "still fine")
            .unwrap()
            .text,
        "still fine"
    );
}

#[test]
fn errors_never_carry_the_text() {
    let secret = "my secret value 0xDEADBEEF";
    let result = run_plugin(
        "export default (t) => { throw new Error('leak: ' + t); };",
        secret,
    );
    let error = result.unwrap_err();
    assert!(error.is_filter_failure());
    let message = format!("{error} {error:?}");
    assert!(!message.contains("0xDEADBEEF"), "{message}");
    assert!(message.contains("plugin-1"), "{message}");
    // Oversized output is refused, not truncated.
    let result = run_plugin("export default (t) => t.repeat(100000);", "abcdef");
    assert!(matches!(
        failure(result),
        FilterFailure::OutputTooLarge { .. }
    ));
}

#[test]
fn explicit_and_legacy_results() {
    let spec_example = r#"
export default (text: string) => {
  let triggered = false;
  const output = text.replace(/Project Wren/g, () => {
    triggered = true;
    return "[INTERNAL_PROJECT]";
  });
  return { text: output, triggered };
};
"#;
    let redacted = run_plugin(spec_example, "About Project Wren.").unwrap();
    assert_eq!(redacted.text, "About [INTERNAL_PROJECT].");
    assert_eq!(redacted.triggered_filters, vec!["plugin-1"]);
    // An explicit `triggered: true` counts even when the text is unchanged.
    let noop = "export default (t) => ({ text: t, triggered: true });";
    assert_eq!(
        run_plugin(noop, "same").unwrap().triggered_filters,
        vec!["plugin-1"]
    );
    // Legacy string results: triggered when the output differs.
    let legacy = "export default function (t) { return t.replace('a', 'b'); }";
    assert_eq!(
        run_plugin(legacy, "xyz").unwrap().triggered_filters,
        Vec::<String>::new()
    );
    assert_eq!(
        run_plugin(legacy, "abc").unwrap().triggered_filters,
        vec!["plugin-1"]
    );
}
