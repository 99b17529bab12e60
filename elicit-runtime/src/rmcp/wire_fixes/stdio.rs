//! The wire fixes of the HTTP layer, on a newline-delimited JSON-RPC stream (stdio).
//!
//! rmcp reads and writes the stream itself, so what it would get wrong is put right on the lines
//! around it: a Multi Round-Trip request with mistyped parameters is answered `-32602` here (rmcp
//! would answer "method not found": [`mistyped_params`](super::mistyped_params)), an
//! `input_required` result loses the `elicitationId` rmcp writes into URL requests
//! ([`elicitation_id`](super::elicitation_id)), and every 2026-07-28 result (one with a
//! `resultType`) carries the server's `Implementation` under
//! `_meta["io.modelcontextprotocol/serverInfo"]`.
//!
//! **rmcp behaviour corrected** (rmcp 3.11.0, still so), beyond the two fixes shared with HTTP:
//! rmcp writes a 2026-07-28 result on stdio without the server's `Implementation` in its `_meta`,
//! which a stateless stdio client has no `initialize` to learn from. rmcp offers no hook on the lines it reads and writes,
//! so the server is served on one end of a pipe and the lines are pumped through the fixes.
//!
//! **Shown by** `tests/adapter/stdio/era_2026.rs` (mistyped params, `serverInfo`, URL mode) and
//! `tests/adapter/stdio/era_2025.rs` (a 2025-era session passes untouched), and this module's unit
//! test.

use std::io;
use std::sync::Arc;

use ::rmcp::{ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use super::elicitation_id::rewrite_input_required;
use super::layer::DEFAULT_MAX_REQUEST_BODY as MAX_REQUEST_BODY;
use super::mistyped_params::malformed_params;
use super::{Needle, contains};
use crate::wire::{META, META_SERVER_INFO, RESULT_TYPE, codes};

/// Room for a few messages between the stream and rmcp.
const PIPE_BUFFER: usize = 64 * 1024;

/// The lines of `read` reach rmcp through `to_rmcp`, and rmcp's lines reach `write` from
/// `from_rmcp`, each put right on the way. Ends when `read` ends and rmcp has said its last.
async fn pump<R, W>(
    read: R,
    write: W,
    (from_rmcp, to_rmcp): (impl AsyncRead + Unpin, impl AsyncWrite + Unpin),
    server_info: Value,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let write = Arc::new(Mutex::new(write));
    let input = pump_input(read, to_rmcp, write.clone());
    let output = pump_output(from_rmcp, write, &server_info);
    let (input, output) = tokio::join!(input, output);
    input.and(output)
}

/// The two ends of the pipe rmcp is served on: rmcp's, and the pumps'.
fn pipe() -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    tokio::io::duplex(PIPE_BUFFER)
}

async fn write_line(write: &Mutex<impl AsyncWrite + Unpin>, line: &[u8]) -> io::Result<()> {
    let mut write = write.lock().await;
    write.write_all(line).await?;
    if !line.ends_with(b"\n") {
        write.write_all(b"\n").await?;
    }
    write.flush().await
}

async fn pump_input(
    read: impl AsyncRead + Unpin,
    mut to_rmcp: impl AsyncWrite + Unpin,
    write: Arc<Mutex<impl AsyncWrite + Unpin>>,
) -> io::Result<()> {
    let mut read = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = MAX_REQUEST_BODY as u64 + 1;
        if (&mut read).take(limit).read_until(b'\n', &mut line).await? == 0 {
            break;
        }
        if line.len() > MAX_REQUEST_BODY && !line.ends_with(b"\n") {
            // As on HTTP, a message past the limit is refused unread: skip to its end.
            let mut rest = Vec::new();
            while (&mut read).take(limit).read_until(b'\n', &mut rest).await? > 0 && !rest.ends_with(b"\n") {
                rest.clear();
            }
            let error = error_line(Value::Null, codes::INVALID_REQUEST, "request too large");
            write_line(&write, &error).await?;
            continue;
        }
        if let Some((message, _)) = malformed_params(&line) {
            // Only a request with an `id` is ever marked, so the id is there to answer.
            let id =
                serde_json::from_slice::<Value>(&line).ok().and_then(|m| m.get("id").cloned()).unwrap_or(Value::Null);
            write_line(&write, &error_line(id, codes::INVALID_PARAMS, message)).await?;
            continue;
        }
        to_rmcp.write_all(&line).await?;
        if !line.ends_with(b"\n") {
            to_rmcp.write_all(b"\n").await?;
        }
        to_rmcp.flush().await?;
    }
    // End of input: rmcp sees it too, and ends the session.
    to_rmcp.shutdown().await
}

fn error_line(id: Value, code: i32, message: &str) -> Vec<u8> {
    let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    error.to_string().into_bytes()
}

async fn pump_output(
    from_rmcp: impl AsyncRead + Unpin,
    write: Arc<Mutex<impl AsyncWrite + Unpin>>,
    server_info: &Value,
) -> io::Result<()> {
    let mut read = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    loop {
        line.clear();
        // rmcp's own output, one message a line.
        if read.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        match put_right(&line, server_info) {
            Some(rewritten) => write_line(&write, &rewritten).await?,
            None => write_line(&write, &line).await?,
        }
    }
}

/// The message with the fixes applied, or `None` when it needs none.
fn put_right(line: &[u8], server_info: &Value) -> Option<Vec<u8>> {
    // Only results of the stateless revision carry a `resultType`.
    static NEEDLE: Needle = Needle::new(|| memchr::memmem::Finder::new(b"\"resultType\""));
    if !contains(line, &NEEDLE) {
        return None;
    }
    let stripped = rewrite_input_required(line);
    let mut message: Value = serde_json::from_slice(stripped.as_deref().unwrap_or(line)).ok()?;
    let result = message.get_mut("result")?.as_object_mut()?;
    result.get(RESULT_TYPE)?;
    let meta = result.entry(META).or_insert_with(|| Value::Object(serde_json::Map::new())).as_object_mut()?;
    meta.entry(META_SERVER_INFO).or_insert_with(|| server_info.clone());
    let mut out = serde_json::to_vec(&message).ok()?;
    out.push(b'\n');
    Some(out)
}

/// Serves any rmcp `ServerHandler` (yours, or an [`McpServer`](crate::rmcp::McpServer)) over a byte stream of
/// newline-delimited JSON-RPC until `read` ends, with the wire fixes [`wire_layer`](super::layer::wire_layer) makes on
/// HTTP: a Multi Round-Trip request with mistyped params is answered `-32602` (rmcp would say
/// "method not found"), URL-mode input requests lose `elicitationId`, and every 2026-07-28
/// result carries the server's `Implementation` under `_meta["io.modelcontextprotocol/serverInfo"]`.
/// `serve_io_with(server, tokio::io::stdin(), tokio::io::stdout())` serves stdio.
///
/// # Errors
///
/// An I/O error of the stream, or rmcp's failure to start the session.
pub async fn serve_io_with<S, R, W>(service: S, read: R, write: W) -> std::io::Result<()>
where
    S: ServerHandler,
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    // rmcp is served on one end of a pipe; `stdio::pump` carries the lines between the stream
    // and the other end, with the fixes the HTTP layers make.
    let (rmcp_end, pump_end) = pipe();
    let server_info = serde_json::to_value(service.get_info().server_info).unwrap_or(Value::Null);
    let served = async move {
        let running = service.serve(rmcp_end).await.map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        Ok::<_, std::io::Error>(())
    };
    let pumped = pump(read, write, tokio::io::split(pump_end), server_info);
    let (served, pumped) = tokio::join!(served, pumped);
    served.and(pumped)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn results_of_the_stateless_revision_are_put_right() {
        let info = json!({"name": "s", "version": "1"});
        let url = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "inputRequests": {
            "pay": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://p.example/1", "elicitationId": "x"}}}}});
        let out: Value = serde_json::from_slice(&put_right(url.to_string().as_bytes(), &info).unwrap()).unwrap();
        assert_eq!(
            out["result"]["inputRequests"]["pay"]["params"],
            json!({"mode": "url", "message": "m", "url": "https://p.example/1"})
        );
        assert_eq!(out["result"]["_meta"][META_SERVER_INFO], info);
        // A 2025-era request keeps its `elicitationId` (that revision requires it), and a result
        // without `resultType` is left as it is.
        let pushed = json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {"mode": "url", "elicitationId": "x"}});
        assert_eq!(put_right(pushed.to_string().as_bytes(), &info), None);
        let legacy = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}});
        assert_eq!(put_right(legacy.to_string().as_bytes(), &info), None);
        // A server's own `_meta` is kept.
        let own = json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "_meta": {"k": 1, META_SERVER_INFO: {"name": "t", "version": "2"}}}});
        let out: Value = serde_json::from_slice(&put_right(own.to_string().as_bytes(), &info).unwrap()).unwrap();
        assert_eq!(out["result"]["_meta"], json!({"k": 1, META_SERVER_INFO: {"name": "t", "version": "2"}}));
    }
}
