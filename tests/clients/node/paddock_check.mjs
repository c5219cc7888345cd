// An independent MCP client for Paddock's tests: the official TypeScript SDK.
//
// Usage:
//   node paddock_check.mjs http <url>        token read from the file named by PADDOCK_TOKEN_FILE
//   node paddock_check.mjs stdio <paddock>   launches `<paddock> mcp` with this process's environment
//
// Lists the tools, calls `listDevices`, calls an unknown tool, and prints one JSON object.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target] = process.argv.slice(2);
let transport;
if (mode === "http") {
  const token = readFileSync(process.env.PADDOCK_TOKEN_FILE, "utf8").trim();
  transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else {
  transport = new StdioClientTransport({ command: target, args: ["mcp"], env: process.env, stderr: "inherit" });
}
const client = new Client({ name: "paddock-test-ts", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const result = await client.callTool({ name: "listDevices", arguments: {} });
const report = {
  server: client.getServerVersion()?.name,
  tools: tools.tools.map((tool) => tool.name),
  isError: result.isError ?? false,
  structured: result.structuredContent ?? null,
};
try {
  const unknown = await client.callTool({ name: "noSuchTool", arguments: {} });
  report.unknownTool = { isError: unknown.isError ?? false };
} catch (error) {
  report.unknownTool = { error: String(error.message ?? error) };
}
console.log(JSON.stringify(report));
await client.close();
