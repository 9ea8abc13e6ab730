"""Write `converse_stream.bin` (AWS binary event stream) from `converse_stream_timed.jsonl`.

Written for this project: the framing as AWS documents it (prelude with total and headers
length and a CRC-32, string headers `:event-type`, `:content-type`, `:message-type`, the JSON
payload, a CRC-32 of the message). Cross-check with botocore's decoder (not a dependency):

    uv venv /tmp/botocore-env && uv pip install --python /tmp/botocore-env botocore
    /tmp/botocore-env/bin/python tests/data/bedrock/encode_event_stream.py --check
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).parent


def header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return bytes([len(n)]) + n + bytes([7]) + struct.pack(">H", len(v)) + v


def message(event_type: str, payload: dict, kind: str = "event") -> bytes:
    key = ":exception-type" if kind == "exception" else ":event-type"
    headers = header(key, event_type) + header(":content-type", "application/json")
    headers += header(":message-type", kind)
    body = json.dumps(payload, separators=(",", ":")).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    msg = prelude + headers + body
    return msg + struct.pack(">I", zlib.crc32(msg))


def main() -> None:
    out = b""
    for line in (HERE / "converse_stream_timed.jsonl").read_text().splitlines():
        ((event_type, payload),) = json.loads(line)["data"].items()
        out += message(event_type, payload)
    (HERE / "converse_stream.bin").write_bytes(out)
    if "--check" in sys.argv:
        from botocore.eventstream import EventStreamBuffer

        buf = EventStreamBuffer()
        buf.add_data(out)
        types = [m.headers[":event-type"] for m in buf]
        print(f"botocore decoded {len(types)} messages: {', '.join(types)}")


if __name__ == "__main__":
    main()
