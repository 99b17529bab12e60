"""A server on the official Python SDK v2 (`mcp==2.3.0`, pinned by scripts/install-peers.sh into
.tools/peers/py), for the `elicit` client's dual-era tests.

    python tests/peers/py_v2_server.py modern   both eras, as the SDK serves them: a 2026-07-28
                                                client gets input_required results
    python tests/peers/py_v2_server.py legacy   a 2025-era server: the HTTP front answers the
                                                2026-07-28 probe (`server/discover`, or any
                                                request with a 2026-07-28 protocol header) with
                                                -32601, as a 2025-11-25 server does

Streamable HTTP on 127.0.0.1, a free port; prints "listening <url>" on stdout.

Tools:
  contact   a form (the SDK's resolver: pushed mid-call on 2025, input_required on 2026)
  connect   a URL step (2025: pushed URL elicitation plus notifications/elicitation/complete;
            2026: an input_required URL request, completed on the retry carrying the consent)
"""

import json
import socket
import sys
import uuid
from typing import Annotated

import uvicorn
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp_types import CallToolResult, ElicitRequest, ElicitRequestURLParams, InputRequiredResult, TextContent
from pydantic import BaseModel, Field

MODE = sys.argv[1] if len(sys.argv) > 1 else "modern"


class Contact(BaseModel):
    name: str = Field(description="Your name", min_length=2)
    email: str = Field(description="Your e-mail address")


def ask_contact() -> Elicit[Contact]:
    return Elicit("Who should we contact?", Contact)


server = MCPServer("py-v2-peer")


def text(value: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=value)])


@server.tool()
async def contact(who: Annotated[ElicitationResult[Contact], Resolve(ask_contact)]) -> str:
    """Asks who to contact with a form."""
    if isinstance(who, AcceptedElicitation):
        return f"contact: accept {who.data.name} <{who.data.email}>"
    return f"contact: {who.action}"


@server.tool()
async def connect(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Sends the user to a page (URL mode)."""
    url = "https://auth.example.com/py-connect"
    if ctx.protocol_version == "2026-07-28":
        answer = (ctx.input_responses or {}).get("connect")
        if answer is None:
            request = ElicitRequest(params=ElicitRequestURLParams(message="Connect your account", url=url))
            return InputRequiredResult(input_requests={"connect": request}, request_state="connect")
        return text(f"connect: {answer.action} (2026-07-28)")
    elicitation_id = str(uuid.uuid4())
    answer = await ctx.elicit_url("Connect your account", f"{url}?id={elicitation_id}", elicitation_id)
    if answer.action == "accept":
        await ctx.request_context.session.send_elicit_complete(elicitation_id)
    return text(f"connect: {answer.action} ({ctx.protocol_version})")


def legacy_front(app):
    """An ASGI wrapper refusing the 2026-07-28 probe as a 2025-era server does."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        modern = headers.get("mcp-protocol-version") == "2026-07-28"
        if isinstance(request, dict) and (request.get("method") == "server/discover" or modern):
            error = {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": -32601, "message": "Method not found"}}
            payload = json.dumps(error).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": payload})
            return

        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await app(scope, replay, send)

    return wrapped


def main() -> None:
    app = server.streamable_http_app()
    if MODE == "legacy":
        app = legacy_front(app)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # Listening before the address is printed: early connections wait in the backlog.
    sock.listen(128)
    print(f"listening http://127.0.0.1:{port}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
