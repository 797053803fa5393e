"""Gemini API: `models/<model>:streamGenerateContent?alt=sse` (SSE) and `:generateContent`.

Gemini CLI 0.61 posts to `$GOOGLE_GEMINI_BASE_URL/v1beta/models/<model>:streamGenerateContent?alt=sse`
once per turn, and — without `-m` — a tool-less router call to `:generateContent` asking
for `{complexity_reasoning, complexity_score}` first (REPORT §3). The router call is
auxiliary: it gets a schema-shaped answer (score >= 1, or the CLI logs a ZodError) and
never consumes a script turn.
"""

from __future__ import annotations

from typing import Any

from skill_eval.harness.modelserver import script as ms
from skill_eval.harness.modelserver.common import Provider, Reply, error_reply, json_reply, request_text, sse_reply


class GeminiProvider(Provider):
    kind = "gemini"

    def respond(self, method: str, path: str, body: Any) -> Reply:
        route = path.split("?", 1)[0]
        if method in ("GET", "HEAD"):
            return json_reply({}, note="preflight")
        if not isinstance(body, dict) or ":" not in route:
            return error_reply(404, f"no such endpoint: {method} {path}")
        model_part, action = route.rsplit(":", 1)
        model = model_part.rsplit("/", 1)[-1] or "scripted"
        if action == "countTokens":
            return json_reply({"totalTokens": self.usage()[0]}, note="countTokens")
        if action not in ("streamGenerateContent", "generateContent"):
            return error_reply(404, f"no such method: {action}")
        stream = action == "streamGenerateContent"
        offered: dict[str, Any] = {}
        for group in body.get("tools") or []:
            for decl in (group or {}).get("functionDeclarations") or [] if isinstance(group, dict) else []:
                if isinstance(decl, dict) and decl.get("name"):
                    offered[decl["name"]] = decl.get("parametersJsonSchema") or decl.get("parameters")
        contents = raw_contents if isinstance(raw_contents := body.get("contents"), list) else []
        if not offered:
            gen = raw_gen if isinstance(raw_gen := body.get("generationConfig"), dict) else {}
            schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
            text = ms.dumps(ms.json_for_schema(schema)) if schema else "ok"
            return self._reply([{"text": text}], model, stream, None, "auxiliary")
        turn = self.turn_index(contents)
        step = self.script.turn(turn)
        note = "exhausted" if step.get("exhausted") else ""
        if "final" in step:
            return self._reply([{"text": step["final"]}], model, stream, turn, note)
        parts: list[dict[str, Any]] = []
        if step.get("say"):
            parts.append({"text": step["say"]})
        text = request_text(body)
        for i, call in enumerate(step["tools"]):
            c = ms.translate(call, "gemini", offered, text, ms.call_id(turn, i))
            parts.append({"functionCall": {"id": c.id, "name": c.name, "args": c.input}})
        return self._reply(parts, model, stream, turn, note)

    def turn_index(self, contents: list[Any]) -> int:
        from_ids = ms.turn_from_ids(contents)
        if from_ids is not None:
            return from_ids
        return sum(
            1
            for c in contents
            if isinstance(c, dict)
            and c.get("role") == "model"
            and any(isinstance(p, dict) and "functionCall" in p for p in c.get("parts") or [])
        )

    def _reply(self, parts: list[dict[str, Any]], model: str, stream: bool, turn: int | None, note: str) -> Reply:
        tin, tout = self.usage()
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": tin, "candidatesTokenCount": tout, "totalTokenCount": tin + tout},
            "modelVersion": model,
            "responseId": f"skev-{'aux' if turn is None else f't{turn}'}",
        }
        if stream:
            return sse_reply([(None, chunk)], turn=turn, note=note)
        return json_reply(chunk, turn=turn, note=note)
