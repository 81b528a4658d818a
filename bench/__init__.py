"""Kopycat's benchmarks: each prints its throughput next to an anchor measured in the same run.

Targets are ratios (kopycat / anchor), never absolute times, so they hold on any machine.
"""
