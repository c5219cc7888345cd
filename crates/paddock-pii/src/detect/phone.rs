//! Telephone numbers, validated against Google's libphonenumber metadata (the `phonenumber`
//! crate, metadata 9.0.33).
//!
//! libphonenumber validates a number but does not find numbers in text, so the candidate
//! finder is ours: it walks [`NumericRun`]s and accepts
//! - international numbers written with `+` and a country code, valid for that country;
//! - North American numbers in the common standalone layouts `(415) 555-2671`,
//!   `415-555-2671`, `415.555.2671`, optionally with a leading `1`;
//! - national numbers in any layout when a phone label ("phone", "Tel.", "mobile", …) stands
//!   just before them, valid in one of [`LABELLED_REGIONS`].

use std::sync::LazyLock;

use phonenumber::country::Id;

use crate::finding::{Category, Finding};
use crate::scan::{LabelSet, NumericRun, left_alone, numeric_runs, right_alone};

/// Regions tried, in order, for phone-labelled national numbers.
const LABELLED_REGIONS: &[Id] = &[
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

const PHONE_LABELS: &[&str] = &[
    "phone",
    "phone number",
    "phone no",
    "ph",
    "tel",
    "tel.",
    "telephone",
    "mobile",
    "mob",
    "cell",
    "cellphone",
    "call",
    "fax",
    "whatsapp",
    "sms",
    "text me",
    "telefon",
    "telefonnummer",
    "handy",
    "téléphone",
    "tél",
    "portable",
    "teléfono",
    "móvil",
    "telefono",
    "cellulare",
    "telefoon",
    "mobiel",
    "celular",
    "電話",
    "手机",
    "携帯",
    "전화",
];

static LABELS: LazyLock<Option<LabelSet>> = LazyLock::new(|| LabelSet::new(PHONE_LABELS));

/// Appends every phone number in `text` to `out`.
pub(crate) fn find(text: &str, out: &mut Vec<Finding>) {
    let mut scratch = String::with_capacity(32);
    numeric_runs(text, |run| find_in_run(text, run, &mut scratch, out));
}

fn find_in_run(text: &str, run: &NumericRun, scratch: &mut String, out: &mut Vec<Finding>) {
    let bytes = text.as_bytes();
    let count = run.groups.len();
    let digit_count = |first: usize, last: usize| -> usize {
        run.groups
            .get(first..=last)
            .map_or(0, |groups| groups.iter().map(|g| g.len()).sum())
    };
    let run_start = run.start();
    if !left_alone(bytes, run_start) {
        return;
    }
    let labelled = || {
        let end = run.groups.last().map_or(run_start, |g| g.end);
        LABELS
            .as_ref()
            .is_some_and(|labels| labels.directly_before(text, &(run_start..end), 40))
    };
    // Longest candidate first: drop trailing groups until the rest is a valid number. Only
    // group boundaries that are plain spaces may end a number inside a run.
    for last in (0..count).rev() {
        let digits = digit_count(0, last);
        if !(6..=17).contains(&digits) {
            continue;
        }
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
            valid_international(candidate)
        } else {
            (nanp_layout(text, run, last) && valid_in(candidate, Id::US))
                || (labelled() && valid_national(candidate, scratch))
        };
        if accepted {
            out.push(Finding {
                range: run_start..end,
                category: Category::Phone,
            });
            return;
        }
    }
}

fn valid_international(candidate: &str) -> bool {
    phonenumber::parse(None, candidate).is_ok_and(|number| phonenumber::is_valid(&number))
}

fn valid_in(candidate: &str, region: Id) -> bool {
    phonenumber::parse(Some(region), candidate).is_ok_and(|number| phonenumber::is_valid(&number))
}

fn valid_national(candidate: &str, scratch: &mut String) -> bool {
    // `00 44 …` and `0044…` are international numbers dialled with the IDD prefix.
    scratch.clear();
    scratch.extend(candidate.chars().filter(char::is_ascii_digit));
    if let Some(rest) = scratch.strip_prefix("00") {
        let international = format!("+{rest}");
        if valid_international(&international) {
            return true;
        }
    }
    LABELLED_REGIONS
        .iter()
        .any(|&region| valid_in(candidate, region))
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
        find(text, &mut out);
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
}
