"""InfluxDB 1.x with a few configuration lines changed, for the downsampling test and benchmark.

tests/influxdb_server.py writes one fixed configuration (continuous queries off, default cache
snapshots). The live continuous query test needs the service on with a 1 s run interval; the
storage benchmark needs the cache written to TSM files, fully compacted, soon after the last
write, so that what is on disk is what a settled shard holds. The subclass only changes the
configuration text it writes, swapping its module's template for the duration of one start.
"""

from __future__ import annotations

import influxdb_server
from influxdb_server import InfluxServer

CQ_LIVE = (('[continuous_queries]\n  enabled = false\n',
            '[continuous_queries]\n  enabled = true\n  run-interval = "1s"\n'),)
COMPACT_SOON = (('wal-fsync-delay = "0s"\n',
                 'wal-fsync-delay = "0s"\n  cache-snapshot-write-cold-duration = "1s"\n'
                 '  compact-full-write-cold-duration = "1s"\n'),)


class ConfiguredInfluxServer(InfluxServer):
    """An InfluxServer whose configuration has `edits` ((old, new) text) applied."""

    def __init__(self, influxd: str, edits: tuple[tuple[str, str], ...]) -> None:
        super().__init__(influxd)
        self.edits = edits

    def __enter__(self) -> ConfiguredInfluxServer:
        self.start()
        return self

    @property
    def data_dir(self) -> str:
        return str(self._root / "data")

    def _start_once(self) -> None:
        original = influxdb_server._CONFIG
        changed = original
        for old, new in self.edits:
            assert old in changed, f"influxdb_server's configuration no longer has {old!r}"
            changed = changed.replace(old, new)
        influxdb_server._CONFIG = changed
        try:
            super()._start_once()
        finally:
            influxdb_server._CONFIG = original
