// A 2025-11-25 client: the TypeScript SDK 1.x from npm (run from its own node_modules).
//   node ts_client.mjs CONFIG_JSON      (CONFIG as in py_legacy.py; scenarios: tools, calls)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { writeFileSync } from "node:fs";

const config = JSON.parse(process.argv[2]);
const seen = { elicitations: [] };
const answers = [...(config.answers ?? [])];
const transport = new StdioClientTransport({
  command: config.server[0],
  args: config.server.slice(1),
  env: config.env,
  stderr: "inherit",
});
const capabilities = config.elicitation === false ? {} : { elicitation: { form: {} } };
const client = new Client({ name: "tether-ts-test", version: "1.0.0" }, { capabilities });
if (config.elicitation !== false) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    seen.elicitations.push({ message: request.params.message, schema: request.params.requestedSchema });
    return answers.shift() ?? { action: "cancel" };
  });
}
await client.connect(transport);
seen.protocol = transport._protocolVersion ?? client.getServerVersion()?.name;
seen.server = client.getServerVersion()?.name;
if (config.gate) writeFileSync(config.gate, ""); // initialize was answered: tell the test plugin
if (config.scenario === "tools") {
  try {
    seen.tools = (await client.listTools()).tools;
  } catch (err) {
    seen.mcp_error = String(err);
  }
} else if (config.scenario === "calls") {
  seen.results = [];
  for (const [name, args] of config.calls) {
    const t0 = performance.now();
    let res;
    try {
      res = await client.callTool({ name, arguments: args });
    } catch (err) {
      res = { mcp_error: String(err) };
    }
    res.elapsed_s = (performance.now() - t0) / 1000;
    seen.results.push(res);
  }
}
await client.close();
process.stdout.write(JSON.stringify(seen) + "\n");
