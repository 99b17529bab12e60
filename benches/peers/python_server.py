"""The end-to-end bench server on the official Python SDK (`mcp` 2.x, protocol 2026-07-28).

Same two tools as `bench-server`: `ask_name` answers the first call with `input_required` holding
one form elicitation (`{name: string}`) and completes on the retry that carries the answer and the
echoed `requestState`; `plain` completes at once. The SDK seals `requestState` itself (AES-256-GCM,
bound to the request); the handler sees plaintext. Stateless Streamable HTTP, JSON replies, one
uvicorn worker (one process, as the other servers are).

    python python_server.py [PORT]        # serves http://127.0.0.1:PORT/mcp (default 8932)
"""

import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ElicitRequest, ElicitRequestFormParams, InputRequiredResult, TextContent

server = MCPServer("elicit-bench-python")

NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}


@server.tool(description="Asks for a name with one form, then greets it")
async def ask_name(ctx: Context) -> CallToolResult | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("name")
    if answer is None or ctx.request_state != "asked":
        ask = ElicitRequest(params=ElicitRequestFormParams(message="What is your name?", requested_schema=NAME_SCHEMA))
        return InputRequiredResult(input_requests={"name": ask}, request_state="asked")
    content = getattr(answer, "content", None) or {}
    name = content.get("name") if getattr(answer, "action", None) == "accept" else None
    if not isinstance(name, str):
        return CallToolResult(content=[TextContent(type="text", text="Hello, stranger!")])
    return CallToolResult(content=[TextContent(type="text", text=f"Hello, {name}!")])


@server.tool(description="Answers at once")
async def plain() -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text="pong")])


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8932
    app = server.streamable_http_app(json_response=True, stateless_http=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
