// Drives `osprey mcp serve` with the official MCP TypeScript SDK, as an MCP client such as Claude
// Desktop or an IDE would: spawns it over stdio, initializes, lists the tools (titles, the spec's
// annotations, schemas a provider accepts), reads a file through the `file` tool, and checks that
// bad calls get the JSON-RPC error the spec names (-32602 invalid params).
//
//   node client.mjs <path to the osprey binary>
//
// Exits 0 when every check passes; otherwise prints what failed and exits 1. Run by
// src-tauri/crates/cli/tests/mcp_sdk.rs after `npm ci` in this folder.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CallToolResultSchema,
  ErrorCode,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";

const osprey = process.argv[2];
if (!osprey) {
  console.error("usage: node client.mjs <path to the osprey binary>");
  process.exit(2);
}

// No check may hang the suite: the whole run has a deadline.
const deadline = setTimeout(() => {
  console.error("mcp-sdk: timed out after 60 s");
  process.exit(1);
}, 60_000);

const root = mkdtempSync(join(tmpdir(), "osprey-mcp-sdk-"));
const data = join(root, "data");
const note = join(root, "note.txt");
writeFileSync(note, "read through the MCP TypeScript SDK\n");

const env = { ...process.env };
delete env.OSPREY_DATA_DIR;
// Started in the folder it works on, as clients start a server in their project: the workspace
// whose files it reads without approval (MCP cannot ask).
const transport = new StdioClientTransport({
  command: osprey,
  args: ["--data-dir", data, "mcp", "serve"],
  cwd: root,
  env,
  stderr: "inherit",
});
const client = new Client({ name: "osprey-mcp-sdk-test", version: "1.0.0" });

/** The JSON-RPC error a request ends with (it must end with one). */
async function rejection(request) {
  try {
    await request;
  } catch (error) {
    return error;
  }
  assert.fail("the request succeeded; a JSON-RPC error was expected");
}

try {
  await client.connect(transport);
  assert.equal(client.getServerVersion()?.name, "osprey");
  assert.ok(client.getServerCapabilities()?.tools, "the server offers tools");

  // The SDK validates the listing against the spec's schema as it parses it.
  const { tools } = await client.listTools();
  const names = tools.map((tool) => tool.name);
  for (const expected of ["file", "shell", "web"]) {
    assert.ok(names.includes(expected), `${expected} is listed: ${names}`);
  }
  for (const tool of tools) {
    assert.ok(tool.title, `${tool.name} has a title`);
    assert.equal(tool.inputSchema.type, "object", `${tool.name}'s schema is an object`);
    for (const combinator of ["oneOf", "allOf", "anyOf", "not", "if", "enum"]) {
      assert.ok(
        !(combinator in tool.inputSchema),
        `${tool.name}'s input schema has a top-level ${combinator}`,
      );
    }
  }
  const file = tools.find((tool) => tool.name === "file");
  assert.equal(file.title, "File");
  for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
    assert.equal(typeof file.annotations?.[hint], "boolean", `file has ${hint}`);
  }
  // `file` writes and deletes as well as reads.
  assert.equal(file.annotations.readOnlyHint, false);
  assert.equal(file.annotations.destructiveHint, true);
  const web = tools.find((tool) => tool.name === "web");
  assert.equal(web.annotations.openWorldHint, true, "web reaches the open world");

  // A read of an ordinary file needs no approval: it runs and returns the file.
  const read = await client.callTool({
    name: "file",
    arguments: { action: "read", path: note },
  });
  assert.notEqual(read.isError, true, JSON.stringify(read));
  const text = read.content
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("");
  assert.match(text, /read through the MCP TypeScript SDK/);

  // A tool that does not exist, and a call without a tool name: invalid params.
  const unknown = await rejection(
    client.callTool({ name: "no_such_tool", arguments: {} }),
  );
  assert.ok(unknown instanceof McpError, String(unknown));
  assert.equal(unknown.code, ErrorCode.InvalidParams, String(unknown));
  const nameless = await rejection(
    client.request(
      { method: "tools/call", params: { arguments: { action: "read" } } },
      CallToolResultSchema,
    ),
  );
  assert.ok(nameless instanceof McpError, String(nameless));
  assert.equal(nameless.code, ErrorCode.InvalidParams, String(nameless));

  // Input that does not fit the tool's schema is the tool's error, which a model can act on.
  const bad = await client.callTool({ name: "file", arguments: { action: "fly" } });
  assert.equal(bad.isError, true, JSON.stringify(bad));

  console.log(`mcp-sdk: ok (${tools.length} tools)`);
} catch (error) {
  console.error(`mcp-sdk: ${error?.stack ?? error}`);
  process.exitCode = 1;
} finally {
  clearTimeout(deadline);
  await client.close().catch(() => {});
  rmSync(root, { recursive: true, force: true });
}
