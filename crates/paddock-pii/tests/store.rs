#![cfg(test)]
//! Per-bot pipelines: persistence, isolation, atomic replacement, management operations.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use paddock_pii::{
    BotId, DEFAULT_FILTERS_TIME, DefaultFilter, FilterKind, PiiConfig, PiiService, PluginLimits,
};

fn service(dir: &tempfile::TempDir) -> PiiService {
    PiiService::new(PiiConfig {
        state_dir: dir.path().to_path_buf(),
        machine_id: "machine-1".into(),
        limits: PluginLimits::default(),
        default_filters_time: DEFAULT_FILTERS_TIME,
    })
    .unwrap()
}

fn bot(name: &str) -> BotId {
    BotId::new(name).unwrap()
}

const UPPER: &str =
    "export default (t: string) => ({ text: t.toUpperCase(), triggered: t !== t.toUpperCase() });";
const TAG: &str = "export default (t) => ({ text: t + ' #tag', triggered: true });";

#[test]
fn fresh_bots_get_the_five_defaults_without_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(&dir);
    let view = service.list(&bot("a")).unwrap();
    let ids: Vec<&str> = view.filters.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids,
        ["keys", "email", "id-numbers", "phone-numbers", "bank-cards"]
    );
    assert!(
        view.filters
            .iter()
            .all(|f| f.enabled && matches!(f.kind, FilterKind::Default(_)))
    );
    assert!(!service.store().path(&bot("a")).exists());
    let redacted = service.run(&bot("a"), "mail jane@example.com").unwrap();
    assert_eq!(redacted.text, "mail [EMAIL]");
    assert_eq!(redacted.triggered_filters, ["email"]);
}

#[test]
fn changes_persist_privately_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let b = bot("b");
    {
        let service = service(&dir);
        let added = service.add(&b, UPPER, "Upper-cases everything").unwrap();
        assert_eq!(added.id, "plugin-1");
        service.set_enabled(&b, "email", false).unwrap();
        service.delete(&b, "bank-cards").unwrap();
    }
    let path = dir.path().join("daemons/machine-1/b/pii/pipelines.json");
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let stored: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(stored["schemaVersion"], 1);
    assert_eq!(stored["revision"], 3);
    assert_eq!(stored["filters"][4]["kind"], "plugin");
    assert_eq!(stored["filters"][4]["source"], UPPER);
    assert!(
        stored["filters"][4]["createdAt"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    // No temp files are left behind.
    assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);

    let service = service(&dir);
    let view = service.list(&b).unwrap();
    let ids: Vec<&str> = view.filters.iter().map(|f| f.id.as_str()).collect();
    // The deleted default stays deleted after a restart: no silent migration.
    assert_eq!(
        ids,
        ["keys", "email", "id-numbers", "phone-numbers", "plugin-1"]
    );
    assert!(!view.filters[1].enabled);
    let redacted = service
        .run(&b, "mail jane@example.com card 4111 1111 1111 1111")
        .unwrap();
    assert_eq!(
        redacted.text,
        "MAIL JANE@EXAMPLE.COM CARD 4111 1111 1111 1111"
    );
    assert_eq!(redacted.triggered_filters, ["plugin-1"]);
}

#[test]
fn adding_appends_with_fresh_ids_and_never_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(&dir);
    let b = bot("c");
    assert_eq!(service.add(&b, TAG, "one").unwrap().id, "plugin-1");
    assert_eq!(service.add(&b, TAG, "two").unwrap().id, "plugin-2");
    service.delete(&b, "plugin-2").unwrap();
    // A deleted id is never handed out again.
    assert_eq!(service.add(&b, UPPER, "three").unwrap().id, "plugin-3");
    let ids: Vec<String> = service
        .list(&b)
        .unwrap()
        .filters
        .into_iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(&ids[5..], ["plugin-1", "plugin-3"]);
    // Rejected sources and descriptions change nothing.
    let revision = service.list(&b).unwrap().revision;
    assert!(
        service
            .add(&b, "export default (", "bad")
            .unwrap_err()
            .is_invalid_input()
    );
    assert!(service.add(&b, TAG, "").unwrap_err().is_invalid_input());
    assert!(
        service
            .add(&b, TAG, "two\nlines")
            .unwrap_err()
            .is_invalid_input()
    );
    assert_eq!(service.list(&b).unwrap().revision, revision);
    assert!(
        service
            .set_enabled(&b, "plugin-9", true)
            .unwrap_err()
            .is_not_found()
    );
    assert!(service.delete(&b, "nope").unwrap_err().is_not_found());
}

#[test]
fn a_corrupt_file_affects_only_its_bot() {
    let dir = tempfile::tempdir().unwrap();
    let bad_path = dir.path().join("daemons/machine-1/bad/pii/pipelines.json");
    fs::create_dir_all(bad_path.parent().unwrap()).unwrap();
    fs::write(&bad_path, r#"{"schemaVersion": 1, "revision": 1, "nextPluginNumber": 1, "filters": [{"kind": "plugin", "id": "plugin-1", "description": "d", "source": "secret-ish {", "enabled": true, "createdAt": "x"}]}"#).unwrap();
    let other_path = dir
        .path()
        .join("daemons/machine-1/truncated/pii/pipelines.json");
    fs::create_dir_all(other_path.parent().unwrap()).unwrap();
    fs::write(&other_path, "{\"schemaVersion\": 1, \"filt").unwrap();
    let service = service(&dir);
    for name in ["bad", "truncated"] {
        let error = service.run(&bot(name), "hello").unwrap_err();
        assert!(error.is_corrupt_pipeline(), "{error}");
        let message = error.to_string();
        assert!(message.contains(&format!("`{name}`")), "{message}");
        assert!(
            !message.contains("secret-ish"),
            "the error quotes the file: {message}"
        );
        assert!(service.list(&bot(name)).unwrap_err().is_corrupt_pipeline());
        assert!(
            service
                .add(&bot(name), TAG, "x")
                .unwrap_err()
                .is_corrupt_pipeline()
        );
    }
    // Other bots run, change and persist normally.
    assert_eq!(
        service.run(&bot("good"), "jane@example.com").unwrap().text,
        "[EMAIL]"
    );
    service.add(&bot("good"), TAG, "tag").unwrap();
    assert_eq!(service.run(&bot("good"), "hi").unwrap().text, "hi #tag");
    // The corrupt file is left as it was for its owner to inspect.
    assert!(
        fs::read_to_string(&bad_path)
            .unwrap()
            .contains("secret-ish")
    );
}

#[test]
fn unknown_schema_versions_and_defaults_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join("daemons/machine-1/future/pii/pipelines.json");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, r#"{"schemaVersion": 2, "filters": []}"#).unwrap();
    let path2 = dir.path().join("daemons/machine-1/odd/pii/pipelines.json");
    fs::create_dir_all(path2.parent().unwrap()).unwrap();
    fs::write(&path2, r#"{"schemaVersion": 1, "revision": 0, "nextPluginNumber": 1, "filters": [{"kind": "default", "id": "passports", "rulesVersion": 1, "enabled": true}]}"#).unwrap();
    let service = service(&dir);
    assert!(
        service
            .list(&bot("future"))
            .unwrap_err()
            .to_string()
            .contains("`2`")
    );
    assert!(
        service
            .list(&bot("odd"))
            .unwrap_err()
            .to_string()
            .contains("`passports`")
    );
}

#[test]
fn manual_edits_need_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(&dir);
    let b = bot("edit");
    service.set_enabled(&b, "email", false).unwrap();
    assert_eq!(
        service.run(&b, "jane@example.com").unwrap().text,
        "jane@example.com"
    );
    let path = service.store().path(&b);
    let edited = fs::read_to_string(&path)
        .unwrap()
        .replace("\"enabled\": false", "\"enabled\": true");
    fs::write(&path, edited).unwrap();
    // The loaded snapshot is kept.
    assert_eq!(
        service.run(&b, "jane@example.com").unwrap().text,
        "jane@example.com"
    );
    drop(service);
    let restarted = self::service(&dir);
    assert_eq!(
        restarted.run(&b, "jane@example.com").unwrap().text,
        "[EMAIL]"
    );
}

#[test]
fn playground_limits() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(&dir);
    let b = bot("play");
    let ok = "x".repeat(1024);
    assert_eq!(service.test(&b, &ok).unwrap().text, ok);
    // 1024 bytes, counted in UTF-8: 342 three-byte characters are 1026 bytes.
    let wide = "€".repeat(342);
    assert!(service.test(&b, &wide).unwrap_err().is_invalid_input());
    // Output that grows past the limit is an error, with no partial output.
    service.add(&b, TAG, "tag").unwrap();
    let error = service.test(&b, &"y".repeat(1020)).unwrap_err();
    assert!(matches!(
        error,
        paddock_pii::PiiError::PlaygroundOutputTooLarge { .. }
    ));
    // The playground never writes anything.
    let before = fs::read(service.store().path(&b)).unwrap();
    service.test(&b, "hello").unwrap();
    assert_eq!(fs::read(service.store().path(&b)).unwrap(), before);
}

#[test]
fn invalid_ids_are_refused() {
    assert!(BotId::new("../etc").is_err());
    let dir = tempfile::tempdir().unwrap();
    let result = PiiService::new(PiiConfig {
        state_dir: dir.path().to_path_buf(),
        machine_id: "a/b".into(),
        limits: PluginLimits::default(),
        default_filters_time: DEFAULT_FILTERS_TIME,
    });
    assert!(result.unwrap_err().is_invalid_input());
}

#[test]
fn concurrent_runs_while_the_pipeline_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let service = Arc::new(service(&dir));
    let b = bot("busy");
    let other = bot("other");
    service.add(&other, TAG, "tag").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut runners = Vec::new();
    for _ in 0..3 {
        let (service, b, other, stop) = (
            Arc::clone(&service),
            b.clone(),
            other.clone(),
            Arc::clone(&stop),
        );
        runners.push(thread::spawn(move || {
            let mut runs = 0u32;
            while !stop.load(Ordering::Relaxed) || runs < 20 {
                // Every run sees one consistent snapshot: email either on (redacted) or off.
                let redacted = service.run(&b, "to jane@example.com").unwrap();
                assert!(
                    redacted.text == "to [EMAIL]" || redacted.text == "to jane@example.com",
                    "{}",
                    redacted.text
                );
                if redacted.text == "to [EMAIL]" {
                    assert!(redacted.triggered_filters.contains(&"email".to_string()));
                }
                // The other bot is never disturbed.
                assert_eq!(service.run(&other, "x").unwrap().text, "x #tag");
                runs += 1;
            }
            runs
        }));
    }
    for round in 0..30 {
        service.set_enabled(&b, "email", round % 2 == 0).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for runner in runners {
        assert!(runner.join().unwrap() >= 20);
    }
    assert_eq!(service.list(&b).unwrap().revision, 30);
    let email = service
        .list(&b)
        .unwrap()
        .filters
        .into_iter()
        .find(|f| f.kind == FilterKind::Default(DefaultFilter::Email));
    assert!(
        !email.unwrap().enabled,
        "the last change (disable) is in force"
    );
}

#[test]
fn default_filters_that_run_out_of_time_block_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let service = PiiService::new(PiiConfig {
        state_dir: dir.path().to_path_buf(),
        machine_id: "machine-1".into(),
        limits: PluginLimits::default(),
        default_filters_time: std::time::Duration::ZERO,
    })
    .unwrap();
    let text = format!(
        "mail jane@example.com {}",
        "4111 1111 1111 1111 ".repeat(100)
    );
    for result in [
        service.run(&bot("a"), &text),
        service.redact_defaults(&text),
    ] {
        let error = result.unwrap_err();
        assert!(error.is_filter_failure(), "{error}");
        let message = error.to_string();
        assert!(
            message.starts_with("filter `id-numbers` failed"),
            "{message}"
        );
        assert!(
            !message.contains("4111") && !message.contains("jane"),
            "{message}"
        );
    }
    // With the usual budget the same text is redacted, plugins and all.
    let generous = PiiService::new(PiiConfig {
        state_dir: dir.path().to_path_buf(),
        machine_id: "machine-2".into(),
        limits: PluginLimits::default(),
        default_filters_time: DEFAULT_FILTERS_TIME,
    })
    .unwrap();
    generous.add(&bot("a"), TAG, "Tags").unwrap();
    let redacted = generous.run(&bot("a"), &text).unwrap();
    assert_eq!(redacted.text.matches("[CARD]").count(), 100);
}
