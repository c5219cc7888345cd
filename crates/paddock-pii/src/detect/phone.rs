//! Telephone numbers, validated against Google's libphonenumber metadata (the `phonenumber`
//! crate, metadata 9.0.33).
//!
//! libphonenumber validates a number but does not find numbers in text, so the candidate
//! finder is ours: it walks [`NumericRun`]s and accepts
//! - international numbers written with `+` and a country code, valid for that country;
//! - North American numbers in the common standalone layouts `(415) 555-2671`,
//!   `415-555-2671`, `415.555.2671`, optionally with a leading `1`;
//! - national numbers in any layout when a phone label stands just before them ("phone",
//!   "Tel.", "mobile", "電話", "전화번호", "Teléfono", "Telefon", "телефон", "هاتف", "โทร", …),
//!   valid in one of the label's likely regions ([`LABELS_BY_REGION`]) or, failing those, one
//!   of the [`COMMON_REGIONS`].

use std::collections::HashMap;
use std::sync::LazyLock;

use phonenumber::country::Id;

use crate::detect::cards;
use crate::finding::{Category, Finding};
use crate::scan::{Deadline, Expired, LabelSet, NumericRun, left_alone, numeric_runs, right_alone};

/// The most digits a candidate may have; E.164 allows 15 plus room for trunk prefixes.
const MAX_DIGITS: usize = 17;

/// The most groups a candidate may span: the longest common layouts have seven
/// (`+33 (0)6 12 34 56 78`). Each candidate costs up to one libphonenumber parse per labelled
/// region, so a long run of short groups after a label must not offer a dozen of them.
const MAX_GROUPS: usize = 8;

/// Verdicts kept per run of the filter; beyond this many, verdicts are computed, not kept.
const MAX_VERDICTS: usize = 1 << 16;

/// Which validation a verdict is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Check {
    International,
    NorthAmerican,
    /// A national number after the label with this index in [`PhoneLabels`].
    National(usize),
}

/// libphonenumber verdicts already reached in this text. Validating costs microseconds, and
/// the same number tends to recur (signatures, quoted replies, pasted tables).
#[derive(Debug, Default)]
struct Verdicts {
    known: HashMap<(Check, String), bool>,
}

impl Verdicts {
    fn get(&mut self, check: Check, candidate: &str, validate: impl FnOnce() -> bool) -> bool {
        if let Some(&verdict) = self.known.get(&(check, candidate.to_owned())) {
            return verdict;
        }
        let verdict = validate();
        if self.known.len() < MAX_VERDICTS {
            self.known.insert((check, candidate.to_owned()), verdict);
        }
        verdict
    }
}

/// Regions tried for a national number after a phone label that names no language
/// (`phone`, `Tel.`, `Mob.`, `WhatsApp`), and after every other label once the label's own
/// regions have not matched.
const COMMON_REGIONS: &[Id] = &[
    Id::US,
    Id::GB,
    Id::DE,
    Id::FR,
    Id::ES,
    Id::IT,
    Id::NL,
    Id::BR,
    Id::CN,
    Id::IN,
    Id::KR,
    Id::JP,
    Id::AU,
    Id::SE,
    Id::PL,
    Id::CH,
    Id::AT,
    Id::BE,
    Id::IE,
    Id::MX,
    Id::PT,
    Id::DK,
    Id::NO,
    Id::FI,
    Id::NZ,
    Id::SG,
    Id::HK,
    Id::ZA,
];

/// Phone labels and the regions a national number after each is most likely from, tried
/// before [`COMMON_REGIONS`]. Labels are matched case-insensitively; see [`LabelSet`] for
/// their word boundaries.
const LABELS_BY_REGION: &[(&[&str], &[Id])] = &[
    (
        &[
            "phone",
            "phone number",
            "phone no",
            "ph",
            "tel",
            "tel.",
            "telephone",
            "mobile",
            "mob",
            "mob.",
            "cell",
            "cellphone",
            "call",
            "fax",
            "whatsapp",
            "sms",
            "text me",
            "℡",
            "☎",
            "☏",
            "📞",
            "📱",
        ],
        &[],
    ),
    // Japanese and Traditional Chinese.
    (&["電話"], &[Id::JP, Id::CN, Id::TW, Id::HK, Id::MO]),
    (
        &[
            "電話番号",
            "携帯",
            "携帯電話",
            "携帯番号",
            "ケータイ",
            "でんわ",
            "連絡先",
        ],
        &[Id::JP],
    ),
    (
        &["電話號碼", "手機", "手機號碼", "撥打", "聯絡方式", "傳真"],
        &[Id::TW, Id::HK, Id::MO],
    ),
    // Simplified Chinese.
    (
        &[
            "电话",
            "电话号码",
            "手机",
            "手机号",
            "手机号码",
            "拨打",
            "致电",
            "联系方式",
            "座机",
            "固话",
            "传真",
            "微信",
        ],
        &[Id::CN],
    ),
    // Korean.
    (
        &[
            "전화",
            "전화번호",
            "휴대폰",
            "핸드폰",
            "휴대전화",
            "연락처",
            "팩스",
        ],
        &[Id::KR],
    ),
    // Spanish, Portuguese, Italian.
    (
        &[
            "teléfono",
            "móvil",
            "movil",
            "telf",
            "telf.",
            "tfno",
            "tfno.",
        ],
        &[Id::ES, Id::MX, Id::AR, Id::CO, Id::CL, Id::PE],
    ),
    (
        &["celular", "cel", "cel."],
        &[Id::MX, Id::AR, Id::CO, Id::CL, Id::PE, Id::BR],
    ),
    (&["fono"], &[Id::CL]),
    (&["tlf", "tlf."], &[Id::ES, Id::DK, Id::NO]),
    (&["telefone", "telemóvel", "telemovel"], &[Id::BR, Id::PT]),
    (
        &["telefono", "cellulare"],
        &[Id::IT, Id::CH, Id::ES, Id::MX, Id::AR, Id::CO, Id::CL],
    ),
    // French.
    (
        &["téléphone", "tél", "tél.", "portable"],
        &[Id::FR, Id::BE, Id::CH, Id::CA, Id::LU],
    ),
    // German, and "Telefon" in the other languages that spell it so (Turkish, Czech, Slovak,
    // Romanian, Hungarian, Croatian, Serbian, Malay; Polish and the Scandinavian ones are
    // common regions).
    (
        &[
            "telefonnummer",
            "telefonnr",
            "handy",
            "handynummer",
            "handynr",
            "mobil",
            "mobilnummer",
            "mobiltelefon",
            "rufnummer",
            "festnetz",
            "fon",
        ],
        &[Id::DE, Id::AT, Id::CH],
    ),
    (
        &["telefon"],
        &[
            Id::DE,
            Id::AT,
            Id::CH,
            Id::TR,
            Id::CZ,
            Id::SK,
            Id::RO,
            Id::HU,
            Id::HR,
            Id::RS,
            Id::MY,
        ],
    ),
    // Dutch, Polish, Swedish, Turkish, Greek.
    (&["telefoon", "mobiel", "gsm"], &[Id::NL, Id::BE]),
    (&["kom", "kom.", "komórka"], &[Id::PL]),
    (&["tfn", "mobilnr"], &[Id::SE]),
    (&["cep", "telefonu"], &[Id::TR]),
    (&["τηλ", "τηλ.", "τηλέφωνο", "κινητό"], &[Id::GR, Id::CY]),
    // Russian and Ukrainian, with the inflected forms that follow "номер" and "для".
    (
        &[
            "телефон",
            "телефона",
            "телефону",
            "тел",
            "тел.",
            "моб",
            "моб.",
            "мобильный",
            "мобильного",
            "сотовый",
            "сот",
            "сот.",
            "факс",
            "мобільний",
        ],
        &[Id::RU, Id::UA, Id::BY, Id::KZ],
    ),
    // Arabic ("هاتف" also matches inside "الهاتف"), Hebrew, Persian, Hindi.
    (
        &["هاتف", "جوال", "موبايل", "تليفون", "واتساب"],
        &[
            Id::SA,
            Id::AE,
            Id::EG,
            Id::MA,
            Id::JO,
            Id::KW,
            Id::QA,
            Id::IQ,
        ],
    ),
    (&["טלפון", "נייד"], &[Id::IL]),
    (&["تلفن", "موبایل"], &[Id::IR]),
    // "फ़ोन" with the nukta as a combining sign and as part of U+095E.
    (&["फ़ोन", "\u{95E}ोन", "फोन", "मोबाइल", "दूरभाष"], &[Id::IN]),
    // Thai, Vietnamese, Indonesian and Malay.
    (&["โทร", "โทรศัพท์", "มือถือ", "เบอร์"], &[Id::TH]),
    (&["điện thoại", "đt", "sđt"], &[Id::VN]),
    (&["telepon", "telp", "telp."], &[Id::ID, Id::MY]),
];

/// The phone labels with, for each, the regions to try in order: the label's own, then the
/// common ones.
#[derive(Debug)]
struct PhoneLabels {
    set: LabelSet,
    regions: Vec<Vec<Id>>,
}

static LABELS: LazyLock<Option<PhoneLabels>> = LazyLock::new(|| {
    let mut labels = Vec::new();
    let mut regions = Vec::new();
    for &(group, own) in LABELS_BY_REGION {
        let mut tried: Vec<Id> = own.to_vec();
        tried.extend(COMMON_REGIONS.iter().filter(|region| !own.contains(region)));
        for &label in group {
            labels.push(label);
            regions.push(tried.clone());
        }
    }
    Some(PhoneLabels {
        set: LabelSet::new(&labels)?,
        regions,
    })
});

/// How far before a number its label may start: room for a label and filler words in
/// scripts of two and three bytes a character ("Телефон для связи: ").
const LABEL_BEFORE: usize = 48;

/// Appends every phone number in `text` to `out`.
pub(crate) fn find(text: &str, out: &mut Vec<Finding>, deadline: &Deadline) -> Result<(), Expired> {
    let mut scratch = String::with_capacity(32);
    let mut verdicts = Verdicts::default();
    numeric_runs(text, deadline, |run| {
        find_in_run(text, run, &mut scratch, &mut verdicts, out, deadline)
    })
}

/// A phone number starts at the start of its run, so only the run's first groups, up to
/// [`MAX_GROUPS`] groups and [`MAX_DIGITS`] digits, are candidates: a run of any length costs
/// a constant amount of work.
fn find_in_run(
    text: &str,
    run: &NumericRun,
    scratch: &mut String,
    verdicts: &mut Verdicts,
    out: &mut Vec<Finding>,
    deadline: &Deadline,
) -> Result<(), Expired> {
    let bytes = text.as_bytes();
    let count = run.groups.len();
    let run_start = run.start();
    if !left_alone(bytes, run_start) {
        return Ok(());
    }
    // Digits in groups `0..=last`, for every `last` within the limits.
    let mut prefix_digits = [0usize; MAX_GROUPS];
    let mut candidates = 0;
    let mut total = 0;
    for group in run.groups.iter().take(MAX_GROUPS) {
        total += group.len();
        if total > MAX_DIGITS {
            break;
        }
        prefix_digits[candidates] = total;
        candidates += 1;
    }
    // The label before the run, looked up once and only for runs that need it.
    let mut label = None;
    let mut label_before = || {
        *label.get_or_insert_with(|| {
            let end = run.groups.last().map_or(run_start, |g| g.end);
            LABELS.as_ref().and_then(|labels| {
                labels
                    .set
                    .directly_before(text, &(run_start..end), LABEL_BEFORE)
            })
        })
    };
    // Longest candidate first: drop trailing groups until the rest is a valid number. Only
    // group boundaries that are plain spaces may end a number inside a run.
    for last in (0..candidates).rev() {
        if !(6..=MAX_DIGITS).contains(&prefix_digits[last]) {
            continue;
        }
        deadline.check()?;
        let Some(end) = run.groups.get(last).map(|g| g.end) else {
            continue;
        };
        let ends_clean = if last + 1 == count {
            right_alone(bytes, end)
        } else {
            run.separator(text, last) == " "
        };
        if !ends_clean {
            continue;
        }
        let Some(candidate) = text.get(run_start..end) else {
            continue;
        };
        let accepted = if run.plus {
            verdicts.get(Check::International, candidate, || {
                valid_international(candidate)
            })
        } else {
            (nanp_layout(text, run, last)
                && verdicts.get(Check::NorthAmerican, candidate, || {
                    valid_in(candidate, Id::US)
                }))
                || label_before().is_some_and(|label| {
                    verdicts.get(Check::National(label), candidate, || {
                        valid_national(candidate, label, scratch)
                    }) && !cards::is_card_run(text, run)
                })
        };
        if accepted {
            out.push(Finding {
                range: run_start..end,
                category: Category::Phone,
            });
            return Ok(());
        }
    }
    Ok(())
}

fn valid_international(candidate: &str) -> bool {
    phonenumber::parse(None, candidate).is_ok_and(|number| phonenumber::is_valid(&number))
}

fn valid_in(candidate: &str, region: Id) -> bool {
    phonenumber::parse(Some(region), candidate).is_ok_and(|number| phonenumber::is_valid(&number))
}

/// Whether `candidate`, after the phone label with index `label`, is a valid number of one of
/// the label's regions (or an international one dialled with `00`).
fn valid_national(candidate: &str, label: usize, scratch: &mut String) -> bool {
    // `00 44 …` and `0044…` are international numbers dialled with the IDD prefix.
    scratch.clear();
    scratch.extend(candidate.chars().filter(char::is_ascii_digit));
    if let Some(rest) = scratch.strip_prefix("00") {
        let international = format!("+{rest}");
        if valid_international(&international) {
            return true;
        }
    }
    LABELS
        .as_ref()
        .and_then(|labels| labels.regions.get(label))
        .is_some_and(|regions| regions.iter().any(|&region| valid_in(candidate, region)))
}

/// The standalone North American layouts: `(NPA) NXX-XXXX`, `NPA-NXX-XXXX`, `NPA.NXX.XXXX`,
/// each optionally preceded by `1` and the same separator.
fn nanp_layout(text: &str, run: &NumericRun, last: usize) -> bool {
    let lengths: Vec<usize> = run
        .groups
        .get(..=last)
        .unwrap_or(&[])
        .iter()
        .map(|g| g.len())
        .collect();
    let separators: Vec<&str> = (0..last).map(|i| run.separator(text, i)).collect();
    match (lengths.as_slice(), separators.as_slice()) {
        ([3, 3, 4], [a, b]) if run.open_paren => {
            (*a == ") " || *a == ")") && matches!(*b, "-" | " " | ".")
        }
        ([3, 3, 4], [a, b]) => a == b && matches!(*a, "-" | "."),
        ([1, 3, 3, 4], [a, b, c]) => {
            run.groups
                .first()
                .is_some_and(|g| text.get(g.clone()) == Some("1"))
                && ((a == b && b == c && matches!(*a, "-" | "." | " "))
                    || (*a == " (" && *b == ") " && *c == "-"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phones(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(text, &mut out, &Deadline::none()).unwrap();
        out.iter().map(|f| &text[f.range.clone()]).collect()
    }

    #[test]
    fn international_numbers() {
        assert_eq!(
            phones("ring +44 20 7946 0958 today"),
            vec!["+44 20 7946 0958"]
        );
        assert_eq!(phones("+1 (415) 555-2671"), vec!["+1 (415) 555-2671"]);
        assert_eq!(phones("+49 30 901820"), vec!["+49 30 901820"]);
        assert!(phones("+1 000 000 0000").is_empty());
    }

    #[test]
    fn standalone_north_american_layouts() {
        assert_eq!(phones("call (415) 555-2671."), vec!["(415) 555-2671"]);
        assert_eq!(phones("at 415-555-2671"), vec!["415-555-2671"]);
        assert_eq!(phones("at 1-800-555-0199"), vec!["1-800-555-0199"]);
        assert!(phones("serial 4155552671").is_empty());
        assert!(phones("2023-10-15").is_empty());
    }

    #[test]
    fn labelled_national_numbers() {
        assert_eq!(phones("Tel. 030 901820"), vec!["030 901820"]);
        assert_eq!(phones("mobile: 06 12 34 56 78"), vec!["06 12 34 56 78"]);
        assert!(phones("order 030 901820").is_empty());
        assert!(phones("Call count: 12 345 678").is_empty());
        assert_eq!(phones("call me at 030 901820"), vec!["030 901820"]);
    }

    #[test]
    fn labels_in_other_languages() {
        // Each number is valid in the label's region (checked with the Python port of
        // libphonenumber) and none is a `+` number or a North American layout.
        let cases = [
            ("電話：03-7609-2279", "03-7609-2279"),
            ("電話番号は090-1234-5678です。", "090-1234-5678"),
            ("お問い合わせは携帯090-1234-5678まで", "090-1234-5678"),
            ("電話：02 2123 4567", "02 2123 4567"),
            ("聯絡電話：2123 4567", "2123 4567"),
            ("电话：010 6552 1234", "010 6552 1234"),
            ("我的手机号码为138 0013 8000，", "138 0013 8000"),
            ("전화번호는 02-312-3456입니다", "02-312-3456"),
            ("휴대폰: 010-2000-1234", "010-2000-1234"),
            ("Teléfono: 912 34 56 78", "912 34 56 78"),
            ("Mi teléfono es el 55 1234 5678", "55 1234 5678"),
            ("TELÉFONO 011 2345-6789", "011 2345-6789"),
            ("Celular: 601 2345678", "601 2345678"),
            ("Tél. : 01 42 68 53 00", "01 42 68 53 00"),
            ("Téléphone : 02 512 34 56", "02 512 34 56"),
            ("Telefonnummer: 044 668 18 00", "044 668 18 00"),
            ("Handy: 0151 23456789", "0151 23456789"),
            ("Meine Handynummer ist 01 5124567", "01 5124567"),
            ("Телефон для связи: 8 (495) 123-45-67", "8 (495) 123-45-67"),
            ("тел. 044 123 4567", "044 123 4567"),
            ("رقم الهاتف: 011 234 5678", "011 234 5678"),
            ("جوال 050 123 4567", "050 123 4567"),
            ("โทร. 02 123 4567", "02 123 4567"),
            ("ติดต่อโทร081 234 5678ค่ะ", "081 234 5678"),
            ("Telefone: (11) 2345-6789", "(11) 2345-6789"),
            ("Telemóvel: 21 234 5678", "21 234 5678"),
            ("Cellulare: 06 6982 1234", "06 6982 1234"),
            ("WhatsApp: 07400 123456", "07400 123456"),
            ("Mob. 07400 123456", "07400 123456"),
            ("Điện thoại: 024 3825 1234", "024 3825 1234"),
            ("℡03-7609-2279", "03-7609-2279"),
            ("ΤΗΛ. 210 123 4567", "210 123 4567"),
            ("טלפון: 03-123-4567", "03-123-4567"),
            ("تلفن: 021 1234 5678", "021 1234 5678"),
            ("Cep: 0532 123 45 67", "0532 123 45 67"),
            ("Fono: (2) 2123 4567", "(2) 2123 4567"),
            ("kom. 12 345 67 89", "12 345 67 89"),
            ("GSM 0612 345 678", "0612 345 678"),
            ("Тел/факс: 8 (495) 123-45-67", "8 (495) 123-45-67"),
        ];
        for (text, number) in cases {
            assert_eq!(phones(text), vec![number], "{text}");
        }
    }

    #[test]
    fn labels_in_other_languages_need_to_be_labels() {
        for text in [
            // Not a label: a word that contains one, or a label followed by other words.
            "отель 8 (495) 123-45-67",
            "電話会議 03-7609-2279",
            "Телефон сломался 044 123 4567",
            "Hotel 030 901820",
            // A label on the line before.
            "電話\n03-7609-2279",
            // Not valid in any of the label's regions or the common ones.
            "電話：0000 0000",
        ] {
            assert!(phones(text).is_empty(), "{text}: {:?}", phones(text));
        }
    }

    #[test]
    fn a_card_after_a_phone_label_is_left_to_the_card_filter() {
        // "4111 1111" alone is a valid number in more than one labelled region.
        assert!(phones("Tel. 4111 1111 1111 1111").is_empty());
        assert!(phones("โทร 4111 1111 1111 1111").is_empty());
        assert_eq!(phones("Tel. 4111 1111"), vec!["4111 1111"]);
    }

    #[test]
    fn long_runs_and_repeated_numbers() {
        // Only a run's first groups are candidates; the number at its start is still found.
        assert_eq!(
            phones("+44 20 7946 0958 1 2 3 4 5 6 7 8 9 0 1 2"),
            vec!["+44 20 7946 0958"]
        );
        // A repeated number is validated once and found every time.
        let text = "+44 20 7946 0958, again +44 20 7946 0958; Tel. 030 901820 and Tel. 030 901820";
        assert_eq!(
            phones(text),
            vec![
                "+44 20 7946 0958",
                "+44 20 7946 0958",
                "030 901820",
                "030 901820"
            ]
        );
    }
}
