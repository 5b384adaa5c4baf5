"""The reference order process (shared with the benchmarks)."""

from __future__ import annotations

from bench.reference import ORDER_KEY, STEPS, order_model

__all__ = ["ORDER_KEY", "STEPS", "order_model"]
