"""``python3 -m cortexstream``: stream one completion from cortexd."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Optional

from ._transport import read_curve_key
from .client import Client
from .errors import CortexError, CortexTimeout


def _read_messages(path: str) -> list:
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    messages = json.loads(text)
    if not isinstance(messages, list):
        raise ValueError("%s must hold a JSON array of chat turns" % path)
    return messages


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="cortexstream", description="Stream a completion from cortexd.")
    ap.add_argument("prompt", nargs="?", help="prompt text (or give --messages-json)")
    ap.add_argument("--endpoint", default=os.environ.get("CORTEX_ENDPOINT", "tcp://127.0.0.1:5555"))
    ap.add_argument("--messages-json", metavar="FILE",
                    help="chat turns instead of a prompt: a JSON array of {role, content} ('-' = stdin)")
    ap.add_argument("--chat-template-kwargs", metavar="JSON", type=json.loads,
                    help="with --messages-json: extra chat template variables (a JSON object)")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each message")
    ap.add_argument("--json", action="store_true", help="print each protocol message as a JSON line")
    ap.add_argument("--curve-server-key", metavar="FILE", help="CURVE: the server's public key file")
    ap.add_argument("--curve-key", metavar="NAME", help="CURVE: this client's key pair NAME.key and NAME.pub")
    ap.add_argument("--api-key", metavar="SECRET", default=os.environ.get("CORTEX_API_KEY") or None,
                    help="API key sent as the submit's auth (default: $CORTEX_API_KEY)")
    a = ap.parse_args(argv)
    if (a.prompt is None) == (a.messages_json is None):
        ap.error("give a prompt or --messages-json FILE (one of them)")
    if a.chat_template_kwargs is not None and (a.messages_json is None or not isinstance(a.chat_template_kwargs, dict)):
        ap.error("--chat-template-kwargs must be a JSON object and goes with --messages-json")
    if (a.curve_server_key is None) != (a.curve_key is None):
        ap.error("CURVE needs both --curve-server-key FILE and --curve-key NAME")
    try:
        messages = _read_messages(a.messages_json) if a.messages_json is not None else None
    except (OSError, ValueError) as e:
        print("cortexstream: cannot read --messages-json: %s" % e, file=sys.stderr)
        return 2
    try:
        curve = {}
        if a.curve_key is not None:
            curve = {"server_key": read_curve_key(a.curve_server_key),
                     "public_key": read_curve_key(a.curve_key + ".pub"),
                     "secret_key": read_curve_key(a.curve_key + ".key")}
        client = Client(a.endpoint, timeout_s=a.timeout, auth=a.api_key, **curve)
    except (OSError, ValueError) as e:
        print("cortexstream: %s" % e, file=sys.stderr)
        return 2

    with client as c:
        s = c.submit(prompt=a.prompt, messages=messages, chat_template_kwargs=a.chat_template_kwargs,
                     max_tokens=a.max_tokens, temperature=a.temperature, seed=a.seed)
        try:
            for ev in s:
                if a.json:
                    print(json.dumps(ev), flush=True)
                elif ev["t"] in ("chunk", "finished"):
                    sys.stdout.write(ev.get("text", "") or "")
                    sys.stdout.flush()
        except CortexTimeout as e:
            print("\ncortexstream: %s" % e, file=sys.stderr)
            return 2
        if not a.json:
            sys.stdout.write("\n")
        if s.error is not None:
            print("cortexstream: %s" % CortexError.from_reply(s.error), file=sys.stderr)
            return 1
        return 0
