// Paddock's MCP features through the official TypeScript SDK, as a real client meets them.
//
// Usage:
//   node features_check.mjs http <url> <list-page-url>        token read from PADDOCK_TOKEN_FILE
//   node features_check.mjs stdio <paddock> <list-page-url>   launches `<paddock> mcp`
//
// The daemon must boot web devices slowly (none warm, PADDOCK_DEBUG_DEVICE_BOOT_DELAY_MS), so
// that `getWeb` reports its boot stages. This SDK speaks protocol versions up to 2025-11-25
// (no `server/discover`, no `subscriptions/listen`), so each transport gets one run:
//
// - `instructions` in the initialize result, and what `tools.listChanged` promises;
// - `notifications/progress` during a slow `getWeb` (the `onprogress` request option);
// - cancelling a long `swipeOn` (an AbortSignal in the request options: the SDK sends
//   `notifications/cancelled`) once its first progress arrives, then `observe` on the session;
// - `screenshot {imageAs: "link"}` answering with a `resource_link` that `resources/list`
//   lists and `resources/read` returns as a JPEG;
// - tool list changes through the SDK's `listChanged` client option: over stdio it refreshes
//   the tools after `setToolEnabled`; over HTTP nothing is promised and nothing arrives.
//
// Prints one JSON object. Every wait has a generous deadline, so a hang fails instead of hanging.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// Hang deadlines only: nothing here measures time.
const STEP_MS = 180_000;
const SWIPE = { direction: "up", untilVisible: "Item 999", maxSwipes: 50 };
const SESSION_ID = "ts-http-features";

const [mode, target, listUrl] = process.argv.slice(2);

function within(promise, what) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${STEP_MS} ms`)), STEP_MS);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function textOf(result) {
  return (result.content ?? [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join(" ");
}

/** Runs one check; an exception is recorded as that item's error, and the rest go on. */
async function checked(report, key, check) {
  try {
    report[key] = await within(check(), key);
  } catch (error) {
    report[key] = { error: String(error?.stack ?? error) };
  }
}

let transport;
let negotiated = null;
if (mode === "http") {
  const token = readFileSync(process.env.PADDOCK_TOKEN_FILE, "utf8").trim();
  // Over stateless HTTP the session is the `x-paddock-session-id` header.
  transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, "x-paddock-session-id": SESSION_ID } },
  });
  const set = transport.setProtocolVersion.bind(transport);
  transport.setProtocolVersion = (version) => {
    negotiated = version;
    set(version);
  };
} else {
  transport = new StdioClientTransport({ command: target, args: ["mcp"], env: process.env, stderr: "inherit" });
  // The client hands the negotiated version to transports that take it; stdio does not need it.
  transport.setProtocolVersion = (version) => {
    negotiated = version;
  };
}

const listChanged = { refreshes: [], raw: 0, waiters: [] };
const client = new Client(
  { name: "paddock-features-ts", version: "1.0.0" },
  {
    listChanged: {
      tools: {
        debounceMs: 0,
        onChanged: (error, tools) => {
          listChanged.refreshes.push(error ? { error: String(error) } : { tools: tools.map((tool) => tool.name) });
          for (const wake of listChanged.waiters.splice(0)) wake();
        },
      },
    },
  },
);
// Any tools/list_changed the SDK did not register a handler for (over HTTP, where none is
// promised) lands here.
client.fallbackNotificationHandler = async (notification) => {
  if (notification.method === "notifications/tools/list_changed") listChanged.raw += 1;
};
await within(client.connect(transport), "connect");

const report = {
  sdk: "@modelcontextprotocol/sdk (TypeScript)",
  transport: mode,
  runs: {},
};
const run = {
  protocolVersion: negotiated,
  instructions: client.getInstructions() ?? null,
  listChangedCapability: client.getServerCapabilities()?.tools?.listChanged ?? null,
};
report.runs[negotiated ?? "unknown"] = run;
if (mode === "http") run.sessionId = SESSION_ID;
const options = { timeout: STEP_MS };

await checked(run, "getWebProgress", async () => {
  const seen = [];
  const result = await client.callTool({ name: "getWeb", arguments: {} }, undefined, {
    ...options,
    onprogress: ({ progress, total, message }) => seen.push({ progress, total: total ?? null, message: message ?? null }),
  });
  const values = seen.map((item) => item.progress);
  return {
    isError: result.isError ?? false,
    error: result.isError ? textOf(result) : null,
    sessionUuid: result.structuredContent?.sessionUuid ?? null,
    progress: seen,
    increasing: values.length >= 1 && values.every((value, i) => i === 0 || values[i - 1] < value),
  };
});

await checked(run, "cancelSwipe", async () => {
  const opened = await client.callTool({ name: "openLink", arguments: { url: listUrl } }, undefined, options);
  if (opened.isError) return { openLink: textOf(opened) };
  const abort = new AbortController();
  let progress = 0;
  let firstProgress;
  const progressed = new Promise((resolve) => {
    firstProgress = resolve;
  });
  const swipe = client
    .callTool({ name: "swipeOn", arguments: SWIPE }, undefined, {
      ...options,
      signal: abort.signal,
      onprogress: () => {
        progress += 1;
        firstProgress();
      },
    })
    .then(
      (result) => ({ answered: textOf(result) }),
      (error) => ({ rejected: String(error?.message ?? error) }),
    );
  // Answered before any progress: nothing is left to cancel.
  await Promise.race([progressed, swipe]);
  abort.abort("the test changed its mind");
  const outcome = await swipe;
  const observed = await client.callTool({ name: "observe", arguments: { format: "json" } }, undefined, options);
  return {
    progressBeforeCancel: progress >= 1,
    cancelled: outcome.rejected !== undefined && abort.signal.aborted,
    rejection: outcome.rejected ?? null,
    answeredAnyway: outcome.answered ?? null,
    observeAfter: {
      isError: observed.isError ?? false,
      elements: observed.structuredContent?.elements?.length ?? 0,
    },
  };
});

await checked(run, "resources", async () => {
  const shot = await client.callTool(
    { name: "screenshot", arguments: { imageAs: "link", width: 200 } },
    undefined,
    options,
  );
  const link = (shot.content ?? []).find((block) => block.type === "resource_link");
  if (shot.isError || !link) return { resourceLink: false, answer: shot };
  const listed = await client.listResources({}, options);
  const read = await client.readResource({ uri: link.uri }, options);
  const contents = read.contents[0];
  const jpeg = Buffer.from(contents.blob ?? "", "base64");
  return {
    resourceLink: true,
    uri: link.uri,
    linkMimeType: link.mimeType ?? null,
    listed: listed.resources.some((resource) => resource.uri === link.uri),
    readMimeType: contents.mimeType ?? null,
    jpegMagic: jpeg.subarray(0, 2).toString("hex"),
    sizeMatches: link.size === jpeg.length,
  };
});

await checked(run, "toolsListChanged", async () => {
  const before = { refreshes: listChanged.refreshes.length, raw: listChanged.raw };
  const refreshed = new Promise((resolve) => listChanged.waiters.push(resolve));
  // `clipboard` is off by default: list it for this session.
  const args = { toolName: "clipboard", enabled: true, sessionUuid: run.getWebProgress.sessionUuid };
  const answer = await client.callTool({ name: "setToolEnabled", arguments: args }, undefined, options);
  if (mode === "stdio") {
    await refreshed;
  } else {
    // Stateless HTTP: a notification would have come on this call's own response stream,
    // ahead of its answer; a round trip more lets any straggler arrive.
    await client.ping(options);
  }
  const tools = await client.listTools({}, options);
  const refreshes = listChanged.refreshes.slice(before.refreshes);
  return {
    isError: answer.isError ?? false,
    notifications: refreshes.length + (listChanged.raw - before.raw),
    refreshedToolsHaveClipboard: refreshes.some((refresh) => refresh.tools?.includes("clipboard")),
    clipboardListed: tools.tools.some((tool) => tool.name === "clipboard"),
  };
});
run.toolsListChangedTotal = listChanged.refreshes.length + listChanged.raw;

console.log(JSON.stringify(report));
await client.close();
