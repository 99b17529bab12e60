//! What an operator sees, with the `metrics` feature: a `tracing` span per live call (a short hash
//! of the flow id, the tool, the era, the outcome) and, through the `metrics` facade, asks by mode,
//! answers by action and by client name and version, the time from ask to answer, and declines
//! that come back faster than a person could answer (a host declining on its own). Without the
//! feature every function here is empty and nothing of either crate is compiled in.

use std::time::Duration;

#[cfg(feature = "metrics")]
use sha2::{Digest, Sha256};

/// A decline that comes back sooner than this was not a person's.
#[cfg(feature = "metrics")]
const FASTER_THAN_A_PERSON: Duration = Duration::from_millis(500);

/// The client a live session serves, as its `initialize` named it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ClientName {
    pub(super) name: String,
    pub(super) version: String,
}

/// An ask went to the client.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables, reason = "counted only with the feature"))]
pub(super) fn asked(mode: &'static str, client: &ClientName) {
    #[cfg(feature = "metrics")]
    metrics::counter!("elicit_asks_total", "mode" => mode, "client" => client.name.clone(), "client_version" => client.version.clone())
        .increment(1);
}

/// The client answered an ask of `mode` with `action` after `elapsed`.
#[cfg_attr(not(feature = "metrics"), allow(unused_variables, reason = "counted only with the feature"))]
pub(super) fn answered(mode: &'static str, action: &str, client: &ClientName, elapsed: Duration) {
    #[cfg(feature = "metrics")]
    {
        let action = match action {
            "accept" | "decline" | "cancel" => action.to_owned(),
            _ => "other".to_owned(),
        };
        let labels = [("client", client.name.clone()), ("client_version", client.version.clone())];
        metrics::counter!("elicit_answers_total", &labels).increment(1);
        metrics::counter!("elicit_answers_by_action_total", "action" => action.clone(), "client" => client.name.clone(), "client_version" => client.version.clone())
            .increment(1);
        metrics::histogram!("elicit_ask_to_answer_seconds", "mode" => mode).record(elapsed.as_secs_f64());
        if action == "decline" && elapsed < FASTER_THAN_A_PERSON {
            metrics::counter!("elicit_fast_declines_total", &labels).increment(1);
        }
    }
}

/// The span of one live call: the flow's short hash, the tool, the era; `outcome` recorded at
/// its end ([`ended`]).
#[cfg(feature = "metrics")]
pub(super) fn call_span(flow: &str, tool: &str, era: &str) -> tracing::Span {
    let digest = Sha256::digest(flow.as_bytes());
    let short: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    tracing::info_span!(target: "elicit_runtime", "elicit.call", flow = %short, tool = %tool, era = %era, round = 1u64, outcome = tracing::field::Empty)
}

/// Records how the call of `span` ended.
#[cfg(feature = "metrics")]
pub(super) fn ended(span: &tracing::Span, outcome: &str) {
    span.record("outcome", outcome);
}
