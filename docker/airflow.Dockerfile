# Airflow with Kopycat installed from this checkout (pinned like the repo: constraints.txt).
# UNTESTED HERE (no Docker engine on our machines).
# The Airflow of the pins (constraints.txt: apache-airflow 3.3.2); the celery extra runs the workers.
FROM apache/airflow:3.3.2-python3.11
USER root
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
USER airflow
COPY --chown=airflow:root . /opt/kopycat/src
RUN pip install --no-cache-dir -c /opt/kopycat/src/include/requirements/constraints.txt \
    "/opt/kopycat/src[airflow,spark,postgres,s3,hdfs,celery]"
