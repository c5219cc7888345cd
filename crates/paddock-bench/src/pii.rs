//! `paddock-bench pii`: the default PII pipeline's throughput on clean prose, on secret-dense
//! text and on CJK prose, next to Presidio's analyzer on the same documents in the same run
//! (`bench/peers/presidio/analyze.py`, run by `--python`), and on adversarial inputs (repeated
//! card numbers, long digit runs, runs of `@`, dense key triggers …) at 320 KiB, 640 KiB and
//! 2 MiB, where a quadratic path would show as MB/s falling with size. The corpora are generated
//! from a fixed seed, so every run scans the same bytes.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use paddock_pii::{DefaultFilter, redact_defaults, redact_defaults_within};
use serde_json::Value as Json;

use crate::smoke::{self, Mode};

/// The Presidio peer, compiled in so that the binary runs it from anywhere.
const PRESIDIO_SCRIPT: &str = include_str!("../../../bench/peers/presidio/analyze.py");

/// The size each adversarial input is built at in a smoke run: enough for every shape to repeat.
const SMOKE_ADVERSARIAL_SIZE: usize = 4 * 1024;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct PiiArgs {
    /// A Python interpreter with `presidio-analyzer` and `spacy` installed; without it only
    /// Paddock is measured.
    #[arg(long)]
    python: Option<PathBuf>,
    /// Seconds per corpus measurement.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// Skip the prose corpora (and so Presidio).
    #[arg(long, conflicts_with = "no_adversarial")]
    adversarial_only: bool,
    /// Skip the adversarial inputs.
    #[arg(long)]
    no_adversarial: bool,
    /// Only the adversarial cases whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    only: Option<String>,
}

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn chars(&mut self, alphabet: &str, n: usize) -> String {
        let bytes = alphabet.as_bytes();
        (0..n)
            .map(|_| char::from(bytes[self.below(bytes.len())]))
            .collect()
    }
}

const WORDS: &[&str] = &[
    "the",
    "team",
    "shipped",
    "a",
    "new",
    "release",
    "of",
    "our",
    "service",
    "after",
    "review",
    "and",
    "testing",
    "we",
    "measured",
    "latency",
    "under",
    "load",
    "while",
    "users",
    "reported",
    "that",
    "pages",
    "felt",
    "faster",
    "than",
    "before",
    "in",
    "this",
    "week",
    "planning",
    "meeting",
    "everyone",
    "agreed",
    "to",
    "focus",
    "on",
    "reliability",
    "documentation",
    "onboarding",
    "for",
    "contributors",
    "who",
    "join",
    "project",
    "later",
    "each",
    "change",
    "is",
    "reviewed",
    "by",
    "two",
    "people",
    "deployment",
    "happens",
    "daily",
    "monitoring",
    "alerts",
    "when",
    "errors",
    "rise",
    "above",
    "threshold",
    "customers",
    "asked",
    "about",
    "pricing",
    "plans",
    "support",
    "answered",
    "quickly",
    "with",
    "clear",
    "steps",
    "the",
    "password",
    "reset",
    "flow",
    "token",
    "budget",
    "key",
    "decision",
    "was",
    "recorded",
    "notes",
    "from",
    "design",
    "session",
    "are",
    "shared",
    "widely",
];

fn prose(rng: &mut Rng, bytes: usize) -> Vec<String> {
    let mut docs = Vec::new();
    let mut total = 0;
    while total < bytes {
        let mut doc = String::with_capacity(2048);
        while doc.len() < 2000 {
            let words = 8 + rng.below(14);
            for i in 0..words {
                let word = rng.pick(WORDS);
                if i == 0 {
                    let mut chars = word.chars();
                    if let Some(first) = chars.next() {
                        doc.extend(first.to_uppercase());
                        doc.push_str(chars.as_str());
                    }
                } else {
                    doc.push(' ');
                    doc.push_str(word);
                }
                // Prose has some numbers: years, counts, versions.
                if rng.below(40) == 0 {
                    doc.push_str(&format!(" {}", 1990 + rng.below(40)));
                }
            }
            doc.push_str(rng.pick(&[". ", ". ", "! ", "? ", ".\n"]));
        }
        total += doc.len();
        docs.push(doc);
    }
    docs
}

/// Phrases of Chinese, Japanese and Korean prose (no PII), joined with the scripts' own
/// punctuation and an occasional number, as in chat and support text.
const CJK_PHRASES: &[&str] = &[
    "我们今天讨论了部署计划",
    "请在周五之前完成测试",
    "服务器在凌晨重启了",
    "这个问题已经修复",
    "用户反馈页面加载很慢",
    "下一版本会改进缓存",
    "会议改到下午三点",
    "明日の打ち合わせは十時からです",
    "設定ファイルを更新しました",
    "ログを確認してください",
    "ビルドが失敗した原因を調べています",
    "新しいバージョンを公開しました",
    "오늘 배포는 오후에 진행합니다",
    "테스트 결과를 공유해 주세요",
    "서버 로그를 확인했습니다",
];

fn cjk_prose(rng: &mut Rng, bytes: usize) -> Vec<String> {
    let mut docs = Vec::new();
    let mut total = 0;
    while total < bytes {
        let mut doc = String::with_capacity(2048);
        while doc.len() < 2000 {
            for _ in 0..2 + rng.below(3) {
                doc.push_str(rng.pick(CJK_PHRASES));
                doc.push_str(rng.pick(&["，", "、", "，"]));
            }
            doc.push_str(rng.pick(CJK_PHRASES));
            if rng.below(6) == 0 {
                doc.push_str(&format!(
                    "（{}年{}月）",
                    2020 + rng.below(7),
                    1 + rng.below(12)
                ));
            }
            doc.push_str(rng.pick(&["。", "。", "！", "。\n"]));
        }
        total += doc.len();
        docs.push(doc);
    }
    docs
}

fn luhn_complete(body: &str) -> String {
    let sum: u32 = body
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, c)| {
            let mut d = u32::from(c - b'0');
            if i % 2 == 0 {
                d *= 2;
                if d > 9 {
                    d -= 9;
                }
            }
            d
        })
        .sum();
    format!("{body}{}", (10 - sum % 10) % 10)
}

/// A Visa-like card number that passes the Luhn check.
fn card_number(rng: &mut Rng) -> String {
    luhn_complete(&format!("4{}", rng.chars("0123456789", 14)))
}

fn secret_dense(rng: &mut Rng, bytes: usize) -> Vec<String> {
    const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut docs = Vec::new();
    let mut total = 0;
    while total < bytes {
        let mut doc = String::with_capacity(2048);
        while doc.len() < 2000 {
            let line = match rng.below(10) {
                0 => format!(
                    "Contact {}.{}@example.com for access.",
                    rng.chars("abcdefghij", 5),
                    rng.chars("klmnop", 4)
                ),
                1 => format!("Card {} expires 04/29.", card_number(rng)),
                2 => format!(
                    "Call +44 20 7946 0{} after five.",
                    rng.chars("0123456789", 3)
                ),
                3 => format!("export GITHUB_TOKEN=ghp_{}", rng.chars(ALNUM, 36)),
                4 => format!("Authorization: Bearer {}", rng.chars(ALNUM, 32)),
                5 => format!(
                    "DB_PASSWORD={} and url postgres://app:{}@db:5432/x",
                    rng.chars(ALNUM, 12),
                    rng.chars(ALNUM, 10)
                ),
                6 => "SSN: 078-05-1120 on the form, order 100234567.".to_owned(),
                7 => format!(
                    "key AKIA{} in region eu-west-1",
                    rng.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
                ),
                8 => format!(
                    "ring (415) 555-{} or mail ops@corp.example.org",
                    rng.chars("0123456789", 4)
                ),
                _ => "The deploy at 2024-03-15T14:22:31Z used build 1.24.3 on 10.0.0.1.".to_owned(),
            };
            doc.push_str(&line);
            doc.push('\n');
        }
        total += doc.len();
        docs.push(doc);
    }
    docs
}

/// Adversarial inputs: a prefix and a unit repeated up to the size under test. Each shape aims
/// at one detector's scanning (runs of digit groups, label lookups, `@` expansion, key
/// triggers and their windows, PEM blocks).
const ADVERSARIAL: &[(&str, &str, &str)] = &[
    ("cards, spaced", "", "4111 1111 1111 1111 "),
    ("cards, dashed", "", "4111-1111-1111-1111 "),
    ("cards, one dashed run", "", "4111-1111-1111-1111-"),
    ("cards, 4-6-5", "", "3782 822463 10005 "),
    ("cards, solid", "", "4111111111111111 "),
    ("digits, single-spaced", "", "1 "),
    ("digit groups of four", "", "1234 "),
    ("one digit run", "", "4"),
    ("dotted digits", "", "12.34."),
    ("phones, international", "", "+44 20 7946 0958 "),
    ("phones, NANP", "", "(415) 555-2671 "),
    ("phones, labelled", "", "Tel. 030 901820 "),
    ("phone labels, spaced digits", "", "call 1 "),
    (
        "phone labels, long numbers",
        "",
        "Tel. 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7\n",
    ),
    ("ID numbers, labelled", "", "SSN 078-05-1120 "),
    ("ID labels, spaced digits", "", "SSN BSN PESEL 1 "),
    ("NINO", "", "AB 12 34 56 C "),
    ("alphanumeric IDs, no spaces", "", "X1234567L"),
    ("e-mail, @ run", "", "@"),
    ("e-mail, a@ run", "", "a@"),
    ("e-mail, dotted domain", "x@", "a."),
    ("e-mail, dotted local part", "", "a."),
    ("e-mail, addresses", "", "jane.doe@example.com "),
    ("keys, base64 run", "", "Ab9+"),
    ("keys, SK run", "", "SK"),
    ("keys, AKIA run", "", "AKIA"),
    ("keys, token= run", "", "token="),
    ("keys, password run", "x ", "password"),
    ("keys, assignments", "", "password=hunter22 "),
    (
        "keys, PEM BEGIN lines",
        "",
        "-----BEGIN RSA PRIVATE KEY-----\n",
    ),
    ("keys, Bearer run", "", "Bearer "),
    ("keys, :// run", "", "a://"),
    ("keys, -u run", "", "-u a:b "),
    ("keys, eyJ run", "", "eyJ."),
];

/// Builds the `i`-th value of an input made of distinct values.
type Value = fn(u64) -> String;

/// Adversarial inputs made of distinct values, so that nothing can be answered from what an
/// earlier, identical value gave.
const DISTINCT: &[(&str, Value)] = &[
    ("phones, distinct international", |i| {
        format!("+44 20 7{:03} {:04} ", i / 10_000 % 1000, i % 10_000)
    }),
    ("phone labels, distinct long numbers", |i| {
        let digits: Vec<String> = (0..17)
            .map(|k| ((i.wrapping_mul(2_654_435_761) >> (k * 3)) % 10).to_string())
            .collect();
        format!("Tel. {}\n", digits.join(" "))
    }),
    ("cards, distinct", |i| {
        let body = format!("4{:014}", i.wrapping_mul(7_919) % 100_000_000_000_000);
        format!("{} ", luhn_complete(&body))
    }),
];

/// Sizes of the adversarial inputs; 2 MiB is the stdin limit of `paddock pii redact`.
const ADVERSARIAL_SIZES: [usize; 3] = [320 * 1024, 640 * 1024, 2 * 1024 * 1024];

/// `prefix` followed by as many whole `unit`s as fit in `size` bytes.
fn repeated(prefix: &str, unit: &str, size: usize) -> String {
    let count = size.saturating_sub(prefix.len()) / unit.len().max(1);
    let mut text = String::with_capacity(size);
    text.push_str(prefix);
    for _ in 0..count {
        text.push_str(unit);
    }
    text
}

/// Values from `value(0)`, `value(1)`, … for as long as they fit in `size` bytes.
fn distinct(value: Value, size: usize) -> String {
    let mut text = String::with_capacity(size);
    for i in 0.. {
        let next = value(i);
        if text.len() + next.len() > size {
            break;
        }
        text.push_str(&next);
    }
    text
}

/// A named adversarial input, built at a given size.
type Case = (&'static str, Box<dyn Fn(usize) -> String>);

/// Every adversarial input, repeated units first, whose name contains `only` when given.
fn adversarial_cases(only: Option<&str>) -> Vec<Case> {
    let repeats = ADVERSARIAL.iter().map(|&(name, prefix, unit)| {
        (
            name,
            Box::new(move |size| repeated(prefix, unit, size)) as Box<dyn Fn(usize) -> String>,
        )
    });
    let distincts = DISTINCT.iter().map(|&(name, value)| {
        (
            name,
            Box::new(move |size| distinct(value, size)) as Box<dyn Fn(usize) -> String>,
        )
    });
    repeats
        .chain(distincts)
        .filter(|(name, _)| only.is_none_or(|only| name.contains(only)))
        .collect()
}

/// Runs the default pipeline once over each adversarial input and prints seconds and MB/s.
fn adversarial(only: Option<&str>) {
    println!("adversarial inputs, one run each (MB/s at 320 KiB / 640 KiB / 2 MiB):");
    // Build the lazily compiled automata, expressions and metadata before anything is timed.
    run_defaults(
        "warm up: jane@example.com 4111 1111 1111 1111 token=abcdefgh12345678 +44 20 7946 0958",
    );
    for (name, build) in adversarial_cases(only) {
        print!("  {name:<36}");
        let mut outcome = "";
        for size in ADVERSARIAL_SIZES {
            let text = build(size);
            let start = Instant::now();
            let result = run_defaults(std::hint::black_box(&text));
            let seconds = start.elapsed().as_secs_f64();
            if result.is_none() {
                outcome = "  (deadline hit)";
            }
            print!(
                "  {:>8.1} ({:>6.3} s)",
                text.len() as f64 / seconds / 1e6,
                seconds
            );
            let _ = std::io::stdout().flush();
        }
        println!("{outcome}");
    }
}

/// The default pipeline over `text`; `None` when it failed (hit its deadline).
fn run_defaults(text: &str) -> Option<paddock_pii::Redacted> {
    redact_defaults(text).ok()
}

/// A smoke run checks that the pipeline works, not how fast: on a loaded two-core CI machine
/// an unoptimised build may need more than the pipeline's own five seconds, so the smoke run
/// gives each text this much, a deadline that only catches a hang.
const SMOKE_HANG_DEADLINE: Duration = Duration::from_secs(120);

/// The default pipeline over `text` with the smoke run's hang deadline.
fn run_defaults_smoke(text: &str) -> anyhow::Result<paddock_pii::Redacted> {
    redact_defaults_within(text, SMOKE_HANG_DEADLINE).map_err(anyhow::Error::from)
}

/// Runs the default pipeline over `docs` repeatedly for at least `min` and returns MB/s
/// (10^6 bytes per second).
fn measure(docs: &[String], min: Duration) -> (f64, usize) {
    let bytes: usize = docs.iter().map(String::len).sum();
    let mut triggered = 0;
    for doc in docs {
        triggered += run_defaults(doc).map_or(0, |r| r.triggered_filters.len());
    }
    let start = Instant::now();
    let mut passes = 0u32;
    while start.elapsed() < min {
        for doc in docs {
            std::hint::black_box(run_defaults(std::hint::black_box(doc)));
        }
        passes += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    (bytes as f64 * f64::from(passes) / seconds / 1e6, triggered)
}

pub(crate) fn run(args: &PiiArgs, mode: Mode) -> anyhow::Result<()> {
    if mode.is_smoke() {
        return smoke(args.only.as_deref());
    }
    if args.adversarial_only {
        adversarial(args.only.as_deref());
        return Ok(());
    }
    let mut rng = Rng(0x5eed_1234_abcd_0042);
    let clean = prose(&mut rng, 512 * 1024);
    let dense = secret_dense(&mut rng, 256 * 1024);
    let cjk = cjk_prose(&mut rng, 512 * 1024);
    let min = Duration::from_secs(args.seconds);
    let (clean_mbps, clean_hits) = measure(&clean, min);
    let (dense_mbps, dense_hits) = measure(&dense, min);
    let (cjk_mbps, cjk_hits) = measure(&cjk, min);
    println!("paddock-pii default pipeline, one thread:");
    println!(
        "  clean prose   {:>9.1} MB/s  ({} docs, {} bytes, {clean_hits} filter hits)",
        clean_mbps,
        clean.len(),
        clean.iter().map(String::len).sum::<usize>()
    );
    println!(
        "  secret-dense  {:>9.1} MB/s  ({} docs, {} bytes, {dense_hits} filter hits)",
        dense_mbps,
        dense.len(),
        dense.iter().map(String::len).sum::<usize>()
    );
    println!(
        "  CJK prose     {:>9.1} MB/s  ({} docs, {} bytes, {cjk_hits} filter hits)",
        cjk_mbps,
        cjk.len(),
        cjk.iter().map(String::len).sum::<usize>()
    );
    if !args.no_adversarial {
        adversarial(args.only.as_deref());
    }
    let Some(python) = &args.python else {
        println!("(pass --python PATH to compare with Presidio)");
        return Ok(());
    };
    let result = presidio(python, &clean, &dense, &cjk)?;
    println!("Presidio analyzer (SlimSpacyNlpEngine, blank English pipeline), same documents:");
    for (name, label, ours) in [
        ("clean", "clean prose", clean_mbps),
        ("dense", "secret-dense", dense_mbps),
        ("cjk", "CJK prose", cjk_mbps),
    ] {
        let bytes = result[name]["bytes"].as_f64().unwrap_or(0.0);
        let secs = result[name]["seconds"].as_f64().unwrap_or(f64::NAN);
        let theirs = bytes / secs / 1e6;
        let ratio = ours / theirs;
        println!(
            "  {label:<12}  {theirs:>9.3} MB/s  ({} entities)   paddock is {ratio:.0}x faster (goal >= 100x: {})",
            result[name]["entities"],
            if ratio >= 100.0 { "met" } else { "NOT met" }
        );
    }
    Ok(())
}

/// Runs the Presidio script with `python` over the three corpora; returns its JSON line.
fn presidio(
    python: &Path,
    clean: &[String],
    dense: &[String],
    cjk: &[String],
) -> anyhow::Result<Json> {
    let dir = tempfile::Builder::new().prefix("pii-bench-").tempdir()?;
    let docs_path = dir.path().join("docs.json");
    let script_path = dir.path().join("analyze.py");
    let json = serde_json::json!({ "clean": clean, "dense": dense, "cjk": cjk });
    std::fs::write(&docs_path, json.to_string())
        .and_then(|()| std::fs::write(&script_path, PRESIDIO_SCRIPT))
        .context("cannot write the benchmark files")?;
    let output = Command::new(python)
        .arg(&script_path)
        .arg(&docs_path)
        .arg(dir.path().join("spacy-en"))
        .output()
        .with_context(|| format!("cannot run `{}`", python.display()))?;
    if !output.status.success() {
        bail!(
            "`{}` failed:\n{}\nhint: it needs presidio-analyzer and spacy (pip install presidio-analyzer spacy)",
            python.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str::<Json>(line).ok())
        .with_context(|| format!("unexpected output from the Presidio script: {stdout}"))
}

/// The measured operation once: the default pipeline over a secret-dense document with a card
/// number in it, which must come back without the number and with the card filter triggered;
/// then each adversarial input, small, which must finish (the deadline only catches a hang).
fn smoke(only: Option<&str>) -> anyhow::Result<()> {
    let mut rng = Rng(0x5eed_1234_abcd_0042);
    let card = card_number(&mut rng);
    let mut text = secret_dense(&mut rng, 1).concat();
    text.push_str(&format!("Card {card} expires 04/29.\n"));
    let redacted = run_defaults_smoke(&text).context("the default pipeline failed")?;
    if redacted.text.contains(&card) {
        bail!("the default pipeline left the card `{card}` in the text");
    }
    let cards = DefaultFilter::BankCards.id();
    if !redacted.triggered_filters.iter().any(|id| id == cards) {
        bail!(
            "`{cards}` did not trigger on the card `{card}`; triggered: {:?}",
            redacted.triggered_filters
        );
    }
    let cases = adversarial_cases(only);
    for (name, build) in &cases {
        run_defaults_smoke(&build(SMOKE_ADVERSARIAL_SIZE)).with_context(|| {
            format!("the adversarial input `{name}` failed at {SMOKE_ADVERSARIAL_SIZE} bytes")
        })?;
    }
    smoke::passed(
        "pii",
        &format!(
            "the default pipeline redacted the card {card} ({cards} triggered) and ran {} adversarial inputs at {} KiB",
            cases.len(),
            SMOKE_ADVERSARIAL_SIZE / 1024
        ),
    );
    Ok(())
}
