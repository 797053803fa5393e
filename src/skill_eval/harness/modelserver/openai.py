"""OpenAI Responses (streaming, as Codex 0.171 uses it) and Chat Completions.

Codex posts `{base_url}/responses` with `stream: true` and reads the SSE events
`response.created`, `response.output_item.added`, `response.output_text.delta`,
`response.function_call_arguments.delta`, `response.output_item.done` (the full item —
the one Codex acts on) and `response.completed` (with usage) (REPORT §2). Tool results
come back as `function_call_output` items whose `call_id` is ours, which is how the next
turn is found. Chat Completions (streaming or not) serves the built-in
openai-compatible loop and any other OpenAI-style client; `wire_api = "chat"` is
rejected by Codex itself.
"""

from __future__ import annotations

import time
from typing import Any

from skill_eval.harness.modelserver import script as ms
from skill_eval.harness.modelserver.common import Provider, Reply, error_reply, json_reply, request_text, sse_reply


class OpenAIProvider(Provider):
    kind = "openai-responses"

    def respond(self, method: str, path: str, body: Any) -> Reply:
        route = path.split("?", 1)[0].rstrip("/")
        if method in ("GET", "HEAD") and route.endswith("/models"):
            return json_reply({"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "skill-eval"}]})
        if method in ("GET", "HEAD"):
            return json_reply({}, note="preflight")
        if not isinstance(body, dict):
            return error_reply(400, "expected a JSON object body")
        if route.endswith("/responses"):
            return self._responses(body)
        if route.endswith("/chat/completions"):
            return self._chat(body)
        return error_reply(404, f"no such endpoint: {method} {path}")

    # -- shared -------------------------------------------------------------------------
    def _step(self, body: dict[str, Any], offered: dict[Any, Any], turn: int, prefix: str) -> tuple[str, list[ms.Call], str]:
        step = self.script.turn(turn)
        note = "exhausted" if step.get("exhausted") else ""
        if "final" in step:
            return step["final"], [], note
        text = request_text(body)
        calls = [ms.translate(c, "openai", offered, text, ms.call_id(turn, i, prefix)) for i, c in enumerate(step["tools"])]
        return step.get("say", ""), calls, note

    def _auxiliary_text(self, body: dict[str, Any]) -> str:
        fmt = body.get("text", {}).get("format") if isinstance(body.get("text"), dict) else None
        if not isinstance(fmt, dict):
            rf = body.get("response_format")
            fmt = rf.get("json_schema") if isinstance(rf, dict) else None
        schema = fmt.get("schema") if isinstance(fmt, dict) else None
        return ms.dumps(ms.json_for_schema(schema)) if schema else "ok"

    # -- Responses ----------------------------------------------------------------------
    def responses_turn(self, items: list[Any]) -> int:
        from_ids = ms.turn_from_ids(items)
        if from_ids is not None:
            return from_ids
        turns, previous = 0, None
        for item in items:
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "function_call" and previous != "function_call":
                turns += 1
            if kind != "reasoning":
                previous = kind
        return turns

    def _responses(self, body: dict[str, Any]) -> Reply:
        model = str(body.get("model", "scripted"))
        tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
        items = raw_items if isinstance(raw_items := body.get("input"), list) else []
        calls: list[ms.Call]
        if not tools:
            text, calls, turn, note = self._auxiliary_text(body), [], None, "auxiliary"
        else:
            offered = {t.get("name"): t.get("parameters") for t in tools if t.get("name")}
            turn = self.responses_turn(items)
            text, calls, note = self._step(body, offered, turn, "call_")
        tag = f"t{turn}" if turn is not None else "aux"
        output: list[dict[str, Any]] = []
        if text:
            output.append(
                {
                    "id": f"msg_skev_{tag}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        for c in calls:
            output.append(
                {"id": f"fc_{c.id}", "type": "function_call", "call_id": c.id, "name": c.name, "arguments": ms.dumps(c.input), "status": "completed"}
            )
        tin, tout = self.usage()
        response = {
            "id": f"resp_skev_{tag}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": model,
            "output": output,
            "usage": {
                "input_tokens": tin,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": tout,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": tin + tout,
            },
        }
        if not body.get("stream"):
            return json_reply(response, turn=turn, note=note)
        seq = iter(range(1_000_000))
        created = dict(response, status="in_progress", output=[], usage=None)
        events: list[tuple[str | None, Any]] = [("response.created", {"type": "response.created", "sequence_number": next(seq), "response": created})]
        for index, item in enumerate(output):
            if item["type"] == "message":
                added = dict(item, status="in_progress", content=[])
                delta = {"type": "response.output_text.delta", "item_id": item["id"], "output_index": index, "content_index": 0, "delta": text}
            else:
                added = dict(item, status="in_progress", arguments="")
                delta = {"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": index, "delta": item["arguments"]}
            events.append(("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": index, "item": added}))
            events.append((delta["type"], dict(delta, sequence_number=next(seq))))
            events.append(("response.output_item.done", {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": index, "item": item}))
        events.append(("response.completed", {"type": "response.completed", "sequence_number": next(seq), "response": response}))
        return sse_reply(events, turn=turn, note=note)

    # -- Chat Completions ---------------------------------------------------------------
    def chat_turn(self, messages: list[Any]) -> int:
        from_ids = ms.turn_from_ids(messages)
        if from_ids is not None:
            return from_ids
        return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls"))

    def _chat(self, body: dict[str, Any]) -> Reply:
        model = str(body.get("model", "scripted"))
        tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
        messages = raw_messages if isinstance(raw_messages := body.get("messages"), list) else []
        calls: list[ms.Call]
        if not tools:
            text, calls, turn, note = self._auxiliary_text(body), [], None, "auxiliary"
        else:
            offered: dict[Any, Any] = {}
            for t in tools:
                fn = raw_fn if isinstance(raw_fn := t.get("function"), dict) else {}
                if fn.get("name"):
                    offered[fn["name"]] = fn.get("parameters")
            turn = self.chat_turn(messages)
            text, calls, note = self._step(body, offered, turn, "call_")
        tool_calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": ms.dumps(c.input)}} for c in calls]
        finish = "tool_calls" if calls else "stop"
        tin, tout = self.usage()
        usage = {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout}
        tag = f"t{turn}" if turn is not None else "aux"
        base = {"id": f"chatcmpl-skev-{tag}", "created": int(time.time()), "model": model}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return json_reply(dict(base, object="chat.completion", choices=[choice], usage=usage), turn=turn, note=note)
        chunk = dict(base, object="chat.completion.chunk")
        events: list[tuple[str | None, Any]] = [(None, dict(chunk, choices=[{"index": 0, "delta": {"role": "assistant", "content": text or ""}, "finish_reason": None}]))]
        for i, tc in enumerate(tool_calls):
            events.append((None, dict(chunk, choices=[{"index": 0, "delta": {"tool_calls": [dict(tc, index=i)]}, "finish_reason": None}])))
        events.append((None, dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}], usage=usage)))
        return sse_reply(events, turn=turn, note=note, done=True)
