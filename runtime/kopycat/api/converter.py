"""The Converter SPI: Connect data <-> the bytes of a Kafka record key, value or header.

Follows Kafka Connect's ``org.apache.kafka.connect.storage.Converter`` and ``HeaderConverter``:
a source task's records are turned into bytes by ``from_connect_data`` before they are produced,
and a sink task's consumed bytes become Connect data through ``to_connect_data``. A worker
configures one converter instance for keys and one for values (``is_key``).

Beyond Kafka Connect, converters work on batches: the runners call
:meth:`Converter.from_connect_data_batch` and :meth:`Converter.to_connect_data_batch`, whose
default bodies loop over the single-record methods. Concrete converters override them with code
that does the per-schema work once per batch, and may decode a batch straight into Arrow
columns with :meth:`Converter.to_arrow_array` (DESIGN.md §2, columnar fast path).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

from kopycat.api.data import Schema

__all__ = ["Converter", "HeaderConverter", "SchemaAndValue"]


class SchemaAndValue(NamedTuple):
    """A value and the schema it follows; both None for a tombstone (Kafka's ``SchemaAndValue``)."""

    schema: Schema | None
    value: Any


SchemaAndValue.NULL = SchemaAndValue(None, None)  # type: ignore[attr-defined]


class Converter(ABC):
    """Turns Connect data into bytes and back (Kafka's ``Converter``).

    Contract, as in Kafka Connect:

    - ``configure`` is called once, before any conversion, with the converter's own keys
      (the worker strips the ``key.converter.`` / ``value.converter.`` prefix).
    - Tombstones pass through: ``from_connect_data(topic, None, None)`` returns None and
      ``to_connect_data(topic, None)`` returns ``SchemaAndValue(None, None)``. A converter may
      write bytes for a null value *with* a schema when its wire format says so (the JSON
      converter writes an envelope whose payload is null, as Kafka's does).
    - Bad data raises :class:`~kopycat.api.errors.DataError` whose message names what was
      wrong (the field path for values, the expected shape for bytes).
    - Instances are used by one task thread at a time; they need not be thread-safe.
    """

    arrow_decode_off_the_gil: ClassVar[bool] = True
    """Whether :meth:`to_arrow_array` spends most of its time outside the GIL (a JSON or Avro parse in
    pyarrow), so a sink runner gains by decoding batches on helper threads while its own thread
    consumes the next. False for a decode that is mostly Python-level steps per value (a join of
    the bytes): on helper threads it would only take turns on the GIL with the consuming thread
    and add the hand-overs, so the runner decodes on its own thread."""

    def configure(self, configs: Mapping[str, str], is_key: bool) -> None:  # noqa: B027 - optional hook
        """Apply configuration; ``is_key`` tells a key converter from a value converter."""

    @abstractmethod
    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: Any = None) -> bytes | None:
        """Serialize one value (None schema and None value give None: a tombstone)."""

    @abstractmethod
    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """Deserialize one record's bytes (None gives ``SchemaAndValue(None, None)``)."""

    def from_connect_data_batch(self, topic: str, schema: Schema | None,
                                values: Sequence[Any]) -> list[bytes | None]:
        """Serialize values that share one schema; element i of the result is value i's bytes.

        The runners call this on hot paths. The default loops over :meth:`from_connect_data`;
        override it to do per-schema work once per batch. Results must equal the loop's.
        """
        return [self.from_connect_data(topic, schema, value) for value in values]

    def to_connect_data_batch(self, topic: str, values: Sequence[bytes | None]) -> list[SchemaAndValue]:
        """Deserialize many records' bytes; same contract as :meth:`to_connect_data` for each.

        The default loops over :meth:`to_connect_data`; override it for speed, with equal results.
        """
        return [self.to_connect_data(topic, value) for value in values]

    def to_arrow_array(self, topic: str, values: Sequence[bytes | None]) -> SchemaAndValue | None:
        """Deserialize many records' bytes into one Arrow array: the schema all share, and the array.

        Optional, beyond Kafka Connect (the columnar fast path). The value is a ``pyarrow.Array`` of
        :func:`kopycat.api.arrow.to_arrow_type` of the schema (a ``StructArray`` for a STRUCT, its
        fields :func:`~kopycat.api.arrow.to_arrow_schema`'s), element i being value i as
        :meth:`to_connect_data_batch` decodes it and :mod:`kopycat.api.arrow_values` maps it.
        Answer None whenever that does not hold or is not cheap; the runner then decodes the
        batch record by record (which also reports bad records). The default always answers None.

        A sink runner calls this from helper threads, two batches at a time, while its own thread
        may call the record-path methods: any state it keeps must stand concurrent calls (a cache
        that may build an entry twice does).
        """
        return None

    def from_arrow_array(self, topic: str, schema: Schema, values: Any) -> Any | None:
        """Serialize a ``pyarrow.Array`` of ``schema``'s values at once: a ``pyarrow.BinaryArray``
        whose element i is :meth:`from_connect_data_batch`'s bytes for value i.

        Optional, beyond Kafka Connect (the columnar fast path of sources); ``values`` is as in
        :class:`~kopycat.api.record_batch.SourceRecordBatch`. Answer None whenever the bytes would
        not be identical or the work is not cheap: the runner then converts record by record
        (which also reports bad values). The default always answers None.
        """
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; called when the task stops."""


class HeaderConverter(ABC):
    """Turns one header value into bytes and back (Kafka's ``HeaderConverter``).

    Same null contract as :class:`Converter`. The built-in converters implement both.
    """

    def configure(self, configs: Mapping[str, str], is_key: bool = False) -> None:  # noqa: B027 - optional hook, empty by default
        """Apply configuration."""

    @abstractmethod
    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None:
        """Serialize one header value."""

    @abstractmethod
    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        """Deserialize one header value."""
