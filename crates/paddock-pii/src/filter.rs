//! The five default filters and running them in pipeline order, within a time budget.

use std::time::{Duration, Instant};

use crate::detect::{cards, email, ids, keys, phone};
use crate::error::{FilterFailure, PiiError};
use crate::finding::{Finding, apply, normalise as normalise_findings};
use crate::normalise::{LastNormalised, Normalised};
use crate::scan::{Deadline, Expired};

/// How long the default filters of one run may take together unless configured otherwise.
/// Every filter is linear in its input, so this is a backstop far above the time any text up
/// to the 2 MiB the CLI accepts needs; a run that reaches it is blocked, never cut short.
pub const DEFAULT_FILTERS_TIME: Duration = Duration::from_secs(5);

/// A built-in filter. Fresh pipelines hold all five, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DefaultFilter {
    /// Private keys, API keys, JWTs, `Authorization` credentials, credential assignments and
    /// connection-string passwords.
    Keys,
    /// E-mail addresses.
    Email,
    /// Identity, social-security and personal tax numbers of 33 countries and regions.
    IdNumbers,
    /// Telephone numbers.
    PhoneNumbers,
    /// Payment card numbers.
    BankCards,
}

impl DefaultFilter {
    /// All default filters in pipeline order.
    pub const ALL: [DefaultFilter; 5] = [
        DefaultFilter::Keys,
        DefaultFilter::Email,
        DefaultFilter::IdNumbers,
        DefaultFilter::PhoneNumbers,
        DefaultFilter::BankCards,
    ];

    /// The stable id stored in `pipelines.json` and reported in `triggered_filters`.
    pub const fn id(self) -> &'static str {
        match self {
            DefaultFilter::Keys => "keys",
            DefaultFilter::Email => "email",
            DefaultFilter::IdNumbers => "id-numbers",
            DefaultFilter::PhoneNumbers => "phone-numbers",
            DefaultFilter::BankCards => "bank-cards",
        }
    }

    /// A name for people.
    pub const fn name(self) -> &'static str {
        match self {
            DefaultFilter::Keys => "Keys",
            DefaultFilter::Email => "Email addresses",
            DefaultFilter::IdNumbers => "ID numbers",
            DefaultFilter::PhoneNumbers => "Phone numbers",
            DefaultFilter::BankCards => "Bank cards",
        }
    }

    /// The default filter with this id.
    pub fn from_id(id: &str) -> Option<DefaultFilter> {
        DefaultFilter::ALL
            .into_iter()
            .find(|filter| filter.id() == id)
    }

    /// Appends this filter's findings in `text` to `out`, normalised (sorted, disjoint). Takes
    /// as long as it takes (linear in `text`); runs that need a deadline use
    /// [`redact_defaults_within`] or a pipeline.
    pub fn find(self, text: &str, out: &mut Vec<Finding>) {
        // Without a deadline nothing expires.
        let _ = self.find_within(text, out, &Deadline::none());
    }

    /// [`DefaultFilter::find`], giving up at `deadline`. On `Err`, `out` is incomplete and
    /// must not be used.
    pub(crate) fn find_within(
        self,
        text: &str,
        out: &mut Vec<Finding>,
        deadline: &Deadline,
    ) -> Result<(), Expired> {
        self.find_in(&Normalised::new(text), out, deadline)
    }

    /// [`DefaultFilter::find_within`] on a text already normalised.
    ///
    /// The detector scans the text as [`Normalised`] (full-width forms as ASCII, zero-width
    /// characters dropped), which is the text itself unless it holds such characters; the
    /// findings are mapped back so that they cover the original characters.
    fn find_in(
        self,
        text: &Normalised<'_>,
        out: &mut Vec<Finding>,
        deadline: &Deadline,
    ) -> Result<(), Expired> {
        let scanned = text.text();
        let first = out.len();
        match self {
            DefaultFilter::Keys => keys::find(scanned, out, deadline),
            DefaultFilter::Email => email::find(scanned, out, deadline),
            DefaultFilter::IdNumbers => ids::find(scanned, out, deadline),
            DefaultFilter::PhoneNumbers => phone::find(scanned, out, deadline),
            DefaultFilter::BankCards => cards::find(scanned, out, deadline),
        }?;
        text.map_back(out.get_mut(first..).unwrap_or_default());
        normalise_findings(out);
        Ok(())
    }

    /// The redacted text, or `None` when this filter found nothing.
    pub fn redact(self, text: &str) -> Option<String> {
        let mut findings = Vec::new();
        self.find(text, &mut findings);
        apply(text, &findings)
    }

    /// [`DefaultFilter::redact`] on a text already normalised, giving up at `deadline`.
    fn redact_in(
        self,
        text: &Normalised<'_>,
        deadline: &Deadline,
    ) -> Result<Option<String>, Expired> {
        let mut findings = Vec::new();
        self.find_in(text, &mut findings, deadline)?;
        Ok(apply(text.original(), &findings))
    }
}

/// The time the default filters of one run may still take: each filter gets what the ones
/// before it left, so plugins in between do not count against it.
#[derive(Debug)]
pub(crate) struct DefaultsBudget {
    limit: Duration,
    remaining: Duration,
    /// The text the last filter scanned, normalised, for the next one when it gets the same.
    last: LastNormalised,
}

impl DefaultsBudget {
    pub(crate) fn new(limit: Duration) -> DefaultsBudget {
        DefaultsBudget {
            limit,
            remaining: limit,
            last: LastNormalised::default(),
        }
    }

    /// Runs `filter` on `text` against the remaining budget. Running out is the filter's
    /// failure: the caller gets its id and the limit, never partial output.
    pub(crate) fn redact(
        &mut self,
        filter: DefaultFilter,
        text: &str,
    ) -> Result<Option<String>, PiiError> {
        let started = Instant::now();
        let deadline = Deadline::at(started + self.remaining);
        let result = filter.redact_in(&self.last.view(text), &deadline);
        self.remaining = self.remaining.saturating_sub(started.elapsed());
        result.map_err(|Expired| PiiError::FilterFailed {
            filter: filter.id().to_owned(),
            failure: FilterFailure::TimeLimit { limit: self.limit },
        })
    }
}

/// The result of a pipeline run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    /// The text after every enabled filter.
    pub text: String,
    /// Ids of the filters that reported a hit, in pipeline order; never any original value.
    pub triggered_filters: Vec<String>,
}

/// Runs the five default filters in order, as a fresh pipeline would, within
/// [`DEFAULT_FILTERS_TIME`].
pub fn redact_defaults(text: &str) -> Result<Redacted, PiiError> {
    redact_defaults_within(text, DEFAULT_FILTERS_TIME)
}

/// Runs the five default filters in order, all of them together within `time`. A filter that
/// runs out of time fails the run ([`PiiError::FilterFailed`] with
/// [`FilterFailure::TimeLimit`], naming the filter); no partial text is returned.
pub fn redact_defaults_within(text: &str, time: Duration) -> Result<Redacted, PiiError> {
    let mut budget = DefaultsBudget::new(time);
    let mut current: Option<String> = None;
    let mut triggered_filters = Vec::new();
    for filter in DefaultFilter::ALL {
        let input = current.as_deref().unwrap_or(text);
        if let Some(output) = budget.redact(filter, input)? {
            triggered_filters.push(filter.id().to_owned());
            current = Some(output);
        }
    }
    Ok(Redacted {
        text: current.unwrap_or_else(|| text.to_owned()),
        triggered_filters,
    })
}

/// What the default pipeline finds in `text`, in `text`'s own byte offsets.
///
/// Each filter runs on the output of the previous ones, exactly as in [`redact_defaults`];
/// the findings of later filters are mapped back through the earlier replacements. Replacing
/// the returned findings with their markers gives the same text as [`redact_defaults`].
pub fn default_findings(text: &str) -> Vec<Finding> {
    let mut all: Vec<Finding> = Vec::new();
    let mut stage = Vec::new();
    let mut last = LastNormalised::default();
    for filter in DefaultFilter::ALL {
        let current = apply(text, &all);
        let input = current.as_deref().unwrap_or(text);
        stage.clear();
        // Without a deadline nothing expires.
        let _ = filter.find_in(&last.view(input), &mut stage, &Deadline::none());
        // Map against the earlier stages only: this stage's findings are not yet applied.
        // They are sorted and disjoint, so one walk over the earlier findings maps them all.
        let mut original = ToOriginal::new(&all);
        let mapped: Vec<Finding> = stage
            .iter()
            .map(|finding| Finding {
                range: original.map(finding.range.start, false)
                    ..original.map(finding.range.end, true),
                category: finding.category,
            })
            .collect();
        all.extend(mapped);
        normalise_findings(&mut all);
    }
    all
}

/// Maps offsets in a redacted text back to the original, for offsets that come in order
/// (each range's start, then its end, ranges sorted and disjoint): it walks the findings that
/// made the redacted text once, however many offsets are mapped.
struct ToOriginal<'a> {
    findings: &'a [Finding],
    /// The first finding whose marker does not lie wholly before the offsets still to come.
    next: usize,
    /// How much longer the redacted text is than the original before `next`'s marker.
    shift: isize,
}

impl<'a> ToOriginal<'a> {
    fn new(findings: &'a [Finding]) -> ToOriginal<'a> {
        ToOriginal {
            findings,
            next: 0,
            shift: 0,
        }
    }

    /// The original offset of `position`. An offset inside a marker maps to the start (or,
    /// for `end`, the end) of the value the marker replaced.
    fn map(&mut self, position: usize, end: bool) -> usize {
        while let Some(finding) = self.findings.get(self.next) {
            let marker_start = (finding.range.start as isize + self.shift) as usize;
            let marker_len = finding.category.marker().len();
            let marker_end = marker_start + marker_len;
            if position < marker_start || (end && position == marker_start) {
                break;
            }
            if position < marker_end || (end && position == marker_end) {
                return if end && position > marker_start {
                    finding.range.end
                } else {
                    finding.range.start
                };
            }
            self.shift += marker_len as isize - finding.range.len() as isize;
            self.next += 1;
        }
        (position as isize - self.shift) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_run_in_order_and_report_ids() {
        let text = "mail jane@example.com, card 4111 1111 1111 1111, key AKIAIOSFODNN7EXAMPLE";
        let redacted = redact_defaults(text).unwrap();
        assert_eq!(redacted.text, "mail [EMAIL], card [CARD], key [API_KEY]");
        assert_eq!(
            redacted.triggered_filters,
            vec!["keys", "email", "bank-cards"]
        );
    }

    #[test]
    fn a_run_out_of_time_names_its_filter_and_returns_no_text() {
        // No key triggers and no `@`: the first filter with work to do is the ID filter,
        // which notices the spent budget while it walks the digit groups.
        let text = format!("secret {}", "4111 1111 1111 1111 ".repeat(100));
        let error = redact_defaults_within(&text, Duration::ZERO).unwrap_err();
        assert!(
            matches!(
                &error,
                PiiError::FilterFailed { filter, failure: FilterFailure::TimeLimit { limit } }
                    if filter == "id-numbers" && *limit == Duration::ZERO
            ),
            "{error:?}"
        );
        let message = error.to_string();
        assert_eq!(
            message,
            "filter `id-numbers` failed: it exceeded its time limit of 0 ms; the text was blocked"
        );
        assert!(!format!("{error:?}").contains("4111"));
        // With time to spare the same text is redacted.
        let redacted = redact_defaults_within(&text, DEFAULT_FILTERS_TIME).unwrap();
        assert_eq!(redacted.text.matches("[CARD]").count(), 100);
    }

    #[test]
    fn findings_map_back_to_the_original() {
        let text = "token=abcdefgh12345678 then jane@example.com and +44 20 7946 0958";
        let findings = default_findings(text);
        let values: Vec<&str> = findings.iter().map(|f| &text[f.range.clone()]).collect();
        assert_eq!(
            values,
            vec!["abcdefgh12345678", "jane@example.com", "+44 20 7946 0958"]
        );
        assert_eq!(
            apply(text, &findings).unwrap(),
            redact_defaults(text).unwrap().text
        );
    }
}
