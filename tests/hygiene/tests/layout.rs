//! The engine's house rules, checked on its source: `server/` keeps one job per file, no file of
//! it over 500 lines of code, and the eras differ in one place (`server/exec.rs`, beside the session
//! executor's `session.rs` and the task executor's `task/`).

#![allow(clippy::panic, reason = "a failing test should stop loudly")]

use std::path::{Path, PathBuf};

const MAX_LINES_OF_CODE: usize = 500;

fn server_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../elicit-runtime/src/server")
}

/// Every `.rs` file below `dir`, as (path relative to `server/`, text).
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let relative = path.strip_prefix(server_dir()).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            out.push((relative, text));
        }
    }
}

/// Lines of code: neither blank nor only a comment (`//`, `///`, `//!`).
fn lines_of_code(text: &str) -> usize {
    text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with("//")).count()
}

fn server_sources() -> Vec<(String, String)> {
    let mut out = Vec::new();
    sources(&server_dir(), &mut out);
    assert!(out.len() > 10, "server/ was not found where this test looks: {}", server_dir().display());
    out
}

#[test]
fn lines_of_code_count_neither_blanks_nor_comments() {
    assert_eq!(lines_of_code("//! a module\n\nfn f() {\n    // why\n    g();\n}\n"), 3);
}

#[test]
fn no_file_of_the_engine_is_over_500_lines_of_code() {
    let over: Vec<String> = server_sources()
        .iter()
        .map(|(path, text)| (path, lines_of_code(text)))
        .filter(|(_, n)| *n > MAX_LINES_OF_CODE)
        .map(|(path, n)| format!("{path}: {n}"))
        .collect();
    assert!(over.is_empty(), "server/ files over {MAX_LINES_OF_CODE} lines of code: {over:?}");
}

#[test]
fn only_the_executors_tell_the_eras_apart() {
    // Outside the executors, an era's executor may be built (`shared(Executor::Live(..))`) but
    // never matched on: the rounds, the flow, `once` and URL mode run the same code in every era.
    let executors = |path: &str| path == "exec.rs" || path == "session.rs" || path.starts_with("task/");
    let mut branches = Vec::new();
    for (path, text) in server_sources().iter().filter(|(path, _)| !executors(path)) {
        for (number, line) in text.lines().enumerate() {
            let names_an_era =
                line.contains("Executor::Replay") || line.contains("Executor::Live") || line.contains("Executor::Task");
            if names_an_era && !line.contains("shared(Executor::") {
                branches.push(format!("{path}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(branches.is_empty(), "code outside the executors branches on the era: {branches:?}");
}
