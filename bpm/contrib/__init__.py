"""Thin adapters for web frameworks: each one only builds and hands out an Engine."""
