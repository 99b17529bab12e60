//! The public API of `elicit-runtime`, held: a listing computed from its source (no nightly, no
//! rustdoc JSON) and committed at `tests/hygiene/api/elicit-runtime.txt`, the names its `server`
//! root exports (`tests/hygiene/api/server-root.txt`), no retired word in a public name, and no
//! import cycle between the engine's modules (nor between the CLI's, nor the benchmarks').
//!
//! After a deliberate change to the API, regenerate both files and read the diff:
//! `UPDATE_PUBLIC_API=1 cargo test -p elicit-hygiene --test public_api`.
//! What the listing holds, and how it spells it: `public_api/listing.rs`.

#![allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]

mod public_api {
    pub(crate) mod cycles;
    pub(crate) mod listing;
    pub(crate) mod model;
    pub(crate) mod resolve;
    pub(crate) mod tokens;
}

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use public_api::cycles::{cycles, edges};
use public_api::listing::{Entry, list};
use public_api::model::Crate;

const UPDATE: &str = "UPDATE_PUBLIC_API";
const REGENERATE: &str = "UPDATE_PUBLIC_API=1 cargo test -p elicit-hygiene --test public_api";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A crate of the workspace, its files read below `dir`.
fn load(dir: &str, name: &str, root: &str) -> Crate {
    let base = workspace().join(dir);
    let read = |file: &str| std::fs::read_to_string(base.join(file)).ok();
    Crate::load(name, root, &read).unwrap_or_else(|e| panic!("{dir}: {e}"))
}

fn runtime_listing() -> Vec<Entry> {
    list(&load("elicit-runtime", "elicit_runtime", "src/lib.rs"))
}

/// Compares `actual` with the committed file `api/<file>`, or rewrites the file under
/// `UPDATE_PUBLIC_API=1`. The failure lists the lines added and removed.
fn hold(file: &str, header: &str, actual: &[String], what: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("api").join(file);
    let mut text = String::from(header);
    for line in actual {
        text.push_str(line);
        text.push('\n');
    }
    if std::env::var_os(UPDATE).is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let committed: BTreeSet<&str> = committed.lines().filter(|l| !l.starts_with("# ") && !l.is_empty()).collect();
    let actual: BTreeSet<&str> = actual.iter().map(String::as_str).collect();
    let added: Vec<&str> = actual.difference(&committed).copied().collect();
    let removed: Vec<&str> = committed.difference(&actual).copied().collect();
    if !added.is_empty() || !removed.is_empty() {
        let mut message = format!("{what} changed (tests/hygiene/api/{file}):\n");
        for line in &removed {
            message.push_str(&format!("- {line}\n"));
        }
        for line in &added {
            message.push_str(&format!("+ {line}\n"));
        }
        message.push_str(&format!(
            "\nIf the change is meant (it is a breaking change for any `-` line), regenerate the file and \
             commit it with the change:\n    {REGENERATE}\nElse put the code back.",
        ));
        panic!("{message}");
    }
}

#[test]
fn the_public_api_is_the_committed_listing() {
    let lines: Vec<String> = runtime_listing().into_iter().map(|e| e.line).collect();
    assert!(lines.len() > 200, "the listing of elicit-runtime is nearly empty: {lines:?}");
    let header = format!(
        "# The public API of elicit-runtime (every feature on), computed from its source by\n\
         # tests/hygiene/tests/public_api.rs; how it is spelled: tests/hygiene/tests/public_api/listing.rs.\n\
         # Regenerate after a deliberate change: {REGENERATE}\n"
    );
    hold("elicit-runtime.txt", &header, &lines, "the public API of elicit-runtime");
}

/// The names the `server` module's root exports: what a handler author sees first.
#[test]
fn the_server_root_exports_the_committed_names() {
    let names: BTreeSet<String> = runtime_listing()
        .into_iter()
        .filter(|e| e.kind != "impl" && e.kind != "hidden")
        .filter_map(|e| {
            e.path.strip_prefix("elicit_runtime::server::").filter(|rest| !rest.contains("::")).map(str::to_owned)
        })
        .collect();
    assert!(names.contains("Engine"), "the server root was not found: {names:?}");
    let header = format!(
        "# The public names of `elicit_runtime::server` (its root: items, re-exports, modules), one a line.\n\
         # The root holds what a handler author needs; the rest lives in its public submodules.\n\
         # Regenerate after a deliberate change: {REGENERATE}\n"
    );
    hold("server-root.txt", &header, &names.into_iter().collect::<Vec<_>>(), "the names of the server root");
}

/// The words of a name: split at `_` and at each change from lower case (or a digit) to upper
/// case, and before the last capital of a run of capitals followed by lower case (`HTTPServer`:
/// `http`, `server`); lower-cased.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<char> = part.chars().collect();
        let mut word = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let boundary = i > 0
                && c.is_uppercase()
                && (!chars[i - 1].is_uppercase() || chars.get(i + 1).is_some_and(|n| n.is_lowercase()));
            if boundary && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            word.extend(c.to_lowercase());
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
}

/// Words the API no longer uses: a 2025-era exchange is a *session* (the engine asks over an open
/// session), not a "live", "legacy" or "push" one.
const RETIRED: [&str; 4] = ["live", "legacy", "push", "pushed"];

/// Public names that contain a retired word in another sense, each with why: the end of the path
/// (`Owner::name`), so that moving the owner to another module keeps the entry.
const NOT_RETIRED: &[(&str, &str)] = &[
    ("ContentErrors::push", "adds a failure to a collection of errors, as `Vec::push` adds an element"),
    ("ContentErrors::push_missing", "adds a missing-field failure to the collection, as `push`"),
    ("TaskConfig::max_live_tasks", "a live task is one still running (not terminal, lease not passed)"),
    ("TaskConfig::max_live_tasks_per_principal", "a live task is one still running"),
    ("TaskConfig::max_live_tasks_per_anonymous_client", "a live task is one still running"),
    ("TaskLimits::max_live", "a live task is one still running"),
    ("TaskLimits::max_live_per_principal", "a live task is one still running"),
    ("TaskRecord::live", "whether the task still runs (not terminal, lease not passed)"),
];

/// `path` ends with `suffix`, whole segments.
fn names(path: &str, suffix: &str) -> bool {
    path == suffix || path.ends_with(&format!("::{suffix}"))
}

/// The public names of the runtime (item, module, field, variant, method, re-export) that hold
/// a retired word, as `path (kind)`.
fn retired_names(listing: &[Entry], allowed: &[(&str, &str)]) -> Vec<String> {
    listing
        .iter()
        .filter(|e| e.kind != "impl" && e.kind != "hidden")
        .filter(|e| e.name.as_deref().is_some_and(|name| words(name).iter().any(|w| RETIRED.contains(&w.as_str()))))
        .filter(|e| !allowed.iter().any(|(path, _)| names(&e.path, path)))
        .map(|e| format!("{} ({})", e.path, e.kind))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[test]
fn no_public_name_holds_a_retired_word() {
    let listing = runtime_listing();
    for (path, reason) in NOT_RETIRED {
        assert!(!reason.is_empty());
        assert!(
            listing.iter().any(|e| names(&e.path, path)),
            "NOT_RETIRED names {path}, which is no longer public: drop it (or follow its rename)"
        );
    }
    let found = retired_names(&listing, NOT_RETIRED);
    assert!(
        found.is_empty(),
        "{} public names of elicit-runtime hold a retired word ({}; whole words of the snake_case or \
         CamelCase split):\n  {}\nRename each (a 2025-era exchange is a session), or, for a word in \
         another sense (a collection's `push`), add it to NOT_RETIRED in tests/hygiene/tests/public_api.rs \
         with the reason.",
        found.len(),
        RETIRED.join(", "),
        found.join("\n  ")
    );
}

fn assert_no_cycles(krate: &Crate, base: &[&str], place: &str) {
    let found = cycles(&edges(krate, base));
    assert!(
        found.is_empty(),
        "import cycles between the modules of {place}:\n{}\nBreak each loop: move what both sides need into \
         one of them (or a module of its own below {place}), or reach it through the module that defines it \
         in one direction only.",
        found.join("\n")
    );
}

/// The engine's layers, leaves first: a module may import from its own layer's peers and from
/// the layers before it, never from a later one (and `no_import_cycle_between_the_server_modules`
/// holds that no two peers name each other). The map is argued in `server/mod.rs`. Each module of
/// `server` is in exactly one layer.
const ENGINE_LAYERS: &[&[&str]] = &[
    // Vocabulary that names nothing of the server: the clock, the tunables, the sealed state, the
    // re-ask message.
    &["clock", "config", "payload", "reask"],
    // Every store trait and store.
    &["store"],
    // What a round speaks: what an ask returns, the request and its outcome, the request's context.
    &["answer", "context", "request"],
    // What the flow and the executors call: ledger claims, the metrics hooks, page sign-in.
    &["claim", "observe", "page_login"],
    // What a flow holds: the executor of each era (a 2025-era session's link, a task's link, the
    // `Executor` choosing between them) and the form pages.
    &["exec", "pages", "session", "task"],
    // The handle a handler asks through.
    &["flow"],
    // The flow's asks by job: argument completion, form pages, `once`, URL mode.
    &["args", "form_page", "once", "url"],
    // The façade: what every round shares.
    &["engine"],
    // Its entry points per era and its builder.
    &["builder", "round", "task_calls"],
];

#[test]
fn the_engines_modules_import_only_their_own_layer_and_the_layers_below() {
    let krate = load("elicit-runtime", "elicit_runtime", "src/lib.rs");
    assert!(krate.module(&["server", "store"]).is_some(), "elicit-runtime/src/server/store not found");
    let layer_of = |module: &str| ENGINE_LAYERS.iter().position(|layer| layer.contains(&module));
    let mut upward = Vec::new();
    for edge in edges(&krate, &["server"]) {
        let (Some(from), Some(to)) = (layer_of(&edge.from), layer_of(&edge.to)) else {
            upward.push(format!("{} -> {}: a module of no layer (add it to ENGINE_LAYERS)", edge.from, edge.to));
            continue;
        };
        if to > from {
            upward.push(format!("{} -> {} (a later layer): {}", edge.from, edge.to, edge.evidence));
        }
    }
    assert!(
        upward.is_empty(),
        "modules of elicit-runtime/src/server/ import from a later layer (ENGINE_LAYERS in \
         tests/hygiene/tests/public_api.rs):\n  {}\nMove what the lower module needs down, or reach it \
         the other way round.",
        upward.join("\n  ")
    );
    // Between the layers the dependency runs one way, so no loop passes through `store`: the
    // stores (task records included) no longer import the task code or the engine.

    // The public modules a reader meets (`store`, `task`, `session`, `pages`) name each other in
    // one direction only.
    const PUBLIC: [&str; 4] = ["store", "task", "session", "pages"];
    let between: Vec<_> = edges(&krate, &["server"])
        .into_iter()
        .filter(|e| PUBLIC.contains(&e.from.as_str()) && PUBLIC.contains(&e.to.as_str()))
        .collect();
    assert!(
        !between.is_empty(),
        "no import found between the server's public modules: is the lister still reading them?"
    );
    let found = cycles(&between);
    assert!(found.is_empty(), "import loops between the server's public modules:\n{}", found.join("\n"));
}

/// The direct children of `server`, its public modules (`store`, `task`, `session`, `pages`)
/// included, name each other in one direction only: the engine reads as the layers of
/// `ENGINE_LAYERS`, with no loop inside one.
#[test]
fn no_import_cycle_between_the_server_modules() {
    let krate = load("elicit-runtime", "elicit_runtime", "src/lib.rs");
    assert!(krate.module(&["server", "flow"]).is_some(), "elicit-runtime/src/server/flow not found");
    assert!(
        edges(&krate, &["server"]).len() > 100,
        "few imports found between the server's modules: is the lister reading them?"
    );
    assert_no_cycles(&krate, &["server"], "elicit-runtime/src/server/");
}

#[test]
fn no_import_cycle_between_the_stores_modules() {
    let krate = load("elicit-runtime", "elicit_runtime", "src/lib.rs");
    assert_no_cycles(&krate, &["server", "store"], "elicit-runtime/src/server/store/");
}

#[test]
fn no_import_cycle_between_the_clis_modules() {
    let krate = load("elicit-cli", "elicit_cli", "src/main.rs");
    assert!(krate.modules.len() > 3, "elicit-cli's modules not found");
    assert_no_cycles(&krate, &[], "elicit-cli/src/");
}

#[test]
fn no_import_cycle_between_the_benchmarks_modules() {
    let dir = workspace().join("benches");
    let mut roots = vec!["src/lib.rs".to_owned()];
    for sub in ["benches", "src/bin"] {
        let mut files: Vec<String> = std::fs::read_dir(dir.join(sub))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".rs"))
            .map(|name| format!("{sub}/{name}"))
            .collect();
        files.sort();
        roots.extend(files);
    }
    let mut found = Vec::new();
    for root in &roots {
        let edges = edges(&load("benches", "elicit_benches", root), &[]);
        found.extend(cycles(&edges).into_iter().map(|cycle| format!("benches/{root}: {cycle}")));
    }
    assert!(
        found.is_empty(),
        "import cycles between the benchmarks' modules:\n{}\nBreak each loop: move what both sides need into \
         one of them, or into the library's root.",
        found.join("\n")
    );
}

// The lister itself, on small crates written here.

fn fixture(files: &[(&str, &str)]) -> Crate {
    let files: BTreeMap<String, String> = files.iter().map(|(p, t)| ((*p).to_owned(), (*t).to_owned())).collect();
    let read = |path: &str| files.get(path).cloned();
    Crate::load("fx", "src/lib.rs", &read).unwrap()
}

fn lines(krate: &Crate) -> Vec<String> {
    list(krate).into_iter().map(|e| e.line).collect()
}

#[test]
fn a_chain_of_reexports_lists_the_item_once_at_its_public_path() {
    let krate = fixture(&[
        ("src/lib.rs", "mod inner;\npub mod api;\npub use api::Thing as Renamed;\n"),
        ("src/inner/mod.rs", "mod deep;\npub use self::deep::Thing;\n"),
        (
            "src/inner/deep.rs",
            "#[derive(Debug, Clone)]\npub struct Thing { pub size: u8, secret: u8 }\n\
             impl Thing { pub fn grow(&mut self, by: u8) -> u8 { by } fn hidden_helper(&self) {} }\n\
             impl std::fmt::Display for Thing { fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) } }\n\
             trait Sealed {}\nimpl Sealed for Thing {}\n",
        ),
        ("src/api.rs", "pub use crate::inner::Thing;\n"),
    ]);
    assert_eq!(
        lines(&krate),
        // The shortest public path is the canonical one; the sealed trait's impl is not API.
        [
            "impl Clone for fx::Renamed",
            "impl Debug for fx::Renamed",
            "impl Display for fx::Renamed",
            "struct fx::Renamed { /* private fields */ }",
            "fn fx::Renamed::grow(&mut self, by: u8) -> u8",
            "field fx::Renamed::size: u8",
            "mod fx::api",
            "use fx::api::Thing = fx::Renamed",
        ]
    );
}

#[test]
fn a_private_module_reexported_whole_lists_its_items_under_the_new_name() {
    let krate = fixture(&[(
        "src/lib.rs",
        "mod hidden_away { pub fn f(x: &str) -> Option<&str> { None } pub enum E { A, B(u8), C { d: bool } } }\n\
         pub use hidden_away as visible;\npub use serde_json::Value;\n\
         #[doc(hidden)]\npub mod __private { pub fn g() {} }\n",
    )]);
    assert_eq!(
        lines(&krate),
        [
            "use fx::Value = serde_json::Value (external)",
            "hidden fx::__private",
            "mod fx::visible",
            "enum fx::visible::E",
            "variant fx::visible::E::A",
            "variant fx::visible::E::B(u8)",
            "variant fx::visible::E::C { d: bool }",
            "fn fx::visible::f(x: &str) -> Option<&str>",
        ]
    );
}

#[test]
fn a_cfgd_item_is_listed_with_its_feature_gate() {
    let krate = fixture(&[
        (
            "src/lib.rs",
            "#[cfg(feature = \"extra\")]\npub mod extra;\n#[cfg(test)]\npub mod tests;\n\
             #[cfg(not(feature = \"extra\"))]\npub fn without() {}\n\
             #[cfg(feature = \"small\")]\npub use extra::Big as Small;\n",
        ),
        ("src/extra.rs", "pub struct Big;\n#[cfg(feature = \"huge\")]\nimpl Big { pub const N: usize = 1; }\n"),
    ]);
    assert_eq!(
        lines(&krate),
        [
            "use fx::Small = fx::extra::Big [features: extra, small]",
            "mod fx::extra [features: extra]",
            "struct fx::extra::Big; [features: extra]",
            "const fx::extra::Big::N: usize [features: extra, huge]",
        ]
    );
}

#[test]
fn the_retired_words_are_whole_words_of_a_name() {
    assert_eq!(words("LiveSession"), ["live", "session"]);
    assert_eq!(words("keep_alive"), ["keep", "alive"]);
    assert_eq!(words("HTTPServer"), ["http", "server"]);
    assert_eq!(words("pushed_router"), ["pushed", "router"]);
    assert_eq!(words("V2025_06_18"), ["v2025", "06", "18"]);
    let krate = fixture(&[(
        "src/lib.rs",
        "pub struct LiveSession;\npub fn keep_alive() {}\npub fn delivered() {}\n\
         pub struct Errors;\nimpl Errors { pub fn push(&mut self) {} }\npub enum Era { Legacy, Current }\n",
    )]);
    let listing = list(&krate);
    assert_eq!(
        retired_names(&listing, &[("Errors::push", "a collection")]),
        ["fx::Era::Legacy (variant)", "fx::LiveSession (struct)"]
    );
}

#[test]
fn a_cycle_is_found_through_a_reexport_and_named() {
    let krate = fixture(&[
        ("src/lib.rs", "pub mod server;\n"),
        ("src/server/mod.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\npub struct Root;\n"),
        ("src/server/a.rs", "use super::b::B;\npub struct A;\n"),
        // `super::A` is `a`'s, through the root's re-export; `super::Root` is the root's own.
        ("src/server/b.rs", "pub struct B;\nfn f() { let _ = super::A; let _ = super::Root; }\n"),
        ("src/server/c.rs", "use crate::server::a::A;\n"),
    ]);
    let found = cycles(&edges(&krate, &["server"]));
    assert_eq!(
        found,
        [
            "cycle between a, b: a -> b -> a\n    a -> b: src/server/a.rs: super::b::B\n    b -> a: src/server/b.rs: super::A"
        ]
    );
}

#[test]
fn a_glob_a_path_attribute_and_an_exported_macro_are_followed() {
    let krate = fixture(&[
        ("src/lib.rs", "#[path = \"elsewhere/impl_.rs\"]\nmod imp;\npub use imp::*;\n"),
        (
            "src/elsewhere/impl_.rs",
            "mod nested;\npub use nested::Open;\npub trait Shape { fn area(&self) -> f64; fn name(&self) -> &str { \"\" } }\n\
             impl Shape for u8 { fn area(&self) -> f64 { 0.0 } }\n#[macro_export]\nmacro_rules! shape { () => {} }\n",
        ),
        ("src/elsewhere/nested.rs", "pub struct Open { pub a: u8, pub b: Vec<u8> }\n"),
    ]);
    assert_eq!(
        lines(&krate),
        [
            "struct fx::Open { .. }",
            "field fx::Open::a: u8",
            "field fx::Open::b: Vec<u8>",
            "impl fx::Shape for u8",
            "trait fx::Shape",
            "fn fx::Shape::area(&self) -> f64",
            "fn fx::Shape::name(&self) -> &str { .. }",
            "macro fx::shape!",
        ]
    );
}
