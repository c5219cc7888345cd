"""Hover, tabs and popups, uploads, downloads and PDF on a web device, through the official
Python SDK (`mcp`) over the daemon's HTTP endpoint.

Usage:
  web_pages_check.py <url> <fixture-base-url> <scratch-dir>   token read from PADDOCK_TOKEN_FILE

The daemon's download limit must be between 2 and 4 MiB (PADDOCK_WEB_DOWNLOAD_LIMIT_BYTES), so
that `/files/big.bin?mb=2` completes (and is returned as a link: it is over 1 MiB) and
`/files/big.bin?mb=4` is canceled. Files to upload are written into `<scratch-dir>`.

Prints one JSON object: per step what the tools answered (texts, parsed JSON, decoded file
contents); the Rust test asserts on it. A failing step records its error and the run goes on.
Every wait has a deadline, so a hang fails instead of hanging.
"""

import asyncio
import base64
import json
import os
import sys
import time
import traceback

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# Hang deadlines only: nothing here measures time.
STEP = 120
POLL = 30


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "text", None))


def answer(result) -> dict:
    return {"isError": bool(result.is_error), "text": text_of(result)}


def blob_of(result) -> dict | None:
    """The embedded resource of a result, its bytes base64-decoded."""
    for block in result.content:
        resource = getattr(block, "resource", None)
        if resource is not None and getattr(resource, "blob", None) is not None:
            return {
                "uri": str(resource.uri),
                "mimeType": resource.mime_type,
                "bytes": base64.b64decode(resource.blob),
            }
    return None


def link_of(result) -> dict | None:
    """The `resource_link` of a result, and whether the result embeds any bytes as well."""
    embedded = any(getattr(getattr(block, "resource", None), "blob", None) is not None for block in result.content)
    for block in result.content:
        if getattr(block, "type", "") == "resource_link":
            return {"uri": str(block.uri), "mimeType": block.mime_type, "embedded": embedded}
    return None


class Run:
    def __init__(self, session: ClientSession, base: str, scratch: str) -> None:
        self.session = session
        self.base = base
        self.scratch = scratch

    async def read_blob(self, uri: str | None) -> tuple[bytes, str] | None:
        """The bytes and MIME type `resources/read` gives for `uri`, if it is a blob."""
        if not uri:
            return None
        contents = (await self.session.read_resource(uri)).contents[0]
        if getattr(contents, "blob", None) is None:
            return None
        return base64.b64decode(contents.blob), contents.mime_type

    async def call(self, name: str, arguments: dict) -> object:
        return await self.session.call_tool(name, arguments)

    async def text(self, name: str, arguments: dict) -> dict:
        return answer(await self.call(name, arguments))

    async def json(self, name: str, arguments: dict) -> object:
        result = await self.call(name, arguments)
        if result.is_error:
            raise RuntimeError(f"{name} failed: {text_of(result)}")
        if result.structured_content is not None:
            return result.structured_content
        return json.loads(text_of(result))

    async def observe_until(self, needle: str) -> str:
        """Observes until the screen's text contains `needle`; the last text either way."""
        deadline = time.monotonic() + POLL
        text = ""
        while time.monotonic() < deadline:
            text = text_of(await self.call("observe", {}))
            if needle in text:
                return text
            await asyncio.sleep(0.2)
        return text

    async def files_until(self, name: str, states: list[str]) -> list:
        deadline = time.monotonic() + POLL
        listed = []
        while time.monotonic() < deadline:
            listed = (await self.json("files", {"operation": "list"}))["files"]
            if any(entry.get("name") == name and entry.get("state") in states for entry in listed):
                return listed
            await asyncio.sleep(0.2)
        return listed

    async def hover(self) -> dict:
        await self.call("openLink", {"url": self.base + "/hover"})
        before = text_of(await self.call("observe", {}))
        hovered = await self.text("tapOn", {"text": "Alpha", "action": "hover"})
        after_hover = text_of(await self.call("observe", {}))
        deleted = await self.text("tapOn", {"text": "Delete Alpha"})
        return {
            "before": before,
            "hover": hovered,
            "afterHover": after_hover,
            "delete": deleted,
            "afterDelete": await self.observe_until("Deleted Alpha"),
        }

    async def popup(self) -> dict:
        await self.call("openLink", {"url": self.base + "/popup-login"})
        opened = await self.text("tapOn", {"text": "Sign in with Provider"})
        in_popup = await self.observe_until("/provider")
        typed = await self.text("inputText", {"label": "Name", "text": "Ada"})
        allowed = await self.text("tapOn", {"text": "Allow"})
        back = await self.observe_until("Signed in as Ada")
        return {
            "open": opened,
            "inPopup": in_popup,
            "typed": typed,
            "allow": allowed,
            "back": back,
            "tabs": await self.json("tabs", {"operation": "list"}),
        }

    async def tabs(self) -> dict:
        blank = await self.text("tapOn", {"text": "Open help in a new tab"})
        help_tab = await self.observe_until("Help - Fixture")
        listed = await self.json("tabs", {"operation": "list"})
        selected = await self.text("tabs", {"operation": "select", "index": 1})
        new = await self.text("tabs", {"operation": "new", "url": self.base + "/hover"})
        listed_three = await self.json("tabs", {"operation": "list"})
        close_active = await self.text("tabs", {"operation": "close"})
        close_first = await self.text("tabs", {"operation": "close", "index": 1})
        close_last = await self.text("tabs", {"operation": "close"})
        observed = await self.text("observe", {})
        return {
            "blank": blank,
            "help": help_tab,
            "list": listed,
            "select": selected,
            "new": new,
            "listThree": listed_three,
            "closeActive": close_active,
            "closeFirst": close_first,
            "closeLast": close_last,
            "observeAfterLast": observed,
            "listAfterLast": await self.json("tabs", {"operation": "list"}),
            "selectMissing": await self.text("tabs", {"operation": "select", "index": 9}),
        }

    async def upload(self) -> dict:
        note = os.path.join(self.scratch, "note.txt")
        with open(note, "w", encoding="utf-8") as file:
            file.write("first line of the note\nsecond line\n")
        other = os.path.join(self.scratch, "other.txt")
        with open(other, "w", encoding="utf-8") as file:
            file.write("chooser line\n")
        big = os.path.join(self.scratch, "huge.bin")
        with open(big, "wb") as file:
            file.truncate(101 * 1024 * 1024)  # sparse: over the 100 MiB limit, no disk used
        folder = os.path.join(self.scratch, "folder")
        os.makedirs(folder, exist_ok=True)

        await self.call("openLink", {"url": self.base + "/upload"})
        observed = await self.json("observe", {"format": "json"})
        input_ref = next(
            (element["ref"] for element in observed.get("elements", []) if element.get("name") == "Attachment"),
            None,
        )
        by_ref = await self.text("uploadFile", {"ref": input_ref, "paths": [note]}) if input_ref else None
        shown_ref = await self.observe_until("Chose note.txt")
        no_chooser = await self.text("uploadFile", {"paths": [other]})
        choose = await self.text("tapOn", {"text": "Choose file"})
        by_chooser = await self.text("uploadFile", {"paths": [other]})
        shown_chooser = await self.observe_until("Chose other.txt")
        return {
            "inputRef": input_ref,
            "byRef": by_ref,
            "shownRef": shown_ref,
            "noChooser": no_chooser,
            "choose": choose,
            "byChooser": by_chooser,
            "shownChooser": shown_chooser,
            "directory": await self.text("uploadFile", {"id": "file", "paths": [folder]}),
            "missing": await self.text("uploadFile", {"id": "file", "paths": [os.path.join(self.scratch, "gone.txt")]}),
            "tooLarge": await self.text("uploadFile", {"id": "file", "paths": [big]}),
        }

    async def download(self) -> dict:
        # Over 1 MiB (and under the limit): a resource link, read back whole.
        await self.call("openLink", {"url": self.base + "/download?mb=2"})
        await self.text("tapOn", {"text": "Download big file"})
        mid_listed = await self.files_until("big.bin", ["completed"])
        mid = await self.call("files", {"operation": "download", "name": "big.bin"})
        link = link_of(mid)
        linked = await self.read_blob(link["uri"] if link else None)
        mid_read = {"size": len(linked[0]), "zeros": linked[0].count(0), "mimeType": linked[1]} if linked else None
        mid_deleted = await self.text("files", {"operation": "delete", "name": "big.bin"})

        await self.call("openLink", {"url": self.base + "/download?mb=4"})
        tapped = await self.text("tapOn", {"text": "Download report"})
        listed = await self.files_until("report.csv", ["completed"])
        result = await self.call("files", {"operation": "download", "name": "report.csv"})
        blob = blob_of(result)
        read = await self.read_blob(blob["uri"] if blob else None)
        read_back = read[0].decode("utf-8") if read else None
        big_tap = await self.text("tapOn", {"text": "Download big file"})
        big_listed = await self.files_until("big.bin", ["canceled: too large"])
        observed = await self.text("observe", {})
        deleted = await self.text("files", {"operation": "delete", "name": "report.csv"})
        return {
            "tap": tapped,
            "list": listed,
            "download": {
                "isError": bool(result.is_error),
                "text": text_of(result),
                "uri": blob["uri"] if blob else None,
                "mimeType": blob["mimeType"] if blob else None,
                "content": blob["bytes"].decode("utf-8") if blob else None,
            },
            "readBack": read_back,
            "midList": mid_listed,
            "midText": text_of(mid),
            "midLink": link,
            "midRead": mid_read,
            "midDeleted": mid_deleted,
            "bigTap": big_tap,
            "bigList": big_listed,
            "observeAfterBig": observed,
            "delete": deleted,
            "listAfterDelete": await self.json("files", {"operation": "list"}),
            "downloadMissing": await self.text("files", {"operation": "download", "name": "nope.csv"}),
        }

    async def pdf(self) -> dict:
        await self.call("openLink", {"url": self.base + "/hover"})
        result = await self.call("savePdf", {})
        blob = blob_of(result)
        read = await self.read_blob(blob["uri"] if blob else None)
        read_head = read[0][:5].decode("latin-1") if read else None
        return {
            "isError": bool(result.is_error),
            "text": text_of(result),
            "uri": blob["uri"] if blob else None,
            "mimeType": blob["mimeType"] if blob else None,
            "head": blob["bytes"][:5].decode("latin-1") if blob else None,
            "size": len(blob["bytes"]) if blob else 0,
            "readHead": read_head,
        }

    async def release(self) -> dict:
        before = await self.json("files", {"operation": "list"})
        released = await self.text("releaseDevice", {})
        acquired = await self.text("getWeb", {"profile": "desktop"})
        return {
            "before": before,
            "release": released,
            "acquire": acquired,
            "after": await self.json("files", {"operation": "list"}),
            "tabs": await self.json("tabs", {"operation": "list"}),
        }


async def checked(report: dict, name: str, step) -> None:
    try:
        with anyio.fail_after(STEP):
            report[name] = await step()
    except Exception:  # recorded for the Rust test, which prints it
        report[name] = {"error": traceback.format_exc()}


async def main() -> None:
    url, base, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(os.environ["PADDOCK_TOKEN_FILE"], encoding="utf-8") as file:
        token = file.read().strip()
    headers = {"Authorization": f"Bearer {token}", "x-paddock-session-id": "py-web-pages"}
    report: dict = {}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                report["tools"] = tools
                acquired = await session.call_tool("getWeb", {"profile": "desktop"})
                report["getWeb"] = answer(acquired)
                run = Run(session, base, scratch)
                for name, step in [
                    ("hover", run.hover),
                    ("popup", run.popup),
                    ("tabs", run.tabs),
                    ("upload", run.upload),
                    ("download", run.download),
                    ("pdf", run.pdf),
                    ("release", run.release),
                ]:
                    await checked(report, name, step)
    print(json.dumps(report))


asyncio.run(main())
