"""The worker machinery, like Kafka Connect's connect/runtime.

Runners that drive one task (source_runner, sink_runner), the stop conditions of bounded runs
(bounds), error handling (errors) and the standalone worker (worker). Connector authors never
import from here: they implement :mod:`kopycat.api`.
"""
