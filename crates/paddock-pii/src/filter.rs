//! The five default filters and running them in pipeline order.

use crate::detect::{cards, email, ids, keys, phone};
use crate::finding::{Finding, apply, normalise};

/// A built-in filter. Fresh pipelines hold all five, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DefaultFilter {
    /// Private keys, API keys, JWTs, `Authorization` credentials, credential assignments and
    /// connection-string passwords.
    Keys,
    /// E-mail addresses.
    Email,
    /// Identity, social-security and personal tax numbers of 16 countries and regions.
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

    /// Appends this filter's findings in `text` to `out`, normalised (sorted, disjoint).
    pub fn find(self, text: &str, out: &mut Vec<Finding>) {
        match self {
            DefaultFilter::Keys => keys::find(text, out),
            DefaultFilter::Email => email::find(text, out),
            DefaultFilter::IdNumbers => ids::find(text, out),
            DefaultFilter::PhoneNumbers => phone::find(text, out),
            DefaultFilter::BankCards => cards::find(text, out),
        }
        normalise(out);
    }

    /// The redacted text, or `None` when this filter found nothing.
    pub fn redact(self, text: &str) -> Option<String> {
        let mut findings = Vec::new();
        self.find(text, &mut findings);
        apply(text, &findings)
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

/// Runs the five default filters in order, as a fresh pipeline would.
pub fn redact_defaults(text: &str) -> Redacted {
    let mut current: Option<String> = None;
    let mut triggered_filters = Vec::new();
    for filter in DefaultFilter::ALL {
        let input = current.as_deref().unwrap_or(text);
        if let Some(output) = filter.redact(input) {
            triggered_filters.push(filter.id().to_owned());
            current = Some(output);
        }
    }
    Redacted {
        text: current.unwrap_or_else(|| text.to_owned()),
        triggered_filters,
    }
}

/// What the default pipeline finds in `text`, in `text`'s own byte offsets.
///
/// Each filter runs on the output of the previous ones, exactly as in [`redact_defaults`];
/// the findings of later filters are mapped back through the earlier replacements. Replacing
/// the returned findings with their markers gives the same text as [`redact_defaults`].
pub fn default_findings(text: &str) -> Vec<Finding> {
    let mut all: Vec<Finding> = Vec::new();
    let mut stage = Vec::new();
    for filter in DefaultFilter::ALL {
        let current = apply(text, &all);
        let input = current.as_deref().unwrap_or(text);
        stage.clear();
        filter.find(input, &mut stage);
        // Map against the earlier stages only: this stage's findings are not yet applied.
        let mapped: Vec<Finding> = stage
            .iter()
            .map(|finding| Finding {
                range: to_original(&all, finding.range.start, false)
                    ..to_original(&all, finding.range.end, true),
                category: finding.category,
            })
            .collect();
        all.extend(mapped);
        normalise(&mut all);
    }
    all
}

/// Maps an offset in the redacted text back to the original. An offset inside a marker maps
/// to the start (or, for `end`, the end) of the value the marker replaced.
fn to_original(findings: &[Finding], position: usize, end: bool) -> usize {
    let mut shift: isize = 0;
    for finding in findings {
        let marker_start = (finding.range.start as isize + shift) as usize;
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
        shift += marker_len as isize - finding.range.len() as isize;
    }
    (position as isize - shift) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_run_in_order_and_report_ids() {
        let text = "mail jane@example.com, card 4111 1111 1111 1111, key AKIAIOSFODNN7EXAMPLE";
        let redacted = redact_defaults(text);
        assert_eq!(redacted.text, "mail [EMAIL], card [CARD], key [API_KEY]");
        assert_eq!(
            redacted.triggered_filters,
            vec!["keys", "email", "bank-cards"]
        );
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
        assert_eq!(apply(text, &findings).unwrap(), redact_defaults(text).text);
    }
}
