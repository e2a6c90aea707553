// The official ACP client (@agentclientprotocol/sdk, from the npm prefix in KILN_ACP) driving
// the real `kiln acp` over its stdio. Usage: node client.mjs SCENARIO KILN ARGS...
// SCENARIO: tool | permission | cancel | files | terminal | load:SESSION_OR_NEW. Prints one JSON object.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const base = process.env.KILN_ACP;
if (!base) {
  console.error("KILN_ACP must name the folder @agentclientprotocol/sdk was installed in");
  process.exit(2);
}
const require = createRequire(`${base}/`);
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);

const [scenario, kiln, ...args] = process.argv.slice(2);
const child = spawn(kiln, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const updates = [];
const permissions = [];
const files = [];
const terminals = [];
const lendsFiles = scenario === "files";
let option = "allow_once";
let onUpdate = () => {};
const app = acp
  .client({ name: "kiln-acp-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
    onUpdate(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push({ params, answered: option });
    return { outcome: { outcome: "selected", optionId: option } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    files.push({ read: params });
    return { content: "unsaved draft" };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    files.push({ write: params });
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    terminals.push({ create: params });
    return { terminalId: "term-1" };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, ({ params }) => {
    terminals.push({ waitForExit: params });
    return { exitCode: 0, signal: null };
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    terminals.push({ output: params });
    return { output: "test result: ok", truncated: false, exitStatus: { exitCode: 0, signal: null } };
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    terminals.push({ release: params });
    return {};
  });

/** The updates of session `id` since `from`. */
const since = (from, id) => updates.slice(from).filter((n) => n.sessionId === id).map((n) => n.update);

const out = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {
      fs: { readTextFile: lendsFiles, writeTextFile: lendsFiles },
      terminal: scenario === "terminal",
    },
    clientInfo: { name: "kiln-acp-test", version: "1.0.0" },
  });
  const newSession = async () =>
    (await ctx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] })).sessionId;
  const prompt = async (sessionId, text) => {
    const from = updates.length;
    const res = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    return { stopReason: res.stopReason, updates: since(from, sessionId) };
  };
  if (scenario === "tool") {
    const id = await newSession();
    return { init, sessionId: id, turn: await prompt(id, "add 2 and 3") };
  }
  if (scenario === "files") {
    const id = await newSession();
    return { sessionId: id, turn: await prompt(id, "notes please"), files };
  }
  if (scenario === "terminal") {
    const id = await newSession();
    return { sessionId: id, turn: await prompt(id, "run the tests"), terminals };
  }
  if (scenario === "permission") {
    const a = await newSession();
    option = "allow_once";
    const allowed = await prompt(a, "clean up please");
    const b = await newSession();
    option = "reject_once";
    const rejected = await prompt(b, "clean up, rejected");
    return { allowed, rejected, permissions };
  }
  if (scenario === "cancel") {
    const id = await newSession();
    const working = new Promise((resolve) => {
      onUpdate = (n) => n.update.sessionUpdate === "tool_call_update" && resolve();
    });
    const from = updates.length;
    const turn = ctx.request(acp.methods.agent.session.prompt, {
      sessionId: id,
      prompt: [{ type: "text", text: "slow work" }],
    });
    await working;
    const started = Date.now();
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId: id });
    const res = await turn;
    return { stopReason: res.stopReason, ms: Date.now() - started, updates: since(from, id) };
  }
  if (scenario.startsWith("load:")) {
    const id = scenario.slice(5);
    const from = updates.length;
    const loaded = await ctx.request(acp.methods.agent.session.load, { sessionId: id, cwd: process.cwd(), mcpServers: [] });
    const replayed = since(from, id);
    return { loaded: loaded ?? null, replayed, turn: await prompt(id, "and again?") };
  }
  throw new Error(`unknown scenario ${scenario}`);
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
console.log(JSON.stringify({ ...out, exit: child.exitCode }));
