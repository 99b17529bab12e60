"""The official Python SDK v2 client (`mcp`, pinned by scripts/install-peers.sh) as a host that
cannot show forms: a `ClientSession` without an elicitation callback, so its `initialize`
declares no elicitation. It lists travel-server's tools and calls each tool of the plan.

Usage: python py_v2_no_elicitation.py PLAN --http URL
  PLAN: {"calls": [TOOL, ...]}
Events, one JSON line each on stdout:
  {"event":"connected","protocolVersion":...,"elicitation":...}   what initialize declared
  {"event":"tools","names":[...]}
  {"event":"result","tool":...,"result":...} | {"event":"error","tool":...,"code":...,"message":...}
"""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


def emit(event):
    sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
    sys.stdout.flush()


async def main():
    plan = json.loads(sys.argv[1])
    if sys.argv[2] != "--http":
        sys.stderr.write("usage: python py_v2_no_elicitation.py PLAN --http URL\n")
        sys.exit(2)
    async with streamable_http_client(sys.argv[3]) as (read, write):
        async with ClientSession(read, write) as session:
            result = await session.initialize()
            declared = session._build_capabilities(result.protocol_version).elicitation
            emit({"event": "connected", "protocolVersion": result.protocol_version, "elicitation": declared is not None})
            tools = await session.list_tools()
            emit({"event": "tools", "names": [tool.name for tool in tools.tools]})
            for tool in plan["calls"]:
                try:
                    called = await session.call_tool(tool, {}, read_timeout_seconds=60)
                    emit({"event": "result", "tool": tool, "result": called.model_dump(by_alias=True, mode="json", exclude_none=True)})
                except Exception as error:  # the test reads the error as the call's end
                    emit({"event": "error", "tool": tool, "code": getattr(getattr(error, "error", None), "code", None), "message": str(error)})


anyio.run(main)
