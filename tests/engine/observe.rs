//! What an operator sees (the `metrics` feature): flows with every action from two differently
//! named 2025-era clients, the counters read back from a recording `metrics` recorder and the
//! spans from a recording `tracing` layer.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use elicit_runtime::Elicit;
use elicit_runtime::server::session::{PeerError, PeerFuture, Session, SessionPeer};
use elicit_runtime::server::{Answer, Engine, Flow, Request};
use elicit_runtime::state::KeyRing;
use elicit_runtime::wire::Revision;
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

/// A client that answers every form at once with `answer`.
struct Answers(Value);

impl SessionPeer for Answers {
    fn request(&self, _method: &'static str, _params: Option<Value>) -> PeerFuture<'_, Result<Value, PeerError>> {
        let answer = self.0.clone();
        Box::pin(async move { Ok(answer) })
    }
    fn notify(&self, _method: &'static str, _params: Value) -> PeerFuture<'_, Result<(), PeerError>> {
        Box::pin(async { Ok(()) })
    }
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

async fn ask_colour(flow: Flow) -> Result<String, elicit_runtime::server::FlowError> {
    Ok(match flow.form::<Colour>("colour").await? {
        Answer::Accepted(c) => c.colour,
        Answer::Declined => "declined".to_owned(),
        Answer::Cancelled => "cancelled".to_owned(),
    })
}

#[tokio::test]
async fn counters_and_spans_name_every_action_and_each_client() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("the only recorder of this test binary");
    let spans = Spans::default();
    let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));

    let engine = Engine::builder("observe-tests", KeyRing::generate()).build();
    let answers = [
        json!({"action": "accept", "content": {"colour": "red"}}),
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
    ];
    for (client, version) in [("observe-host-a", "1.0.0"), ("observe-host-b", "2.1.0")] {
        for answer in &answers {
            let peer = Arc::new(Answers(answer.clone()));
            let declared = json!({"elicitation": {}});
            let capabilities = Revision::V2025_11_25.capabilities(declared.as_object());
            let session = Session::new(Revision::V2025_11_25, capabilities, peer, engine.ask_limit())
                .with_client(client, version);
            engine.run_in_session(&Request::new("tools/call", "colour"), &session, ask_colour).await.unwrap();
        }
    }

    // The counters, by client: one ask and one answer of each action each; the declines that
    // came back at once counted as faster than a person.
    let mut counters: BTreeMap<(String, Vec<(String, String)>), u64> = BTreeMap::new();
    let mut timed = 0;
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let (kind, key) = key.into_parts();
        let labels: Vec<(String, String)> = key.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
        if !labels.iter().any(|(k, v)| k == "client" && v.starts_with("observe-host-"))
            && kind != metrics_util::MetricKind::Histogram
        {
            continue;
        }
        match value {
            DebugValue::Counter(n) => {
                counters.insert((key.name().to_owned(), labels), n);
            }
            DebugValue::Histogram(values) if key.name() == "elicit_ask_to_answer_seconds" => timed += values.len(),
            _ => {}
        }
    }
    let count = |name: &str, labels: &[(&str, &str)]| {
        let labels: Vec<(String, String)> = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        counters.get(&(name.to_owned(), labels)).copied().unwrap_or(0)
    };
    for (client, version) in [("observe-host-a", "1.0.0"), ("observe-host-b", "2.1.0")] {
        let who = [("client", client), ("client_version", version)];
        assert_eq!(count("elicit_asks_total", &[("mode", "form"), who[0], who[1]]), 3, "{counters:?}");
        assert_eq!(count("elicit_answers_total", &who), 3, "{counters:?}");
        for action in ["accept", "decline", "cancel"] {
            assert_eq!(
                count("elicit_answers_by_action_total", &[("action", action), who[0], who[1]]),
                1,
                "{counters:?}"
            );
        }
        assert_eq!(count("elicit_fast_declines_total", &who), 1, "a decline at once is no person's: {counters:?}");
    }
    assert!(timed >= 6, "every answer timed: {timed}");

    // One span per call, its outcome recorded.
    let spans = spans.0.lock().unwrap();
    let calls: Vec<_> = spans.values().filter(|s| s["name"] == "elicit.call").collect();
    assert_eq!(calls.len(), 6, "{spans:?}");
    for call in calls {
        assert_eq!(
            (call["tool"].as_str(), call["era"].as_str(), call["round"].as_str()),
            ("colour", "2025-11-25", "1")
        );
        assert_eq!(call["outcome"], "complete", "{call:?}");
        assert_eq!(call["flow"].len(), 8, "a short hash, never the flow id: {call:?}");
    }
}
