//! Measure or smoke: what `--smoke` changes, and the line a smoke run ends with. A smoke run
//! performs a benchmark's measured operation once against Paddock alone (no peer, no load
//! generator, no timings printed) and checks the answer, so that a broken benchmark fails the
//! test suite instead of rotting until somebody runs it. `android` and `tasks` are the
//! exceptions: `android`'s peer drives the same in-process fake phone, cheaply, and `tasks`'s
//! is the same agent CLI started directly, so their smoke runs check both sides.

/// How a benchmark runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The whole benchmark: Paddock and its peer, timed, with ratios.
    Measure,
    /// The measured operation once, its answer checked.
    Smoke,
}

impl Mode {
    pub fn is_smoke(self) -> bool {
        self == Self::Smoke
    }
}

/// Prints the line that says what a smoke run checked (`tests/smoke.rs` looks for it).
pub fn passed(bench: &str, checked: &str) {
    println!("smoke {bench}: ok: {checked}");
}
