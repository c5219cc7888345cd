//! Docs that stay true, mechanically: every crate is in `crates/README.md` and ARCHITECTURE.md,
//! README's tool table and CONTRACT.md's surface list exactly the registry's tools, README's
//! control-method table lists exactly the control socket's methods, every Rust file opens with a
//! `//!` line saying what it is for, and no stub ships.
#![cfg(test)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap_or_else(|| panic!("the crate lives two levels below the repository"))
        .to_path_buf()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo().join(relative))
        .unwrap_or_else(|error| panic!("reading {relative}: {error}"))
}

/// The first cell of every row of the Markdown table whose header row starts with `header`,
/// with its backticks removed. Fails when there is no such table.
fn first_column(markdown: &str, header: &str) -> Vec<String> {
    let mut lines = markdown
        .lines()
        .skip_while(|line| !line.starts_with(header));
    assert!(
        lines.next().is_some(),
        "no table whose header starts with `{header}`"
    );
    lines
        .skip(1) // the |---| row
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            line.trim_start_matches('|')
                .split('|')
                .next()
                .unwrap_or_default()
                .trim()
                .trim_matches('`')
                .to_owned()
        })
        .collect()
}

/// Fails naming what is missing from and extra in `listed` compared with `expected`.
fn assert_same(what: &str, listed: &[String], expected: &[String]) {
    let listed_set: BTreeSet<&String> = listed.iter().collect();
    let expected_set: BTreeSet<&String> = expected.iter().collect();
    let missing: Vec<&&String> = expected_set.difference(&listed_set).collect();
    let extra: Vec<&&String> = listed_set.difference(&expected_set).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: missing {missing:?}, not in the code {extra:?}"
    );
    assert_eq!(
        listed.len(),
        listed_set.len(),
        "{what} lists a name twice: {listed:?}"
    );
}

fn crate_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("crates"))
        .unwrap_or_else(|error| panic!("crates/: {error}"))
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_crate_is_described_in_both_maps() {
    let crates = crate_names();
    assert!(crates.len() > 10, "found the crates: {crates:?}");
    let readme = first_column(&read("crates/README.md"), "| crate |");
    assert_same("crates/README.md", &readme, &crates);
    let architecture: Vec<String> = read("ARCHITECTURE.md")
        .lines()
        .filter_map(|line| line.strip_prefix("### `crates/"))
        .map(|rest| rest.trim_end_matches('`').to_owned())
        .collect();
    assert_same("ARCHITECTURE.md's code map", &architecture, &crates);
}

#[test]
fn readme_and_contract_list_exactly_the_fleet_tools() {
    let registered: Vec<String> = paddock_tools::catalog::fleet()
        .iter()
        .map(|tool| tool.def.name.to_owned())
        .collect();
    let readme = first_column(&read("README.md"), "| fleet tool |");
    assert_same("README's fleet tool table", &readme, &registered);
    let contract = read("crates/paddock-tools/CONTRACT.md");
    let surface: Vec<String> = contract
        .lines()
        .skip_while(|line| *line != "## Fleet surface")
        .skip(1)
        .take_while(|line| !line.starts_with("## "))
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect();
    assert_eq!(surface, registered, "CONTRACT.md's fleet surface, in order");
}

#[test]
fn readme_and_contract_list_exactly_the_registered_tools() {
    let registered: Vec<String> = paddock_tools::catalog::builtin()
        .iter()
        .map(|tool| tool.def.name.to_owned())
        .collect();
    assert!(registered.len() > 20, "{registered:?}");
    let readme = first_column(&read("README.md"), "| tool |");
    assert_same("README's tool table", &readme, &registered);
    let contract = read("crates/paddock-tools/CONTRACT.md");
    let surface: Vec<String> = contract
        .lines()
        .skip_while(|line| *line != "## Surface")
        .skip(1)
        .take_while(|line| !line.starts_with("## "))
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect();
    assert_same("CONTRACT.md's surface", &surface, &registered);
    assert_eq!(
        surface, registered,
        "CONTRACT.md lists the tools in tools/list order"
    );
}

#[test]
fn readme_lists_every_control_method() {
    let methods: Vec<String> = paddock_client::control::METHOD_NAMES
        .iter()
        .map(|name| (*name).to_owned())
        .collect();
    let readme = first_column(&read("README.md"), "| method | params |");
    assert_same("README's control-method table", &readme, &methods);
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name == "snapshots") {
                continue;
            }
            rust_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn every_rust_file_says_what_it_is_for() {
    let mut files = Vec::new();
    for name in crate_names() {
        for part in ["src", "tests", "examples", "benches"] {
            rust_files(&repo().join("crates").join(&name).join(part), &mut files);
        }
    }
    assert!(files.len() > 50, "found {} files", files.len());
    let headless: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let first = text
                .lines()
                .map(str::trim)
                .find(|line| !line.is_empty() && !line.starts_with("#!"));
            !first.is_some_and(|line| line.starts_with("//!"))
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(headless.is_empty(), "no `//!` header: {headless:#?}");
}

#[test]
fn no_stub_ships() {
    let mut files = Vec::new();
    for name in crate_names() {
        rust_files(&repo().join("crates").join(&name).join("src"), &mut files);
    }
    let stubs: Vec<String> = files
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.lines()
                .enumerate()
                .filter(|(_, line)| {
                    let code = line.split("//").next().unwrap_or_default();
                    code.contains(concat!("todo", "!("))
                        || code.contains(concat!("unimplemented", "!("))
                })
                .map(|(number, _)| format!("{}:{}", path.display(), number + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(stubs.is_empty(), "stubs in shipped code: {stubs:?}");
}
