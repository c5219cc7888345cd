//! The five default detectors. Each appends [`Finding`](crate::finding::Finding)s for one
//! text; the filters in [`crate::filter`] turn them into redactions.

pub(crate) mod cards;
pub(crate) mod email;
pub(crate) mod ids;
pub(crate) mod keys;
pub(crate) mod phone;
