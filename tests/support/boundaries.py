"""A source connector whose tasks define their own transaction boundaries (KIP-618), for the tests.

Numbered records as :mod:`tests.support.counting`; the task commits the transaction after every
record ``i`` with ``i % 100 == 99``, except that it aborts after record ``abort.after`` (dropping
the records since the last commit), and commits the batch that reaches ``total``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kopycat.api import ConfigDef, SourceRecord, SourceTask
from kopycat.api.config import ConfigType
from kopycat.api.connector import ConnectorTransactionBoundaries
from tests.support.counting import CountingSourceConnector, CountingSourceTask


class BoundaryDefiningConnector(CountingSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return BoundaryDefiningTask

    def config(self) -> ConfigDef:
        return super().config().define("abort.after", ConfigType.INT, -1)

    def can_define_transaction_boundaries(self, props: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        return ConnectorTransactionBoundaries.SUPPORTED


class BoundaryDefiningTask(CountingSourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        super().start(props)
        self.abort_after = BoundaryDefiningConnector().config().parse(props)["abort.after"]

    def poll(self) -> list[SourceRecord] | None:
        records = super().poll()
        transactions = self.context.transaction_context
        assert transactions is not None, "transaction.boundary=connector gives the task a transaction context"
        for record in records or []:
            i = record.source_offset["i"]  # type: ignore[index]
            if i == self.abort_after:
                transactions.abort_transaction(record)
            elif i % 100 == 99:
                transactions.commit_transaction(record)
        if records and all(n >= self.total for n in self.next):
            transactions.commit_transaction()  # the last batch
        return records
