"""The Spark export's secret settings, handed to the job in a file only its user can read.

A spark-submit command line is visible to every user of the machine (``ps``), and cluster managers
log it. The job's Kafka settings that hold secrets (a ``sasl.jaas.config`` with its password, key
and trust store passwords) therefore never go on it: the submitter writes them to a JSON file, mode
0600 in a private (0700) temporary directory, passes the job only the file's path
(``--options-file``), and removes the directory when the job ends. The job reads the file on start
(:func:`read_options_file`). Like Spark's own ``--properties-file``, the path is on the driver's
machine: a cluster-mode driver needs the file shipped to it instead.

The file holds ``{"kafka": {...}, "client": {...}}``: settings of Spark's Kafka source (Java keys,
given to it as ``kafka.<key>``) and of the driver's confluent-kafka clients (Java keys too, which
the job translates with :func:`kopycat.kafka.librdkafka_config`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from kopycat.api.errors import ConfigError

__all__ = ["OPTION_SETS", "OPTIONS_FILE_FLAG", "SECRET_KEY", "is_secret_key", "options_file", "read_options_file"]

OPTIONS_FILE_FLAG: Final = "--options-file"
OPTION_SETS: Final = ("kafka", "client", "converter")
"""The sets of settings the file holds: Spark's Kafka source's and the driver's clients'."""
SECRET_KEY: Final = re.compile(r"secret|password|token|access\.key|sasl\.jaas|ssl\.keystore\.key$|ssl\.key\.pem",
                               re.IGNORECASE)
"""Keys whose value is a secret: never on a command line, hidden where a command is shown."""


def is_secret_key(key: str) -> bool:
    """Whether ``key``'s value is a secret (a password, a JAAS line, a private key, a token)."""
    return bool(SECRET_KEY.search(key))


@contextmanager
def options_file(options: Mapping[str, Mapping[str, str]]) -> Iterator[str | None]:
    """A private file holding ``options`` while the block runs, its path; None when there is nothing to hold.

    The directory is made by ``mkdtemp`` (mode 0700) and the file created 0600 before anything is
    written to it; both are removed when the block ends, however it ends.
    """
    kept = {name: dict(values) for name, values in options.items() if values}
    if not kept:
        yield None
        return
    directory = tempfile.mkdtemp(prefix="kopycat-spark-options-")
    try:
        path = os.path.join(directory, "options.json")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(kept, out)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def read_options_file(path: str) -> dict[str, dict[str, str]]:
    """The option sets in ``path`` (:func:`options_file`'s shape); a ConfigError names a bad file, never its values."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{OPTIONS_FILE_FLAG} {path} cannot be read as JSON ({type(exc).__name__}); the "
                          f"submitter writes it and removes it when the job ends", key="options-file") from None
    if not isinstance(data, dict) or not set(data) <= set(OPTION_SETS) or not all(
            isinstance(values, dict) for values in data.values()):
        raise ConfigError(f"{OPTIONS_FILE_FLAG} {path} must hold a JSON object with the keys "
                          f"{', '.join(OPTION_SETS)}, each an object of settings", key="options-file")
    return {name: {str(k): str(v) for k, v in data.get(name, {}).items()} for name in OPTION_SETS}
