"""One MCP session against `paddock server` through the official Python SDK (`mcp`), over
Streamable HTTP with an API key.

Usage:
  server_edge_check.py <url>        the key is read from PADDOCK_API_KEY

Runs initialize and tools/list, and prints one JSON object: the server's name, the protocol
version it chose, whether it sent instructions, and the tool names it listed.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main() -> None:
    url = sys.argv[1]
    key = os.environ["PADDOCK_API_KEY"]
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
        async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (
            read,
            write,
        ):
            async with ClientSession(read, write) as session:
                initialized = await asyncio.wait_for(session.initialize(), 60)
                listed = await asyncio.wait_for(session.list_tools(), 60)
    print(
        json.dumps(
            {
                "serverName": initialized.server_info.name,
                "protocolVersion": str(initialized.protocol_version),
                "hasInstructions": bool(initialized.instructions),
                "tools": sorted(tool.name for tool in listed.tools),
            }
        )
    )


asyncio.run(main())
