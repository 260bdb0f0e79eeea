// A light stdio MCP server for the many-servers leg: the official TypeScript SDK's McpServer
// with one tool, loaded from the test peers' node_modules (CommonJS: starts faster than ESM).
const path = require("path");
const { createRequire } = require("module");
const peers = createRequire(path.join(__dirname, "..", "tests", "peers", "package.json"));
const { McpServer } = peers("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = peers("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = peers("zod");

const server = new McpServer({ name: "bench-tiny", version: "1.0.0" });
server.registerTool("echo", { description: "Echo the message back.",
                              inputSchema: { message: z.string() } },
                    async ({ message }) => ({ content: [{ type: "text", text: message }] }));
server.connect(new StdioServerTransport());
