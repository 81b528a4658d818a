"""Which errors of an ADBC result stream the JDBC source reads again (a lost connection) and which it reports.

pyarrow raises a failure of the stream as ``OSError`` with libpq's message; the messages below are libpq's
own (PostgreSQL 16/17) for a backend ended by ``pg_terminate_backend`` and for an error of the query.
"""

from __future__ import annotations

import pytest

from kopycat.connectors.jdbc.arrow_result import connection_lost


@pytest.mark.parametrize("message", [
    "[libpq] PQgetCopyData() failed: server closed the connection unexpectedly\n\tThis probably means the "
    "server terminated abnormally\n\tbefore or while processing the request.",
    "[libpq] FATAL:  terminating connection due to administrator command",
    "[libpq] could not receive data from server: Connection reset by peer",
])
def test_a_stream_ended_by_a_lost_connection_is_read_again(message: str) -> None:
    assert connection_lost(OSError(message)) is True


@pytest.mark.parametrize("error", [
    OSError("[libpq] ERROR:  division by zero"),
    OSError("[libpq] ERROR:  permission denied for table items"),
    ValueError("server closed the connection unexpectedly"),  # not from the stream: not this function's
])
def test_an_error_of_the_query_is_reported_not_retried(error: BaseException) -> None:
    assert connection_lost(error) is False
