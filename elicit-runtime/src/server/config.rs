//! [`EngineConfig`]: the engine's tunables of asks, URL-mode steps and the flow ledger. Below the
//! flow, which reads them every round; set through the builder.

use std::time::Duration;

/// Tunables of an [`Engine`](super::Engine); every field has a safe default. Each has a setter on
/// [`EngineBuilder`](super::EngineBuilder); build one from [`EngineConfig::default`] to replace them all at once.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EngineConfig {
    /// How many times an answer that fails validation is asked again before the request fails.
    pub max_invalid_answers: u32,
    /// How long a retry after URL-mode consent may wait for the out-of-band step to finish
    /// before the engine answers with another `InputRequiredResult`.
    pub url_retry_wait: Duration,
    /// How long a minted URL-mode id stays valid.
    pub url_ttl: Duration,
    /// How long a [`Flow::once`](super::Flow::once) waits for a concurrent round of the same
    /// flow that is running the same computation, before failing with a clear error.
    pub once_wait: Duration,
    /// The lease of a claim in the flow ledger: renewed while its computation runs, and taken
    /// over by another round once it passed (an instance that crashed mid-`once` heals).
    pub claim_lease: Duration,
    /// The largest answers a completing round records as its flow's finish, in bytes of JSON;
    /// `None`: the sealed state's cap ([`EngineBuilder::max_state_len`](super::EngineBuilder::max_state_len)). A round past it fails
    /// with `-32602`, as a round whose answers are too large to seal does, and records nothing.
    pub max_answers_len: Option<usize>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_invalid_answers: 3,
            url_retry_wait: Duration::from_secs(2),
            url_ttl: Duration::from_secs(15 * 60),
            once_wait: Duration::from_secs(10),
            claim_lease: Duration::from_secs(30),
            max_answers_len: None,
        }
    }
}
