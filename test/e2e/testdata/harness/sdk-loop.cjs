// A tiny agent loop on one official SDK call shape (@anthropic-ai/sdk or openai, installed
// under harnesses/): it calls the model, answers every tool call with a fixed result, and
// calls again until the model stops calling tools. It prints what the SDK parsed, one JSON
// object per model call, so that a run against the gateway and a run against the simulator
// can be compared byte for byte.
//
// Usage: node sdk-loop.cjs HARNESSES_DIR SHAPE
// SHAPE: anthropic-json, anthropic-stream, chat-json, chat-stream, responses-json,
// responses-stream. The SDKs take their base URLs and keys from the environment
// (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, OPENAI_BASE_URL, OPENAI_API_KEY), as tapebox record
// sets them.
const path = require("path");
const { createRequire } = require("module");

const [harnesses, shape] = process.argv.slice(2);
const load = createRequire(path.join(harnesses, "package.json"));
const AnthropicMod = load("@anthropic-ai/sdk");
const OpenAIMod = load("openai");
const Anthropic = AnthropicMod.default || AnthropicMod.Anthropic || AnthropicMod;
const OpenAI = OpenAIMod.default || OpenAIMod.OpenAI || OpenAIMod;

const prompt = `[sdk-${shape}] Look the key up, then answer.`;
const model = "fake-model";
const maxCalls = 6;
const schema = { type: "object", properties: { key: { type: "string" } }, required: ["key"] };
const result = (name, input) => `${name} result for ${JSON.stringify(input)}`;

async function anthropic(stream) {
  const client = new Anthropic({ maxRetries: 0 });
  const tools = [{ name: "lookup", description: "Look a key up.", input_schema: schema }];
  const messages = [{ role: "user", content: prompt }];
  const out = [];
  for (let i = 0; i < maxCalls; i++) {
    const params = { model, max_tokens: 256, messages, tools };
    const msg = stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
    out.push({ id: msg.id, stop_reason: msg.stop_reason, content: msg.content, usage: msg.usage });
    const uses = msg.content.filter((b) => b.type === "tool_use");
    if (uses.length === 0) break;
    messages.push({ role: "assistant", content: msg.content });
    messages.push({
      role: "user",
      content: uses.map((u) => ({ type: "tool_result", tool_use_id: u.id, content: result(u.name, u.input) })),
    });
  }
  return out;
}

async function chat(stream) {
  const client = new OpenAI({ maxRetries: 0 });
  const tools = [{ type: "function", function: { name: "lookup", description: "Look a key up.", parameters: schema } }];
  const messages = [{ role: "user", content: prompt }];
  const out = [];
  for (let i = 0; i < maxCalls; i++) {
    const params = { model, messages, tools };
    const c = stream
      ? await client.chat.completions.stream({ ...params, stream_options: { include_usage: true } }).finalChatCompletion()
      : await client.chat.completions.create(params);
    const m = c.choices[0].message;
    const calls = (m.tool_calls || []).map((tc) => ({ id: tc.id, type: "function", function: { name: tc.function.name, arguments: tc.function.arguments } }));
    out.push({ id: c.id, finish_reason: c.choices[0].finish_reason, content: m.content, tool_calls: calls, usage: c.usage });
    if (calls.length === 0) break;
    messages.push({ role: "assistant", content: m.content, tool_calls: calls });
    for (const tc of calls) {
      messages.push({ role: "tool", tool_call_id: tc.id, content: result(tc.function.name, JSON.parse(tc.function.arguments)) });
    }
  }
  return out;
}

async function responses(stream) {
  const client = new OpenAI({ maxRetries: 0 });
  const tools = [
    { type: "function", name: "lookup", description: "Look a key up.", parameters: schema, strict: false },
    { type: "custom", name: "apply_patch", description: "Apply a patch." },
  ];
  const input = [{ role: "user", content: prompt }];
  const out = [];
  for (let i = 0; i < maxCalls; i++) {
    const params = { model, input, tools };
    const r = stream ? await client.responses.stream(params).finalResponse() : await client.responses.create(params);
    const items = r.output.map((it) => {
      switch (it.type) {
        case "function_call":
          return { type: it.type, call_id: it.call_id, name: it.name, arguments: it.arguments };
        case "custom_tool_call":
          return { type: it.type, call_id: it.call_id, name: it.name, input: it.input };
        case "message":
          return { type: it.type, role: it.role, content: it.content.map((c) => ({ type: c.type, text: c.text })) };
      }
      return { type: it.type };
    });
    out.push({ id: r.id, status: r.status, output: items, usage: r.usage });
    const calls = items.filter((it) => it.type === "function_call" || it.type === "custom_tool_call");
    if (calls.length === 0) break;
    input.push(...items);
    for (const c of calls) {
      const text = c.type === "function_call" ? result(c.name, JSON.parse(c.arguments)) : result(c.name, c.input);
      input.push({ type: c.type === "function_call" ? "function_call_output" : "custom_tool_call_output", call_id: c.call_id, output: text });
    }
  }
  return out;
}

const shapes = {
  "anthropic-json": () => anthropic(false),
  "anthropic-stream": () => anthropic(true),
  "chat-json": () => chat(false),
  "chat-stream": () => chat(true),
  "responses-json": () => responses(false),
  "responses-stream": () => responses(true),
};

async function main() {
  const run = shapes[shape];
  if (!run) throw new Error(`unknown shape ${shape}; want one of ${Object.keys(shapes).join(", ")}`);
  for (const call of await run()) console.log(JSON.stringify(call));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
