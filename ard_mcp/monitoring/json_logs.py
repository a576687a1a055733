"""Log records as JSON lines (`--log-format json`), for log collectors that index fields rather than parse text.

One object a line: `time` (UTC, milliseconds), `level`, `logger`, `message`, and where known the `request_id` of
the HTTP request being answered (`requests`), the fields a record carries of its own (an access line's
`method`, `route`, `path`, `status`, `duration_ms` and `client`: `requests.FIELDS`) and the `trace_id` and
`span_id` of the current span (`tracing`), so a line can be found from a trace and a trace from a line;
`exception` holds a traceback. Every character outside printable ASCII is escaped (`ensure_ascii`), so a quoted
value cannot break a line in two or send a terminal escape to whoever tails the log, as the text format's
escaping also ensures."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from ard_mcp.monitoring.requests import FIELDS, request_id
from ard_mcp.monitoring.tracing import current_ids


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        own = getattr(record, FIELDS, None)
        if isinstance(own, dict):
            line.update((k, v) for k, v in own.items() if k not in line)
        request = request_id()
        if request is not None:
            line["request_id"] = request
        ids = current_ids()
        if ids is not None:
            line["trace_id"], line["span_id"] = ids
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=True, default=str)
