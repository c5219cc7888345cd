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

use std::collections::HashMap;
use std::sync::LazyLock;

use phonenumber::country::Id;

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
    National,
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
    let mut label = None;
    let mut labelled = || {
        *label.get_or_insert_with(|| {
            let end = run.groups.last().map_or(run_start, |g| g.end);
            LABELS
                .as_ref()
                .is_some_and(|labels| labels.directly_before(text, &(run_start..end), 40))
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
                || (labelled()
                    && verdicts.get(Check::National, candidate, || {
                        valid_national(candidate, scratch)
                    }))
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
