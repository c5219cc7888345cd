"""Validates Paddock's structured tool results against the tools' declared output schemas.

Usage:
  validate_outputs.py <url>    token read from the file named by PADDOCK_TOKEN_FILE

Over HTTP with the official Python SDK (`mcp`): lists the tools in full, calls every tool that
declares an `outputSchema` (each with arguments that succeed, on a web device it acquires), and
checks each schema with the JSON Schema 2020-12 meta-schema and each result's
`structuredContent` against its tool's schema with `jsonschema`'s Draft 2020-12 validator.
Prints one JSON object: per tool, "valid", the validation error, or the tool error.
"""

import asyncio
import json
import os
import sys

import jsonschema
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def check(schema: dict, result) -> str:
    if result.is_error:
        return "tool error: " + " ".join(
            block.text for block in result.content if getattr(block, "text", None)
        )
    if result.structured_content is None:
        return "no structuredContent although an outputSchema is declared"
    try:
        jsonschema.Draft202012Validator(schema).validate(result.structured_content)
    except jsonschema.ValidationError as error:
        return f"invalid: {error.message} at {list(error.absolute_path)}"
    return "valid"


async def exercise(session: ClientSession) -> dict:
    await session.initialize()
    # List every configurable tool, so that the listing carries every declared schema.
    await session.call_tool(
        "setToolEnabled",
        {"toolNames": ["provisionDevice", "releaseDevice", "listApps", "getAndroid", "getApple"]},
    )
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    schemas = {name: tool.output_schema for name, tool in tools.items() if tool.output_schema}
    report = {"declared": sorted(schemas), "schemaErrors": {}, "results": {}}
    for name, schema in schemas.items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as error:
            report["schemaErrors"][name] = error.message

    acquired = await session.call_tool("getWeb", {"enableTools": ["clipboard"]})
    report["results"]["getWeb"] = check(schemas["getWeb"], acquired)
    session_id = (acquired.structured_content or {}).get("sessionUuid", "")
    calls = [
        ("listDevices", {}),
        ("setToolEnabled", {"toolName": "highlight", "enabled": True, "sessionUuid": session_id}),
        ("discovery", {"operation": "status", "__mcpSessionId": session_id}),
        ("discovery", {"operation": "reset", "sessionUuid": session_id}),
        ("listApps", {}),
        ("provisionDevice", {"platform": "web", "boot": False}),
        ("releaseDevice", {"__mcpSessionId": session_id}),
        ("provisionDevice", {"platform": "web", "boot": True, "__mcpSessionId": session_id}),
        # No Android or Apple platform is configured: a typed tool error, not a result.
        ("getAndroid", {}),
        ("getApple", {}),
    ]
    # A task: queued at once; stopped (whatever its agent got to) before it is read back.
    started = await session.call_tool("runTask", {"goal": "validate the schemas", "maxSteps": 1})
    report["results"]["runTask"] = check(schemas["runTask"], started)
    task_id = (started.structured_content or {}).get("taskId", "")
    calls += [
        ("stopTask", {"taskId": task_id}),
        ("getTask", {"taskId": task_id}),
        ("getTask", {"taskId": task_id, "view": "status"}),
        ("getTask", {"taskId": task_id, "view": "trajectory", "limit": 10}),
        ("listTasks", {}),
        ("exportPlan", {"taskId": task_id}),
        # The task has ended: a typed tool error, not a result.
        ("sendTaskMessage", {"taskId": task_id, "text": "too late"}),
    ]
    for name, arguments in calls:
        result = await session.call_tool(name, arguments)
        key = name if name not in report["results"] else f"{name}#{len(report['results'])}"
        report["results"][key] = check(schemas[name], result)
    return report


async def main() -> None:
    url = sys.argv[1]
    with open(os.environ["PADDOCK_TOKEN_FILE"], encoding="utf-8") as file:
        token = file.read().strip()
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as session:
                report = await exercise(session)
    print(json.dumps(report))


asyncio.run(main())
