"""Kopycat's Apache Airflow provider: plan a connector, copy its tasks as mapped task instances.

The only package (with plugins/) that imports Airflow.
"""
