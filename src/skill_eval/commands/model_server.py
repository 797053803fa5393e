"""`skill-eval model-server`: serve a model script over loopback until interrupted.

For running a real agent CLI by hand against a scripted model (the runner and the e2e
tests start servers in-process with modelserver.start_server). Prints the URL and the
script's model id (`scripted:<sha256>`) once ready, then serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from skill_eval.commands._common import bounded_float, bounded_int
from skill_eval.core.errors import EXIT_OK
from skill_eval.harness.modelserver import PROVIDERS, load_script, start_server


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", required=True, choices=sorted(PROVIDERS), help="API dialect to speak")
    p.add_argument("--script", required=True, type=Path, help="model script (YAML or JSON, schemas/model_script.schema.json)")
    p.add_argument("--port", type=bounded_int(0, 65535), default=0, help="port on 127.0.0.1 (default: an ephemeral one)")
    p.add_argument("--latency", type=bounded_float(0, 3600), default=None, metavar="S",
                   help="seconds every scripted turn waits before answering (overrides the script's latency; a turn's delay wins)")
    p.add_argument("--log", type=Path, default=None, help="append one JSON line per request (no auth headers) to this file")


def run(args: argparse.Namespace) -> int:
    script = load_script(args.script)
    log = args.log.open("a", encoding="utf-8") if args.log else None
    try:
        if args.latency is not None and args.latency < 0:
            from skill_eval.core.errors import SkillEvalError

            raise SkillEvalError(f"--latency {args.latency}: must be >= 0 seconds")
        server = start_server(args.kind, script, port=args.port, log=log, latency=args.latency)
        info = {"url": server.url, "port": server.port, "kind": args.kind, "model": script.model_id}
        stop = threading.Event()
        # Before the ready line: a caller may send SIGTERM as soon as it reads it.
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
        if args.json:
            print(json.dumps(info, sort_keys=True), flush=True)
        else:
            print(f"{args.kind} scripted model server at {server.url} ({script.model_id}); Ctrl-C to stop", flush=True)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
            server.stop()
            print(f"served {len(server.requests)} requests", file=sys.stderr)
    finally:
        if log:
            log.close()
    return EXIT_OK
