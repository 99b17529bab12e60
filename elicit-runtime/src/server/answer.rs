//! What an ask returns: [`Answer`] for a form, [`UrlAnswer`] for a URL-mode step, and
//! [`FlowError`] when a handler could not finish. The vocabulary every layer of the engine speaks,
//! from the executors that reach the client up to the engine that answers the request.

use std::sync::Arc;

use serde_json::Value;

use super::store::StoreError;

/// The answer to a form-mode ask.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<T> {
    /// The user submitted the form; the content passed every check.
    Accepted(T),
    /// The user explicitly refused.
    Declined,
    /// The user dismissed the form without choosing.
    Cancelled,
}

/// The answer to a URL-mode ask.
#[derive(Debug, Clone, PartialEq)]
pub enum UrlAnswer {
    /// The user consented and the out-of-band step finished; the value is what the page recorded.
    Completed(Value),
    /// The user refused to open the page.
    Declined,
    /// The user dismissed the request (or the client could not open the page).
    Cancelled,
}

/// Why a handler could not finish: an ask that could not produce an answer, or the handler's own
/// error.
///
/// `?` converts any `std::error::Error + Send + Sync + 'static` into [`FlowError::Handler`], so a
/// handler mixes asks and its own fallible work without `map_err`. That blanket conversion is why
/// `FlowError` does not implement `std::error::Error` itself (as `anyhow::Error` does not): the
/// two impls would overlap. [`FlowError::source`] gives the cause, and a `FlowError` converts into
/// `Box<dyn Error + Send + Sync>` where an error trait object is wanted.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FlowError {
    /// The client did not declare the capability the ask needs. Handle it (for example fall back
    /// to another mode), or let it propagate: the request then fails with `-32021` and
    /// `data.requiredCapabilities` set to `required`.
    Unsupported {
        /// The `ClientCapabilities` the ask needs.
        required: Value,
    },
    /// The client's input is malformed or kept failing validation (`-32602`).
    InvalidInput(String),
    /// The store failed (`-32603`).
    Store(StoreError),
    /// The engine could not run the flow (`-32603`).
    Failed(String),
    /// The handler's own error, kept whole. The engine answers it `-32603`; the rmcp adapter makes
    /// it a tool result with `isError: true`, the model's to read.
    Handler(Arc<dyn std::error::Error + Send + Sync>),
}

impl FlowError {
    /// The handler's own error from anything that converts into a boxed error (a `String`, a
    /// `&str`, any error type).
    pub fn handler(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> FlowError {
        FlowError::Handler(Arc::from(error.into()))
    }

    /// The underlying cause: the handler's error, or the store's.
    pub fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FlowError::Handler(error) => Some(&**error),
            FlowError::Store(error) => Some(error),
            _ => None,
        }
    }
}

impl PartialEq for FlowError {
    /// Handler errors are equal only when they are the same error (one `Arc`).
    fn eq(&self, other: &FlowError) -> bool {
        match (self, other) {
            (FlowError::Unsupported { required: a }, FlowError::Unsupported { required: b }) => a == b,
            (FlowError::InvalidInput(a), FlowError::InvalidInput(b)) | (FlowError::Failed(a), FlowError::Failed(b)) => {
                a == b
            }
            (FlowError::Store(a), FlowError::Store(b)) => a == b,
            (FlowError::Handler(a), FlowError::Handler(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl std::fmt::Display for FlowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlowError::Unsupported { required } => write!(f, "client capability not declared: {required}"),
            FlowError::InvalidInput(message) | FlowError::Failed(message) => f.write_str(message),
            FlowError::Store(error) => write!(f, "{error}"),
            FlowError::Handler(error) => write!(f, "{error}"),
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for FlowError {
    fn from(error: E) -> FlowError {
        FlowError::Handler(Arc::new(error))
    }
}

/// A `FlowError` as an error trait object, for `?` in code that returns one.
#[derive(Debug)]
struct FlowFailure(FlowError);

impl std::fmt::Display for FlowFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for FlowFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl From<FlowError> for Box<dyn std::error::Error + Send + Sync> {
    fn from(error: FlowError) -> Self {
        Box::new(FlowFailure(error))
    }
}

impl From<FlowError> for Box<dyn std::error::Error> {
    fn from(error: FlowError) -> Self {
        Box::new(FlowFailure(error))
    }
}
