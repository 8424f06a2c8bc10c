// Test-only: the official TypeScript MCP SDK as a client of the front door, for
// orchestrator/cmd/orchestrator/wire's TestFrontDoorTypeScriptSDK.
//
//   node client.mjs <url> <bearer> <tool> <arguments JSON>
//
// It connects over streamable HTTP with the bearer, lists the tools, calls one, ends the session
// (HTTP DELETE) and prints one JSON line: {sessionId, instructions, tools, result}. Any failure exits 1 with the
// error on standard error.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, bearer, tool, args] = process.argv.slice(2);
if (!url || !bearer || !tool) {
  console.error("usage: node client.mjs <url> <bearer> <tool> <arguments JSON>");
  process.exit(2);
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
});
const client = new Client({ name: "guilds-test-ts-sdk", version: "1.0.0" });

try {
  await client.connect(transport);
  const sessionId = transport.sessionId;
  const { tools } = await client.listTools();
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args || "{}") });
  await transport.terminateSession();
  await client.close();
  console.log(JSON.stringify({ sessionId, instructions: client.getInstructions(), tools: tools.map((t) => ({ name: t.name, annotations: t.annotations ?? null })), result }));
} catch (err) {
  console.error(String(err && err.stack ? err.stack : err));
  process.exit(1);
}
