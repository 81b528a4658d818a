"""Small, real connectors and helpers shared by tests (no fakes of Kafka or the engine)."""
