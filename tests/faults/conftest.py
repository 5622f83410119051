"""Fixtures of the fault-injection suite (helpers live in faultlib.py)."""

from faultlib import fake_host, reap

__all__ = ["fake_host", "reap"]
