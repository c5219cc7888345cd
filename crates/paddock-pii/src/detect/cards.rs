//! Payment card numbers: 12–19 digits, plain or grouped with spaces or dashes, that pass the
//! Luhn check and start with a known issuer prefix.

use crate::checksum::{all_same, luhn};
use crate::finding::{Category, Finding};
use crate::scan::{
    Deadline, Expired, NumericRun, collect_digits, left_alone, numeric_runs, right_alone,
};

/// The most groups a card number is printed in (19 digits in fours, or 4-6-5).
const MAX_GROUPS: usize = 5;

/// Appends every card number in `text` to `out`.
pub(crate) fn find(text: &str, out: &mut Vec<Finding>, deadline: &Deadline) -> Result<(), Expired> {
    let mut digits = Vec::with_capacity(19);
    numeric_runs(text, deadline, |run| {
        find_in_run(text, run, &mut digits, out, deadline)
    })
}

/// Whether the whole of `run` is one card number. The phone filter runs first and leaves such
/// runs to this one: after a phone label, the first groups of a card can be a valid national
/// number ("Tel. 4111 1111 …"), and redacting them as a phone would leave the rest of the card.
pub(crate) fn is_card_run(text: &str, run: &NumericRun) -> bool {
    let count = run.groups.len();
    let mut digits = Vec::with_capacity(19);
    (1..=MAX_GROUPS).contains(&count)
        && check(text, text.as_bytes(), run, 0, count - 1, &mut digits).is_some()
}

/// Whether a separator inside a numeric run parts two numbers: one with a space does (`4111…
/// 4111…`, `4111… ( 4111…`); one without continues the number (`4111…-5`, `4111….23`).
fn breaks(separator: &str) -> bool {
    separator.contains(' ')
}

/// Each group is tried as the start of a card against at most [`MAX_GROUPS`] ends, so a run
/// of any length costs a constant amount of work per group.
fn find_in_run(
    text: &str,
    run: &NumericRun,
    digits: &mut Vec<u8>,
    out: &mut Vec<Finding>,
    deadline: &Deadline,
) -> Result<(), Expired> {
    let bytes = text.as_bytes();
    let count = run.groups.len();
    let mut first = 0;
    // Whether a card ended right before `first` (cards pasted one after another).
    let mut after_card = false;
    while first < count {
        deadline.check()?;
        let mut matched = None;
        // A card may start at the run's first group, right after another card, or after a
        // plain space inside a longer run ("order 12 4111 1111 1111 1111"); never in the
        // middle of a dotted number. A suffix of a longer number grouped in fours
        // ("1234 5678 9012 3456") is not a card.
        let starts_clean = first == 0
            || after_card
            || (breaks(run.separator(text, first - 1))
                && !(run.groups.get(first - 1).is_some_and(|g| g.len() == 4)
                    && run.groups.get(first).is_some_and(|g| g.len() == 4)));
        if starts_clean {
            // Longest first, so "4111 1111 1111 1111" is not cut to its first 12 digits.
            for last in (first..count.min(first + MAX_GROUPS)).rev() {
                if let Some(range) = check(text, bytes, run, first, last, digits) {
                    matched = Some((last, range));
                    break;
                }
            }
        }
        match matched {
            Some((last, range)) => {
                out.push(Finding {
                    range,
                    category: Category::Card,
                });
                first = last + 1;
                after_card = true;
            }
            None => {
                first += 1;
                after_card = false;
            }
        }
    }
    Ok(())
}

fn check(
    text: &str,
    bytes: &[u8],
    run: &NumericRun,
    first: usize,
    last: usize,
    digits: &mut Vec<u8>,
) -> Option<std::ops::Range<usize>> {
    let groups = run.groups.get(first..=last)?;
    let start = groups.first()?.start;
    let end = groups.last()?.end;
    // Cheap rejections first: most candidates in a long run have the wrong digit count.
    let digit_count: usize = groups.iter().map(|g| g.len()).sum();
    if !(12..=19).contains(&digit_count) {
        return None;
    }
    let ends_clean = last + 1 == run.groups.len() || breaks(run.separator(text, last));
    if !ends_clean {
        return None;
    }
    // Separators must be one consistent space or dash.
    let separator = (first < last).then(|| run.separator(text, first));
    if let Some(sep) = separator {
        if sep != " " && sep != "-" {
            return None;
        }
        if (first..last).any(|i| run.separator(text, i) != sep) {
            return None;
        }
    }
    let mut lengths = [0usize; MAX_GROUPS];
    for (length, group) in lengths.iter_mut().zip(groups) {
        *length = group.len();
    }
    if !grouping_ok(lengths.get(..groups.len())?) {
        return None;
    }
    collect_digits(text, run, first, last, digits);
    if !(12..=19).contains(&digits.len())
        || all_same(digits)
        || !known_issuer(digits)
        || !luhn(digits)
    {
        return None;
    }
    // The edges of the run must not be glued to words; inner edges were checked above.
    let left_ok = first > 0 || (!run.plus && left_alone(bytes, start));
    let right_ok = last + 1 < run.groups.len() || right_alone(bytes, end);
    (left_ok && right_ok).then_some(start..end)
}

/// Card numbers are printed as one block, in fours (the last group may be short), or in the
/// 4-6-5 / 4-6-4 layout of American Express and Diners Club.
fn grouping_ok(lengths: &[usize]) -> bool {
    match lengths {
        [_] => true,
        [4, 6, 5] | [4, 6, 4] => true,
        [init @ .., last] => init.iter().all(|&l| l == 4) && (1..=4).contains(last),
        [] => false,
    }
}

/// Whether the number starts with an issuer identification number of a known network and has
/// a length that network issues.
fn known_issuer(digits: &[u8]) -> bool {
    let prefix = |n: usize| -> u32 {
        digits
            .iter()
            .take(n)
            .fold(0, |acc, &d| acc * 10 + u32::from(d))
    };
    let len = digits.len();
    let p1 = prefix(1);
    let p2 = prefix(2);
    let p3 = prefix(3);
    let p4 = prefix(4);
    let p6 = prefix(6);
    let visa = p1 == 4 && matches!(len, 13 | 16 | 19);
    let mastercard = ((51..=55).contains(&p2) || (2221..=2720).contains(&p4)) && len == 16;
    let amex = (p2 == 34 || p2 == 37) && len == 15;
    let discover =
        (p4 == 6011 || (644..=649).contains(&p3) || p2 == 65 || (622_126..=622_925).contains(&p6))
            && (16..=19).contains(&len);
    let jcb = (3528..=3589).contains(&p4) && (16..=19).contains(&len);
    let diners = ((300..=305).contains(&p3) || p4 == 3095 || matches!(p2, 36 | 38 | 39))
        && (14..=19).contains(&len);
    let unionpay = (p2 == 62 || (8100..=8171).contains(&p4)) && (16..=19).contains(&len);
    let maestro = (p2 == 50 || (56..=69).contains(&p2)) && (12..=19).contains(&len);
    let mir = (2200..=2204).contains(&p4) && (16..=19).contains(&len);
    let troy = p4 == 9792 && len == 16;
    visa || mastercard || amex || discover || jcb || diners || unionpay || maestro || mir || troy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cards(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(text, &mut out, &Deadline::none()).unwrap();
        out.iter().map(|f| &text[f.range.clone()]).collect()
    }

    #[test]
    fn finds_cards() {
        assert_eq!(
            cards("card 4111 1111 1111 1111 exp 12/29"),
            vec!["4111 1111 1111 1111"]
        );
        assert_eq!(cards("amex 3782-822463-10005."), vec!["3782-822463-10005"]);
        assert_eq!(cards("5555555555554444"), vec!["5555555555554444"]);
        assert_eq!(
            cards("ref 12 4111 1111 1111 1111"),
            vec!["4111 1111 1111 1111"]
        );
        assert!(cards("tracking 1234 5678 9012 3456").is_empty());
    }

    #[test]
    fn finds_cards_one_after_another() {
        assert_eq!(
            cards("4111 1111 1111 1111 5555 5555 5555 4444"),
            vec!["4111 1111 1111 1111", "5555 5555 5555 4444"]
        );
        assert_eq!(
            cards("4111-1111-1111-1111 3782-822463-10005 4111111111111111"),
            vec![
                "4111-1111-1111-1111",
                "3782-822463-10005",
                "4111111111111111"
            ]
        );
        // A number that is not a card does not make the next group a card start.
        assert!(cards("1234 5678 9012 3456 4111 1111 1111 1111").is_empty());
        // Punctuation with a space parts two cards; without one it continues the number.
        assert_eq!(
            cards("4111111111111111 ( 4000000000000002 "),
            vec!["4111111111111111", "4000000000000002"]
        );
        assert_eq!(
            cards("4111111111111111 (4000000000000002)"),
            vec!["4111111111111111", "4000000000000002"]
        );
        assert!(cards("4111111111111111-5").is_empty());
    }

    #[test]
    fn rejects_non_cards() {
        // Luhn-invalid, unknown issuer, mixed separators, dotted, glued to letters.
        assert!(cards("4111 1111 1111 1112").is_empty());
        assert!(cards("9783161484100").is_empty());
        assert!(cards("4111-1111 1111-1111").is_empty());
        assert!(cards("4111.1111.1111.1111").is_empty());
        assert!(cards("id A4111111111111111").is_empty());
        assert!(cards("3.4111111111111111").is_empty());
    }
}
