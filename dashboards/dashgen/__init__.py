"""Generator for diskprobe's Grafana and Chronograf dashboards, Grafana alert rules and
Kapacitor TICKscripts.

Everything is plain data (dataclasses): `boards_*.py` and `alert_rules.py` define panels and
alerts once; `grafana.py`, `chronograf.py`, `grafana_alerting.py` and `kapacitor.py` render
them. Field names come from diskprobe's schema through `refs.py`, so renaming a field in
`plugin/diskprobe/schema/` makes generation fail instead of shipping a dashboard that shows
nothing. `python dashboards/generate.py` writes the files; tests compare them with the output.
"""
