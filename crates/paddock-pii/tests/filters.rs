#![cfg(test)]
//! The default filters through the public API: positives, hard negatives, and properties.

use paddock_pii::{Category, DefaultFilter, default_findings, redact_defaults};
use proptest::prelude::*;

fn redact(text: &str) -> String {
    redact_defaults(text).unwrap().text
}

#[test]
fn each_filter_uses_its_own_marker() {
    let cases = [
        ("AKIAIOSFODNN7EXAMPLE", "[API_KEY]"),
        (
            "vch_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
            "[API_KEY]",
        ),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "[JWT]"),
        (
            "Authorization: Bearer abcdefgh12345678",
            "Authorization: Bearer [AUTHORIZATION]",
        ),
        ("password=hunter22", "password=[PASSWORD]"),
        (
            "client_secret: 0123456789abcdef",
            "client_secret: [CREDENTIAL]",
        ),
        ("jane@example.com", "[EMAIL]"),
        ("SSN 078-05-1120", "SSN [ID_NUMBER]"),
        ("(415) 555-2671", "[PHONE]"),
        ("4111 1111 1111 1111", "[CARD]"),
    ];
    for (input, expected) in cases {
        assert_eq!(redact(input), expected, "{input}");
    }
}

#[test]
fn paddock_secrets() {
    // Vouchers are 43 base64url characters; 42 or 44 are something else.
    let voucher = format!("vch_{}", "A1b2C3d4E5-_".repeat(4).get(..43).unwrap());
    assert_eq!(redact(&format!("use {voucher} now")), "use [API_KEY] now");
    let short = format!("vch_{}", "a".repeat(42));
    assert_eq!(redact(&short), short);
    // A daemon token (32 random bytes, base64url) is redacted when labelled.
    let token = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo";
    assert_eq!(
        redact(&format!("PADDOCK_DAEMON_HTTP_TOKEN={token}")),
        "PADDOCK_DAEMON_HTTP_TOKEN=[CREDENTIAL]"
    );
    assert_eq!(
        redact(&format!("daemon token: {token}")),
        "daemon token: [CREDENTIAL]"
    );
    assert_eq!(
        redact(&format!("curl -H 'Authorization: Bearer {token}'")),
        "curl -H 'Authorization: Bearer [AUTHORIZATION]'"
    );
}

#[test]
fn hard_negatives_pass_through_unchanged() {
    let negatives = [
        "id 550e8400-e29b-41d4-a716-446655440000",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "at 2024-03-15T14:22:31.123Z and 1710512551123",
        "order #100234567, invoice 2024-000184-17",
        "ISBN 978-3-16-148410-0",
        "version 1.24.3, v2.0.0-rc.1",
        "price $1,299.99",
        "hosts 192.168.100.200 and 2001:db8:85a3::8a2e:370:7334",
        "card 4111 1111 1111 1112",
        "account 123456789, ref 12345678901, batch 9876543210",
        "icon@2x.png and lodash@4.17.21",
        "max_tokens: 4096",
        "Bearer tokens expire",
    ];
    for text in negatives {
        assert_eq!(redact(text), text);
        assert!(redact_defaults(text).unwrap().triggered_filters.is_empty());
    }
}

#[test]
fn ambiguous_numbers_need_their_label() {
    assert_eq!(redact("BSN 111222333"), "BSN [ID_NUMBER]");
    assert_eq!(redact("ref 111222333"), "ref 111222333");
    assert_eq!(redact("SIN 046 454 286"), "SIN [ID_NUMBER]");
    assert_eq!(redact("box 046 454 286"), "box 046 454 286");
    assert_eq!(redact("Tel. 030 901820"), "Tel. [PHONE]");
    assert_eq!(redact("Zimmer 030 901820"), "Zimmer 030 901820");
}

#[test]
fn each_default_filter_redacts_only_its_category() {
    let text = "jane@example.com 4111 1111 1111 1111";
    assert_eq!(
        DefaultFilter::Email.redact(text).unwrap(),
        "[EMAIL] 4111 1111 1111 1111"
    );
    assert_eq!(
        DefaultFilter::BankCards.redact(text).unwrap(),
        "jane@example.com [CARD]"
    );
    assert!(DefaultFilter::Keys.redact(text).is_none());
}

fn luhn_complete(body: &str) -> String {
    let mut sum = 0;
    for (i, c) in body.bytes().rev().enumerate() {
        let mut d = u32::from(c - b'0');
        if i % 2 == 0 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    format!("{body}{}", (10 - sum % 10) % 10)
}

/// Secrets the generators build, each with the category it must be reported as.
fn secret() -> impl Strategy<Value = (String, Category)> {
    prop_oneof![
        "[a-z]{1,10}(\\.[a-z]{1,8})?@[a-z]{2,10}\\.(com|org|de|io)"
            .prop_map(|s| (s, Category::Email)),
        "[0-9]{14}".prop_map(|d| (luhn_complete(&format!("4{d}")), Category::Card)),
        ("[1-5]", "[0-9]{13}")
            .prop_map(|(a, d)| (luhn_complete(&format!("5{a}{d}")), Category::Card)),
        "[A-Za-z0-9]{36}".prop_map(|k| (format!("ghp_{k}"), Category::ApiKey)),
        "[A-Z2-7]{16}".prop_map(|k| (format!("AKIA{k}"), Category::ApiKey)),
        "[A-Za-z0-9_-]{43}".prop_map(|k| (format!("vch_{k}"), Category::ApiKey)),
        "[A-Za-z0-9]{18}".prop_map(|k| (format!("npm_{k}{k}"), Category::ApiKey)),
    ]
}

fn filler() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(" ".to_string()),
        Just(", see ".to_string()),
        Just("\n".to_string()),
        "[a-zA-Z ,.;:!?()]{1,40}".prop_map(|s| format!(" {s} ")),
        "[0-9]{1,4}".prop_map(|s| format!(" {s} ")),
    ]
}

/// A card number laid out solid, in spaced fours or in dashed fours.
fn card() -> impl Strategy<Value = String> {
    ("[0-9]{14}", 0..3usize).prop_map(|(body, layout)| {
        let digits = luhn_complete(&format!("4{body}"));
        let fours: Vec<&str> = (0..4).map(|i| &digits[i * 4..i * 4 + 4]).collect();
        match layout {
            0 => digits.clone(),
            1 => fours.join(" "),
            _ => fours.join("-"),
        }
    })
}

/// Surroundings aimed at the detectors' internal boundaries and at their adversarial inputs:
/// long single-spaced digit runs and runs of grouped numbers (numeric runs and their candidate
/// windows), runs of `@` and dots (e-mail reach), dense key triggers and tokens just short of
/// or past each reach of a key window, and runs of document and phone labels.
fn junk() -> impl Strategy<Value = String> {
    prop_oneof![
        (1usize..400).prop_map(|n| "1 ".repeat(n)),
        (1usize..200).prop_map(|n| "1234 ".repeat(n)),
        (1usize..200).prop_map(|n| "12.34.".repeat(n)),
        (1usize..3000).prop_map(|n| "SK".repeat(n)),
        (1usize..500).prop_map(|n| "token=".repeat(n)),
        (1usize..500).prop_map(|n| "eyJ.".repeat(n)),
        (1usize..500).prop_map(|n| "@".repeat(n)),
        (1usize..500).prop_map(|n| "a.".repeat(n)),
        (0usize..8).prop_map(|n| "x".repeat(96 + n - 4)),
        (0usize..8).prop_map(|n| "x".repeat(512 + n - 4)),
        (0usize..8).prop_map(|n| "x".repeat(16 * 1024 + n - 4)),
        (1usize..100).prop_map(|n| "SSN BSN Tel. ".repeat(n)),
        "[0-9]{1,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Values right after adversarial surroundings, on the same line (keys, e-mail) or across
    /// a line break (numbers, whose labels must not reach across), are found with the right
    /// category and never survive redaction.
    #[test]
    fn values_next_to_adversarial_input_are_redacted(
        parts in prop::collection::vec((junk(), secret()), 1..5),
        tail in junk(),
    ) {
        let mut text = String::new();
        for (junk, (value, category)) in &parts {
            text.push_str(junk);
            let numeric = matches!(category, Category::Card);
            text.push_str(if numeric { "\n" } else { " " });
            text.push_str(value);
            text.push(' ');
        }
        text.push_str(&tail);
        let redacted = redact_defaults(&text).unwrap();
        let findings = default_findings(&text);
        for (_, (value, category)) in &parts {
            prop_assert!(!redacted.text.contains(value.as_str()), "{value} survived");
            let start = text.find(value.as_str()).unwrap();
            prop_assert!(
                findings.iter().any(|f| f.category == *category
                    && f.range.start <= start
                    && f.range.end >= start + value.len()),
                "{value} not reported as {category:?}"
            );
        }
    }

    /// Card numbers pasted one after another in one numeric run, in any layout, after any
    /// digits: every one of them is redacted, wherever the run's candidate windows fall.
    #[test]
    fn cards_one_after_another_are_all_redacted(
        lead in prop_oneof![Just(String::new()), "[0-9]{1,3} ", (1usize..50).prop_map(|n| "1 ".repeat(n))],
        cards in prop::collection::vec(card(), 1..40),
    ) {
        let text = format!("{lead}{}", cards.join(" "));
        let redacted = redact_defaults(&text).unwrap();
        prop_assert_eq!(
            redacted.text.matches("[CARD]").count(),
            cards.len(),
            "{}", redacted.text
        );
        for card in &cards {
            prop_assert!(!redacted.text.contains(card.as_str()), "{card} survived");
        }
    }

    /// Inserted secrets are found with the right category and never survive redaction.
    #[test]
    fn redacted_output_never_contains_an_inserted_secret(parts in prop::collection::vec((filler(), secret()), 1..6), tail in filler()) {
        let mut text = String::new();
        for (fill, (value, _)) in &parts {
            text.push_str(fill);
            text.push_str(value);
        }
        text.push_str(&tail);
        let redacted = redact_defaults(&text).unwrap();
        let findings = default_findings(&text);
        for (_, (value, category)) in &parts {
            prop_assert!(!redacted.text.contains(value.as_str()), "{value} survived in {}", redacted.text);
            let start = text.find(value.as_str()).unwrap();
            prop_assert!(findings.iter().any(|f| f.category == *category && f.range.start <= start && f.range.end >= start + value.len()),
                "{value} not reported as {category:?}");
        }
    }

    /// Whatever the input, every detected value is gone from the output, and the findings
    /// are exactly what the pipeline replaces.
    #[test]
    fn detected_values_never_survive(text in "[ -~\n€ä]{0,200}") {
        let redacted = redact_defaults(&text).unwrap();
        let findings = default_findings(&text);
        let mut rebuilt = String::new();
        let mut cursor = 0;
        for finding in &findings {
            rebuilt.push_str(&text[cursor..finding.range.start]);
            rebuilt.push_str(finding.category.marker());
            cursor = finding.range.end;
        }
        rebuilt.push_str(&text[cursor..]);
        prop_assert_eq!(&rebuilt, &redacted.text);
        for finding in &findings {
            let value = &text[finding.range.clone()];
            if value.len() >= 8 {
                prop_assert!(!redacted.text.contains(value));
            }
        }
    }

    /// Redaction is idempotent: markers themselves are never detected.
    #[test]
    fn redaction_is_idempotent(parts in prop::collection::vec((filler(), secret()), 0..4)) {
        let text: String = parts.iter().map(|(f, (v, _))| format!("{f}{v}")).collect();
        let once = redact_defaults(&text).unwrap().text;
        prop_assert_eq!(redact_defaults(&once).unwrap().text, once.clone());
    }
}
