"""Paddock's MCP features through the official Python SDK (`mcp`), as a real client meets them.

Usage:
  features_check.py http <url> <list-page-url>        token read from PADDOCK_TOKEN_FILE
  features_check.py stdio <paddock> <list-page-url>   launches `<paddock> mcp`

The daemon must boot web devices slowly (none warm, PADDOCK_DEBUG_DEVICE_BOOT_DELAY_MS), so
that `getWeb` reports its boot stages. Per protocol version the transport serves with this SDK
(2025-11-25 through `initialize` and 2026-07-28 through `server/discover`, over HTTP and over
stdio alike), on a fresh connection, it checks:

- `instructions` in the initialize (or discover) result, and what `tools.listChanged` promises;
- `notifications/progress` during a slow `getWeb` (the SDK's progress callback);
- cancelling a long `swipeOn` (cancelling the call's task: the SDK sends
  `notifications/cancelled`, or at 2026-07-28 over HTTP aborts the request) once its first
  progress arrives, then `observe` on the same session;
- `screenshot {imageAs: "link"}` answering with a `resource_link` that `resources/list` lists
  and `resources/read` returns as a JPEG;
- tool list changes: at 2025-11-25 over stdio `notifications/tools/list_changed` after
  `setToolEnabled`, over HTTP none promised and none received; at 2026-07-28 a
  `subscriptions/listen` stream that hears the session's own change (and, reported, how many
  list-changed notifications arrived outside it).

Prints one JSON object. Every wait has a generous deadline, so a hang fails instead of hanging.
"""

import asyncio
import base64
import json
import os
import sys
import traceback

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged, listen
from mcp.shared._httpx_utils import create_mcp_http_client

# Hang deadlines only: nothing here measures time.
STEP = 180
SWIPE = {"direction": "up", "untilVisible": "Item 999", "maxSwipes": 50}


def text_of(result) -> str:
    return " ".join(block.text for block in result.content if getattr(block, "text", None))


class Notifications:
    """What the session's message handler saw."""

    def __init__(self) -> None:
        self.tools_list_changed = 0
        # Those not stamped with a `subscriptions/listen` stream's id.
        self.unstamped_tools_list_changed = 0
        self.changed = anyio.Event()

    async def handle(self, message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_list_changed += 1
            meta = message.params.meta if message.params else None
            meta = meta.model_dump(by_alias=True) if hasattr(meta, "model_dump") else (meta or {})
            if "io.modelcontextprotocol/subscriptionId" not in meta:
                self.unstamped_tools_list_changed += 1
            self.changed.set()


async def checked(report: dict, key: str, check) -> None:
    """Runs one check; an exception is recorded as that item's error, and the rest go on."""
    try:
        with anyio.fail_after(STEP):
            report[key] = await check()
    except Exception as error:  # noqa: BLE001 — recorded for the test to show
        report[key] = {"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()}


async def acquire(session: ClientSession) -> dict:
    """A `getWeb` that has to boot a device, with a progress callback."""
    seen: list[dict] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append({"progress": progress, "total": total, "message": message})

    result = await session.call_tool("getWeb", {}, progress_callback=on_progress)
    values = [item["progress"] for item in seen]
    return {
        "isError": result.is_error,
        "error": text_of(result) if result.is_error else None,
        "sessionUuid": (result.structured_content or {}).get("sessionUuid"),
        "progress": seen,
        "increasing": len(values) >= 1 and all(a < b for a, b in zip(values, values[1:])),
    }


async def cancel_a_long_swipe(session: ClientSession, list_url: str) -> dict:
    """Cancels `swipeOn` as its first progress arrives; then the session must still observe."""
    opened = await session.call_tool("openLink", {"url": list_url})
    if opened.is_error:
        return {"openLink": text_of(opened)}
    first_progress = anyio.Event()
    progress: list[float] = []
    outcome: dict = {}

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)
        first_progress.set()

    scope = anyio.CancelScope()

    async def swipe() -> None:
        with scope:
            result = await session.call_tool("swipeOn", SWIPE, progress_callback=on_progress)
            outcome["answered"] = text_of(result)
            first_progress.set()  # answered before any progress: nothing left to cancel

    async with anyio.create_task_group() as group:
        group.start_soon(swipe)
        await first_progress.wait()
        scope.cancel()
    observed = await session.call_tool("observe", {"format": "json"})
    elements = (observed.structured_content or {}).get("elements") or []
    return {
        "progressBeforeCancel": len(progress) >= 1,
        # The call was cancelled before an answer came back (a whole swipe would end `[not_found]`).
        "cancelled": scope.cancelled_caught and "answered" not in outcome,
        "answeredAnyway": outcome.get("answered"),
        "observeAfter": {"isError": observed.is_error, "elements": len(elements)},
    }


async def screenshot_resource(session: ClientSession) -> dict:
    shot = await session.call_tool("screenshot", {"imageAs": "link", "width": 200})
    links = [block for block in shot.content if block.type == "resource_link"]
    if shot.is_error or not links:
        return {"resourceLink": False, "answer": shot.model_dump(mode="json")}
    link = links[0]
    uri = str(link.uri)
    listed = await session.list_resources()
    read = await session.read_resource(uri)
    contents = read.contents[0]
    jpeg = base64.b64decode(getattr(contents, "blob", "") or "")
    return {
        "resourceLink": True,
        "uri": uri,
        "linkMimeType": link.mime_type,
        "listed": uri in [str(resource.uri) for resource in listed.resources],
        "readMimeType": contents.mime_type,
        "jpegMagic": jpeg[:2].hex(),
        "sizeMatches": link.size == len(jpeg),
    }


async def enable_clipboard(session: ClientSession, session_uuid: str | None) -> bool:
    """Lists `clipboard` (off by default) for the session; returns the call's `isError`."""
    arguments = {"toolName": "clipboard", "enabled": True}
    if session_uuid:
        arguments["sessionUuid"] = session_uuid
    return (await session.call_tool("setToolEnabled", arguments)).is_error


async def listed(session: ClientSession, name: str) -> bool:
    return name in [tool.name for tool in (await session.list_tools()).tools]


async def common(session: ClientSession, list_url: str, report: dict) -> str | None:
    """The checks every run shares; returns the session's uuid."""
    await checked(report, "getWebProgress", lambda: acquire(session))
    await checked(report, "cancelSwipe", lambda: cancel_a_long_swipe(session, list_url))
    await checked(report, "resources", lambda: screenshot_resource(session))
    acquired = report["getWebProgress"]
    return acquired.get("sessionUuid") if isinstance(acquired, dict) else None


async def legacy_run(session: ClientSession, notifications: Notifications, list_url: str, stdio: bool) -> dict:
    init = await session.initialize()
    report = {
        "protocolVersion": init.protocol_version,
        "instructions": init.instructions,
        "listChangedCapability": init.capabilities.tools.list_changed if init.capabilities.tools else None,
    }
    session_uuid = await common(session, list_url, report)

    async def list_changed() -> dict:
        before = notifications.tools_list_changed
        notifications.changed = anyio.Event()
        answer = await enable_clipboard(session, session_uuid)
        if stdio:
            await notifications.changed.wait()
        else:
            # Stateless HTTP: a notification would have come on this call's own response stream,
            # ahead of its answer; a round trip more lets any straggler arrive.
            await session.send_ping()
        return {
            "isError": answer,
            "notifications": notifications.tools_list_changed - before,
            "clipboardListed": await listed(session, "clipboard"),
        }

    await checked(report, "toolsListChanged", list_changed)
    report["toolsListChangedTotal"] = notifications.tools_list_changed
    return report


async def modern_run(session: ClientSession, notifications: Notifications, list_url: str) -> dict:
    discovered = await session.discover()
    tools = discovered.capabilities.tools
    report = {
        "protocolVersion": session.protocol_version,
        "supportedVersions": discovered.supported_versions,
        "instructions": discovered.instructions,
        "listChangedCapability": tools.list_changed if tools else None,
    }
    session_uuid = await common(session, list_url, report)

    async def subscription() -> dict:
        async with listen(session, tools_list_changed=True) as stream:
            honored = bool(stream.honored.tools_list_changed)
            answer = await enable_clipboard(session, session_uuid)
            event = await stream.__anext__()
        return {
            "acknowledged": honored,
            "setToolEnabledIsError": answer,
            "event": type(event).__name__,
            "toolsListChanged": isinstance(event, ToolsListChanged),
            "clipboardListed": await listed(session, "clipboard"),
        }

    await checked(report, "listen", subscription)
    report["toolsListChangedTotal"] = notifications.tools_list_changed
    report["toolsListChangedOutsideListen"] = notifications.unstamped_tools_list_changed
    return report


async def over_http(url: str, list_url: str) -> dict:
    with open(os.environ["PADDOCK_TOKEN_FILE"], encoding="utf-8") as file:
        token = file.read().strip()
    runs = {}
    for version, session_id in [("2025-11-25", "py-http-legacy"), ("2026-07-28", "py-http-modern")]:
        # Over stateless HTTP the session is the `x-paddock-session-id` header.
        headers = {"Authorization": f"Bearer {token}", "x-paddock-session-id": session_id}
        notifications = Notifications()
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
                async with ClientSession(read, write, message_handler=notifications.handle) as session:
                    if version == "2026-07-28":
                        runs[version] = await modern_run(session, notifications, list_url)
                    else:
                        runs[version] = await legacy_run(session, notifications, list_url, stdio=False)
        runs[version]["sessionId"] = session_id
    return runs


async def over_stdio(paddock: str, list_url: str) -> dict:
    # One `paddock mcp` per version: each connection is its own session.
    params = StdioServerParameters(command=paddock, args=["mcp"], env=dict(os.environ))
    runs = {}
    for version in ["2025-11-25", "2026-07-28"]:
        notifications = Notifications()
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, message_handler=notifications.handle) as session:
                if version == "2026-07-28":
                    runs[version] = await modern_run(session, notifications, list_url)
                else:
                    runs[version] = await legacy_run(session, notifications, list_url, stdio=True)
    return runs


async def main() -> None:
    mode, target, list_url = sys.argv[1], sys.argv[2], sys.argv[3]
    with anyio.fail_after(15 * STEP):
        runs = await (over_http(target, list_url) if mode == "http" else over_stdio(target, list_url))
    print(json.dumps({"sdk": "mcp (Python)", "transport": mode, "runs": runs}))


asyncio.run(main())
