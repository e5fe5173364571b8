// Drives the official SDKs (@anthropic-ai/sdk, openai; installed under harnesses/) against
// the fake provider, streaming and not, and prints what they parsed as one JSON object.
// Usage: node sdks.cjs HARNESSES_DIR BASE_URL
const path = require("path");
const { createRequire } = require("module");

const [harnesses, base] = process.argv.slice(2);
const load = createRequire(path.join(harnesses, "package.json"));
const AnthropicMod = load("@anthropic-ai/sdk");
const OpenAIMod = load("openai");
const Anthropic = AnthropicMod.default || AnthropicMod.Anthropic || AnthropicMod;
const OpenAI = OpenAIMod.default || OpenAIMod.OpenAI || OpenAIMod;

const user = (text) => [{ role: "user", content: text }];

async function main() {
  const out = {};
  const a = new Anthropic({ apiKey: "sk-test", baseURL: base, maxRetries: 0 });
  out.anthropicJSON = (await a.messages.create({ model: "m", max_tokens: 10, messages: user("[anthropic-json]") })).content;
  const stream = a.messages.stream({ model: "m", max_tokens: 10, messages: user("[anthropic-stream]") });
  out.anthropicStream = (await stream.finalMessage()).content;
  out.countTokens = (await a.messages.countTokens({ model: "m", messages: user("x") })).input_tokens;
  out.anthropicModels = [];
  for await (const m of a.models.list()) out.anthropicModels.push(m.id);

  const o = new OpenAI({ apiKey: "sk-test", baseURL: base + "/v1", maxRetries: 0 });
  out.chatJSON = (await o.chat.completions.create({ model: "m", messages: user("[chat-json]") })).choices[0].message;
  const cs = o.chat.completions.stream({ model: "m", messages: user("[chat-stream]"), stream_options: { include_usage: true } });
  out.chatStream = (await cs.finalChatCompletion()).choices[0].message;
  out.responsesJSON = (await o.responses.create({ model: "m", input: "[responses-json]" })).output;
  const rs = o.responses.stream({ model: "m", input: "[responses-stream]" });
  out.responsesStream = (await rs.finalResponse()).output;
  out.openaiModels = [];
  for await (const m of o.models.list()) out.openaiModels.push(m.id);
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
