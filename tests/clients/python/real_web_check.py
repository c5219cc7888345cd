"""Web devices on pages built the way real apps are, through the official Python SDK (`mcp`)
over `paddock mcp`: shadow roots, a closed shadow root, hidden-but-operable controls, a
same-origin and a cross-site iframe, text in reading order, exact text matching and a hash
router that renders late.

Usage:
  real_web_check.py <paddock> <session-id> <fixture-base-url>

Prints one JSON object: the text answers of each step, for the test to check.
"""

import asyncio
import json
import os
import re
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def text_of(result) -> str:
    return "\n".join(part.text for part in result.content if getattr(part, "type", "") == "text")


def ref_where(observation_text: str, pattern: str) -> str:
    for line in observation_text.splitlines():
        if re.search(pattern, line):
            return line.split(" ", 1)[0]
    raise SystemExit(f"no line matches {pattern!r} in:\n{observation_text}")


async def main() -> None:
    paddock, session_id, base = sys.argv[1], sys.argv[2], sys.argv[3].rstrip("/")
    params = StdioServerParameters(
        command=paddock, args=["mcp", "--session-id", session_id], env=dict(os.environ)
    )
    report = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            async def call(tool: str, arguments: dict, key: str | None = None):
                result = await asyncio.wait_for(session.call_tool(tool, arguments), 120)
                if key:
                    report[key] = {"error": result.is_error, "text": text_of(result)}
                return result

            await call("getWeb", {}, "getWeb")
            # Shadow roots, a closed root, hidden controls, custom elements.
            await call("openLink", {"url": base + "/components"})
            components = text_of(await call("observe", {}, "components"))
            await call("tapOn", {"text": "Notifications"}, "tapShadowCheckbox")
            await call("tapOn", {"text": "Save settings"}, "tapShadowButton")
            await call("tapOn", {"ref": ref_where(components, r"closed-shadow-root")}, "tapClosedHost")
            await call("tapOn", {"ref": ref_where(components, r'checkbox "Fancy option"')}, "tapTransparent")
            await call("tapOn", {"text": "Quiet mode"}, "tapSrOnly")
            await call("tapOn", {"text": "Fancy"}, "tapNearMiss")
            # Frames: the same form in a same-origin and a cross-site iframe.
            await call("openLink", {"url": base + "/frames"})
            frames = text_of(await call("observe", {}, "frames"))
            fields = [line.split(" ", 1)[0] for line in frames.splitlines() if ' textbox "Name"' in line]
            buttons = [line.split(" ", 1)[0] for line in frames.splitlines() if ' button "Greet"' in line]
            report["frameFields"] = fields
            await call("inputText", {"ref": fields[0], "text": "Ada"}, "typeSameOrigin")
            await call("tapOn", {"ref": buttons[0]}, "greetSameOrigin")
            await call("inputText", {"ref": fields[1], "text": "Grace"}, "typeCrossSite")
            await call("tapOn", {"ref": buttons[1]}, "greetCrossSite")
            await call("clearText", {"ref": fields[1]}, "clearCrossSite")
            await call("inputText", {"text": "Linus"}, "typeFocusedCrossSite")
            await call("pressButton", {"button": "enter"}, "enterCrossSite")
            report["framesJson"] = (await call("observe", {"format": "json"})).structured_content
            # Scrolling inside a cross-site and a same-origin frame: the frame's document moves,
            # the page does not.
            await call("openLink", {"url": base + "/frames/scroll"})
            scrolling = text_of(await call("observe", {}, "scrollFrame"))
            for title, last, key in [("Rows", "Row 40", "swipeInFrame"), ("Local rows", "Local row 40", "swipeInLocalFrame")]:
                frame = ref_where(scrolling, f'iframe "{title}"')
                await call(
                    "swipeOn",
                    {"direction": "up", "ref": frame, "untilVisible": last, "maxSwipes": 25},
                    key,
                )
                report[key + "After"] = (await call("observe", {"format": "json"})).structured_content
            # A list app: reading order, exact matching, a late hash router.
            await call("openLink", {"url": base + "/todo"})
            for item in ["Buy milk", "Walk dog", "Write code"]:
                await call("inputText", {"label": "What needs to be done?", "text": item})
                await call("pressButton", {"button": "enter"})
            await call("tapOn", {"text": "Toggle Walk dog"}, "toggle")
            await call("tapOn", {"text": "Completed"}, "filterCompleted")
            await call("tapOn", {"text": "Clear"}, "tapClear")
            await call("tapOn", {"text": "All"}, "filterAll")
    print(json.dumps(report))


asyncio.run(main())
