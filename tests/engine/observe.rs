//! What an operator sees (the `metrics` feature): flows with every action (accept, decline,
//! cancel), in form and URL mode, from two differently named clients, on both eras (a 2025-11-25
//! session naming its client in `initialize`, 2026-07-28 rounds naming it in `_meta`); the
//! counters and histograms read back from a recording `metrics` recorder and the spans from a
//! recording `tracing` layer, both local to the test's thread (the runtime is single-threaded), so
//! other tests of this binary count elsewhere.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use elicit_runtime::Elicit;
use elicit_runtime::server::pages::kit::{Decision, record_decision};
use elicit_runtime::server::session::{PeerError, PeerFuture, Session, SessionPeer};
use elicit_runtime::server::store::UrlCompletions;
use elicit_runtime::server::{Answer, Engine, Flow, FlowError, ManualClock, Outcome, Request, UrlAnswer};
use elicit_runtime::state::KeyRing;
use elicit_runtime::wire::{ElicitParams, InputRequest, Revision};
use metrics_util::MetricKind;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Pick a colour.
#[derive(Elicit, Debug)]
struct Colour {
    /// A colour
    colour: String,
}

/// The two clients: the second sends a control character in its name, which the label drops.
const CLIENTS: [(&str, &str, &str); 2] =
    [("observe-host-a", "observe-host-a", "1.0.0"), ("observe-host-b\u{7}\n", "observe-host-b", "2.1.0")];
const ACTIONS: [&str; 3] = ["accept", "decline", "cancel"];
const MODES: [&str; 2] = ["form", "url"];
const ERA_2025: &str = "2025-11-25";
const ERA_2026: &str = "2026-07-28";

/// How long the person takes on 2026-07-28 rounds, by the engine's clock: every answer but a form
/// decline, which comes back at once (a host declining on its own).
const PERSON: Duration = Duration::from_secs(5);

/// The URL-mode step's id, from the URL the handler built.
fn step_of(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

/// An answer of `action` in `mode` (the form's content when accepted).
fn answer(mode: &str, action: &str) -> Value {
    match (mode, action) {
        ("form", "accept") => json!({"action": "accept", "content": {"colour": "red"}}),
        _ => json!({"action": action}),
    }
}

/// What a person does on a URL-mode step's page before the client says "accept": the decision
/// recorded through the kit, as a custom page would.
async fn complete_page(pages: &Arc<dyn UrlCompletions>, step: &str) {
    let recorded = record_decision(pages, step, json!({"action": "accept", "content": {"paid": true}}), None).await;
    assert_eq!(recorded.unwrap(), Decision::Recorded);
}

/// A 2025-era client that answers every push with `action`, completing a URL-mode page first
/// when it accepts one.
struct Person {
    action: &'static str,
    pages: Arc<dyn UrlCompletions>,
}

impl SessionPeer for Person {
    fn request(&self, _method: &'static str, params: Option<Value>) -> PeerFuture<'_, Result<Value, PeerError>> {
        Box::pin(async move {
            let params = params.unwrap_or_default();
            let mode = if params["mode"] == "url" { "url" } else { "form" };
            if mode == "url" && self.action == "accept" {
                complete_page(&self.pages, step_of(params["url"].as_str().unwrap())).await;
            }
            Ok(answer(mode, self.action))
        })
    }
    fn notify(&self, _method: &'static str, _params: Value) -> PeerFuture<'_, Result<(), PeerError>> {
        Box::pin(async { Ok(()) })
    }
}

/// The handler: one ask, in the tool's mode.
async fn ask(flow: Flow, mode: &'static str) -> Result<String, FlowError> {
    if mode == "form" {
        return Ok(match flow.form::<Colour>("colour").await? {
            Answer::Accepted(c) => c.colour,
            Answer::Declined => "declined".to_owned(),
            Answer::Cancelled => "cancelled".to_owned(),
        });
    }
    Ok(match flow.url("pay", "Pay on the page", |id| format!("https://pay.example/step/{id}")).await? {
        UrlAnswer::Completed(_) => "paid".to_owned(),
        UrlAnswer::Declined => "declined".to_owned(),
        UrlAnswer::Cancelled => "cancelled".to_owned(),
    })
}

/// Every span's name and fields, as recorded.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<HashMap<u64, BTreeMap<String, String>>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::from([("name".to_owned(), attrs.metadata().name().to_owned())]);
        attrs.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().insert(id.into_u64(), fields);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some(fields) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
}

/// A metric's name and labels, sorted.
type Key = (String, Vec<(String, String)>);

fn key(name: &str, labels: &[(&str, &str)]) -> Key {
    let mut labels: Vec<(String, String)> = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    labels.sort();
    (name.to_owned(), labels)
}

/// Runs one 2026-07-28 flow of two rounds, the person taking `took` between them.
async fn run_2026(engine: &Engine, clock: &ManualClock, client: (&str, &str), mode: &'static str, action: &str) {
    let meta = json!({
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": client.0, "version": client.1},
    });
    let tool = if mode == "form" { "colour" } else { "pay" };
    let request = Request::new("tools/call", tool).meta(meta.as_object());
    let Outcome::InputRequired(asked) = engine.run(&request, |flow| ask(flow, mode)).await.unwrap() else {
        panic!("the first round asks")
    };
    let (key, input) = &asked.input_requests[0];
    if let InputRequest::Elicit(ElicitParams::Url { url, .. }) = input
        && action == "accept"
    {
        complete_page(&engine.url_completions(), step_of(url)).await;
    }
    clock.advance(if (mode, action) == ("form", "decline") { Duration::ZERO } else { PERSON });
    let responses = json!({ key.clone(): answer(mode, action) });
    let retry = request.input_responses(Some(&responses)).request_state(asked.request_state.as_deref());
    let done = engine.run(&retry, |flow| ask(flow, mode)).await.unwrap();
    assert!(matches!(done, Outcome::Complete(_)), "{mode} {action}: {done:?}");
}

#[tokio::test]
async fn counters_histograms_and_spans_name_every_action_each_client_and_both_eras() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recorder = metrics::set_default_local_recorder(&recorder);
    let spans = Spans::default();
    let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));

    let clock = ManualClock::new();
    let engine = Engine::builder("observe-tests", KeyRing::generate()).clock(Arc::new(clock.clone())).build();
    for (name, _, version) in CLIENTS {
        for mode in MODES {
            for action in ACTIONS {
                // 2025-11-25: the session names its client in `initialize`.
                let peer = Arc::new(Person { action, pages: engine.url_completions() });
                let declared = json!({"elicitation": {"form": {}, "url": {}}});
                let capabilities = Revision::V2025_11_25.capabilities(declared.as_object());
                let session = Session::new(Revision::V2025_11_25, capabilities, peer, engine.ask_limit())
                    .with_client(name, version);
                let tool = if mode == "form" { "colour" } else { "pay" };
                engine
                    .run_in_session(&Request::new("tools/call", tool), &session, |flow| ask(flow, mode))
                    .await
                    .unwrap();
                // 2026-07-28: every round names it in `_meta`.
                run_2026(&engine, &clock, (name, version), mode, action).await;
            }
        }
    }

    let mut counters: BTreeMap<Key, u64> = BTreeMap::new();
    let mut histograms: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
    for (composite, _, _, value) in snapshotter.snapshot().into_vec() {
        let (kind, k) = composite.into_parts();
        let mut labels: Vec<(String, String)> =
            k.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
        labels.sort();
        match (kind, value) {
            (MetricKind::Counter, DebugValue::Counter(n)) => {
                counters.insert((k.name().to_owned(), labels), n);
            }
            (MetricKind::Histogram, DebugValue::Histogram(values)) => {
                histograms.insert((k.name().to_owned(), labels), values.iter().map(|v| v.0).collect());
            }
            other => panic!("no gauges: {other:?}"),
        }
    }
    let count = |name: &str, labels: &[(&str, &str)]| counters.get(&key(name, labels)).copied().unwrap_or(0);
    let sum = |name: &str| counters.iter().filter(|((n, _), _)| n == name).map(|(_, v)| v).sum::<u64>();

    // Asks by mode and answers by action, by client and era: exactly one flow of each.
    for era in [ERA_2025, ERA_2026] {
        for (_, client, version) in CLIENTS {
            let who = [("era", era), ("client", client), ("client_version", version)];
            for mode in MODES {
                let asks = [who[0], who[1], who[2], ("mode", mode)];
                assert_eq!(count("elicit_asks_total", &asks), 3, "{era} {client} {mode}: {counters:#?}");
                for action in ACTIONS {
                    let answers = [who[0], who[1], who[2], ("mode", mode), ("action", action)];
                    assert_eq!(count("elicit_answers_total", &answers), 1, "{answers:?}: {counters:#?}");
                }
                // Declines faster than a person: every 2025-era one (the peer answers at once),
                // and on 2026-07-28 the form's, which came back on the same instant.
                let fast = u64::from(era == ERA_2025 || mode == "form");
                assert_eq!(count("elicit_fast_declines_total", &asks), fast, "{asks:?}: {counters:#?}");
            }
        }
    }
    assert_eq!(sum("elicit_asks_total"), 2 * 2 * 2 * 3, "no other asks counted: {counters:#?}");
    assert_eq!(sum("elicit_answers_total"), 2 * 2 * 2 * 3, "no other answers counted: {counters:#?}");
    assert_eq!(sum("elicit_fast_declines_total"), 2 * 2 + 2, "{counters:#?}");

    // Rounds: every 2025-era call one, complete; every 2026-07-28 flow two, the first asking.
    assert_eq!(count("elicit_rounds_total", &[("era", ERA_2025), ("outcome", "complete")]), 12);
    assert_eq!(count("elicit_rounds_total", &[("era", ERA_2026), ("outcome", "input_required")]), 12);
    assert_eq!(count("elicit_rounds_total", &[("era", ERA_2026), ("outcome", "complete")]), 12);
    assert_eq!(sum("elicit_rounds_total"), 36, "no error or conflict: {counters:#?}");
    // Each flow's rounds: on 2026-07-28 two requests; on a session the call and its one push.
    assert_eq!(histograms[&key("elicit_flow_rounds", &[("era", ERA_2026)])], vec![2.0; 12]);
    assert_eq!(histograms[&key("elicit_flow_rounds", &[("era", ERA_2025)])], vec![2.0; 12]);

    // The time from ask to answer, on the engine's clock for 2026-07-28 rounds.
    for mode in MODES {
        for action in ACTIONS {
            let took = if (mode, action) == ("form", "decline") { 0.0 } else { PERSON.as_secs_f64() };
            let timed = &histograms
                [&key("elicit_ask_to_answer_seconds", &[("era", ERA_2026), ("mode", mode), ("action", action)])];
            assert_eq!(timed, &vec![took; 2], "{mode} {action}");
            let live = &histograms
                [&key("elicit_ask_to_answer_seconds", &[("era", ERA_2025), ("mode", mode), ("action", action)])];
            assert_eq!(live.len(), 2, "{mode} {action}");
        }
    }

    // Pages: every accepted URL-mode step's decision, recorded through the kit.
    assert_eq!(count("elicit_pages_submitted_total", &[("action", "accept")]), 2 * 2, "{counters:#?}");
    assert_eq!(sum("elicit_pages_submitted_total"), 4, "{counters:#?}");

    // Store latency, timed around the store traits: one ledger read per resumed 2026-07-28 round,
    // one registration per URL-mode step, one completion per page decision.
    let timed = |store: &str, op: &str| {
        histograms.get(&key("elicit_store_seconds", &[("store", store), ("op", op)])).map_or(0, Vec::len)
    };
    assert_eq!(timed("ledger", "snapshot"), 12, "{:#?}", histograms.keys());
    assert_eq!(timed("ledger", "finish"), 12, "{:#?}", histograms.keys());
    assert_eq!(timed("completions", "register"), 2 * 2 * 3, "{:#?}", histograms.keys());
    assert_eq!(timed("completions", "complete"), 4, "{:#?}", histograms.keys());
    assert_eq!(timed("completions", "take"), 4, "{:#?}", histograms.keys());

    // One span per round: the era, the tool, the round's number, its outcome, and a short hash of
    // the flow id that both rounds of a 2026-07-28 flow share.
    let spans = spans.0.lock().unwrap();
    let rounds: Vec<_> = spans.values().filter(|s| s["name"] == "elicit.round").collect();
    assert_eq!(rounds.len(), 12 + 24, "{spans:#?}");
    let mut flows: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for round in &rounds {
        let field = |name: &str| round.get(name).map(String::as_str).unwrap_or_default();
        assert!(["colour", "pay"].contains(&field("tool")), "{round:?}");
        let flow = field("flow");
        assert!(flow.len() == 8 && flow.bytes().all(|b| b.is_ascii_hexdigit()), "a short hash: {round:?}");
        match field("era") {
            ERA_2025 => assert_eq!((field("round"), field("outcome")), ("1", "complete"), "{round:?}"),
            ERA_2026 => flows.entry(flow).or_default().push((field("round"), field("outcome"))),
            other => panic!("era {other}"),
        }
    }
    assert_eq!(flows.len(), 12, "one hash per flow: {flows:#?}");
    for rounds in flows.values_mut() {
        rounds.sort();
        assert_eq!(rounds, &[("1", "input_required"), ("2", "complete")]);
    }
}

/// The rounds of a task-capable call: the one that asks, then the one that becomes a task, each
/// in its span, the answer counted for the client its `_meta` names.
#[tokio::test]
async fn a_task_round_is_observed_like_any_2026_round() {
    use elicit_runtime::server::task::{TaskStart, TaskSupport};

    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recorder = metrics::set_default_local_recorder(&recorder);
    let spans = Spans::default();
    let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));

    let engine = Engine::builder("observe-tests", KeyRing::generate()).build();
    let meta = json!({
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "observe-task-host", "version": "3.0"},
    });
    let handler = |flow: Flow| async move {
        let colour = ask(flow, "form").await?;
        // Anything else the handler waits on makes the call a task.
        tokio::task::yield_now().await;
        Ok(colour)
    };
    let request = Request::new("tools/call", "paint").meta(meta.as_object());
    let TaskStart::InputRequired(asked) = engine.run_task(&request, TaskSupport::Optional, handler).await.unwrap()
    else {
        panic!("the first round asks")
    };
    let responses = json!({"colour": answer("form", "accept")});
    let retry = request.input_responses(Some(&responses)).request_state(asked.request_state.as_deref());
    let started = engine.run_task(&retry, TaskSupport::Optional, handler).await.unwrap();
    assert!(matches!(started, TaskStart::Task(_)), "{started:?}");

    let mut counters: BTreeMap<Key, u64> = BTreeMap::new();
    for (composite, _, _, value) in snapshotter.snapshot().into_vec() {
        let (_, k) = composite.into_parts();
        let mut labels: Vec<(String, String)> =
            k.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
        labels.sort();
        if let DebugValue::Counter(n) = value {
            counters.insert((k.name().to_owned(), labels), n);
        }
    }
    let who = [("era", ERA_2026), ("client", "observe-task-host"), ("client_version", "3.0"), ("mode", "form")];
    assert_eq!(counters.get(&key("elicit_asks_total", &who)), Some(&1), "{counters:#?}");
    let accepted = [who[0], who[1], who[2], who[3], ("action", "accept")];
    assert_eq!(counters.get(&key("elicit_answers_total", &accepted)), Some(&1), "{counters:#?}");
    for outcome in ["input_required", "task"] {
        let rounds = key("elicit_rounds_total", &[("era", ERA_2026), ("outcome", outcome)]);
        assert_eq!(counters.get(&rounds), Some(&1), "{counters:#?}");
    }

    let spans = spans.0.lock().unwrap();
    let mut rounds: Vec<(String, String, String)> = spans
        .values()
        .filter(|s| s["name"] == "elicit.round")
        .map(|s| (s["round"].clone(), s["outcome"].clone(), s["flow"].clone()))
        .collect();
    rounds.sort();
    assert_eq!(rounds.len(), 2, "{spans:#?}");
    assert_eq!((rounds[0].0.as_str(), rounds[0].1.as_str()), ("1", "input_required"));
    assert_eq!((rounds[1].0.as_str(), rounds[1].1.as_str()), ("2", "task"));
    assert_eq!(rounds[0].2, rounds[1].2, "one flow, one hash");
}
