"""Real services for development, tests, the demo and benchmarks.

Everything here starts a real process on loopback (an Apache Kafka broker from Maven Central
jars, a PostgreSQL server from Debian's package, moto's S3 server) and tears it down again;
nothing is faked. Used by `kopycat dev ...`, the pytest fixtures and bench/.
"""
