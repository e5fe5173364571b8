// Package fakeprovider is a scripted model provider: a real HTTP server that speaks the
// Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and Gemini API wire
// formats, streaming and not, and answers each model call with the next turn of a script
// instead of a model. The answers are written by package tape/provider's emitters (Body,
// Stream), the ones the gateway and interop use; this package adds the ids, token counts,
// delays and faults.
//
// A Script holds one list of turns per thread (a main agent, its subagents). The server
// picks the thread of a request with a matcher (by default: the thread whose Marker appears
// in the request's opening text, the system prompt and the user messages before the first
// assistant turn) and the turn by the number of assistant turns already in the request, so
// several threads can run at once and a retried call gets the same answer.
//
// Paths are matched by suffix, so any prefix works (/r/<label>/v1/messages):
//
//	POST .../messages                Anthropic Messages (stream or not)
//	POST .../messages/count_tokens   Anthropic token count
//	GET  .../models[/ID]             model list (Anthropic shape when anthropic-version is sent)
//	POST .../chat/completions        OpenAI Chat Completions (stream with [DONE], or not)
//	POST .../responses               OpenAI Responses (stream or not)
//	GET  .../responses               WebSocket upgrade: answered 426 so clients fall back to SSE
//	POST .../models/M:generateContent, .../models/M:streamGenerateContent
//	                                 the Gemini API (provider.GeminiPath; the model in the path)
//
// Every request is recorded (Requests) for tests to inspect, and a turn can carry a Fault
// (status and body, Retry-After, delays, a stream cut midway) for the gateway's tests. Ids
// in answers are derived from the thread name and step, so the same script gives the same
// ids on every run.
package fakeprovider
