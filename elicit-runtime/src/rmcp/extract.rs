//! The engine inside a server you wrote: an rmcp `ServerHandler` of your own, its tools in a
//! `#[tool_router]`, some of them asking through a [`Flow`].
//!
//! [`Elicitation`] holds the engine (one per server, cloned per connection) and runs one round
//! of a handler against an rmcp request; [`ToolCall`] is the `#[tool]` extractor that carries
//! what a round needs (`arguments`, `inputResponses`, `requestState`, `_meta`, the request
//! context) to [`ToolCall::run`], which answers with rmcp's complete or input-required result.
//! [`McpServer`](super::McpServer) is built on the same pieces. The wire fixes rmcp needs are
//! one layer: [`wire_layer`](super::wire_layer) on HTTP, [`serve_io_with`](super::serve_io_with)
//! on stdio.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use ::rmcp::RoleServer;
use ::rmcp::handler::server::common::FromContextPart;
use ::rmcp::handler::server::tool::IntoCallToolResult;
use ::rmcp::handler::server::tool::ToolCallContext;
use ::rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, ErrorData, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult,
};
use ::rmcp::service::RequestContext;
use serde_json::{Map, Value};

use super::convert::{handler_error_result, input_required};
use super::peer::{RmcpPeer, RmcpRequest};
use super::round::{OwnedRound, Round, RoundParams};
use crate::Elicit;
use crate::server::session::{AskLimit, Session};
use crate::server::task::TaskSupport;
use crate::server::{Answer, Engine, Flow, FlowError, Outcome, Request, RequestHandle};
use crate::wire::Revision;

/// The code rmcp's peers use for a request cancelled before it finished.
const REQUEST_CANCELLED: i32 = -32800;

/// The authenticated principal of an HTTP request (an OAuth subject, a user id): put it in the
/// request's extensions from your authentication middleware, and the default principal hook
/// ([`principal_of`]) binds every `requestState` and URL-mode step of that request to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(pub String);

/// Takes the authenticated principal from an rmcp request, if there is one.
pub type PrincipalHook = Arc<dyn Fn(&RequestContext<RoleServer>) -> Option<String> + Send + Sync>;

/// The default principal hook: a [`Principal`] in the HTTP request's extensions (rmcp hands the
/// request's `http::request::Parts` to the handler), or one put directly in the rmcp request's
/// extensions. `None` on stdio and on unauthenticated requests.
pub fn principal_of(ctx: &RequestContext<RoleServer>) -> Option<String> {
    let from_http =
        ctx.extensions.get::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<Principal>());
    from_http.or_else(|| ctx.extensions.get::<Principal>()).map(|principal| principal.0.clone())
}

/// The peer address of an HTTP request served with connect info
/// (`into_make_service_with_connect_info::<SocketAddr>()`), as [`Request::client`] takes it.
fn peer_address(ctx: &RequestContext<RoleServer>) -> Option<String> {
    let parts = ctx.extensions.get::<axum::http::request::Parts>()?;
    let axum::extract::ConnectInfo(address) =
        parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()?;
    Some(ip_text(address.ip()))
}

/// `ip` as `Display` writes it, an IPv4 address without the formatting machinery (once per
/// request).
fn ip_text(ip: std::net::IpAddr) -> String {
    let std::net::IpAddr::V4(ip) = ip else { return ip.to_string() };
    let mut text = String::with_capacity(15);
    for (i, octet) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            text.push('.');
        }
        if octet >= 100 {
            text.push(char::from(b'0' + octet / 100));
        }
        if octet >= 10 {
            text.push(char::from(b'0' + octet / 10 % 10));
        }
        text.push(char::from(b'0' + octet % 10));
    }
    text
}

/// The engine, ready to run handlers against rmcp requests. Keep one in your `ServerHandler`;
/// cheap to clone. Clones share one cap on outstanding 2025-era asks; give each connection its
/// own with [`Elicitation::for_connection`] (in the factory of rmcp's `StreamableHttpService`).
#[derive(Clone)]
pub struct Elicitation {
    engine: Arc<Engine>,
    connection: AskLimit,
    principal: PrincipalHook,
}

impl std::fmt::Debug for Elicitation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elicitation").finish_non_exhaustive()
    }
}

impl Elicitation {
    /// Handlers on `engine`, the principal taken by [`principal_of`].
    pub fn new(engine: Engine) -> Elicitation {
        let connection = engine.ask_limit();
        Elicitation { engine: Arc::new(engine), connection, principal: Arc::new(principal_of) }
    }

    /// Takes the authenticated principal from each request with `hook` instead of
    /// [`principal_of`]: every `requestState` is bound to it (a state minted for one principal
    /// is refused with `-32602` for another), and so is every URL-mode step.
    pub fn principal(
        mut self,
        hook: impl Fn(&RequestContext<RoleServer>) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.principal = Arc::new(hook);
        self
    }

    /// The engine (for pages that record URL-mode completion).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The routes of the engine's form pages ([`Engine::form_pages`]), empty when it serves none:
    /// merge them into your server's router (`app.merge(elicitation.page_router())`), outside any
    /// layer that requires a bearer token (a browser sends none).
    #[cfg(feature = "pages")]
    #[cfg_attr(docsrs, doc(cfg(feature = "pages")))]
    pub fn page_router(&self) -> axum::Router {
        self.engine.form_pages().map(crate::server::pages::FormPages::router).unwrap_or_default()
    }

    /// The same handlers with their own cap on outstanding asks, for a new connection.
    pub fn for_connection(&self) -> Elicitation {
        Elicitation {
            engine: self.engine.clone(),
            connection: self.engine.ask_limit(),
            principal: self.principal.clone(),
        }
    }

    /// The principal of `ctx`, by this server's hook.
    pub fn principal_of(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        (self.principal)(ctx)
    }

    /// Runs one round of `handler` for `request` (its `_meta` and principal taken from `ctx`):
    /// statelessly on 2026-07-28, once in a 2025-era session.
    ///
    /// # Errors
    ///
    /// The JSON-RPC error the engine chose (`-32602` for a forged, expired or misbound state).
    pub async fn run<R, F, Fut>(
        &self,
        request: Request<'_>,
        ctx: &RequestContext<RoleServer>,
        handler: F,
    ) -> Result<Outcome<R>, ErrorData>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        if let Some(call) = self.session_call(ctx) {
            // Boxed: inline, this branch would make every call's future larger, stateless calls
            // included (rmcp's task holds it inline).
            return Box::pin(self.run_session_call(&call, request, handler)).await;
        }
        let principal = self.principal_of(ctx);
        // An anonymous caller's flows count against its peer address (served with connect info).
        let client = peer_address(ctx);
        let request = request.principal(principal.as_deref()).client(client.as_deref());
        let handle: Arc<dyn RequestHandle> = Arc::new(RmcpRequest::of(ctx));
        let handler = move |flow: Flow| handler(flow.with_request_handle(handle));
        let meta: &Map<String, Value> = &ctx.meta.0.0;
        let request = request.meta(Some(meta));
        // The engine's round is boxed, here and in `run_session_call`: rmcp spawns a task per request
        // whose future holds the handler's future inline, and an unboxed round (the handler's own
        // future in it) would make every such task large and every move of it a large copy.
        Box::pin(self.engine.run(&request, handler)).await.map_err(ErrorData::from)
    }

    /// What a call in a 2025-era session needs of `ctx`, taken out of it; `None` when `ctx` is
    /// not in one. Everything else of the context is read before the call starts, so a caller
    /// that owns the context may drop it and wait with this alone ([`Elicitation::in_session`]).
    fn session_call(&self, ctx: &RequestContext<RoleServer>) -> Option<SessionCall> {
        let session = self.live_session(ctx)?;
        Some(SessionCall {
            principal: self.principal_of(ctx),
            // An anonymous caller's flows count against its peer address (served with connect info).
            client: peer_address(ctx),
            request: Arc::new(RmcpRequest::of(ctx)),
            session,
        })
    }

    /// A checked round's call in a 2025-era session, taken out of its context: what the call
    /// needs of the context ([`Elicitation::session_call`]) and the round's members, neither
    /// borrowing it, so that the caller can drop the context before the call waits on a person
    /// for minutes. `Err` gives the round back when its context is not in such a session.
    pub(crate) fn in_session<'c, P: RoundParams>(
        &self,
        round: Round<'c, P>,
    ) -> Result<(SessionCall, OwnedRound), Round<'c, P>> {
        match self.session_call(round.context()) {
            Some(call) => Ok((call, round.into_owned().0)),
            None => Err(round),
        }
    }

    /// [`Elicitation::run_round`] of a call in a 2025-era session, its context dropped by the
    /// caller: what it needs of it is in `call` ([`Elicitation::in_session`]).
    ///
    /// The call and the round are held once, in this future, for as long as the call waits on a
    /// person: rmcp's task holds this future inline, and each level of `async fn` would hold its
    /// arguments twice.
    #[allow(clippy::manual_async_fn, reason = "an `async fn` would hold its arguments twice")]
    pub(crate) fn run_session_round<R, F, Fut>(
        &self,
        call: SessionCall,
        round: OwnedRound,
        handler: F,
    ) -> impl Future<Output = Result<Outcome<R>, ErrorData>>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        async move { self.run_session_call(&call, round.request(), handler).await }
    }

    /// Runs one round of `handler` for `request` in the 2025-era session of `call`: once, its
    /// asks pushed to the client. Borrows nothing of the request's context.
    fn run_session_call<'a, R, F, Fut>(
        &'a self,
        call: &'a SessionCall,
        request: Request<'a>,
        handler: F,
    ) -> impl Future<Output = Result<Outcome<R>, ErrorData>> + 'a
    where
        F: FnOnce(Flow) -> Fut + 'a,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let request = request.principal(call.principal.as_deref()).client(call.client.as_deref());
        let handle: Arc<dyn RequestHandle> = call.request.clone();
        let handler = move |flow: Flow| handler(flow.with_request_handle(handle));
        async move {
            let live = Box::pin(self.engine.run_in_session(&request, &call.session, handler));
            // `notifications/cancelled`, the end of the session (HTTP `DELETE`, stdio EOF) and a
            // dropped connection cancel the call's token: the task is dropped with its records.
            tokio::select! {
                result = live => result.map(Outcome::Complete).map_err(ErrorData::from),
                () = call.request.cancelled_call() => Err(ErrorData::new(ErrorCode(REQUEST_CANCELLED), "the request was cancelled", None)),
            }
        }
    }

    /// Runs `handler` for a checked round: [`Elicitation::run`] of its members.
    pub(crate) async fn run_round<P, R, F, Fut>(&self, round: Round<'_, P>, handler: F) -> Result<Outcome<R>, ErrorData>
    where
        P: RoundParams,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<R, FlowError>>,
    {
        let (round, ctx) = round.into_owned();
        self.run(round.request(), ctx, handler).await
    }

    /// Runs one round of the tool `handler` for an rmcp `tools/call`, answering with rmcp's
    /// complete or input-required result: what a `call_tool` of your own `ServerHandler` returns.
    ///
    /// The handler returns anything rmcp turns into a tool result (`String`, `CallToolResult`,
    /// `Json<T>`, ...). Its own error ([`FlowError::Handler`], what `?` makes of any error type)
    /// becomes a tool result with `isError: true` carrying the error's message and causes, for the
    /// model to read; the engine's errors (an undeclared capability, invalid input, the store)
    /// stay JSON-RPC errors.
    ///
    /// # Errors
    ///
    /// `-32602` for mistyped Multi Round-Trip params (marked by [`wire_layer`](super::wire_layer))
    /// or a state the engine refuses; the engine's other errors as it chose them.
    pub async fn call_tool<T, F, Fut>(
        &self,
        request: CallToolRequestParams,
        ctx: &RequestContext<RoleServer>,
        handler: F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        T: IntoCallToolResult,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<T, FlowError>>,
    {
        self.call_tool_round(Round::new(request, ctx)?, handler).await
    }

    /// [`Elicitation::call_tool`] of a checked round.
    pub(crate) fn call_tool_round<T, F, Fut>(
        &self,
        round: Round<'_, CallToolRequestParams>,
        handler: F,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>>
    where
        T: IntoCallToolResult,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<T, FlowError>>,
    {
        // A combinator: an `async fn` would hold the round twice, in every call's future.
        let running = self.run_round(round, |flow| tool_outcome(handler(flow)));
        futures_util::FutureExt::map(running, |outcome| outcome.and_then(tool_response))
    }

    /// [`Elicitation::call_tool_round`] of a call in a 2025-era session, its context dropped by
    /// the caller: what it needs of it is in `call` ([`Elicitation::in_session`]).
    pub(crate) fn call_tool_in_session<T, F, Fut>(
        &self,
        call: SessionCall,
        round: OwnedRound,
        handler: F,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>>
    where
        T: IntoCallToolResult,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<T, FlowError>>,
    {
        // A combinator: an `async fn` would hold the call and the round twice more.
        let running = self.run_session_round(call, round, |flow| tool_outcome(handler(flow)));
        futures_util::FutureExt::map(running, |outcome| outcome.and_then(tool_response))
    }

    /// Runs one round of the prompt `handler` for an rmcp `prompts/get`, answering with rmcp's
    /// complete or input-required result: what a `get_prompt` of your own `ServerHandler`
    /// returns. A handler's own error is answered `-32603` (a prompt result has no `isError`).
    ///
    /// # Errors
    ///
    /// As [`Elicitation::call_tool`].
    pub async fn get_prompt<F, Fut>(
        &self,
        request: GetPromptRequestParams,
        ctx: &RequestContext<RoleServer>,
        handler: F,
    ) -> Result<GetPromptResponse, ErrorData>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<GetPromptResult, FlowError>>,
    {
        self.get_prompt_round(Round::new(request, ctx)?, handler).await
    }

    /// [`Elicitation::get_prompt`] of a checked round.
    pub(crate) fn get_prompt_round<F, Fut>(
        &self,
        round: Round<'_, GetPromptRequestParams>,
        handler: F,
    ) -> impl Future<Output = Result<GetPromptResponse, ErrorData>>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<GetPromptResult, FlowError>>,
    {
        // A combinator, as in `call_tool_round`.
        futures_util::FutureExt::map(self.run_round(round, handler), |outcome| outcome.and_then(prompt_response))
    }

    /// [`Elicitation::get_prompt_round`] of a call in a 2025-era session, its context dropped by
    /// the caller: what it needs of it is in `call` ([`Elicitation::in_session`]).
    pub(crate) fn get_prompt_in_session<F, Fut>(
        &self,
        call: SessionCall,
        round: OwnedRound,
        handler: F,
    ) -> impl Future<Output = Result<GetPromptResponse, ErrorData>>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<GetPromptResult, FlowError>>,
    {
        // A combinator, as in `call_tool_in_session`.
        futures_util::FutureExt::map(self.run_session_round(call, round, handler), |outcome| {
            outcome.and_then(prompt_response)
        })
    }

    /// The 2025-era session this request belongs to, if any: a request without a 2026-07-28
    /// `_meta` protocol version, on a connection that negotiated a 2025-era revision with
    /// `initialize`. Capabilities are what the client declared there.
    fn live_session(&self, ctx: &RequestContext<RoleServer>) -> Option<Session> {
        if super::round::declares_revision(ctx) {
            return None;
        }
        let info = ctx.peer.peer_info()?;
        let version = Revision::parse(info.protocol_version.as_str()).filter(|r| r.has_sessions())?;
        let declared = serde_json::to_value(&info.capabilities).ok();
        let capabilities = version.capabilities(declared.as_ref().and_then(Value::as_object));
        let session =
            Session::new(version, capabilities, Arc::new(RmcpPeer(ctx.peer.clone())), self.connection.clone());
        #[cfg(feature = "apps")]
        let session = session.with_client_capabilities(declared.as_ref().and_then(Value::as_object));
        Some(session.with_client(&info.client_info.name, &info.client_info.version))
    }
}

/// What a call in a 2025-era session needs of its request's context ([`Elicitation::session_call`]):
/// the principal and the address its flows are bound to and counted against, its progress and
/// cancellation, its session. Such a call runs once and may wait on a person for minutes; the
/// context it was taken from need not wait with it: its HTTP head (headers, extensions) and its
/// `_meta` are about 1 KiB a call (BENCHMARKS.md, "Memory per parked 2025-era flow").
pub(crate) struct SessionCall {
    principal: Option<String>,
    client: Option<String>,
    request: Arc<RmcpRequest>,
    session: Session,
}

/// A tool handler's own error ([`FlowError::Handler`]) kept apart from the engine's: the former
/// becomes a tool result with `isError`, the latter a JSON-RPC error ([`tool_response`]).
/// A combinator rather than an async block, which would hold the handler's future twice.
fn tool_outcome<T>(
    running: impl Future<Output = Result<T, FlowError>>,
) -> impl Future<Output = Result<Result<T, Arc<dyn std::error::Error + Send + Sync>>, FlowError>> {
    futures_util::FutureExt::map(running, |result| match result {
        Ok(value) => Ok(Ok(value)),
        Err(FlowError::Handler(error)) => Ok(Err(error)),
        Err(error) => Err(error),
    })
}

/// rmcp's answer to a tool's round ([`tool_outcome`]).
fn tool_response<T: IntoCallToolResult>(
    outcome: Outcome<Result<T, Arc<dyn std::error::Error + Send + Sync>>>,
) -> Result<CallToolResponse, ErrorData> {
    match outcome {
        Outcome::Complete(Ok(value)) => value.into_call_tool_result(),
        Outcome::Complete(Err(error)) => Ok(CallToolResponse::Complete(handler_error_result(&*error))),
        Outcome::InputRequired(result) => Ok(CallToolResponse::InputRequired(input_required(&result)?)),
    }
}

/// rmcp's answer to a prompt's round.
fn prompt_response(outcome: Outcome<GetPromptResult>) -> Result<GetPromptResponse, ErrorData> {
    match outcome {
        Outcome::Complete(result) => Ok(GetPromptResponse::Complete(result)),
        Outcome::InputRequired(result) => Ok(GetPromptResponse::InputRequired(input_required(&result)?)),
    }
}

/// A `tools/call` as the engine needs it: the extractor for a `#[tool]` that asks through a
/// [`Flow`]. It reads the call's name, `arguments` (left in place for rmcp's `Parameters`, which takes them: put `ToolCall` first),
/// `inputResponses`, `requestState`, `_meta` and request context; put it before a
/// `RequestMetaObject` extractor, which takes the `_meta` away.
///
/// ```no_run
/// use elicit_runtime::rmcp::{Elicitation, ToolCall};
/// use elicit_runtime::server::{Answer, Engine};
/// use elicit_runtime::state::KeyRing;
/// use elicit_runtime::Elicit;
/// use rmcp::handler::server::router::tool::ToolRouter;
/// use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ErrorData};
/// use rmcp::{tool, tool_handler, tool_router, ServerHandler};
///
/// /// Who are you?
/// #[derive(Elicit)]
/// struct Name {
///     name: String,
/// }
///
/// #[derive(Clone)]
/// struct Greeter {
///     elicitation: Elicitation,
///     tool_router: ToolRouter<Greeter>,
/// }
///
/// #[tool_router]
/// impl Greeter {
///     #[tool(description = "Greets you by the name you give")]
///     async fn greet(&self, call: ToolCall) -> Result<CallToolResponse, ErrorData> {
///         call.run(&self.elicitation, |flow| async move {
///             Ok(match flow.form::<Name>("name").await? {
///                 Answer::Accepted(Name { name }) => CallToolResult::success(vec![ContentBlock::text(format!("Hello, {name}!"))]),
///                 Answer::Declined | Answer::Cancelled => CallToolResult::success(vec![ContentBlock::text("Hello!")]),
///             })
///         })
///         .await
///     }
/// }
///
/// #[tool_handler(router = self.tool_router)]
/// impl ServerHandler for Greeter {}
///
/// let engine = Engine::builder("greeter", KeyRing::generate()).build();
/// let _server = Greeter { elicitation: Elicitation::new(engine), tool_router: Greeter::tool_router() };
/// ```
#[derive(Debug)]
pub struct ToolCall {
    request: CallToolRequestParams,
    ctx: RequestContext<RoleServer>,
}

impl ToolCall {
    /// The request context of the call (its `_meta`, peer, extensions, cancellation token).
    pub fn context(&self) -> &RequestContext<RoleServer> {
        &self.ctx
    }

    /// Runs one round of `handler` on `elicitation`'s engine: rmcp's complete result when it
    /// finishes, its input-required result when it asks.
    ///
    /// # Errors
    ///
    /// As [`Elicitation::call_tool`].
    pub async fn run<T, F, Fut>(self, elicitation: &Elicitation, handler: F) -> Result<CallToolResponse, ErrorData>
    where
        T: IntoCallToolResult,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<T, FlowError>>,
    {
        let ToolCall { request, ctx } = self;
        let round = Round::new(request, &ctx)?;
        // A call in a 2025-era session runs once and may wait on a person for minutes: this copy
        // of the request's context does not wait with it (what the call needs of it is read now).
        match elicitation.in_session(round) {
            Ok((call, round)) => {
                drop(ctx);
                elicitation.call_tool_in_session(call, round, handler).await
            }
            Err(round) => elicitation.call_tool_round(round, handler).await,
        }
    }

    /// Runs a task-capable tool (`support`): the one call a `#[tool]` makes to be a task of the
    /// Tasks extension. For a client that declares the extension (2026-07-28), the handler runs as
    /// [`Elicitation::call_tool_task`] does (an ordinary round until it starts its long work, then
    /// a task); for any other client, a 2025-era session included, `Optional` (and `Forbidden`) is
    /// an ordinary call, [`ToolCall::run`], and `Required` answers `-32021`.
    ///
    /// The server also answers `tasks/get`, `tasks/update` and `tasks/cancel` by delegating its
    /// `ServerHandler`'s `get_task`, `update_task` and `cancel_task` to the same-named methods of
    /// [`Elicitation`], and advertises the extension (`io.modelcontextprotocol/tasks`) in its
    /// capabilities (see `examples/src/bin/own-server.rs`, tool `reserve`).
    ///
    /// # Errors
    ///
    /// As [`Elicitation::call_tool`] and [`Elicitation::call_tool_task`].
    pub async fn run_task<T, F, Fut>(
        self,
        elicitation: &Elicitation,
        support: TaskSupport,
        handler: F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        T: IntoCallToolResult,
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<T, FlowError>> + Send + 'static,
    {
        match (support, super::tasks::declares_tasks(&self.ctx)) {
            (TaskSupport::Required, false) => Err(super::tasks::tasks_required()),
            (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => self.run(elicitation, handler).await,
            (support, true) => elicitation.call_tool_task(self.request, &self.ctx, support, handler).await,
        }
    }
}

impl<S> FromContextPart<ToolCallContext<'_, S>> for ToolCall {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let mut request = CallToolRequestParams::new(context.name.clone());
        request.arguments = context.arguments.clone();
        request.input_responses = context.input_responses.take();
        request.request_state = context.request_state.take();
        Ok(ToolCall { request, ctx: context.request_context.clone() })
    }
}

/// A `prompts/get` as the engine needs it, beside [`ToolCall`]: built in a `get_prompt` of your
/// own `ServerHandler` from the request and context rmcp hands it, then [`PromptCall::run`].
///
/// rmcp's `#[prompt_router]` passes a prompt neither `inputResponses` nor `requestState`, so a
/// prompt that asks on 2026-07-28 is served from `get_prompt` itself rather than from the router:
///
/// ```no_run
/// use elicit_runtime::rmcp::prelude::*;
/// use elicit_runtime::rmcp::rmcp::model::{GetPromptRequestParams, GetPromptResponse, GetPromptResult, PromptMessage, Role};
/// use elicit_runtime::rmcp::rmcp::service::RequestContext;
/// use elicit_runtime::rmcp::rmcp::{RoleServer, ServerHandler};
///
/// /// Which topic?
/// #[derive(Elicit)]
/// struct Topic {
///     topic: String,
/// }
///
/// #[derive(Clone)]
/// struct Prompts {
///     elicitation: Elicitation,
/// }
///
/// impl ServerHandler for Prompts {
///     async fn get_prompt(
///         &self,
///         request: GetPromptRequestParams,
///         ctx: RequestContext<RoleServer>,
///     ) -> Result<GetPromptResponse, ErrorData> {
///         PromptCall::new(request, ctx)
///             .run(&self.elicitation, |flow| async move {
///                 let topic = match flow.form::<Topic>("topic").await? {
///                     Answer::Accepted(Topic { topic }) => topic,
///                     Answer::Declined | Answer::Cancelled => "anything".to_owned(),
///                 };
///                 let text = format!("Write a haiku about {topic}.");
///                 Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]))
///             })
///             .await
///     }
/// }
/// ```
#[derive(Debug)]
pub struct PromptCall {
    request: GetPromptRequestParams,
    ctx: RequestContext<RoleServer>,
}

impl PromptCall {
    /// The call rmcp handed to `get_prompt`.
    pub fn new(request: GetPromptRequestParams, ctx: RequestContext<RoleServer>) -> PromptCall {
        PromptCall { request, ctx }
    }

    /// The name of the prompt asked for.
    pub fn name(&self) -> &str {
        &self.request.name
    }

    /// The request context of the call (its `_meta`, peer, extensions, cancellation token).
    pub fn context(&self) -> &RequestContext<RoleServer> {
        &self.ctx
    }

    /// Runs one round of `handler` on `elicitation`'s engine.
    ///
    /// # Errors
    ///
    /// As [`Elicitation::get_prompt`].
    pub async fn run<F, Fut>(self, elicitation: &Elicitation, handler: F) -> Result<GetPromptResponse, ErrorData>
    where
        F: FnOnce(Flow) -> Fut,
        Fut: Future<Output = Result<GetPromptResult, FlowError>>,
    {
        let PromptCall { request, ctx } = self;
        let round = Round::new(request, &ctx)?;
        // As [`ToolCall::run`]: a call in a 2025-era session waits without the request's context.
        match elicitation.in_session(round) {
            Ok((call, round)) => {
                drop(ctx);
                elicitation.get_prompt_in_session(call, round, handler).await
            }
            Err(round) => elicitation.get_prompt_round(round, handler).await,
        }
    }
}

/// The input request key under which [`FormArgs::complete`] asks for missing arguments.
pub const ARGUMENTS_KEY: &str = "arguments";

/// A tool's arguments as `T`, completed by a form when the model left some out or sent invalid
/// ones. Take it in a `#[tool]` inside rmcp's own `Parameters`: `Parameters(order):
/// Parameters<FormArgs<Order>>`.
///
/// The name says what it is: the tool's *args*, which a *form* completes. It is not called
/// `Parameters`, so `use elicit_runtime::rmcp::prelude::*` shadows nothing of rmcp's and your
/// other tools keep rmcp's `Parameters<T>` as they are. Wrapped in rmcp's `Parameters`, the
/// `#[tool]` macro still finds the tool's input (it looks for an argument whose type is named
/// `Parameters`) and advertises `T`'s `requestedSchema` as the tool's `inputSchema`, with no
/// `input_schema = ..`.
///
/// rmcp's `Parameters<T>` of `T` itself decodes the arguments before the handler runs, so
/// incomplete arguments are refused and no form appears. `FormArgs<T>` accepts any arguments
/// and decodes none; [`FormArgs::complete`] reads the call's arguments through the engine
/// ([`Flow::complete_args`]): complete and valid, they are the answer at once; otherwise a form
/// asks for exactly the missing or invalid fields. rmcp's `Parameters` takes the arguments out
/// of the call, so put [`ToolCall`] before it in the tool's signature; `complete` answers with
/// an error naming the fix when it was put after.
///
/// ```no_run
/// use elicit_runtime::rmcp::prelude::*;
/// use elicit_runtime::rmcp::rmcp::handler::server::router::tool::ToolRouter;
/// use elicit_runtime::rmcp::rmcp::handler::server::wrapper::Parameters;
/// use elicit_runtime::rmcp::rmcp::{tool, tool_handler, tool_router, ServerHandler};
///
/// /// Where to?
/// #[derive(Elicit)]
/// struct Trip {
///     /// Destination city
///     to: String,
///     #[elicit(minimum = 1, maximum = 9, default = 1)]
///     travellers: u8,
/// }
///
/// #[derive(Clone)]
/// struct Agency {
///     elicitation: Elicitation,
///     tool_router: ToolRouter<Agency>,
/// }
///
/// #[tool_router]
/// impl Agency {
///     #[tool(description = "Books a trip; asks for whatever the arguments leave out")]
///     async fn book(&self, call: ToolCall, Parameters(trip): Parameters<FormArgs<Trip>>) -> Result<CallToolResponse, ErrorData> {
///         call.run(&self.elicitation, |flow| book(flow, trip)).await
///     }
/// }
///
/// /// The tool's body: a function of the flow and the arguments, testable without a server.
/// async fn book(flow: Flow, trip: FormArgs<Trip>) -> Result<String, FlowError> {
///     Ok(match trip.complete(&flow).await? {
///         Answer::Accepted(trip) => format!("Booked {} to {}", trip.travellers, trip.to),
///         Answer::Declined | Answer::Cancelled => "No booking made.".to_owned(),
///     })
/// }
///
/// #[tool_handler(router = self.tool_router)]
/// impl ServerHandler for Agency {}
/// ```
///
/// The body is unit-tested with [`FormArgs::new`] and the engine alone: the arguments go in the
/// engine's [`Request`](crate::server::Request), as the client sends them.
///
/// ```
/// use elicit_runtime::rmcp::prelude::*;
/// use elicit_runtime::server::{Outcome, Request};
/// use elicit_runtime::testing::ReplayCheck;
/// use serde_json::json;
///
/// /// Where to?
/// #[derive(Elicit)]
/// struct Trip {
///     /// Destination city
///     to: String,
///     #[elicit(minimum = 1, maximum = 9, default = 1)]
///     travellers: u8,
/// }
///
/// async fn book(flow: Flow, trip: FormArgs<Trip>) -> Result<String, FlowError> {
///     Ok(match trip.complete(&flow).await? {
///         Answer::Accepted(trip) => format!("Booked {} to {}", trip.travellers, trip.to),
///         Answer::Declined | Answer::Cancelled => "No booking made.".to_owned(),
///     })
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let engine = Engine::builder("agency", KeyRing::generate()).build();
/// // A client that declares form elicitation (2026-07-28 `_meta`).
/// let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
///
/// // Complete arguments: no form, the answer at once.
/// let args = json!({"to": "Oslo", "travellers": 2});
/// let request = Request::new("tools/call", "book").arguments(Some(&args)).meta(meta.as_object());
/// let Ok(Outcome::Complete(text)) = engine.run(&request, |flow| book(flow, FormArgs::new())).await else { panic!() };
/// assert_eq!(text, "Booked 2 to Oslo");
///
/// // No destination: a form asks for it, answered here as a client would, every round replayed.
/// let request = Request::new("tools/call", "book").meta(meta.as_object());
/// let text = ReplayCheck::new(&engine, request)
///     .run(|flow| book(flow, FormArgs::new()), async |key, _asked| {
///         assert_eq!(key, ARGUMENTS_KEY);
///         json!({"action": "accept", "content": {"to": "Rome"}})
///     })
///     .await
///     .unwrap();
/// assert_eq!(text, "Booked 1 to Rome");
/// # });
/// ```
pub struct FormArgs<T> {
    /// The arguments rmcp's `Parameters` took out of the call, to tell a misplaced [`ToolCall`].
    taken: Option<Map<String, Value>>,
    of: std::marker::PhantomData<fn() -> T>,
}

impl<T> FormArgs<T> {
    /// Arguments the engine completes: what a unit test of a tool's body passes (the arguments
    /// themselves go in the engine's `Request`).
    pub fn new() -> Self {
        FormArgs { taken: None, of: std::marker::PhantomData }
    }
}

impl<T> Default for FormArgs<T> {
    fn default() -> Self {
        FormArgs::new()
    }
}

impl<T> Clone for FormArgs<T> {
    fn clone(&self) -> Self {
        FormArgs { taken: self.taken.clone(), of: std::marker::PhantomData }
    }
}

impl<T> std::fmt::Debug for FormArgs<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FormArgs<{}>", std::any::type_name::<T>())
    }
}

impl<T: Elicit> FormArgs<T> {
    /// The call's arguments as `T`, asking under [`ARGUMENTS_KEY`] for whatever is missing or
    /// invalid.
    ///
    /// # Errors
    ///
    /// As [`Flow::complete_args`]; a handler error when rmcp's `Parameters` took arguments the
    /// flow never saw ([`ToolCall`] placed after `Parameters<FormArgs<T>>`).
    pub async fn complete(&self, flow: &Flow) -> Result<Answer<T>, FlowError> {
        if self.taken.as_ref().is_some_and(|taken| !taken.is_empty()) && !flow.arguments().is_object() {
            return Err(FlowError::handler(MisplacedToolCall));
        }
        flow.complete_args::<T>(ARGUMENTS_KEY).await
    }
}

/// `ToolCall` came after `Parameters<FormArgs<T>>`, which took the arguments away.
#[derive(Debug)]
struct MisplacedToolCall;

impl std::fmt::Display for MisplacedToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the tool's arguments never reached the engine: put `ToolCall` before `Parameters<FormArgs<_>>` in the \
             tool's signature",
        )
    }
}

impl std::error::Error for MisplacedToolCall {}

/// Accepts any arguments (the engine validates them in [`FormArgs::complete`]); keeps an object
/// only to tell a misplaced [`ToolCall`].
impl<'de, T> serde::Deserialize<'de> for FormArgs<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let taken = match Value::deserialize(deserializer)? {
            Value::Object(map) => Some(map),
            _ => None,
        };
        Ok(FormArgs { taken, of: std::marker::PhantomData })
    }
}

/// The tool's `inputSchema`: `T`'s `requestedSchema`, which the engine completes against.
impl<T: Elicit + 'static> schemars::JsonSchema for FormArgs<T> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Owned(std::any::type_name::<T>().rsplit("::").next().unwrap_or("FormArgs").to_owned())
    }

    fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::__private::json_schema_of::<T>()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, reason = "a failing test should stop loudly")]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::server::{Outcome, Request};
    use crate::state::KeyRing;

    /// Where to?
    struct Trip {
        to: String,
    }

    impl Elicit for Trip {
        const MESSAGE: &'static str = "Where to?";

        fn requested_schema() -> &'static crate::RequestedSchema {
            static SCHEMA: std::sync::OnceLock<crate::RequestedSchema> = std::sync::OnceLock::new();
            SCHEMA.get_or_init(|| {
                crate::RequestedSchema::new(vec![crate::schema::Property::required(
                    "to",
                    crate::schema::PrimitiveSchema::String(crate::schema::StringSchema::default()),
                )])
            })
        }

        fn from_content(content: &Map<String, Value>) -> Result<Self, crate::ContentErrors> {
            content.get("to").and_then(Value::as_str).map(|to| Trip { to: to.to_owned() }).ok_or_else(|| {
                let mut errors = crate::ContentErrors::default();
                errors.push("to", "is required");
                errors
            })
        }

        fn to_content(&self) -> Map<String, Value> {
            json!({"to": self.to}).as_object().cloned().unwrap_or_default()
        }
    }

    async fn book(flow: Flow, trip: FormArgs<Trip>) -> Result<String, FlowError> {
        Ok(match trip.complete(&flow).await? {
            Answer::Accepted(trip) => trip.to,
            Answer::Declined | Answer::Cancelled => "none".to_owned(),
        })
    }

    /// rmcp's `Parameters` took the arguments before `ToolCall` could read them: `complete` says
    /// so rather than asking the user for every field.
    #[tokio::test]
    async fn arguments_taken_before_the_tool_call_are_reported() {
        let engine = Engine::builder("form-args", KeyRing::generate()).build();
        let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
        let request = Request::new("tools/call", "book").meta(meta.as_object());
        let taken: FormArgs<Trip> = serde_json::from_value(json!({"to": "Oslo"})).unwrap();
        match engine.run(&request, |flow| book(flow, taken)).await {
            Err(error) => assert!(error.message.contains("put `ToolCall` before"), "{}", error.message),
            Ok(Outcome::Complete(text)) => assert!(text.contains("put `ToolCall` before"), "{text}"),
            Ok(Outcome::InputRequired(asked)) => panic!("asked for everything: {asked:?}"),
        }
        // Built in a test, it completes what the request carries.
        let args = json!({"to": "Rome"});
        let request = Request::new("tools/call", "book").arguments(Some(&args)).meta(meta.as_object());
        let Ok(Outcome::Complete(text)) = engine.run(&request, |flow| book(flow, FormArgs::new())).await else {
            panic!()
        };
        assert_eq!(text, "Rome");
    }

    /// The address a request's flows count against reads as `Display` writes it.
    #[test]
    fn ip_text_is_display() {
        for octets in [[0, 0, 0, 0], [127, 0, 0, 1], [9, 10, 99, 100], [199, 200, 249, 250], [255, 255, 255, 255]] {
            let ip = std::net::IpAddr::from(octets);
            assert_eq!(ip_text(ip), ip.to_string());
        }
        let ip = std::net::IpAddr::from([0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(ip_text(ip), "::1");
    }
}
