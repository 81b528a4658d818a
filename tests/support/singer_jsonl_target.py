"""target-jsonl: a small Singer target built with Meltano's singer-sdk, for the Singer sink's tests.

Appends each stream's records to ``<directory>/<stream>.jsonl``, one JSON object a line. It
persists in batches as pipelinewise targets do: records wait in memory until a STATE message
arrives, then the batch is written and fsynced and the state echoed on stdout (the SDK's
``drain_all``), so an echoed state always covers what is on disk and nothing after it. A kill -9
loses what it held, which is what the sink's commit rule must survive. ``pid_file`` makes it
write its process id (tests kill it), ``persist_on_state=false`` makes it persist and echo only at
the end of its input (the SDK's default for a short run), ``fail_after`` makes it exit non-zero after that many
records with a message on stderr. Each line also carries ``_schema``, the property names of the
SCHEMA it was written under. Run it as ``python singer_jsonl_target.py --config config.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from singer_sdk import Target
from singer_sdk import typing as th
from singer_sdk.sinks import BatchSink


class JsonlSink(BatchSink):
    """One stream's file; a batch is appended with one write and fsynced."""

    MAX_SIZE_DEFAULT = 1_000_000  # batches end at STATE messages, not at a size

    def process_record(self, record: dict[str, Any], context: dict[str, Any]) -> None:
        fail_after = self.config.get("fail_after")
        self._target_seen = getattr(self, "_target_seen", 0) + 1
        if fail_after is not None and self._target_seen > int(fail_after):
            raise RuntimeError(f"target-jsonl: the destination went away after {fail_after} records")
        super().process_record({**record, "_schema": sorted(self.schema["properties"])}, context)

    def process_batch(self, context: dict[str, Any]) -> None:
        records = context.get("records", [])
        if not records:
            return
        path = Path(self.config["directory"]) / f"{self.stream_name}.jsonl"
        data = "".join(json.dumps(record, default=str) + "\n" for record in records).encode()
        with path.open("ab") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())


class TargetJsonl(Target):
    """Settings: the output directory, a pid file, and when to crash (tests of a failing target)."""

    name = "target-jsonl"
    default_sink_class = JsonlSink
    config_jsonschema = th.PropertiesList(
        th.Property("directory", th.StringType, required=True),
        th.Property("pid_file", th.StringType),
        th.Property("fail_after", th.IntegerType),
        th.Property("persist_on_state", th.BooleanType, default=True),
    ).to_dict()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.config.get("pid_file"):
            Path(self.config["pid_file"]).write_text(str(os.getpid()))

    def _process_state_message(self, message_dict: dict[str, Any]) -> None:
        """Persist the batch and echo the state at each STATE, as targets that flush on state do
        (singer-sdk has no public hook for it: this is the method its Target calls per STATE)."""
        super()._process_state_message(message_dict)
        if self.config.get("persist_on_state", True):
            self.drain_all()


if __name__ == "__main__":
    TargetJsonl.cli()
