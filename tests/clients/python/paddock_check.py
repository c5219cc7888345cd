"""An independent MCP client for Paddock's tests: the official Python SDK (`mcp`).

Usage:
  paddock_check.py http <url>        token read from the file named by PADDOCK_TOKEN_FILE
  paddock_check.py stdio <paddock>   launches `<paddock> mcp` with this process's environment

Lists the tools, calls `listDevices`, calls an unknown tool, and prints one JSON object.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def exercise(session: ClientSession) -> dict:
    init = await session.initialize()
    tools = await session.list_tools()
    result = await session.call_tool("listDevices", {})
    report = {
        "protocolVersion": init.protocol_version,
        "server": init.server_info.name,
        "tools": [tool.name for tool in tools.tools],
        "isError": result.is_error,
        "structured": result.structured_content,
    }
    try:
        unknown = await session.call_tool("noSuchTool", {})
        report["unknownTool"] = {"isError": unknown.is_error}
    except Exception as error:  # a JSON-RPC error surfaces as an exception
        report["unknownTool"] = {"error": str(error)}
    return report


async def main() -> None:
    mode, target = sys.argv[1], sys.argv[2]
    if mode == "http":
        with open(os.environ["PADDOCK_TOKEN_FILE"], encoding="utf-8") as file:
            token = file.read().strip()
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
            async with streamable_http_client(target, http_client=http, terminate_on_close=False) as (read, write):
                async with ClientSession(read, write) as session:
                    report = await exercise(session)
    else:
        params = StdioServerParameters(command=target, args=["mcp"], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                report = await exercise(session)
    print(json.dumps(report))


asyncio.run(main())
