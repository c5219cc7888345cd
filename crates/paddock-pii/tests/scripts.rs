#![cfg(test)]
//! The default filters on text in other scripts: values right against CJK, Hangul, Thai,
//! Arabic and Cyrillic text, in full-width forms and with zero-width characters inside, through
//! the public API; and the properties that no such disguise lets a value through and that a
//! redaction changes nothing outside its findings.

use paddock_pii::{Category, DefaultFilter, default_findings, redact_defaults};
use proptest::prelude::*;

fn redact(text: &str) -> String {
    redact_defaults(text).unwrap().text
}

/// Each text of `cases` redacts to exactly its expected text.
fn assert_redacts(cases: &[(&str, &str)]) {
    for (text, expected) in cases {
        assert_eq!(redact(text), *expected, "{text:?}");
    }
}

#[test]
fn values_against_other_scripts() {
    let cases = [
        ("連絡先：name@example.co.jp まで", "連絡先：[EMAIL] まで"),
        ("请发邮件到4716957890@qq.com，", "请发邮件到[EMAIL]，"),
        ("電話：03-7609-2279", "電話：[PHONE]"),
        ("이메일은kim@naver.com입니다", "이메일은[EMAIL]입니다"),
        ("โทร 081 234 5678 ครับ", "โทร [PHONE] ครับ"),
        ("رقم الهاتف: 011 234 5678", "رقم الهاتف: [PHONE]"),
        ("Телефон: 8 (495) 123-45-67", "Телефон: [PHONE]"),
        ("请致电+86 10 6552 1234，谢谢", "请致电[PHONE]，谢谢"),
        ("卡号：4111 1111 1111 1111。", "卡号：[CARD]。"),
    ];
    assert_redacts(&cases);
}

#[test]
fn full_width_values_are_redacted_in_their_original_form() {
    let cases = [
        ("ｎａｍｅ＠ｅｘａｍｐｌｅ．ｊｐまで", "[EMAIL]まで"),
        ("taro＠example．jp", "[EMAIL]"),
        ("電話：０３－７６０９－２２７９", "電話：[PHONE]"),
        ("＋１　４１５　５５５　２６７１", "[PHONE]"),
        ("（４１５）５５５－２６７１", "[PHONE]"),
        (
            "カード：４１１１　１１１１　１１１１　１１１１",
            "カード：[CARD]",
        ),
        ("ＳＳＮ：０７８－０５－１１２０", "ＳＳＮ：[ID_NUMBER]"),
        (
            "キー：ＡＫＩＡＩＯＳＦＯＤＮＮ７ＥＸＡＭＰＬＥ",
            "キー：[API_KEY]",
        ),
    ];
    assert_redacts(&cases);
}

#[test]
fn no_break_spaces_and_dashes_inside_numbers() {
    let cases = [
        (
            "Tél.\u{a0}: 06\u{a0}12\u{a0}34\u{a0}56\u{a0}78",
            "Tél.\u{a0}: [PHONE]",
        ),
        (
            "carte 4111\u{202f}1111\u{202f}1111\u{202f}1111",
            "carte [CARD]",
        ),
        ("SSN 078\u{2013}05\u{2013}1120", "SSN [ID_NUMBER]"),
        ("call +1\u{2011}415\u{2011}555\u{2011}2671", "call [PHONE]"),
        (
            "mot de passe\u{a0}: Kx7!vR2q",
            "mot de passe\u{a0}: [PASSWORD]",
        ),
    ];
    assert_redacts(&cases);
}

#[test]
fn zero_width_characters_do_not_hide_values() {
    let cases = [
        ("mail jane\u{200B}@example.com now", "mail [EMAIL] now"),
        ("call +1 415\u{200D} 555 26\u{00AD}71.", "call [PHONE]."),
        ("4111\u{2060} 1111 1111 1111", "[CARD]"),
        (
            "\u{FEFF}AKIA\u{200C}IOSFODNN7EXAMPLE\u{200B}",
            "\u{FEFF}[API_KEY]\u{200B}",
        ),
        ("SSN 078-\u{200B}05-1120", "SSN [ID_NUMBER]"),
    ];
    assert_redacts(&cases);
}

#[test]
fn findings_cover_the_original_characters() {
    let text = "電話：０３－７６０９－２２７９、\u{200B}ｎａｍｅ＠ｅｘａｍｐｌｅ．ｊｐ\u{200B}。";
    let findings = default_findings(text);
    let values: Vec<(&str, Category)> = findings
        .iter()
        .map(|f| (&text[f.range.clone()], f.category))
        .collect();
    assert_eq!(
        values,
        vec![
            ("０３－７６０９－２２７９", Category::Phone),
            ("ｎａｍｅ＠ｅｘａｍｐｌｅ．ｊｐ", Category::Email),
        ]
    );
    // Each default filter on its own maps the same way.
    assert_eq!(
        DefaultFilter::PhoneNumbers.redact(text).unwrap(),
        "電話：[PHONE]、\u{200B}ｎａｍｅ＠ｅｘａｍｐｌｅ．ｊｐ\u{200B}。"
    );
}

/// The seeded values of the property below, with the marker each must become.
fn seeded_value() -> impl Strategy<Value = (String, &'static str)> {
    prop_oneof![
        Just(("+1 415 555 2671".to_owned(), "[PHONE]")),
        Just(("4111 1111 1111 1111".to_owned(), "[CARD]")),
        "[a-z][a-z0-9]{0,9}(\\.[a-z0-9]{1,8})?@[a-z]{2,10}\\.(com|org|de|jp)"
            .prop_map(|address| (address, "[EMAIL]")),
    ]
}

/// Text around a value with no digits and no `@` of its own, in several scripts, with and
/// without a space.
fn context() -> impl Strategy<Value = (&'static str, &'static str)> {
    let before = prop::sample::select(vec![
        "",
        " ",
        "see ",
        "请联系",
        "連絡先：",
        "번호 ",
        "โทร ",
        "Звоните ",
        "اتصل ",
        "（",
        "「",
    ]);
    let after = prop::sample::select(vec![
        "",
        " ",
        ".",
        "。",
        "，谢谢",
        " まで",
        "입니다",
        "ครับ",
        " сегодня",
        "）",
        "」",
    ]);
    (before, after)
}

const INVISIBLE: [char; 6] = [
    '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{00AD}',
];

/// `value` disguised: invisible characters inserted at the given interior positions,
/// digits (and for `full_width_all` every ASCII character) in full-width forms.
fn disguise(value: &str, insertions: &[(usize, usize)], digits: bool, all: bool) -> String {
    let chars: Vec<char> = value.chars().collect();
    let mut out = String::new();
    for (index, &c) in chars.iter().enumerate() {
        for &(at, which) in insertions {
            if index > 0 && at % chars.len() == index {
                out.push(INVISIBLE[which % INVISIBLE.len()]);
            }
        }
        let wide = (all && c.is_ascii_graphic()) || (digits && c.is_ascii_digit());
        match wide
            .then(|| char::from_u32(u32::from(c) + 0xFEE0))
            .flatten()
        {
            Some(wide) => out.push(wide),
            None => out.push(c),
        }
    }
    out
}

/// Folds full-width digits to ASCII, for checking that no digit of a value survives.
fn ascii_digits(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '０'..='９' => char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c),
            '＠' => '@',
            _ => c,
        })
        .collect()
}

/// A text of many scripts, full-width forms, invisible characters and values.
fn mixed_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[ -~]{1,12}",
        "[\u{4E00}-\u{4E20}\u{3041}-\u{3060}\u{AC00}-\u{AC20}]{1,6}",
        "[\u{0E01}-\u{0E20}\u{0627}-\u{0640}\u{0430}-\u{044F}]{1,6}",
        "[\u{FF01}-\u{FF5E}\u{3000}]{1,8}",
        "[０-９]{1,6}",
        prop::sample::select(INVISIBLE.to_vec()).prop_map(String::from),
        prop::sample::select(vec![
            "：",
            "，",
            "、",
            "。",
            "（",
            "）",
            "電話",
            "电话",
            "전화",
            "Tel.",
            "телефон",
            "هاتف",
            "โทร",
            "SSN ",
        ])
        .prop_map(String::from),
        Just("+1 415 555 2671".to_owned()),
        Just("4111 1111 1111 1111".to_owned()),
        Just("03-7609-2279".to_owned()),
        Just("jane@example.com".to_owned()),
        Just("ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ".to_owned()),
    ];
    prop::collection::vec(piece, 0..16).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Invisible characters anywhere inside a value, or its digits (or all of it) in
    /// full-width forms, never let it through: the output holds no digit of it and is exactly
    /// the context around its marker.
    #[test]
    fn disguised_values_are_redacted(
        (value, marker) in seeded_value(),
        (before, after) in context(),
        insertions in prop::collection::vec((0usize..64, 0usize..6), 0..4),
        digits in any::<bool>(),
        all in any::<bool>(),
    ) {
        let disguised = disguise(&value, &insertions, digits, all);
        let text = format!("{before}{disguised}{after}");
        let redacted = redact(&text);
        let folded = ascii_digits(&redacted);
        prop_assert!(
            !folded.contains(|c: char| c.is_ascii_digit() || c == '@'),
            "{text:?} became {redacted:?}"
        );
        prop_assert_eq!(redacted, format!("{before}{marker}{after}"), "{:?}", text);
    }

    /// A redaction changes nothing outside the reported findings, which lie on char
    /// boundaries, sorted and disjoint.
    #[test]
    fn redaction_changes_only_the_findings(text in mixed_text()) {
        let redacted = redact(&text);
        let findings = default_findings(&text);
        let mut rebuilt = String::new();
        let mut cursor = 0;
        for finding in &findings {
            prop_assert!(finding.range.start >= cursor && finding.range.start < finding.range.end);
            prop_assert!(text.is_char_boundary(finding.range.start));
            prop_assert!(text.is_char_boundary(finding.range.end));
            rebuilt.push_str(&text[cursor..finding.range.start]);
            rebuilt.push_str(finding.category.marker());
            cursor = finding.range.end;
        }
        rebuilt.push_str(&text[cursor..]);
        prop_assert_eq!(rebuilt, redacted);
    }
}
