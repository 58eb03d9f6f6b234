// Drives an ingestd MCP server with the official TypeScript SDK's client
// and prints what it saw as one JSON object on stdout. It decides
// nothing: the Go test that runs it (cmd/ingestd TestMCPTypeScriptClient) checks
// the answers against REST and gRPC.
//
// The plan is one JSON object in argv[2]:
//   {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "token": "..."}
//   {"transport": "stdio", "command": "/path/ingestd", "args": ["mcp", "--config", "F"]}
// plus "queries": ["..."] (each is called as the retrieve tool) and
// "resources": ["ingestd://..."] (each is read).
//
// As a host in front of ingestd's gateway (cmd/ingestd
// TestGatewayTypeScriptHost) the plan also has "steps": [{"name": "...",
// "arguments": {...}, "turn": "..."}], each called as a tool with the
// turn id in _meta under io.ingestd/turn, and "answers": [true, false,
// ...]: when present the client declares that it can ask its user
// (elicitation) and answers each question it is asked with the next one
// (true: accept with approve, false: decline). It prints every question
// it was asked.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const plan = JSON.parse(process.argv[2]);

function transportFor(plan) {
  switch (plan.transport) {
    case "http": {
      const headers = plan.token ? { Authorization: `Bearer ${plan.token}` } : {};
      return new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers } });
    }
    case "stdio":
      return new StdioClientTransport({ command: plan.command, args: plan.args, env: plan.env, stderr: "inherit" });
    default:
      throw new Error(`unknown transport ${plan.transport}`);
  }
}

// errorOf keeps what a refusal said, for the test to read.
function errorOf(err) {
  return { message: String(err && err.message ? err.message : err), code: err && err.code !== undefined ? err.code : null };
}

const out = { server: null, tools: null, templates: null, calls: [], resources: [], steps: [], questions: [] };
const asks = Array.isArray(plan.answers);
const client = new Client({ name: "ingestd-e2e-ts", version: "1.0.0" }, asks ? { capabilities: { elicitation: {} } } : {});
if (asks) {
  const answers = [...plan.answers];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    out.questions.push(req.params.message);
    return answers.shift() === true ? { action: "accept", content: { approve: true } } : { action: "decline" };
  });
}
try {
  await client.connect(transportFor(plan));
  out.server = client.getServerVersion();
  out.tools = (await client.listTools()).tools;
  out.templates = (await client.listResourceTemplates()).resourceTemplates;
  for (const query of plan.queries || []) {
    try {
      // callTool validates structuredContent against the tool's output
      // schema: an answer that does not match its schema throws here.
      const result = await client.callTool({ name: "retrieve", arguments: { query } });
      out.calls.push({ query, result });
    } catch (err) {
      out.calls.push({ query, error: errorOf(err) });
    }
  }
  for (const uri of plan.resources || []) {
    try {
      out.resources.push({ uri, result: await client.readResource({ uri }) });
    } catch (err) {
      out.resources.push({ uri, error: errorOf(err) });
    }
  }
  for (const step of plan.steps || []) {
    const params = { name: step.name, arguments: step.arguments || {} };
    if (step.turn) params._meta = { "io.ingestd/turn": step.turn };
    try {
      out.steps.push({ name: step.name, result: await client.callTool(params) });
    } catch (err) {
      out.steps.push({ name: step.name, error: errorOf(err) });
    }
  }
} catch (err) {
  out.error = errorOf(err);
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
