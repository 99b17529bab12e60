//! A scripted in-process server for the driver tests: it records every request, then answers it
//! with its script. Each test file adds the scripts it needs (`impl FakeServer` blocks of its own).

use std::sync::{Arc, Mutex};

use elicit_runtime::client::{CallError, Caller};
use serde_json::{Map, Value};

/// One request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) method: String,
    pub(crate) params: Map<String, Value>,
}

type Script = Box<dyn FnMut(&str, &Map<String, Value>) -> Result<Value, CallError> + Send>;

/// A fake server shared by any number of callers.
#[derive(Clone)]
pub(crate) struct FakeServer {
    inner: Arc<Mutex<(Vec<Received>, Script)>>,
}

impl FakeServer {
    /// A server answering each request with `script(method, params)`.
    pub(crate) fn new(
        script: impl FnMut(&str, &Map<String, Value>) -> Result<Value, CallError> + Send + 'static,
    ) -> Self {
        FakeServer { inner: Arc::new(Mutex::new((Vec::new(), Box::new(script)))) }
    }

    /// A caller whose requests this server receives.
    pub(crate) fn caller(&self) -> FakeCaller {
        FakeCaller { server: self.clone() }
    }

    /// Every request received so far, in order.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.inner.lock().unwrap().0.clone()
    }
}

/// The driver's side of a [`FakeServer`].
pub(crate) struct FakeCaller {
    server: FakeServer,
}

impl Caller for FakeCaller {
    async fn call(&mut self, method: &str, params: Map<String, Value>) -> Result<Value, CallError> {
        // Let other calls run between rounds, as a real transport would.
        tokio::task::yield_now().await;
        let mut guard = self.server.inner.lock().unwrap();
        let (log, script) = &mut *guard;
        log.push(Received { method: method.to_owned(), params: params.clone() });
        script(method, &params)
    }
}
