"""The hook for downsampled data (issue 28 section 3): apply a list of InfluxQL statements to a
database holding the back-filled fleet, then time long-range queries.

`statements(path)` reads an InfluxQL file such as dashboards/downsampling/influxdb-1x.iql (one
statement per line, # comments). `downsample_and_time(server, db, statements, anchor_ns,
queries, repeats)` runs them with the database renamed, except that:

- ALTER RETENTION POLICY is skipped: shortening "autogen" would drop the back-filled year;
- a CREATE CONTINUOUS QUERY is run as its SELECT ... INTO body over the whole back-filled
  range, 30 days at a time for the daily SMART series and a day at a time for the others
  (continuous queries only compute windows of the wall clock from their creation on), which
  is how history is downsampled by hand;

and returns one timed entry per statement (one run each) followed by the given queries, each
run warm like the dashboards' (fleet_sim_queries.run_timed). `default_queries` are the fleet
and drive-health boards' panels over 30 days and a year, read from the raw data ("autogen")
and from the downsampled policy (DOWNSAMPLED_RP).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from fleet_sim_queries import Query, grafana_queries, run_timed

from influxdb_server import InfluxServer

DOWNSAMPLED_RP = "diskprobe_1y"
RANGES = (("30 days", 30 * 86400), ("1 year", 365 * 86400))
BACK_DAYS = 370  # the back-filled range downsampled: a year and a bit
CHUNK_DAYS = 30  # SMART: a read a day before the last day
DENSE_CHUNK_DAYS = 1  # filesystems (hourly), I/O (10 s): 30 days of filesystems at 100 hosts
#                       did not finish in one 120 s piece
_BODY = re.compile(r'CREATE CONTINUOUS QUERY "([^"]+)" ON "[^"]+" .*?BEGIN (.*) END$')


def statements(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def with_window(body: str, start_ns: int, stop_ns: int) -> str:
    """The SELECT ... INTO body limited to [start, stop)."""
    window = f"time >= {start_ns} AND time < {stop_ns}"
    head, group = body.split(" GROUP BY ", 1)
    if " WHERE " in head:
        head = head.replace(" WHERE ", " WHERE (", 1) + f") AND {window}"
    else:
        head += f" WHERE {window}"
    return f"{head} GROUP BY {group}"


def apply(server: InfluxServer, db: str, statement: str, anchor_ns: int) -> Query:
    """Run one statement; a continuous query's body over the back-filled range in CHUNK_DAYS
    or DENSE_CHUNK_DAYS pieces (one SELECT ... INTO over a year of every host runs into the
    HTTP timeout). The entry's time is the sum of the pieces', its rows the points written."""
    text = statement.replace('"telegraf"', f'"{db}"')
    match = _BODY.match(text)
    query = Query(f"downsample: {match.group(1) if match else text[:60]}", text, True)
    if text.startswith("ALTER RETENTION POLICY"):
        query.error = "skipped (would expire the back-filled raw data)"
        return query
    day = 86400 * 10**9
    start = anchor_ns - BACK_DAYS * day
    smart = match is not None and '"diskprobe_smart' in match.group(2)
    step = (CHUNK_DAYS if smart else DENSE_CHUNK_DAYS) * day
    pieces = ([with_window(match.group(2), t, min(t + step, anchor_ns + 10**9))
               for t in range(start, anchor_ns + 10**9, step)] if match else [text])
    spent = 0.0
    try:
        for piece in pieces:
            started = time.perf_counter()
            results = server.query(db, piece)
            spent += time.perf_counter() - started
            written = [row for r in results for s in r.get("series", []) for row in s["values"]]
            query.rows += int(written[0][1]) if written and len(written[0]) > 1 else 0
        query.timings.append(spent)
    except Exception as error:  # any failure is reported; the bench goes on
        query.error = str(error)[:300]
    return query


def default_queries(server: InfluxServer, db: str, anchor_ns: int,
                    prefer: dict[str, str]) -> list[Query]:
    out: list[Query] = []
    for label, seconds in RANGES:
        for rp in ("autogen", DOWNSAMPLED_RP):
            for query in grafana_queries(server, db, anchor_ns, "diskprobe-[fh]*", seconds, rp,
                                         prefer):
                if query.name.split(": ", 1)[1].startswith("variable"):
                    continue
                query.name = f"{label}, {rp}: {query.name}"
                out.append(query)
    return out


def downsample_and_time(server: InfluxServer, db: str, todo: list[str], anchor_ns: int,
                        repeats: int, prefer: dict[str, str] | None = None) -> list[Query]:
    """`prefer`: single-value dashboard variables' values (fleet_sim_queries)."""
    applied = [apply(server, db, statement, anchor_ns) for statement in todo]
    timed = default_queries(server, db, anchor_ns, prefer or {})
    for query in timed:
        run_timed(server, db, query, repeats)
    return applied + timed

