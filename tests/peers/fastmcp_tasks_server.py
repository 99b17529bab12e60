"""A FastMCP server with the fastmcp-tasks extension (io.modelcontextprotocol/tasks): the elicit
client's tests drive its task tools. Serves Streamable HTTP on 127.0.0.1 (a free port) at /mcp and
prints `listening URL` once the server has started (its task worker included).

Tools:
  migrate {tables}  always a task: works a while, asks one confirmation (the guard pattern: it
                    returns an InputRequiredResult and re-runs with ctx.input_responses), then
                    reports what it did with the answer.
  crash {}          always a task that ends with a tool error.
  sleepy {seconds}  always a task that works `seconds` before completing (cancel it meanwhile).

With ELICIT_PEER_LOG=FILE set, `sleepy` appends a JSON line to FILE when it starts and when its
work is cancelled.
"""

import asyncio
import json
import os
import socket
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fastmcp-tasks-peer")
mcp.add_extension(TasksExtension())

# Polled every 100 ms: the tests wait on the task, not on a production-sized interval.
TASK = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=100))

CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Go on?"}},
    "required": ["confirm"],
}


@mcp.tool(task=TASK)
async def migrate(tables: int, ctx: Context) -> str:
    """Migrates some tables, asking first."""
    answers = ctx.input_responses or {}
    answer = answers.get("go_on")
    if answer is None:
        await asyncio.sleep(0.3)
        return mcp_types.InputRequiredResult(
            input_requests={
                "go_on": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"The migration touches {tables} tables: go on?",
                        requested_schema=CONFIRM,
                    )
                )
            }
        )
    action = getattr(answer, "action", None)
    if action == "accept":
        content = getattr(answer, "content", None) or {}
        if content.get("confirm"):
            await asyncio.sleep(0.3)
            return f"Migrated {tables} tables"
        return "Migration not confirmed"
    return f"Migration {action}"


@mcp.tool(task=TASK)
async def crash() -> str:
    """Fails as a tool."""
    await asyncio.sleep(0.2)
    raise ToolError("the disk is full")


def log(event: dict) -> None:
    path = os.environ.get("ELICIT_PEER_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(event) + "\n")


@mcp.tool(task=TASK)
async def sleepy(seconds: float) -> str:
    """Works a while."""
    log({"started": "sleepy"})
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        log({"cancelled": "sleepy"})
        raise
    return f"slept {seconds} s"


async def main() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(mcp.http_app(path="/mcp"), log_level="warning"))

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.05)
        print(f"listening http://127.0.0.1:{port}/mcp", flush=True)

    await asyncio.gather(server.serve(sockets=[sock]), announce())


if __name__ == "__main__":
    asyncio.run(main())
