"""Built-in connectors, one package each (Kafka Connect's bundled plugins and more).

``files``: FileStreamSource and FileStreamSink, Kafka's connect-file connectors (the source
extended to glob patterns, KIP-26's log import). :mod:`kopycat.plugins` maps Kafka's class
names to these, so a Kafka Connect config works unchanged.
"""
