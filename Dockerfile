# One image for the api, worker, beat and migrate services of docker-compose.yml.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bpm ./bpm
COPY workers ./workers
COPY beat ./beat
COPY examples ./examples
RUN pip install --no-cache-dir ".[celery,api,worker,otel]" \
    && useradd --system --uid 10001 --home-dir /app bpm \
    && mkdir -p /var/lib/bpm && chown bpm /var/lib/bpm
ENV PYTHONUNBUFFERED=1
USER bpm
