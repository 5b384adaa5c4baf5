"""End-to-end tests with real Celery worker processes, PostgreSQL and Redis."""
