"""A one-shot stdio client through the official Python SDK (`mcp`): every call is a new
`paddock mcp --session-id <id>` process, as the MCP Inspector's CLI mode runs them.

Usage:
  reconnect_check.py <paddock> <session-id>

The first process acquires a web device and exits; the second, with the same session id,
observes on it and lists the devices. Prints one JSON object: the device each saw and whether
the second call succeeded.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def one_call(paddock: str, session_id: str, tool: str, arguments: dict):
    params = StdioServerParameters(
        command=paddock, args=["mcp", "--session-id", session_id], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await asyncio.wait_for(session.call_tool(tool, arguments), 120)


async def main() -> None:
    paddock, session_id = sys.argv[1], sys.argv[2]
    acquired = await one_call(paddock, session_id, "getWeb", {})
    observed = await one_call(paddock, session_id, "observe", {})
    listed = await one_call(paddock, session_id, "listDevices", {})
    bound = [
        device["id"]
        for device in (listed.structured_content or {}).get("devices", [])
        if device.get("session") == session_id
    ]
    print(
        json.dumps(
            {
                "acquiredDevice": (acquired.structured_content or {}).get("device", {}).get("id"),
                "acquireError": acquired.is_error,
                "observeError": observed.is_error,
                "observeText": observed.content[0].text if observed.content else "",
                "boundDevices": bound,
            }
        )
    )


asyncio.run(main())
