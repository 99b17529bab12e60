"""Drives travel-server's `book_trip` from the official Python SDK v2 client (`mcp`, pinned by
scripts/install-peers.sh), opening a 2025-11-25 session with `initialize`: the server pushes
elicitation requests while the call is open.

Usage: python py_v2_client.py PLAN (--http URL | --stdio COMMAND [ARGS...])
The PLAN and the JSON events on stdout are those of ts_v1_client.mjs (same test driver), and so
is `awaitCompletions`: after the call's end the client waits (up to 30 s) for the completion of
every URL step it accepted before it closes the session.
"""

import json
import os
import sys

import anyio
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def emit(event):
    sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
    sys.stdout.flush()


async def main():
    plan = json.loads(sys.argv[1])
    how, target = sys.argv[2], sys.argv[3:]
    accepted, completed = set(), set()
    arrived = anyio.Event()

    async def elicit(_context, params):
        if isinstance(params, types.ElicitRequestURLParams):
            emit({"event": "url", "url": params.url, "elicitationId": params.elicitation_id, "message": params.message})
            if plan["payment"] == "accept":
                accepted.add(params.elicitation_id)
            return types.ElicitResult(action=plan["payment"])
        properties = params.requested_schema["properties"] if isinstance(params.requested_schema, dict) else params.requested_schema.properties
        emit({"event": "form", "message": params.message, "properties": list(properties)})
        if "confirm" in properties:
            return types.ElicitResult(action="accept", content={"confirm": plan["confirm"]})
        if plan["trip"] in ("decline", "cancel"):
            return types.ElicitResult(action=plan["trip"])
        return types.ElicitResult(action="accept", content=plan["trip"])

    async def on_message(message):
        if isinstance(message, types.ElicitCompleteNotification):
            nonlocal arrived
            completed.add(message.params.elicitation_id)
            emit({"event": "complete", "elicitationId": message.params.elicitation_id})
            arrived.set()
            arrived = anyio.Event()

    async def await_completions():
        # The completion comes on the session's GET stream, the result on the call's: either may
        # come first.
        with anyio.move_on_after(30):
            while not accepted <= completed:
                await arrived.wait()

    if how == "--http":
        transport = streamable_http_client(target[0])
    else:
        transport = stdio_client(StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ)))

    async with transport as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit, message_handler=on_message) as session:
            if plan.get("caps") == "form":
                # A host whose UI renders forms but cannot open pages declares form mode only.
                build = session._build_capabilities

                def form_only(version):
                    capabilities = build(version)
                    capabilities.elicitation = types.ElicitationCapability(form=types.FormElicitationCapability())
                    return capabilities

                session._build_capabilities = form_only
            result = await session.initialize()
            emit({"event": "connected", "protocolVersion": result.protocol_version})
            try:
                called = await session.call_tool("book_trip", {}, read_timeout_seconds=120)
                emit({"event": "result", "result": called.model_dump(by_alias=True, mode="json", exclude_none=True)})
                if plan.get("awaitCompletions"):
                    await await_completions()
            except Exception as error:  # the test reads the error as the call's end
                emit({"event": "error", "code": getattr(getattr(error, "error", None), "code", None), "message": str(error)})


anyio.run(main)
