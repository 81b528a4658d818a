# Airflow with Kopycat installed from this checkout (pinned like the repo: constraints.txt).
# UNTESTED HERE (no Docker engine on our machines).
FROM apache/airflow:3.1.0-python3.11
USER root
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
USER airflow
COPY --chown=airflow:root . /opt/kopycat/src
RUN pip install --no-cache-dir -c /opt/kopycat/src/include/requirements/constraints.txt \
    "/opt/kopycat/src[airflow,spark,postgres,s3]"
