"""Example connectors to copy when writing one's own; each uses only :mod:`kopycat.api`."""
