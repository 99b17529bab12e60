//! The docs state counts, a cipher and defaults that the code can change under them: each claim
//! is read from the docs and compared with the code (or the script) it describes.

#![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

use std::path::Path;
use std::time::Duration;

use elicit_test_support::formats::thousands;

fn read(relative: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// The one line of `text` that contains `needle` (a table row, a sentence).
fn line_with<'t>(text: &'t str, needle: &str) -> &'t str {
    let mut lines = text.lines().filter(|line| line.contains(needle));
    let line = lines.next().unwrap_or_else(|| panic!("no line contains {needle:?}"));
    assert!(lines.next().is_none(), "more than one line contains {needle:?}");
    line
}

/// English for the small counts the docs spell out.
fn word(n: usize) -> &'static str {
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
        .get(n)
        .unwrap_or_else(|| panic!("no word for {n}"))
}

/// The entries of a bash array `name=( ... )` in a script, quoted entries kept whole.
fn bash_array(script: &str, name: &str) -> Vec<String> {
    let start = script.find(&format!("\n{name}=(")).unwrap_or_else(|| panic!("no array {name}")) + name.len() + 3;
    let end = start + script[start..].find(')').unwrap();
    let body = &script[start..end];
    if body.contains('"') {
        body.split('"').skip(1).step_by(2).map(str::to_owned).collect()
    } else {
        body.split_whitespace().map(str::to_owned).collect()
    }
}

#[test]
fn the_fuzz_target_count_is_the_number_of_targets() {
    let manifest = read("fuzz/Cargo.toml");
    let targets: Vec<&str> = manifest
        .split("[[bin]]")
        .skip(1)
        .map(|bin| bin.lines().find(|line| line.starts_with("name = ")).unwrap().split('"').nth(1).unwrap())
        .collect();
    let n = targets.len();
    assert!(n > 0);
    for target in &targets {
        assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../fuzz/fuzz_targets/{target}.rs")).exists());
    }
    let readme = read("README.md");
    assert!(readme.contains(&format!("fuzzing ({} targets", word(n))), "README: the fuzz target count is {n}");
    let page = read("docs/conformance.md");
    let mut count = word(n).to_owned();
    count[..1].make_ascii_uppercase();
    assert!(page.contains(&format!("{count} cargo-fuzz targets")), "docs/conformance.md: {n} targets");
    let fuzz_readme = read("fuzz/README.md");
    for target in &targets {
        assert!(page.contains(&format!("`{target}`")), "docs/conformance.md names {target}");
        assert!(fuzz_readme.contains(&format!("| `{target}` |")), "fuzz/README.md has a row for {target}");
    }
}

#[test]
fn the_conformance_tallies_are_the_scripts_scenario_lists() {
    let script = read("scripts/conformance.sh");
    let page = read("docs/conformance.md");
    let server = bash_array(&script, "scenarios").len();
    assert!(page.contains(&format!("all {server} `input-required-result-*` scenarios")), "{server} server scenarios");
    let client = bash_array(&script, "client_scenarios");
    let auth = client.iter().filter(|s| s.starts_with("auth/")).count();
    let total = client.len();
    assert!(page.contains(&format!("{total} of {total}")), "{total} client scenarios");
    assert!(page.contains(&format!("the {auth} scored `auth/*` scenarios")), "{auth} auth scenarios");
    for scenario in &client {
        let name = scenario.trim_start_matches("auth/");
        assert!(page.contains(name), "docs/conformance.md names the client scenario {scenario}");
    }
    let legacy = bash_array(&script, "legacy_scenarios").len();
    assert!(page.contains(&format!("({legacy} runs, no FAILURE)")), "{legacy} 2025-era server runs");
    let tasks = bash_array(&script, "task_scenarios").len();
    let claim = format!("The {} `tasks-*` scenarios", word(tasks));
    assert!(page.contains(&claim), "docs/conformance.md: {claim}");
    assert!(read("README.md").contains(&format!("the {} `tasks-*` scenarios", word(tasks))), "README: {tasks} tasks-*");
    for scenario in bash_array(&script, "legacy_client") {
        assert!(page.contains(&format!("`{scenario}`")), "docs/conformance.md names {scenario}");
    }
}

#[test]
fn the_docs_name_the_cipher_that_seals_by_default() {
    let version = rt::state::EnvelopeVersion::default();
    let cipher = match version {
        rt::state::EnvelopeVersion::V1 => "XChaCha20-Poly1305",
        rt::state::EnvelopeVersion::V2 => "AES-256-GCM-SIV",
        other => panic!("a new envelope version {other:?}: name its cipher here and in the docs"),
    };
    let claim = format!("{cipher}** (envelope version {}, the default", version.byte());
    assert!(read("README.md").contains(&claim), "README: {claim}");
    let claim = format!("{cipher} (envelope version {}, the default", version.byte());
    assert!(read("docs/server.md").contains(&claim), "docs/server.md: {claim}");
    assert!(read("BENCHMARKS.md").contains(&format!("using {cipher} (envelope version {}", version.byte())));
}

fn secs(d: Duration) -> String {
    match d.as_secs() {
        s if s.is_multiple_of(60) && s >= 15 * 60 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

#[test]
fn the_readmes_limits_are_the_defaults() {
    let readme = read("README.md");
    let sealer = rt::state::StateSealer::new(rt::state::KeyRing::generate());
    let row = line_with(&readme, "`EngineBuilder::state_ttl`");
    assert!(row.contains(&format!("| {} / {} KiB", secs(sealer.ttl()), sealer.max_token_len() / 1024)), "{row}");

    let engine = rt::server::EngineConfig::default();
    let row = line_with(&readme, "`EngineBuilder::max_invalid_answers`");
    assert!(row.contains(&format!("| {} (", engine.max_invalid_answers)), "{row}");
    let row = line_with(&readme, "`EngineBuilder::url_retry_wait`");
    assert!(row.contains(&format!("| {} (", secs(engine.url_retry_wait))), "{row}");
    assert!(row.contains(&format!("live {} (`url_ttl`)", secs(engine.url_ttl))), "{row}");
    let row = line_with(&readme, "`once_wait`");
    assert!(row.contains(&format!(
        "| {} (`once_wait`) / {} (`claim_lease`)",
        secs(engine.once_wait),
        secs(engine.claim_lease)
    )));

    let live = rt::server::session::SessionConfig::default();
    let row = line_with(&readme, "(`max_outstanding_asks`, `max_tasks_per_session`)");
    assert!(row.contains(&format!("| {}, {} per connection", live.max_outstanding_asks, live.max_tasks_per_session)));
    let row = line_with(&readme, "(`session_ask_timeout`, `session_url_completion_timeout`)");
    assert!(row.contains(&format!("| {} / {} (", secs(live.ask_timeout), secs(live.url_completion_timeout))), "{row}");
    let row = line_with(&readme, "(`session_heartbeat`, `session_url_poll`)");
    assert!(row.contains(&format!("| {} / {} (", secs(live.heartbeat), secs(live.url_poll))), "{row}");

    let row = line_with(&readme, "sessions open / per client / keep-alive");
    let sessions = format!(
        "| {} / {} / {} (",
        thousands(rt::rmcp::DEFAULT_MAX_SESSIONS),
        rt::rmcp::DEFAULT_MAX_SESSIONS_PER_CLIENT,
        secs(rt::rmcp::DEFAULT_SESSION_KEEP_ALIVE)
    );
    assert!(row.contains(&sessions), "{row}");
    let row = line_with(&readme, "`McpServerBuilder::max_request_body`");
    assert!(row.contains(&format!("| {} MiB, 413", rt::rmcp::DEFAULT_MAX_REQUEST_BODY / (1024 * 1024))), "{row}");

    let tasks = rt::server::task::TaskConfig::default();
    let row = line_with(&readme, "(`max_live_tasks`, `max_live_tasks_per_principal`, `task_lease`)");
    let caps = format!(
        "| {} / {} / {} (",
        thousands(tasks.max_live_tasks),
        tasks.max_live_tasks_per_principal,
        secs(tasks.lease)
    );
    assert!(row.contains(&caps), "{row}");
    let row = line_with(&readme, "(`task_input_wait`)");
    assert!(row.contains(&format!("| {}, then the task fails", secs(tasks.input_wait))), "{row}");
    let row = line_with(&readme, "(`EngineBuilder::max_answers_len`)");
    assert!(engine.max_answers_len.is_none(), "the answers' cap follows the state's by default");
    assert!(row.contains(&format!("| the state's size, {} KiB (", sealer.max_token_len() / 1024)), "{row}");

    let row = line_with(&readme, "URL steps per principal");
    let store = format!(
        "| {} each / {} / {} (",
        thousands(rt::server::store::DEFAULT_MAX_RECORDS),
        thousands(rt::server::store::DEFAULT_MAX_URL_RECORDS_PER_PRINCIPAL),
        thousands(rt::server::store::DEFAULT_MAX_FLOW_RECORDS_PER_PRINCIPAL)
    );
    assert!(row.contains(&store), "{row}");
}
