"""FileStreamSink planning ``max_tasks`` tasks, each appending to a file of its own (``<file>.<index>``).

Kopycat's FileStreamSink plans one task (a file has one writer); a test of how a connector's tasks
share its partitions needs several, and a file per task shows which task wrote which record, from
task threads and task processes alike.
"""

from __future__ import annotations

from kopycat.connectors.files.filestream_sink import FILE_CONFIG, FileStreamSinkConnector


class PerTaskFileStreamSinkConnector(FileStreamSinkConnector):
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        [config] = super().task_configs(max_tasks)
        return [{**config, FILE_CONFIG: task_file(config[FILE_CONFIG], index)} for index in range(max_tasks)]


def task_file(file: str, index: int) -> str:
    """The file task ``index`` appends to."""
    return f"{file}.{index}"
