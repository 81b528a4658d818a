"""What a running source task sees of the worker (Kafka Connect's ``WorkerSourceTaskContext``)."""

from __future__ import annotations

from collections.abc import Mapping

from kopycat.api.task import OffsetStorageReader, SourceTaskContext, TransactionContext

__all__ = ["WorkerSourceTaskContext"]


class WorkerSourceTaskContext(SourceTaskContext):
    """What a running source task sees (Kafka's ``WorkerSourceTaskContext``)."""

    def __init__(self, configs: Mapping[str, str], reader: OffsetStorageReader,
                 transactions: TransactionContext | None = None, takes_columns: bool = True) -> None:
        self._configs = configs
        self._reader = reader
        self._transactions = transactions
        self._takes_columns = takes_columns

    @property
    def configs(self) -> Mapping[str, str]:
        return self._configs

    @property
    def offset_reader(self) -> OffsetStorageReader:
        return self._reader

    @property
    def transaction_context(self) -> TransactionContext | None:
        return self._transactions

    @property
    def takes_columns(self) -> bool:
        return self._takes_columns
