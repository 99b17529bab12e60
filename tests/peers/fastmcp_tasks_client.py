"""A FastMCP client of the Tasks extension (fastmcp-tasks, io.modelcontextprotocol/tasks), for
interop tests of a task server: it calls one tool on a Streamable HTTP server, lets FastMCP drive
the task if the server runs the call as one (polling `tasks/get`, answering each input request
through the elicitation handler with `tasks/update`), and prints one JSON line with the outcome.

Usage: fastmcp_tasks_client.py URL TOOL ARGS_JSON ANSWER_JSON
  ANSWER_JSON answers every elicitation: {"action": "accept", "content": {...}} | {"action":
  "decline"} | {"action": "cancel"}.
Prints {"asked": [messages], "isError": bool, "text": "..."} or {"error": "..."}.
"""

import asyncio
import json
import sys

import fastmcp_tasks  # noqa: F401  (importing it gives every Client the tasks extension)
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult


async def main() -> None:
    url, tool, args, answer = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    asked = []

    async def on_elicit(message, _response_type, _params, _context):
        asked.append(message)
        return ElicitResult(action=answer["action"], content=answer.get("content"))

    try:
        async with Client(url, elicitation_handler=on_elicit) as client:
            result = await client.call_tool(tool, args, raise_on_error=False)
        text = "".join(getattr(block, "text", "") for block in result.content)
        print(json.dumps({"asked": asked, "isError": bool(result.is_error), "text": text}), flush=True)
    except Exception as error:  # the test reads the failure from the output
        print(json.dumps({"asked": asked, "error": str(error)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
