"""Web session data through the official Python SDK (`mcp`): logs, device settings, page script
and saved storage, over Paddock's HTTP endpoint.

Usage:
  web_data_check.py before-restart <url> <fixture-base-url>
  web_data_check.py after-restart <url> <fixture-base-url>

The token is read from the file named by PADDOCK_TOKEN_FILE. `before-restart` exercises
consoleLog, networkLog, networkBody, configureDevice, evaluate and saveStorage/listStorage
and a plain getWeb; `after-restart` (run against a restarted daemon with the same state dir)
starts a session with the saved storage. Each prints one JSON object for the Rust test
(`crates/paddock/tests/web_data.rs`) to assert on. Every wait has a deadline, so a hang fails
instead of hanging; nothing here measures time.
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

WAIT = 30


def text_of(result) -> str:
    return " ".join(block.text for block in result.content if getattr(block, "text", None))


class Client:
    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.uuid = None

    async def call(self, name: str, args: dict | None = None) -> dict:
        args = dict(args or {})
        if self.uuid is not None:
            args["__mcpSessionId"] = self.uuid
        result = await self.session.call_tool(name, args)
        text = text_of(result)
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        return {"isError": bool(result.is_error), "text": text, "json": value}

    async def get_web(self, args: dict | None = None) -> dict:
        self.uuid = None
        answer = await self.call("getWeb", args)
        if not answer["isError"]:
            self.uuid = answer["json"]["sessionUuid"]
        return answer

    async def observe_until(self, needle: str) -> str:
        """Observes until the screen shows `needle` (or the deadline passes); the last text."""
        deadline = time.monotonic() + WAIT
        text = ""
        while time.monotonic() < deadline:
            text = (await self.call("observe"))["text"]
            if needle in text:
                break
            await asyncio.sleep(0.2)
        return text


async def logs(client: Client, base: str) -> dict:
    await client.call("openLink", {"url": base + "/logs"})
    await client.observe_until("Logged")
    deadline = time.monotonic() + WAIT
    console = {}
    while time.monotonic() < deadline:
        console = (await client.call("consoleLog"))["json"]
        sources = [entry["source"] for entry in console["entries"]]
        if "exception" in sources and sources.count("network") >= 2:
            break
        await asyncio.sleep(0.2)
    errors = (await client.call("consoleLog", {"level": "error"}))["json"]
    later = (await client.call("consoleLog", {"since": console["next"]}))["json"]
    await client.call("evaluate", {"expression": "console.log('after the mark')"})
    after_mark = (await client.call("consoleLog", {"since": console["next"]}))["json"]
    network = (await client.call("networkLog"))["json"]
    failed = (await client.call("networkLog", {"failedOnly": True}))["json"]
    with_bodies = (await client.call("networkLog", {"urlContains": "missing-resource", "body": True}))["json"]
    request_id = with_bodies["entries"][0]["requestId"] if with_bodies["entries"] else "none"
    body = await client.call("networkBody", {"requestId": request_id})
    unknown_body = await client.call("networkBody", {"requestId": "no-such-request"})
    return {
        "console": console,
        "errors": errors,
        "emptySinceMark": later,
        "afterMark": after_mark,
        "network": network,
        "failed": failed,
        "withBodies": with_bodies,
        "body": body,
        "unknownBody": unknown_body,
    }


async def settings(client: Client, base: str) -> dict:
    changed = await client.call("configureDevice", {
        "operation": "set",
        "locale": "de-DE",
        "timezone": "Asia/Tokyo",
        "geolocation": {"latitude": 48.137, "longitude": 11.575},
        "colorScheme": "dark",
        "reducedMotion": "reduce",
    })
    await client.call("openLink", {"url": base + "/locale"})
    await client.call("tapOn", {"text": "Locate"})
    shown = await client.observe_until("Position: 48.137")
    offline = await client.call("configureDevice", {"operation": "set", "offline": True})
    offline_eval = await client.call("evaluate", {"expression": "navigator.onLine"})
    got = await client.call("configureDevice", {"operation": "get"})
    await client.call("rotate", {"orientation": "landscape"})
    rotated_language = await client.call("evaluate", {"expression": "navigator.language"})
    bad_timezone = await client.call("configureDevice", {"operation": "set", "timezone": "Mars/Olympus"})
    bad_latitude = await client.call("configureDevice", {"operation": "set", "geolocation": {"latitude": 123, "longitude": 0}})
    bad_locale = await client.call("configureDevice", {"operation": "set", "locale": "not a locale"})
    released = await client.call("releaseDevice")
    await client.get_web()
    got_after = await client.call("configureDevice", {"operation": "get"})
    await client.call("openLink", {"url": base + "/locale"})
    await client.call("tapOn", {"text": "Locate"})
    shown_after = await client.observe_until("Position: denied")
    return {
        "set": changed,
        "shown": shown,
        "offline": offline,
        "offlineOnLine": offline_eval,
        "get": got,
        "rotatedLanguage": rotated_language,
        "badTimezone": bad_timezone,
        "badLatitude": bad_latitude,
        "badLocale": bad_locale,
        "released": released,
        "getAfterRelease": got_after,
        "shownAfterRelease": shown_after,
    }


async def script(client: Client, base: str) -> dict:
    await client.call("openLink", {"url": base + "/session"})
    return {
        "value": await client.call("evaluate", {"expression": "({title: document.title, sum: 1 + 2})"}),
        "promise": await client.call("evaluate", {"expression": "new Promise((r) => setTimeout(() => r('later'), 10))"}),
        "thrown": await client.call("evaluate", {"expression": "throw new Error('nope')"}),
        "large": await client.call("evaluate", {"expression": "'x'.repeat(200000)"}),
    }


async def storage(client: Client, base: str) -> dict:
    await client.call("openLink", {"url": base + "/session"})
    await client.call("tapOn", {"text": "Sign in"})
    signed_in = await client.observe_until("Stored: ")
    saved = await client.call("saveStorage", {"name": "site-login"})
    listed = await client.call("listStorage")
    bad_name = await client.call("saveStorage", {"name": ".hidden"})
    bad_slash = await client.call("deleteStorage", {"name": "a/b"})
    unknown_delete = await client.call("deleteStorage", {"name": "never-saved"})
    await client.call("releaseDevice")
    unknown_get = await client.get_web({"storage": "never-saved"})
    await client.get_web()
    await client.call("openLink", {"url": base + "/session"})
    plain = await client.observe_until("Cookie: ")
    await client.call("releaseDevice")
    await client.get_web({"storage": "site-login"})
    await client.call("openLink", {"url": base + "/session"})
    restored = await client.observe_until("Cookie: ")
    await client.call("releaseDevice")
    # A throwaway to delete, so the one the restart check needs stays.
    await client.get_web()
    await client.call("openLink", {"url": base + "/session"})
    await client.call("tapOn", {"text": "Sign in"})
    await client.call("saveStorage", {"name": "throwaway"})
    deleted = await client.call("deleteStorage", {"name": "throwaway"})
    listed_after_delete = await client.call("listStorage")
    await client.call("releaseDevice")
    return {
        "signedIn": signed_in,
        "saved": saved,
        "listed": listed,
        "badName": bad_name,
        "badSlash": bad_slash,
        "unknownDelete": unknown_delete,
        "unknownGet": unknown_get,
        "plain": plain,
        "restored": restored,
        "deleted": deleted,
        "listedAfterDelete": listed_after_delete,
    }


async def checked(report: dict, key: str, check) -> None:
    try:
        report[key] = await asyncio.wait_for(check(), 300)
    except Exception as error:  # noqa: BLE001 — recorded for the test to show
        report[key] = {"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()}


async def before_restart(session: ClientSession, base: str) -> dict:
    client = Client(session)
    report = {}
    listed = await session.list_tools()
    report["defaultTools"] = [tool.name for tool in listed.tools]
    enabled = await client.call("setToolEnabled", {"toolNames": ["evaluate", "networkBody"], "enabled": True})
    report["enabled"] = enabled
    listed = await session.list_tools()
    report["enabledTools"] = [tool.name for tool in listed.tools]
    await client.get_web()
    await checked(report, "logs", lambda: logs(client, base))
    await checked(report, "settings", lambda: settings(client, base))
    await checked(report, "script", lambda: script(client, base))
    await client.call("releaseDevice")
    await client.get_web()
    await checked(report, "storage", lambda: storage(client, base))
    return report


async def after_restart(session: ClientSession, base: str) -> dict:
    client = Client(session)
    report = {}
    report["listed"] = await client.call("listStorage")
    report["getWeb"] = await client.get_web({"storage": "site-login"})
    await client.call("openLink", {"url": base + "/session"})
    report["restored"] = await client.observe_until("Cookie: ")
    await client.call("releaseDevice")
    return report


async def main() -> None:
    phase, url, base = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(os.environ["PADDOCK_TOKEN_FILE"], encoding="utf-8") as file:
        token = file.read().strip()
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                if phase == "before-restart":
                    report = await before_restart(session, base)
                else:
                    report = await after_restart(session, base)
    print(json.dumps(report))


asyncio.run(main())
