// Package provider turns the raw bodies of model calls into the normalized fields of a tape
// step, for four wire formats: Anthropic Messages (tape.ProviderAnthropic), OpenAI Chat
// Completions (tape.ProviderOpenAIChat), OpenAI Responses (tape.ProviderOpenAIResponses) and
// the Gemini API (tape.ProviderGemini).
// The gateway uses it while recording and the controller while replaying; both keep the raw
// bodies, so a tape can always be re-normalized with Normalize.
//
// The adapters are built against what real harnesses send (Claude Code, Codex, the official
// SDKs) and are lenient where those are: unknown fields are ignored (they stay in the raw
// body), unknown content blocks and input items become blocks of type "other" that keep the
// provider's form in Raw, and unknown server-sent event types are skipped. A body that does
// not fit the format (not JSON, a field of the wrong type) gives an error, never a panic.
//
// # Conventions
//
// Request.System is the top-level system prompt only: Anthropic "system" (a string, or the
// text of its text blocks joined with "\n"), Responses "instructions". Chat Completions has
// no top-level system prompt, so it is empty there. Instructions that arrive inside the
// conversation (Claude Code's role:system entries, OpenAI system and developer messages)
// stay in Messages with role "system".
//
// Messages keep the provider's turns one for one, with roles user, assistant, system and
// tool. A Chat role:tool message becomes a "tool" message holding one tool_result block. A
// Responses input item becomes one message: message items keep their role (developer and
// system become "system"); items that answer a call (function_call_output,
// custom_tool_call_output, local_shell_call_output, any *_output) become "tool" messages
// holding one tool_result block; every other item (function_call, custom_tool_call,
// reasoning, local_shell_call, web_search_call, unknown types) is model output sent back, so
// it becomes an "assistant" message with one block.
//
// Blocks: text; thinking (Text is the visible reasoning, empty when the provider hides it:
// Anthropic redacted_thinking or display "omitted", Responses reasoning with no summary);
// tool_use; tool_result; image and other (Raw holds the provider's block). A function
// call's input is its arguments object; a freeform (custom) tool call's text is stored as
// {"input": TEXT}; arguments that are not a JSON object (a model can emit broken JSON, a
// stream can be cut mid-call) are kept as text under InvalidArgumentsKey.
//
// Params holds every top-level request field that has no normalized field of its own,
// verbatim, model included (messages/input, system/instructions, tools and stream are left
// out).
//
// StopReason is the provider's own word for why the response ended, never translated:
// Anthropic stop_reason (end_turn, tool_use, max_tokens, ...); Chat finish_reason of the
// first choice (stop, tool_calls, length, ...); Responses has no stop reason, so it is the
// response status (completed, failed, cancelled), or for an incomplete response the
// incomplete_details reason (max_output_tokens, content_filter). It is empty when the
// response did not say: an error body, or a stream cut before its end. Whether the model
// asked for tools is len(Step.ToolCalls) > 0 in every format; do not infer it from
// StopReason.
//
// Usage counts follow one rule in every format: InputTokens are the input tokens neither
// read from nor written to the prompt cache, so InputTokens + CacheReadInputTokens +
// CacheCreationInputTokens is the whole prompt. Anthropic reports it that way; for OpenAI,
// InputTokens is prompt_tokens (input_tokens) minus cached_tokens. OutputTokens include
// reasoning tokens, which ReasoningTokens repeats when the provider reports them (OpenAI
// completion_tokens_details / output_tokens_details).
//
// Streams: the step's chunks are split into server-sent events again (a chunk need not be
// exactly one event) and folded into the same shape a JSON body has. When the stream
// carries the full final object (Responses response.completed), that object wins over the
// deltas. A stream cut short gives what arrived; a tool call cut mid-arguments keeps the
// partial text under InvalidArgumentsKey.
//
// The Gemini API: contents with role "model" are assistant messages; a part is text,
// thinking (a text part with thought true), tool_use (functionCall), tool_result
// (functionResponse: a response {"output": TEXT} is that text, {"error": TEXT} that text
// marked as an error, anything else its compact JSON), image or other (inlineData ...).
// systemInstruction is System. The model and the stream flag are in the path
// (/v1beta/models/MODEL:streamGenerateContent), so Normalize reads them from the step's
// path: Params["model"] is the path's model. Adjacent text parts of an answer are one
// block, as a stream sends them in pieces. The API sends function calls without ids and a
// harness makes its own up (Gemini CLI: NAME_MILLISECONDS_INDEX): the tape names such a
// call "gemini-" + 16 hex digits of the response's 64-bit FNV-1a hash + "-" + its index, and
// ToolResults finds its result under the id the harness gave it in the next request.
// StopReason is the first candidate's finishReason (STOP, MAX_TOKENS, SAFETY ...), or,
// with no candidate, promptFeedback.blockReason. Usage: InputTokens is promptTokenCount
// (plus toolUsePromptTokenCount) less cachedContentTokenCount; OutputTokens
// candidatesTokenCount plus thoughtsTokenCount, which ReasoningTokens repeats.
//
// Emitting: Body and Stream are the other way round, an Answer (text, thinking, tool calls,
// raw Responses items, usage) written as the provider's JSON body or server-sent events.
// StepAnswer makes the Answer a step's normalized fields describe, for a step without its
// raw response. The fake provider of testkit/fakeprovider serves its scripted turns with
// them, interop's --synthesize gives imported steps their streams, and the gateway's tape
// mode serves a step recorded without its raw response, so each wire format is spelled out
// here alone; what they write normalizes back to the Answer.
//
// Model and Cwd read what a request tells of the run: the model it asks for, and the working
// directory the harness says it runs in (Claude Code's environment block, Codex's
// environment context).
package provider
