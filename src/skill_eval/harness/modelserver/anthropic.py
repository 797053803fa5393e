"""Anthropic Messages API (streaming SSE and plain JSON), as Claude Code 2.1.x calls it.

Claude Code sends `HEAD /` (a connectivity preflight), then `POST /v1/messages?beta=true`
with `stream: true` once per turn (REPORT §1). Tool-less requests (session titles when
non-essential traffic is on) are auxiliary: they get a schema-shaped or short answer and
do not consume a script turn.
"""

from __future__ import annotations

from typing import Any

from skill_eval.harness.modelserver import script as ms
from skill_eval.harness.modelserver.common import Provider, Reply, error_reply, json_reply, request_text, sse_reply


class AnthropicProvider(Provider):
    kind = "anthropic"

    def respond(self, method: str, path: str, body: Any) -> Reply:
        route = path.split("?", 1)[0].rstrip("/")
        if method in ("HEAD", "GET"):
            return json_reply({}, note="preflight")
        if route.endswith("/messages/count_tokens"):
            return json_reply({"input_tokens": self.usage()[0]}, note="count_tokens")
        if not route.endswith("/messages") or not isinstance(body, dict):
            return error_reply(404, f"no such endpoint: {method} {path}")
        model = str(body.get("model", "scripted"))
        tools = body.get("tools") or []
        if not tools:
            return self._auxiliary(body, model)
        turn = self.turn_index(body)
        step = self.script.turn(turn)
        offered = {t.get("name"): t.get("input_schema") for t in tools if isinstance(t, dict)}
        text_of_request = request_text(body)
        blocks: list[dict[str, Any]] = []
        if "final" in step:
            blocks.append({"type": "text", "text": step["final"]})
            stop = "end_turn"
        else:
            if step.get("say"):
                blocks.append({"type": "text", "text": step["say"]})
            for i, call in enumerate(step["tools"]):
                c = ms.translate(call, "anthropic", offered, text_of_request, ms.call_id(turn, i, "toolu_"))
                blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.input})
            stop = "tool_use"
        note = "exhausted" if step.get("exhausted") else ""
        return self._message(blocks, stop, model, f"msg_skev_t{turn}", bool(body.get("stream")), turn, note)

    def turn_index(self, body: dict[str, Any]) -> int:
        messages = body.get("messages") or []
        from_ids = ms.turn_from_ids(messages)
        if from_ids is not None:
            return from_ids
        return sum(
            1
            for m in messages
            if isinstance(m, dict)
            and m.get("role") == "assistant"
            and isinstance(m.get("content"), list)
            and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in m["content"])
        )

    def _auxiliary(self, body: dict[str, Any], model: str) -> Reply:
        fmt = (body.get("output_config") or {}).get("format") if isinstance(body.get("output_config"), dict) else None
        schema = fmt.get("schema") if isinstance(fmt, dict) else None
        text = ms.dumps(ms.json_for_schema(schema)) if schema else "ok"
        return self._message([{"type": "text", "text": text}], "end_turn", model, "msg_skev_aux", bool(body.get("stream")), None, "auxiliary")

    def _message(
        self, blocks: list[dict[str, Any]], stop: str, model: str, msg_id: str, stream: bool, turn: int | None, note: str
    ) -> Reply:
        tin, tout = self.usage()
        usage = {"input_tokens": tin, "output_tokens": tout, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not stream:
            message = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            }
            return json_reply(message, turn=turn, note=note)
        start: dict[str, Any] = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": dict(usage, output_tokens=1),
        }
        events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": head}))
                delta = {"type": "input_json_delta", "partial_json": ms.dumps(block["input"])}
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(
            (
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": tout}},
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return sse_reply(events, turn=turn, note=note)
