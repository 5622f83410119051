"""Outputs that talk to a database directly (kind = "influxdb")."""
