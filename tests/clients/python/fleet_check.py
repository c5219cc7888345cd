"""The fleet server through the official Python SDK (`mcp`) over HTTP with an API key: a joined
daemon's web device listed, driven and read through `paddock server`.

Usage:
  fleet_check.py drive <server-url> <machine-id> <app-id>
  fleet_check.py stdio <server-url> <paddock-binary>
  fleet_check.py task <server-url> <machine-id> <app-id>
  fleet_check.py offline <server-url> <machine-id>
  fleet_check.py online <server-url> <machine-id> <old-device-id>

The API key is read from the environment (PADDOCK_API_KEY), never from the command line.
`drive` waits for a device of the machine, opens the fixture app on it, reads and taps it,
takes a screenshot and tries the bundle operations; `offline` reads the fleet while the
daemon is stopped; `online` waits for the device to come back and reads it again. Each prints
one JSON object for `crates/paddock/tests/fleet.rs` to assert on. Every wait has a deadline, so
a hang fails instead of hanging; nothing here measures time.
"""

import asyncio
import json
import os
import sys
import time
import traceback

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

WAIT = 60


def text_of(result) -> str:
    return " ".join(block.text for block in result.content if getattr(block, "text", None))


class Client:
    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, name: str, args: dict | None = None) -> dict:
        result = await self.session.call_tool(name, args or {})
        text = text_of(result)
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        kinds = [block.type for block in result.content]
        return {
            "isError": bool(result.is_error),
            "text": text,
            "json": value,
            "structured": result.structured_content,
            "kinds": kinds,
        }

    async def devices(self) -> list:
        answer = await self.call("list_devices")
        return (answer["structured"] or {}).get("devices", [])

    async def wait_device(self, predicate, what: str) -> dict:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for device in await self.devices():
                if predicate(device):
                    return device
            await asyncio.sleep(0.25)
        raise RuntimeError(f"no device {what} within {WAIT} s: {await self.devices()}")

    async def ui_until(self, device_id: str, needle: str) -> str:
        deadline = time.monotonic() + WAIT
        text = ""
        while time.monotonic() < deadline:
            answer = await self.call("get_device_ui_state", {"device_id": device_id})
            text = answer["text"]
            if needle in text:
                return text
            await asyncio.sleep(0.25)
        return text


async def drive(client: Client, machine: str, app: str) -> dict:
    report: dict = {}
    tools = await client.session.list_tools()
    report["tools"] = sorted(tool.name for tool in tools.tools)
    device = await client.wait_device(
        lambda device: device["machine_id"] == machine and device["online"] and device["state"] == "warm",
        f"of machine {machine}",
    )
    device_id = device["device_id"]
    report["device"] = device
    report["getDevice"] = await client.call("get_device", {"device_id": device_id})
    report["start"] = await client.call(
        "manage_device_apps", {"device_id": device_id, "operation": "start", "package": app}
    )
    report["uiBefore"] = await client.ui_until(device_id, "Items")
    # The inventory follows within a moment: the daemon reports changes as it sees them.
    report["listedWhileBound"] = [
        await client.wait_device(
            lambda d: d["device_id"] == device_id and d["state"] == "bound", "bound to the fleet"
        )
    ]
    report["tap"] = await client.call(
        "device_action", {"device_id": device_id, "operation": "tap", "text": "Items"}
    )
    report["uiAfter"] = await client.ui_until(device_id, "Item 1")
    report["swipe"] = await client.call(
        "device_action", {"device_id": device_id, "operation": "swipe", "direction": "up"}
    )
    report["back"] = await client.call(
        "device_action", {"device_id": device_id, "operation": "global_action", "key": "back"}
    )
    report["uiBack"] = await client.ui_until(device_id, "Sign in")
    report["screenshot"] = await client.call("get_device_screenshot", {"device_id": device_id})
    report["tapNowhere"] = await client.call(
        "device_action", {"device_id": device_id, "operation": "tap", "text": "No such text anywhere"}
    )
    report["tapNothing"] = await client.call("device_action", {"device_id": device_id, "operation": "tap"})
    report["setTimezone"] = await client.call(
        "configure_device", {"device_id": device_id, "operation": "set_timezone", "timezone": "Asia/Tokyo"}
    )
    report["getTimezone"] = await client.call(
        "configure_device", {"device_id": device_id, "operation": "get_timezone"}
    )
    report["overlay"] = await client.call(
        "configure_device", {"device_id": device_id, "operation": "get_overlay"}
    )
    report["rename"] = await client.call(
        "manage_device", {"device_id": device_id, "operation": "rename"}
    )
    report["capabilities"] = await client.call(
        "manage_device", {"device_id": device_id, "operation": "get_capabilities"}
    )
    report["count"] = await client.call("manage_device", {"operation": "count"})
    report["files"] = await client.call(
        "manage_device_files", {"device_id": device_id, "operation": "list"}
    )
    report["apps"] = await client.call("list_apps_on_device", {"device_id": device_id})
    report["unknownDevice"] = await client.call("get_device_ui_state", {"device_id": "web-nope"})
    report["badArguments"] = await client.call("device_action", {"device_id": device_id, "operation": "fly"})
    report["reset"] = await client.call("manage_device", {"device_id": device_id, "operation": "reset"})
    report["uiAfterReset"] = (await client.call("get_device_ui_state", {"device_id": device_id}))["text"]
    report["terminate"] = await client.call("terminate_device", {"device_id": device_id})
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        listed = [d for d in await client.devices() if d["device_id"] == device_id]
        if not listed or listed[0]["state"] == "warm":
            break
        await asyncio.sleep(0.25)
    report["afterTerminate"] = listed
    report["created"] = await client.call("create_device", {"machine_id": machine})
    return report


async def offline(client: Client, machine: str) -> dict:
    device = await client.wait_device(
        lambda device: device["machine_id"] == machine and not device["online"], "offline"
    )
    device_id = device["device_id"]
    return {
        "device": device,
        "ui": await client.call("get_device_ui_state", {"device_id": device_id}),
        "tap": await client.call("device_action", {"device_id": device_id, "operation": "tap", "x": 5, "y": 5}),
    }


async def online(client: Client, machine: str, old_device: str) -> dict:
    device = await client.wait_device(
        lambda device: device["machine_id"] == machine and device["online"], "of the machine online again"
    )
    listed = await client.devices()
    return {
        "device": device,
        "listed": listed,
        "ui": await client.call("get_device_ui_state", {"device_id": device["device_id"]}),
        "old": await client.call("get_device", {"device_id": old_device}),
    }


async def task(client: Client, machine: str, app: str) -> dict:
    await client.wait_device(
        lambda device: device["machine_id"] == machine and device["online"] and device["state"] == "warm",
        f"free on machine {machine}",
    )
    report: dict = {}
    report["started"] = await client.call(
        "run_task", {"goal": "Sign in to the fixture app as ada@example.com", "app": app}
    )
    task_id = (report["started"]["structured"] or {}).get("task_id")
    report["taskId"] = task_id
    deadline = time.monotonic() + 150
    summary = {}
    while time.monotonic() < deadline:
        answer = await client.call("get_task", {"task_id": task_id})
        summary = (answer["structured"] or {}).get("summary") or {}
        if summary.get("state") in ("completed", "failed", "stopped"):
            break
        await asyncio.sleep(0.5)
    report["summary"] = summary
    report["trajectory"] = await client.call(
        "get_task", {"task_id": task_id, "view": "trajectory", "limit": 100}
    )
    report["media"] = await client.call("get_task_media", {"task_id": task_id, "kind": "screenshot"})
    report["list"] = await client.call("list_tasks")
    report["unknown"] = await client.call("get_task", {"task_id": f"{machine}.t_nope"})
    report["badId"] = await client.call("get_task", {"task_id": "nodot"})
    return report


async def stdio(server: str, binary: str) -> dict:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=binary,
        args=["server", "mcp", "--url", server],
        env={"PADDOCK_API_KEY": os.environ["PADDOCK_API_KEY"], "PATH": os.environ.get("PATH", "")},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            client = Client(session)
            tools = await session.list_tools()
            return {
                "tools": sorted(tool.name for tool in tools.tools),
                "devices": await client.devices(),
                "unknown": await client.call("get_device", {"device_id": "web-nope"}),
            }


async def main() -> None:
    phase, server = sys.argv[1], sys.argv[2]
    if phase == "stdio":
        print(json.dumps(await stdio(server, sys.argv[3])))
        return
    key = os.environ["PADDOCK_API_KEY"]
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
        async with streamable_http_client(f"{server}/mcp", http_client=http, terminate_on_close=False) as (
            read,
            write,
            *_,
        ):
            async with ClientSession(read, write) as session:
                await session.initialize()
                client = Client(session)
                if phase == "drive":
                    report = await drive(client, sys.argv[3], sys.argv[4])
                elif phase == "task":
                    report = await task(client, sys.argv[3], sys.argv[4])
                elif phase == "offline":
                    report = await offline(client, sys.argv[3])
                else:
                    report = await online(client, sys.argv[3], sys.argv[4])
    print(json.dumps(report))


if __name__ == "__main__":
    try:
        asyncio.run(asyncio.wait_for(main(), timeout=240))
    except BaseException:
        traceback.print_exc()
        sys.exit(1)
