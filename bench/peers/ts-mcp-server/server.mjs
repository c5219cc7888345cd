// Peer for `paddock-bench mcp`: the official TypeScript MCP SDK serving one trivial tool over
// its stateless Streamable HTTP transport with JSON responses, the way the SDK's own stateless
// examples do it (a fresh server and transport per request). It uses node's `http` module
// rather than the examples' express app: the transport accepts node's request and response
// directly, and skipping express only makes this peer faster.
//
// Usage: node server.mjs <port>   (0 picks a free port; the bound port is printed on stdout)
//
// With PEER_TOOL=list_devices it serves the fleet server's `list_devices` instead (for
// `paddock-bench fleet`): the same answer shape with two fixed rows, like a fleet of one
// machine holding two web devices.

import http from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod/v4';

const FLEET_ROWS = ['web-a', 'web-b'].map((device_id) => ({
  device_id,
  machine_id: 'm_0123456789abcdef0123456789abcdef',
  machine_name: 'bench-host',
  platform: 'web',
  profile: 'pixel7',
  state: 'available',
}));

// The fleet server's `list_devices`: two rows as structured content and as text.
function registerFleetTool(server) {
  server.registerTool(
    'list_devices',
    {
      title: "List the fleet's devices",
      description: 'Every device of every machine that joined this server.',
      inputSchema: { platform: z.enum(['web', 'android']).optional() },
      outputSchema: { devices: z.array(z.looseObject({})) },
      annotations: { readOnlyHint: true },
    },
    async () => {
      const structuredContent = { devices: FLEET_ROWS };
      return {
        content: [{ type: 'text', text: JSON.stringify(structuredContent) }],
        structuredContent,
      };
    },
  );
}

// The same tool as Paddock's `listDevices` with no device platform configured: structured
// content `{"devices":[]}` and the same JSON as text content.
function buildServer() {
  const server = new McpServer({ name: 'ts-sdk-peer', version: '0.0.0' });
  if (process.env.PEER_TOOL === 'list_devices') {
    registerFleetTool(server);
    return server;
  }
  server.registerTool(
    'listDevices',
    {
      title: 'List devices',
      description: "Lists the devices in this daemon's pool.",
      inputSchema: { platform: z.enum(['web', 'android', 'ios']).optional() },
      outputSchema: { devices: z.array(z.looseObject({})) },
      annotations: { readOnlyHint: true },
    },
    async () => {
      const structuredContent = { devices: [] };
      return {
        content: [{ type: 'text', text: JSON.stringify(structuredContent) }],
        structuredContent,
      };
    },
  );
  return server;
}

function jsonRpcError(res, status, code, message) {
  if (res.headersSent) {
    return;
  }
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

async function handle(req, res) {
  if (req.url !== '/mcp') {
    jsonRpcError(res, 404, -32000, 'Not found');
    return;
  }
  if (req.method !== 'POST') {
    jsonRpcError(res, 405, -32000, 'Method not allowed.');
    return;
  }
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res);
  } catch (error) {
    console.error('error handling MCP request:', error);
    jsonRpcError(res, 500, -32603, 'Internal server error');
  }
}

const port = Number.parseInt(process.argv[2] ?? '', 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('usage: node server.mjs <port>');
  process.exit(2);
}

const httpServer = http.createServer((req, res) => {
  handle(req, res);
});
httpServer.keepAliveTimeout = 60_000;
httpServer.listen(port, '127.0.0.1', () => {
  process.stdout.write(`${httpServer.address().port}\n`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => process.exit(0));
}
