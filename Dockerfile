# One image for the api, worker and beat services of docker-compose.yml.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bpm ./bpm
COPY workers ./workers
COPY beat ./beat
COPY examples ./examples
RUN pip install --no-cache-dir ".[celery,api,worker]"
ENV PYTHONUNBUFFERED=1
